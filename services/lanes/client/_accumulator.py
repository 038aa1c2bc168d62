"""The record accumulator behind a producer (aiokafka's seam): records wait here, batched per
partition, until the sender (``_sender``) takes them.

- ``append`` picks the partition and adds a record to its open batch; a batch closes when it
  reaches ``batch_size`` bytes, when its linger is over and no request of its partition is in
  flight, or when the sender takes it. Closed batches queue per partition, in close order.
- The buffer is bounded by ``buffer_memory`` bytes: ``append`` refuses a record that does not fit
  and the caller waits for room (``wait_for_room`` / ``wait_for_room_blocking``) until the
  sender ``release``s what was written or failed.
- ``sending`` lists the partitions whose sender runs or is starting, ``awaiting_batches`` those
  whose sender waits with room in its window; both change only under ``lock``, together with the
  queues, so no closed batch is ever missed between a sender's last look and its exit.

Threads: everything here is guarded by ``lock`` and may be used from any thread, except the
async room waiters, which belong to the client's loop. What the sender must act on is told to it
through ``SenderSignals``, whose methods the producer runs on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

from mmh3 import hash as _murmur3

from lanes.client._record_future import BatchOutcome, RecordFuture
from lanes.clock import Clock
from lanes.deadline import Deadline
from lanes.errors import ErrorCode, LanesError
from lanes.protocol.partitioner import Partitioner
from lanes.topic_partition import TopicPartition

RecordTuple = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]
#: varints and attributes of one encoded record, roughly (a record's size in the buffer is this
#: plus its key, value and headers)
RECORD_OVERHEAD_BYTES = 20
#: records ``append_many`` adds under one hold of the lock: the sender waits for it meanwhile
APPEND_MANY_RECORDS = 500


class Batch:
    """One partition's records on their way: ``(index, timestamp, key, value, headers)`` tuples
    (what ``encode_batch`` takes), and the outcome their futures share. ``created_ms`` is on the
    producer's monotonic clock."""

    __slots__ = ("created_ms", "outcome", "partition", "records", "size_bytes", "topic")

    def __init__(self, topic: str, partition: int, created_ms: int) -> None:
        self.topic = topic
        self.partition = partition
        self.records: list[RecordTuple] = []
        self.outcome = BatchOutcome()
        self.size_bytes = 0
        self.created_ms = created_ms

    @property
    def key(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class SenderSignals(Protocol):
    """What the accumulator tells the sender; each call is made on the client's loop."""

    def batch_opened(self, batch: Batch) -> None:
        """A partition with no running sender has a new open batch: close it after linger."""

    def first_batch_queued(self, batch: Batch) -> None:
        """A batch was queued for a partition whose sender does not run: start it."""

    def batch_queued(self, batch: Batch) -> None:
        """A batch was queued for a sender waiting with room in its window: wake it."""

    def linger_pending(self, batch: Batch, delay_s: float) -> None:
        """An idle sender found only an open batch, ``delay_s`` before its linger is over."""


class RecordAccumulator:
    """Open and queued batches per partition, and the bytes they hold."""

    def __init__(
        self,
        *,
        batch_size: int,
        max_request_size: int,
        linger_s: float,
        buffer_memory: int,
        partitioner: Partitioner,
        partition_count: Callable[[str], int],
        signals: SenderSignals,
        on_loop: Callable[[Callable[[Batch], None], Batch], None],
        clock: Clock,
    ) -> None:
        self.batch_size = batch_size
        self.max_request_size = max_request_size
        self.linger_s = linger_s
        self.buffer_limit = buffer_memory
        self._partitioner = partitioner
        self._keys_by_hash = partitioner.keys_by_hash  # keyed records need no call to it (``append``)
        self._partition_count = partition_count
        self._signals = signals
        self._on_loop = on_loop
        self._clock = clock
        self.lock = threading.Lock()
        self._room = threading.Condition(self.lock)
        self._buffered = 0
        # Keyed by (topic, partition): ``append`` builds its key as a plain tuple, once per record
        # (a TopicPartition, equal to it, costs ten times as much to build).
        self.open: dict[tuple[str, int], Batch] = {}
        self.queues: dict[tuple[str, int], deque[Batch]] = {}
        self.sending: set[tuple[str, int]] = set()  # partitions whose sender runs or is starting
        self.awaiting_batches: set[tuple[str, int]] = set()  # senders with room for a request
        self.closed = False
        self._room_waiters: list[asyncio.Future[None]] = []  # the loop's

    # -----------------------------------------------------------------------------------------
    # adding records (any thread)

    def append(  # noqa: PLR0917 - the hot path of every send: positional arguments cost least
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int | None,
        headers: tuple[tuple[str, bytes | None], ...],
        timestamp: int,
        size_bytes: int,
        num_partitions: int,
    ) -> RecordFuture | None:
        """Add one record to its partition's open batch; None when the buffer has no room for it.
        The hot path of every ``send``: positional fields (no record object), one lock."""
        with self.lock:
            if self.closed:
                raise LanesError("the producer is closed", ErrorCode.INVALID_REQUEST)
            return self._add_locked(topic, value, key, partition, headers, timestamp, size_bytes, num_partitions)

    def append_many(  # noqa: PLR0917 - the batch path of send_batch: positional arguments cost least
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        timestamp: int,
        num_partitions: int,
        start: int = 0,
    ) -> list[RecordFuture]:
        """``append`` for records ``start``.. of ``values`` (with ``keys``, one per value; None:
        keyless), at most ``APPEND_MANY_RECORDS`` under one lock (the sender takes batches in
        between): their futures; none when the buffer is full (the caller waits for room and goes
        on from there). A value or key that is not bytes (or None) is a TypeError; the records
        before it are in."""
        futures: list[RecordFuture] = []
        with self.lock:
            if self.closed:
                raise LanesError("the producer is closed", ErrorCode.INVALID_REQUEST)
            for position in range(start, min(len(values), start + APPEND_MANY_RECORDS)):
                value = values[position]
                key = keys[position] if keys is not None else None
                if (value is not None and type(value) is not bytes) or (key is not None and type(key) is not bytes):
                    raise TypeError(f"record {position}: values and keys are bytes or None; encode them first")
                size = (len(value) if value else 0) + (len(key) if key else 0) + RECORD_OVERHEAD_BYTES
                future = self._add_locked(topic, value, key, partition, (), timestamp, size, num_partitions)
                if future is None:
                    break
                futures.append(future)
        return futures

    def _add_locked(  # noqa: PLR0917 - called once per record: positional arguments cost least
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int | None,
        headers: tuple[tuple[str, bytes | None], ...],
        timestamp: int,
        size_bytes: int,
        num_partitions: int,
    ) -> RecordFuture | None:
        """Pick the record's partition and add it to that partition's open batch (closing the
        batch once full); None when the buffer has no room for it. The caller holds the lock."""
        if not self.has_room(size_bytes):
            return None
        if key is not None and partition is None and self._keys_by_hash and num_partitions > 0:
            chosen = (_murmur3(key, 0, False) & 0x7FFFFFFF) % num_partitions  # = partition_for_key
        else:
            chosen = self._partitioner.partition(topic, key, num_partitions, partition)
        self._buffered += size_bytes
        batch = self.open.get((topic, chosen))
        if batch is None:
            batch = self.open[(topic, chosen)] = Batch(topic, chosen, self._clock.monotonic_ms())
            if (topic, chosen) not in self.sending:  # a busy sender looks at the open batch when done
                self._on_loop(self._signals.batch_opened, batch)
        records = batch.records
        index = len(records)
        records.append((index, timestamp, key, value, headers))
        batch.size_bytes += size_bytes
        if batch.size_bytes >= self.batch_size:
            self._close_locked(batch)
        return RecordFuture(batch.outcome, topic, chosen, index, timestamp)

    def has_room(self, size: int) -> bool:
        """Whether ``size`` more bytes fit the buffer (a record larger than it fits an empty one);
        the caller holds the lock."""
        return self._buffered + size <= self.buffer_limit or self._buffered == 0

    async def wait_for_room(self, deadline: Deadline) -> bool:
        """Wait (on the loop) until some bytes are released or ``deadline`` passes; False then."""
        if deadline.expired():
            return False
        waiter = asyncio.get_running_loop().create_future()
        self._room_waiters.append(waiter)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter, deadline.remaining_s())
        return True

    def wait_for_room_blocking(self, size: int, deadline: Deadline) -> bool:
        """Block the calling thread until ``size`` bytes fit or ``deadline`` passes; False then."""
        if deadline.expired():
            return False
        with self._room:  # the same lock as append's check: no release is missed
            return self._room.wait_for(lambda: self.has_room(size), deadline.remaining_s())

    def release(self, size: int) -> None:
        """``size`` bytes were written or failed: room for waiting senders (call on the loop)."""
        with self.lock:
            self._buffered -= size
            self._room.notify_all()
        waiters, self._room_waiters = self._room_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -----------------------------------------------------------------------------------------
    # closing batches

    def close_all(self) -> None:
        """Queue every open batch now (flush)."""
        with self.lock:
            for batch in list(self.open.values()):
                self._close_locked(batch)

    def fail_all(self, error: BaseException) -> None:
        """Fail every batch not yet taken by a sender (a producer closed before delivering them)."""
        with self.lock:
            batches = [*self.open.values(), *(batch for queue in self.queues.values() for batch in queue)]
            self.open.clear()
            self.queues.clear()
        for batch in batches:
            batch.outcome.fail(error)

    def close_if_open(self, batch: Batch) -> None:
        """Linger is over. While the partition's sender is busy the open batch keeps taking
        records (the sender takes it next): batches grow with the round trip instead of queueing
        up small, so latency stays near one round trip at any rate."""
        with self.lock:
            if batch.key not in self.sending and self.open.get(batch.key) is batch:
                self._close_locked(batch)

    def _close_locked(self, batch: Batch) -> None:
        """Queue ``batch`` for sending, behind its partition's earlier batches (the caller holds
        the lock). It joins the queue here, at once: were it handed to the loop to queue later,
        the sender could meanwhile take the partition's next open batch and send it first."""
        key = batch.key
        self._detach_locked(batch)
        self.queues.setdefault(key, deque()).append(batch)
        if key not in self.sending:
            self.sending.add(key)
            self._on_loop(self._signals.first_batch_queued, batch)
        elif key in self.awaiting_batches:
            self.awaiting_batches.discard(key)
            self._on_loop(self._signals.batch_queued, batch)

    def _detach_locked(self, batch: Batch) -> None:
        """No more records join ``batch`` (the caller holds the lock)."""
        del self.open[batch.key]
        self._partitioner.batch_completed(batch.topic, batch.partition, self._partition_count(batch.topic))

    # -----------------------------------------------------------------------------------------
    # the sender's side

    def take_request(self, key: TopicPartition, *, idle: bool) -> list[Batch] | None:
        """The partition's next request: its closed batches (as many as fit ``max_request_size``),
        or else its open batch once linger is over. None when there is nothing to send yet; an
        ``idle`` sender (nothing in flight) then has the open batch closed when its linger ends."""
        with self.lock:  # closing threads append to the queue under the lock
            queue = self.queues.setdefault(key, deque())
            if not queue:
                batch = self.open.get(key)
                if batch is None:
                    return None
                linger_left_s = (batch.created_ms - self._clock.monotonic_ms()) / 1000 + self.linger_s
                if linger_left_s > 0:  # while requests are in flight, it grows until the next answer
                    if idle:
                        self._signals.linger_pending(batch, linger_left_s)
                    return None
                self._detach_locked(batch)
                queue.append(batch)
            batches = [queue.popleft()]
            size = batches[0].size_bytes
            while queue and size + queue[0].size_bytes <= self.max_request_size:
                size += queue[0].size_bytes
                batches.append(queue.popleft())
            return batches
