"""The background event loop behind the synchronous clients.

The client library's core is asynchronous (``lanes.aio``); ``lanes.Admin`` (and the producer and
consumer to come) run it on one daemon thread per process, started on first use, so synchronous
code gets the same behaviour without an event loop of its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


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
