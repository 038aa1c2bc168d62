"""The background event loop behind the synchronous clients.

The client library's core is asynchronous (``lanes.aio``); ``lanes.Producer``, ``Consumer`` and
``Admin`` run it on one daemon thread per process, started on first use, so synchronous code gets
the same behaviour without an event loop of its own.

A synchronous client left open when the interpreter exits is closed then (``close_at_exit``), as
kafka-python does: a producer delivers what it was given (a consumer leaves its group, commits
nothing it was not told to), within ``EXIT_CLOSE_TIMEOUT_S`` in all; then whatever still runs on
the loop is cancelled and the loop stops, so nothing is destroyed pending and nothing is printed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
#: how long the clients left open may take to close at interpreter exit, together
EXIT_CLOSE_TIMEOUT_S = 10.0


class _Closeable(Protocol):
    async def close(self) -> None: ...


_open_clients: weakref.WeakSet[Any] = weakref.WeakSet()


def close_at_exit(client: _Closeable) -> None:
    """Close ``client`` (an asynchronous client core on the background loop) when the
    interpreter exits, unless it was closed or collected before."""
    _open_clients.add(client)


def closed(client: _Closeable) -> None:
    """``client`` was closed: nothing to do for it at exit."""
    _open_clients.discard(client)


@atexit.register
def _close_open_clients() -> None:
    loop = _loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return
    clients = list(_open_clients)

    async def close_and_stop() -> None:
        if clients:
            closing = [asyncio.ensure_future(client.close()) for client in clients]
            _done, pending = await asyncio.wait(closing, timeout=EXIT_CLOSE_TIMEOUT_S)
            for future in closing:
                if future.done() and not future.cancelled():
                    future.exception()  # retrieved: a failed close at exit is not reported
            for future in pending:
                future.cancel()
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(close_and_stop(), loop).result(EXIT_CLOSE_TIMEOUT_S + 5)
    loop.call_soon_threadsafe(loop.stop)
    if _thread is not None:
        _thread.join(5)


def background_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, running on its daemon thread."""
    global _loop, _thread  # noqa: PLW0603 - one loop per process, created lazily
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_loop.run_forever, name="lanes-client-loop", daemon=True)
            _thread.start()
        return _loop


def run(coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
    """Run ``coroutine`` on the background loop and wait for its result (or its exception)."""
    loop = background_loop()
    if threading.current_thread() is _thread:
        coroutine.close()
        raise RuntimeError("the synchronous Lanes clients cannot be called from the client loop; use lanes.aio")
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout_s)
