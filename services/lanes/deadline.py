"""Waiting with a deadline on an injected clock: the one way Lanes code retries or polls.

``Deadline`` is a point on a clock's monotonic time. ``attempts`` (asyncio) and
``attempts_blocking`` (a plain thread) pace the attempts of something that may have to be tried
again: the first attempt at once, each later one after a pause that never runs past the deadline,
and no attempt once the deadline has passed. The caller breaks out (``return``) when an attempt
succeeds and decides what to raise when the iteration ends without one::

    async for _ in attempts(Deadline(timeout_s, clock), pause_s=0.1):
        answer = await try_it()
        if answer is not None:
            return answer
    raise RequestTimedOutError("...")

The clock and the sleep are parameters, so a test drives both (``ManualClock`` and a sleep that
advances it) and a retry loop is checked without waiting. A deadline and the waits it bounds
must share one time base: code that waits on sockets or events in real time (long-polls, RPC
answers) takes the system clock, and a client given another clock must have one that moves with
its event loop's time (a virtual-time loop in a test).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

from lanes.clock import SYSTEM_CLOCK, Clock

#: How an asynchronous wait pauses (``asyncio.sleep``, or a test's sleep that moves a clock).
AsyncSleep = Callable[[float], Awaitable[object]]
#: How a blocking wait pauses (``time.sleep``, or a test's).
BlockingSleep = Callable[[float], object]


class Deadline:
    """A point ``timeout_s`` after its creation on ``clock``'s monotonic time. Immutable; safe to
    read from any thread."""

    __slots__ = ("_at_ms", "_clock")

    def __init__(self, timeout_s: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        # to the nanosecond: 0.003 s is 3.0000000000000004 ms in floating point, a deadline an
        # integer millisecond clock would pass only a millisecond late
        self._at_ms = clock.monotonic_ms() + round(max(0.0, timeout_s) * 1000, 6)

    @classmethod
    def at_monotonic_ms(cls, at_ms: float, clock: Clock = SYSTEM_CLOCK) -> Deadline:
        """The deadline at ``at_ms`` on ``clock``'s monotonic time (for a deadline counted from
        an earlier moment, such as a batch's creation)."""
        deadline = cls(0, clock)
        deadline._at_ms = at_ms
        return deadline

    def remaining_s(self) -> float:
        """Seconds left (0 once passed)."""
        return max(0.0, (self._at_ms - self._clock.monotonic_ms()) / 1000)

    def expired(self) -> bool:
        """Whether the deadline has been reached."""
        return self._clock.monotonic_ms() >= self._at_ms


async def attempts(deadline: Deadline, pause_s: float, *, sleep: AsyncSleep = asyncio.sleep) -> AsyncIterator[int]:
    """Attempt numbers 0, 1, 2...: the first at once, each later one ``pause_s`` after the
    previous attempt ended (shortened to what is left of ``deadline``); the iteration ends,
    without another attempt, when an attempt ends past the deadline."""
    attempt = 0
    while True:
        yield attempt
        if deadline.expired():
            return
        await sleep(min(pause_s, deadline.remaining_s()))
        attempt += 1


def attempts_blocking(deadline: Deadline, pause_s: float, *, sleep: BlockingSleep = time.sleep) -> Iterator[int]:
    """``attempts`` for code that blocks its thread (the CLI, process supervision)."""
    attempt = 0
    while True:
        yield attempt
        if deadline.expired():
            return
        sleep(min(pause_s, deadline.remaining_s()))
        attempt += 1


class Backoff:
    """Pauses between the attempts of something retried until it succeeds (no deadline: a link to
    the controller, a shard's writes): ``initial_s``, doubling up to ``max_s``, back to
    ``initial_s`` after ``reset()`` (a success). Owned by one task."""

    def __init__(self, initial_s: float, max_s: float, *, sleep: AsyncSleep = asyncio.sleep) -> None:
        self._initial_s = initial_s
        self._max_s = max_s
        self._sleep = sleep
        self.next_s = initial_s

    async def pause(self) -> None:
        """Sleep the current pause, then double it (up to ``max_s``)."""
        await self._sleep(self.next_s)
        self.next_s = min(self.next_s * 2, self._max_s)

    def reset(self) -> None:
        self.next_s = self._initial_s
