"""Per-record futures resolved once per batch.

A producer batch of N records completes once (one base offset, or one error); its records' futures
read their own result from it (offset = base offset + index). So the cost per record is one small
object, and resolving a batch costs the same for 1 or 10,000 records.

A ``RecordFuture`` works from any thread and from any event loop: ``result(timeout)``, ``done()``,
``exception()``, ``add_done_callback(fn)`` (as ``concurrent.futures.Future``), and ``await``.
Invariant: a ``BatchOutcome`` completes at most once; callbacks run exactly once, in the thread
that completes it (or at once, in the caller's thread, when added after completion).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from lanes.client._open_batches import FutureFields


@dataclass(frozen=True)
class RecordMetadata:
    """Where a record was written. ``offset`` is -1 when the producer does not wait (acks=0)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class BatchOutcome:
    """The result of one batch, shared by its records' futures."""

    __slots__ = ("_callbacks", "_done", "_lock", "_waiters", "base_offset", "error", "log_append_time_ms")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._callbacks: list[tuple[RecordFuture, Callable[[RecordFuture], object]]] = []
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.base_offset = -1
        self.log_append_time_ms = -1
        self.error: BaseException | None = None

    def complete(self, base_offset: int, log_append_time_ms: int = -1, error: BaseException | None = None) -> None:
        """Resolve every record of the batch (only the first call counts)."""
        with self._lock:
            if self._done.is_set():
                return
            self.base_offset, self.log_append_time_ms, self.error = base_offset, log_append_time_ms, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
            waiters, self._waiters = self._waiters, []
        for loop, waiter in waiters:
            loop.call_soon_threadsafe(_wake, waiter)
        for future, callback in callbacks:
            callback(future)

    def fail(self, error: BaseException) -> None:
        self.complete(-1, -1, error)

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout_s: float | None) -> bool:
        return self._done.wait(timeout_s)

    def add_callback(self, future: RecordFuture, callback: Callable[[RecordFuture], object]) -> None:
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append((future, callback))
                return
        callback(future)

    def waiter(self) -> asyncio.Future[None] | None:
        """A future of the running loop that resolves on completion (None: already complete)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._done.is_set():
                return None
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, waiter))
            return waiter


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class RecordFuture(FutureFields):
    """The outcome of one ``send``: ``RecordMetadata``, or the typed error that failed it.
    ``RecordFuture(outcome: BatchOutcome, topic, partition, index, timestamp)``; the fields are
    ``FutureFields``' (the producer's C core makes futures without a Python call)."""

    __slots__ = ()

    _outcome: BatchOutcome

    @classmethod
    def failed(cls, error: BaseException, topic: str = "", partition: int = -1) -> RecordFuture:
        """A future that already failed (the record never entered a batch)."""
        outcome = BatchOutcome()
        outcome.fail(error)
        return cls(outcome, topic, partition, 0, -1)

    def done(self) -> bool:
        return self._outcome.done()

    def cancelled(self) -> bool:
        return False

    def cancel(self) -> bool:
        """Records cannot be taken back once sent; always False (as Kafka's producer)."""
        return False

    def running(self) -> bool:
        return not self._outcome.done()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The error, None on success; waits up to ``timeout`` seconds (None: forever)."""
        if not self._outcome.wait(timeout):
            raise TimeoutError(f"the record to {self._topic}-{self._partition} was not acknowledged within {timeout} s")
        return self._outcome.error

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Where the record was written; raises its typed error. Waits up to ``timeout`` seconds."""
        error = self.exception(timeout)
        if error is not None:
            raise error
        return self._metadata()

    def _metadata(self) -> RecordMetadata:
        outcome = self._outcome
        offset = outcome.base_offset + self._index if outcome.base_offset >= 0 else -1
        timestamp = outcome.log_append_time_ms if outcome.log_append_time_ms >= 0 else self._timestamp
        return RecordMetadata(self._topic, self._partition, offset, timestamp)

    def add_done_callback(self, callback: Callable[[RecordFuture], object]) -> None:
        """Call ``callback(future)`` once the record is written or failed."""
        self._outcome.add_callback(self, callback)

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        waiter = self._outcome.waiter()
        if waiter is not None:
            yield from waiter.__await__()
        return self.result(0)
