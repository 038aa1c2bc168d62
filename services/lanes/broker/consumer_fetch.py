"""Consumers' Fetch requests: ``ConsumerFetches`` serves them, ``ConsumerFetch`` is one while it
is answered (each partition's offset, what is known to be there for it, and what was read).

A fetch is answered by one read, as in Kafka's ``DelayedFetch``: when it arrives, its partitions
are *measured* (where its offsets are in the logs, and how many bytes lie between them and the
high-water marks), without reading a record. If that is at least ``min_bytes`` (or a partition
must answer now: an error, a log that moved under the fetch) it reads and answers at once.
Otherwise it waits, **holding no memory**: each time a partition it names moves, the bytes that
arrived are counted again on the event loop from the logs' positions (``PartitionLog.bytes_until``,
no I/O), and once they reach ``min_bytes``, or the wait ends, it reads and answers. Eight fetches
asking for 2 GiB therefore hold nothing while they wait, and never read a byte until they answer.

The record bytes a fetch reads come out of the broker's fetch memory (``FetchMemory``): it asks
for what was measured (at most its ``max_bytes``) just before reading, and with nothing left it
waits for memory to be freed, holding none. Reads, and the measuring when a fetch arrives, go
through ``BatchedReads``: the fetches one append completes share one worker-thread trip, and
identical reads are done once.

Threads: ``measure`` and ``read`` run in a worker thread while the fetch's own coroutine awaits
them; ``remeasure``, ``wanted_bytes`` and ``answer`` run on the event loop. Nothing else touches
a ``ConsumerFetch``. ``ConsumerFetches`` is owned by the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from lanes.broker.batched_reads import BatchedReads, Reads
from lanes.broker.fetch_limits import FetchLimits, FetchMemory
from lanes.broker.fetch_wire import FetchedRecords
from lanes.broker.partition import Partition
from lanes.broker.purgatory import Purgatory
from lanes.broker.replica_manager import ReplicaManager
from lanes.deadline import Deadline
from lanes.errors import ErrorCode, OffsetOutOfRangeError
from lanes.protocol.fetch_stream import FOLLOW_AFTER_BYTES_AT_MOST, answer_is_full
from lanes.rpc.wire import wire_error
from lanes.runtime.broadcast import Broadcast
from lanes.storage.positions import LogPosition
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2

#: The partition a fetch may read ``key`` from, or the error to answer: given the key, the
#: consumer's leader epoch and the offset it reads next.
Resolve = Callable[[TopicPartition, int, int], "Partition | common_pb2.Error"]


@dataclass
class FetchSlot:
    """One partition of the fetch. ``available_bytes`` is what lies between ``start`` (the
    position of ``offset``) and the high-water mark in ``seen``, capped at ``limit_bytes``; when
    the log cannot count it without reading (it remembers only its recent appends' positions: a
    log reopened, a consumer far behind), ``limit_bytes``, so that the read is granted what the
    partition may return, not one batch."""

    key: TopicPartition
    result: broker_pb2.FetchPartitionResponse
    current_leader_epoch: int
    offset: int
    limit_bytes: int
    records: bytes = b""
    records_count: int = 0
    #: where the next fetch of the partition continues: after the last batch read (``offset``
    #: when none was)
    next_offset: int = 0
    #: answered with an error, or its log moved under the fetch: it reads no more
    closed: bool = False
    start: LogPosition | None = None
    available_bytes: int = 0
    #: (leader epoch, high-water mark) when last measured: a change is worth measuring again
    seen: tuple[int | None, int] | None = None


class ConsumerFetch:
    """The partitions of one Fetch request, in request order; see the module docstring."""

    def __init__(self, request: broker_pb2.FetchRequest, default_partition_max_bytes: int) -> None:
        self.response = broker_pb2.FetchResponse()
        self.slots: list[FetchSlot] = []
        for topic in request.topics:
            answered = self.response.topics.add(topic=topic.topic).partitions
            for wanted in topic.partitions:
                self.slots.append(
                    FetchSlot(
                        TopicPartition(topic.topic, wanted.partition),
                        answered.add(partition=wanted.partition),
                        wanted.current_leader_epoch,
                        wanted.fetch_offset,
                        wanted.partition_max_bytes if wanted.partition_max_bytes > 0 else default_partition_max_bytes,
                        next_offset=wanted.fetch_offset,
                    )
                )
        self.keys = [slot.key for slot in self.slots]
        self.read_bytes = 0
        #: it must answer now: a partition answered with an error, its log moved under the
        #: fetch, or what arrived cannot be counted without reading
        self.urgent = False
        #: the error codes answered, for the partition error metric
        self.errors: list[int] = []

    # -----------------------------------------------------------------------------------------
    # measuring (what a read would return, without reading)

    def measure(self, resolve: Resolve, shared: Reads) -> None:
        """Where each partition's offset is and how many bytes lie between it and the high-water
        mark (index lookups: a worker thread, unless ``shared`` reads on the loop). Safe to run
        again: each run measures every partition anew."""
        for slot in self.slots:
            led = self._resolved(slot, resolve)
            if led is None:
                continue
            try:
                slot.start = shared.position(led.log, slot.offset)
            except OffsetOutOfRangeError as exc:  # the log moved meanwhile (retention, truncation)
                self._close(slot, wire_error(ErrorCode.OFFSET_OUT_OF_RANGE, exc.message))
                continue
            self._count(slot, led)

    def remeasure(self, partitions: Mapping[TopicPartition, Partition]) -> None:
        """Count again what arrived for the partitions that moved since (the event loop: no I/O;
        a change it cannot count makes the fetch ``urgent``)."""
        for slot in self.slots:
            if slot.closed or slot.start is None:
                continue
            assert slot.seen is not None  # (measured with its start)
            seen_epoch, seen_mark = slot.seen
            partition = partitions.get(slot.key)
            if partition is None or partition.leader_epoch != seen_epoch:
                self.urgent = True  # leadership moved: the read answers what is true now
            elif partition.log.high_watermark != seen_mark:
                self._count(slot, partition)

    def _count(self, slot: FetchSlot, led: Partition) -> None:
        assert slot.start is not None
        high_watermark = led.log.high_watermark
        slot.seen = (led.leader_epoch, high_watermark)
        available = led.log.bytes_until(slot.start, high_watermark)
        if available is None:  # not countable without reading: read what is there, up to the limit
            self.urgent = True
            available = slot.limit_bytes if high_watermark > slot.offset else 0
        slot.available_bytes = min(available, slot.limit_bytes)

    def available_bytes(self) -> int:
        """What a read would return now, as measured (at most each partition's limit)."""
        return sum(slot.available_bytes for slot in self.slots if not slot.closed)

    def satisfied(self, min_bytes: int) -> bool:
        """Whether to read and answer now."""
        return self.urgent or self.available_bytes() >= min_bytes

    # -----------------------------------------------------------------------------------------
    # reading and answering

    def read(self, resolve: Resolve, max_bytes: int, shared: Reads) -> int:
        """Read each partition from its offset, at most ``max_bytes`` in all (the first batch of
        the whole fetch even when larger, so a consumer always makes progress); the bytes read.
        A worker thread, unless ``shared`` reads on the loop. Safe to run again: each run starts
        from nothing read."""
        self.read_bytes = 0
        for slot in self.slots:
            if not slot.closed:
                slot.records, slot.records_count = b"", 0
            slot.next_offset = slot.offset
        for slot in self.slots:
            led = self._resolved(slot, resolve)
            if led is None:
                continue
            log = led.log
            high_watermark = log.high_watermark
            limit = min(slot.limit_bytes, max_bytes - self.read_bytes)
            if slot.offset >= high_watermark or limit <= 0:
                continue  # nothing committed to read (the wait ended first), or no room left
            try:
                read = shared.read(log, slot.offset, limit, high_watermark, self.read_bytes == 0)
            except OffsetOutOfRangeError as exc:  # the log moved meanwhile (retention, truncation)
                self._close(slot, wire_error(ErrorCode.OFFSET_OUT_OF_RANGE, exc.message))
                continue
            slot.records, slot.records_count = read.records, read.records_count
            if read.records:
                slot.next_offset = read.next_offset
            self.read_bytes += len(read.records)
        return self.read_bytes

    def read_on(
        self, request: broker_pb2.FetchRequest, max_bytes: int, *, follow_wait_ms: int | None = None
    ) -> broker_pb2.FetchRequest | None:
        """``request`` (the one this fetch answers, capped at ``max_bytes``) continued where this
        answer ended, without waiting, within what is left of ``max_bytes`` (a stream's answers
        share the request's budget: the consumer's room; ``FetchStream``): each partition from
        after its last batch, the same offset when it returned none. None when this answer is the
        stream's last: a partition answered an error; the answer is not full (no partition
        returned three quarters of its limit and the answer not three quarters of
        ``max_bytes``: caught up), unless the stream follows (``follow_wait_ms``: the wait its
        consumer asked for, while the stream may still follow) and the answer brought records,
        at most ``FOLLOW_AFTER_BYTES_AT_MOST`` (then the next long-polls that long); or less than
        one partition's limit is left (following: nothing is left)."""
        if self.errors or not self.slots:
            return None
        full = answer_is_full(((len(slot.records), slot.limit_bytes) for slot in self.slots), max_bytes)
        following = not full and follow_wait_ms is not None and 0 < self.read_bytes <= FOLLOW_AFTER_BYTES_AT_MOST
        if not full and not following:
            return None
        left = max_bytes - self.read_bytes
        if left < (1 if following else min(slot.limit_bytes for slot in self.slots)):
            return None  # (a following stream's answers are small: it reads on while any room is left)
        continued = broker_pb2.FetchRequest()
        continued.CopyFrom(request)
        continued.max_wait_ms = follow_wait_ms if following and follow_wait_ms is not None else 0
        continued.max_bytes = left
        slots = iter(self.slots)  # (in request order)
        for topic in continued.topics:
            for wanted in topic.partitions:
                wanted.fetch_offset = next(slots).next_offset
        return continued

    def _resolved(self, slot: FetchSlot, resolve: Resolve) -> Partition | None:
        """The partition to read ``slot`` from, its answer's offsets set; None (and the slot
        closed with its error) when it must not be read."""
        if slot.closed:
            return None
        led = resolve(slot.key, slot.current_leader_epoch, slot.offset)
        if not isinstance(led, Partition):
            self._close(slot, led)
            return None
        log = led.log
        slot.result.high_watermark = log.high_watermark
        slot.result.last_stable_offset = log.high_watermark
        slot.result.log_start_offset = log.log_start_offset
        slot.result.error.CopyFrom(wire_error(ErrorCode.NONE))
        # In range is up to the log end, as in Kafka: between the high-water mark and the log end
        # (a lagging follower, a new leader) the answer is empty, not an error a consumer would
        # reset its position on.
        if not log.log_start_offset <= slot.offset <= log.log_end_offset:
            self._close(
                slot,
                wire_error(
                    ErrorCode.OFFSET_OUT_OF_RANGE,
                    f"offset {slot.offset} is outside {log.log_start_offset}..{log.log_end_offset}",
                ),
            )
            return None
        return led

    def _close(self, slot: FetchSlot, error: common_pb2.Error) -> None:
        """The partition reads no more and answers ``error``."""
        slot.closed = True
        self.urgent = True
        slot.records, slot.records_count, slot.available_bytes = b"", 0, 0
        slot.result.error.CopyFrom(error)
        self.errors.append(error.code)

    def answer(self) -> tuple[FetchedRecords, dict[str, tuple[int, int]]]:
        """The response with its records apart (``lanes.broker.fetch_wire``: protobuf would copy
        them twice), and the record bytes and records in it by topic."""
        sent: dict[str, tuple[int, int]] = {}
        for slot in self.slots:
            if slot.records:
                size, records = sent.get(slot.key.topic, (0, 0))
                sent[slot.key.topic] = (size + len(slot.records), records + slot.records_count)
        return FetchedRecords(self.response, [slot.records for slot in self.slots]), sent


class FetchAnswer(NamedTuple):
    """A fetch's response (its records apart), the record bytes and records in it by topic, and
    ``release``: call it once gRPC has sent the response (``context.add_done_callback``), which
    gives its records' memory back to the broker's fetch memory."""

    fetched: FetchedRecords
    sent: dict[str, tuple[int, int]]
    release: Callable[[], None]


class ConsumerFetches:
    """Serves consumers' Fetch requests within the broker's fetch memory; see the module docstring."""

    def __init__(self, replicas: ReplicaManager, fetch_memory_bytes: int) -> None:
        self._replicas = replicas
        self._memory = FetchMemory(fetch_memory_bytes)
        self._memory_freed = Broadcast()  # fetches gave memory back
        self.reads = BatchedReads()

    async def fetch(self, fetch: ConsumerFetch, limits: FetchLimits, holder: str = "") -> FetchAnswer:
        """Measure; until what arrived reaches ``min_bytes`` (or a partition must answer now),
        wait for a named partition to move and count again, until the wait ends; then read and
        answer. ``holder``: who asks (its principal), whose share of the fetch memory the
        records count against until ``release``."""
        purgatory: Purgatory = self._replicas.purgatory
        resolve = self._replicas.fetchable
        deadline = Deadline(limits.max_wait_ms / 1000)  # in real time, as the waits below
        ticket = purgatory.watch(fetch.keys, consumer=True)  # before measuring: a move meanwhile wakes us
        try:
            await self.reads.run(lambda shared: fetch.measure(resolve, shared), light=True)
            while not fetch.satisfied(limits.min_bytes) and not deadline.expired():
                await ticket.wait(deadline.remaining_s())
                ticket.close()
                ticket = purgatory.watch(fetch.keys, consumer=True)
                fetch.remeasure(self._replicas.partitions)
        finally:
            ticket.close()
        held = 0
        if fetch.available_bytes() > 0 or fetch.urgent:
            held = await self._read(fetch, limits, deadline, holder)
        fetched, sent = fetch.answer()
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._give_back(holder, held)

        return FetchAnswer(fetched, sent, release)

    async def _read(self, fetch: ConsumerFetch, limits: FetchLimits, deadline: Deadline, holder: str) -> int:
        """Read within a grant of the fetch memory: what was measured, at most ``max_bytes``
        (the read may exceed it by one batch). With nothing left to grant, wait for memory to be
        freed, holding none, until the wait ends (then answer without records). The bytes the
        answer holds."""
        resolve = self._replicas.fetchable
        wanted = max(1, min(limits.max_bytes, fetch.available_bytes()))
        while True:
            freed = self._memory_freed.ticket()
            granted = self._memory.grant(wanted, holder)
            if granted > 0:
                break
            if deadline.expired():
                return 0
            await Broadcast.wait(freed, deadline.remaining_s())
        read = 0
        try:
            read = await self.reads.run(
                lambda shared: fetch.read(resolve, granted, shared), light=True, light_bytes=granted
            )
        finally:
            self._memory.settle(granted, read, holder)
            if read < granted:
                self._memory_freed.notify_all()
        return read

    def _give_back(self, holder: str, held_bytes: int) -> None:
        if held_bytes:
            self._memory.settle(held_bytes, 0, holder)
            self._memory_freed.notify_all()
