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

The hot half (open batches, buffered bytes, the closed flag, the lock) is ``OpenBatches``
(``_open_batches``: in C when built), which calls back here once per batch (``choose_partition``,
``new_batch``, ``batch_full``: the ``BatchHooks``).

Threads: everything here is guarded by ``lock`` (the core's) and may be used from any thread,
except the async room waiters, which belong to the client's loop. What the sender must act on is told to it
through ``SenderSignals``, whose methods the producer runs on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol

from lanes.client._open_batches import APPEND_MANY_RECORDS, RECORD_OVERHEAD_BYTES, BatchFields, OpenBatches
from lanes.client._record_future import BatchOutcome, RecordFuture
from lanes.clock import Clock, SystemClock
from lanes.deadline import Deadline
from lanes.protocol.partitioner import Partitioner
from lanes.topic_partition import TopicPartition

__all__ = ["APPEND_MANY_RECORDS", "RECORD_OVERHEAD_BYTES", "Batch", "RecordAccumulator", "SenderSignals"]


class Batch(BatchFields):
    """One partition's records on their way: ``(index, timestamp, key, value, headers)`` tuples
    (what ``encode_batch`` takes), their bytes, and the outcome their futures share (those three
    are ``BatchFields``': the core appends without a Python call). ``created_ms`` is on the
    producer's monotonic clock."""

    __slots__ = ("created_ms", "partition", "topic")

    outcome: BatchOutcome

    def __init__(self, topic: str, partition: int, created_ms: int) -> None:
        self.topic = topic
        self.partition = partition
        self.outcome = BatchOutcome()
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
        partition_counts: dict[str, int],
        signals: SenderSignals,
        on_loop: Callable[[Callable[[Batch], None], Batch], None],
        clock: Clock,
    ) -> None:
        self.max_request_size = max_request_size
        self.linger_s = linger_s
        self._partitioner = partitioner
        self._partition_counts = partition_counts
        self._signals = signals
        self._on_loop = on_loop
        self._clock = clock
        system_clock = type(clock) is SystemClock  # then the core reads the time itself
        self._core: OpenBatches[Batch, RecordFuture] = OpenBatches(
            batch_size,
            buffer_memory,
            partitioner.keys_by_hash,
            self,
            RecordFuture,
            partition_counts,
            None if system_clock else clock.now_ms,
        )
        self.lock = self._core.lock
        self._room = threading.Condition(self.lock)
        # Keyed by (topic, partition), as plain tuples (a TopicPartition, equal to it, costs ten
        # times as much to build): the open batches are the core's, the queues are here.
        self.open = self._core.open
        self.queues: dict[tuple[str, int], deque[Batch]] = {}
        self.sending: set[tuple[str, int]] = set()  # partitions whose sender runs or is starting
        self.awaiting_batches: set[tuple[str, int]] = set()  # senders with room for a request
        self._room_waiters: list[asyncio.Future[None]] = []  # the loop's
        #: ``append(topic, value, key, partition, headers, timestamp, size_bytes, num_partitions)``:
        #: add one record to its partition's open batch; its RecordFuture, or None when the buffer
        #: has no room for it. The hot path of every ``send``: one call into the core, one lock.
        #: ``send_at_once(topic, value, key, partition, headers, timestamp)``: ``send``'s common
        #: record (bytes, no headers or timestamp, a known topic, room) in one call: its
        #: RecordFuture; None: the long way (``append`` after the caller's checks).
        self.send_at_once = self._core.send_at_once
        self.append = self._core.append
        #: ``append_many(topic, values, keys, partition, timestamp, num_partitions, start)``: records
        #: ``start``.. of ``values`` (``keys`` one per value, or None), at most
        #: ``APPEND_MANY_RECORDS`` under one hold of the lock: their futures; fewer when the buffer
        #: is full (the caller waits for room and goes on). A value or key that is not bytes (or
        #: None) is a TypeError; the records before it are in.
        self.append_many = self._core.append_many

    @property
    def batch_size(self) -> int:
        return self._core.batch_size

    @property
    def buffer_limit(self) -> int:
        return self._core.buffer_limit

    @property
    def closed(self) -> bool:
        """Whether sends are refused (the producer is closing); set under ``lock``."""
        return self._core.closed

    @closed.setter
    def closed(self, closed: bool) -> None:
        self._core.closed = closed

    # -----------------------------------------------------------------------------------------
    # the core's hooks (``BatchHooks``; ``lock`` held)

    def choose_partition(self, topic: str, key: bytes | None, num_partitions: int, partition: int | None) -> int:
        return self._partitioner.partition(topic, key, num_partitions, partition)

    def new_batch(self, topic: str, partition: int) -> Batch:
        batch = Batch(topic, partition, self._clock.monotonic_ms())
        if (topic, partition) not in self.sending:  # a busy sender looks at the open batch when done
            self._on_loop(self._signals.batch_opened, batch)
        return batch

    def batch_full(self, batch: Batch) -> None:
        self._close_locked(batch)

    # -----------------------------------------------------------------------------------------
    # room in the buffer

    def has_room(self, size: int) -> bool:
        """Whether ``size`` more bytes fit the buffer (a record larger than it fits an empty one);
        the caller holds the lock."""
        return self._core.has_room(size)

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
            self._core.release(size)
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
        self._partitioner.batch_completed(batch.topic, batch.partition, self._partition_counts.get(batch.topic, 1))

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
