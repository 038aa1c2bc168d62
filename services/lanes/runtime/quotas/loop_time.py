"""How much of its event loop's time a piece of work takes: the time its steps run, summed into
a ``LoopTime`` account (what request-time quotas measure, ``lanes.runtime.quotas.request_quota``).

A coroutine runs on the loop in steps, from one ``await`` that suspends to the next.
``TimedSteps`` wraps an awaitable and adds the duration of each of its steps to an account;
awaited code runs inside those steps, so it is counted too. Work a call hands to other tasks
(a broker starts each partition's append as a task) is counted by ``timed_task_factory``: a task
created while ``ACCOUNT`` holds an account (contextvars pass to the tasks a call creates) runs
timed into it. Work on worker threads (``asyncio.to_thread``) is not loop time and is not counted.

The service's own long-lived tasks (replication, the quorum's deliveries, snapshots, timers) are
started with ``service_task``, in a context of their own: one started while a client's call runs
(a snapshot a commit triggers) is neither charged to that client nor run as it. An account is
``close``d once its call recorded it for the last time; steps after that (an ``acks=all`` append
finishing after its client left) are not counted.

The loop time of the steps is wall time on the loop's thread, which is what others' calls wait
for. Owned by one event loop; an account is read by whoever created it, on that loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from collections.abc import Awaitable, Coroutine, Generator
from types import TracebackType
from typing import Any, TypeVar

_T = TypeVar("_T")


class LoopTime:
    """Seconds of loop time spent so far (``spent_s``) by the work timed into it."""

    __slots__ = ("closed", "spent_s")

    def __init__(self) -> None:
        self.spent_s = 0.0
        self.closed = False

    def add(self, seconds: float) -> None:
        if not self.closed:
            self.spent_s += seconds

    def close(self) -> None:
        """Count nothing more (its call recorded it for the last time)."""
        self.closed = True

    def take_s(self) -> float:
        """What was spent since the last ``take_s`` (the account restarts at zero)."""
        spent, self.spent_s = self.spent_s, 0.0
        return spent


#: The account the current call's work is timed into (None: untimed), inherited by tasks it creates.
ACCOUNT: contextvars.ContextVar[LoopTime | None] = contextvars.ContextVar("lanes_loop_time", default=None)


class TimedSteps(Coroutine[Any, Any, _T]):
    """``awaitable``, each of whose steps adds its duration to ``account``."""

    __slots__ = ("_account", "_inner")

    def __init__(self, awaitable: Awaitable[_T], account: LoopTime) -> None:
        direct = inspect.iscoroutine(awaitable) or isinstance(awaitable, Generator)
        self._inner: Any = awaitable if direct else awaitable.__await__()
        self._account = account

    def send(self, value: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._inner.send(value)
        finally:
            self._account.add(time.perf_counter() - started)

    def throw(
        self,
        typ: type[BaseException] | BaseException,
        val: BaseException | object = None,
        tb: TracebackType | None = None,
    ) -> Any:
        started = time.perf_counter()
        try:
            if val is None and tb is None:
                return self._inner.throw(typ)
            return self._inner.throw(typ, val, tb)
        finally:
            self._account.add(time.perf_counter() - started)

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    def __repr__(self) -> str:
        return f"TimedSteps({self._inner!r})"

    def __await__(self) -> Generator[Any, None, _T]:
        return self  # an iterator with send and throw, as a generator

    def __iter__(self) -> TimedSteps[_T]:
        return self

    def __next__(self) -> Any:
        return self.send(None)


def timed_task_factory(loop: asyncio.AbstractEventLoop, coro: Any, **settings: Any) -> asyncio.Future[Any]:
    """The loop's task factory (``install``): a task created where ``ACCOUNT`` holds an account
    runs its coroutine timed into it; any other is a plain task."""
    context: contextvars.Context | None = settings.get("context")
    account = context.get(ACCOUNT) if context is not None else ACCOUNT.get()
    if account is not None and not account.closed and inspect.iscoroutine(coro):
        coro = TimedSteps(coro, account)
    return asyncio.Task(coro, loop=loop, **settings)


def service_task(work: Coroutine[Any, Any, _T], *, name: str | None = None) -> asyncio.Task[_T]:
    """A task of the service's own (not of the call that happens to start it): run in a fresh
    context, so no caller's account or identity (``lanes.runtime.access.guard.CALLER``) goes with it."""
    return asyncio.get_running_loop().create_task(work, name=name, context=contextvars.Context())


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Time the tasks calls create on ``loop`` (a service's, before it serves)."""
    loop.set_task_factory(timed_task_factory)
