"""Consumers' Fetch requests: ``ConsumerFetches`` serves them, ``ConsumerFetch`` is one while it
is answered (each partition's next offset and the record bytes read for it so far).

A long-poll reads in passes: the first when the fetch arrives, then one each time a partition it
names moved (its high-water mark or leader epoch changed), each reading only what arrived since
the one before. A fetch waiting for ``min_bytes`` therefore never reads a byte twice (eight
fetches asking for 2 GiB must not re-read a large partition on every append). The record bytes a
fetch holds come out of the broker's fetch memory (``FetchMemory``): a pass reads only into what
it was granted, and a fetch with no grant waits for memory to be freed rather than for a move.

Threads: ``read_pass`` runs in a worker thread while the fetch's own coroutine awaits it;
``moved`` and ``answer`` run on the event loop. Nothing else touches a ``ConsumerFetch``.
``ConsumerFetches`` is owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from lanes.broker.fetch_limits import FetchLimits, FetchMemory
from lanes.broker.partition import Partition
from lanes.broker.purgatory import Purgatory
from lanes.broker.replica_manager import ReplicaManager
from lanes.deadline import Deadline
from lanes.errors import ErrorCode, OffsetOutOfRangeError
from lanes.rpc.wire import wire_error
from lanes.runtime.broadcast import Broadcast
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2

#: The partition a fetch may read ``key`` from, or the error to answer: given the key, the
#: consumer's leader epoch and the offset it reads next.
Resolve = Callable[[TopicPartition, int, int], "Partition | common_pb2.Error"]


@dataclass
class FetchSlot:
    """One partition of the fetch. Invariant: ``chunks`` are whole batches, in log order,
    ending just below ``next_offset``; ``read_bytes`` is their length."""

    key: TopicPartition
    result: broker_pb2.FetchPartitionResponse
    current_leader_epoch: int
    next_offset: int
    limit_bytes: int
    chunks: list[bytes] = field(default_factory=list)
    read_bytes: int = 0
    records: int = 0
    #: answered with an error, or its log moved under what was read: it reads no more
    closed: bool = False
    #: (leader epoch, high-water mark) at its last pass: a change is worth another pass
    seen: tuple[int | None, int] | None = None


class ConsumerFetch:
    """The partitions of one Fetch request, in request order, and what was read for them."""

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
                    )
                )
        self.keys = [slot.key for slot in self.slots]
        self.read_bytes = 0
        #: a partition must answer now (an error, or its log moved under it)
        self.urgent = False
        #: the error codes answered, for the partition error metric
        self.errors: list[int] = []

    def read_pass(self, resolve: Resolve, max_bytes: int) -> int:
        """Read what arrived since the last pass, at most ``max_bytes`` (the first batch of the
        whole fetch even when larger, so a consumer always makes progress); the bytes read.
        Runs in a worker thread."""
        read_now = 0
        for slot in self.slots:
            if slot.closed:
                continue
            led = resolve(slot.key, slot.current_leader_epoch, slot.next_offset)
            if not isinstance(led, Partition):
                self._close(slot, led)
                continue
            log = led.log
            high_watermark = log.high_watermark
            slot.seen = (led.leader_epoch, high_watermark)
            slot.result.high_watermark = high_watermark
            slot.result.last_stable_offset = high_watermark
            slot.result.log_start_offset = log.log_start_offset
            # In range is up to the log end, as in Kafka: between the high-water mark and the log
            # end (a lagging follower, a new leader) the answer is empty, not an error a consumer
            # would reset its position on.
            if not log.log_start_offset <= slot.next_offset <= log.log_end_offset:
                self._close(
                    slot,
                    wire_error(
                        ErrorCode.OFFSET_OUT_OF_RANGE,
                        f"offset {slot.next_offset} is outside {log.log_start_offset}..{log.log_end_offset}",
                    ),
                )
                continue
            if not slot.chunks:
                slot.result.error.CopyFrom(wire_error(ErrorCode.NONE))
            limit = min(slot.limit_bytes - slot.read_bytes, max_bytes - read_now)
            if slot.next_offset >= high_watermark or limit <= 0:
                continue  # nothing committed to read yet (the long-poll waits for the mark), or no room
            try:
                read = log.read(
                    slot.next_offset, limit, upper_bound_offset=high_watermark, min_one_batch=self.read_bytes == 0
                )
            except OffsetOutOfRangeError as exc:  # the log moved meanwhile (retention, truncation)
                self._close(slot, wire_error(ErrorCode.OFFSET_OUT_OF_RANGE, exc.message))
                continue
            if read.records:
                slot.chunks.append(read.records)
                slot.read_bytes += len(read.records)
                slot.records += read.records_count
                slot.next_offset = read.next_offset
                read_now += len(read.records)
                self.read_bytes += len(read.records)
        return read_now

    def _close(self, slot: FetchSlot, error: common_pb2.Error) -> None:
        """The partition reads no more. With nothing read yet it answers ``error``; what it read
        before stays its answer (the consumer learns of the change at its next fetch)."""
        slot.closed = True
        self.urgent = True
        if not slot.chunks:
            slot.result.error.CopyFrom(error)
            self.errors.append(error.code)

    def moved(self, partitions: Mapping[TopicPartition, Partition]) -> bool:
        """Whether a partition still read changed since its last pass (cheap: on the loop)."""
        for slot in self.slots:
            if slot.closed:
                continue
            partition = partitions.get(slot.key)
            if partition is None or (partition.leader_epoch, partition.log.high_watermark) != slot.seen:
                return True
        return False

    def answer(self) -> tuple[broker_pb2.FetchResponse, dict[str, tuple[int, int]]]:
        """The response, and the record bytes and records in it by topic."""
        sent: dict[str, tuple[int, int]] = {}
        for slot in self.slots:
            if slot.chunks:
                slot.result.records = slot.chunks[0] if len(slot.chunks) == 1 else b"".join(slot.chunks)
                size, records = sent.get(slot.key.topic, (0, 0))
                sent[slot.key.topic] = (size + slot.read_bytes, records + slot.records)
        return self.response, sent


class ConsumerFetches:
    """Serves consumers' Fetch requests within the broker's fetch memory; see the module docstring."""

    def __init__(self, replicas: ReplicaManager, fetch_memory_bytes: int) -> None:
        self._replicas = replicas
        self._memory = FetchMemory(fetch_memory_bytes)
        self._memory_freed = Broadcast()  # fetches gave memory back

    async def fetch(
        self, fetch: ConsumerFetch, limits: FetchLimits
    ) -> tuple[broker_pb2.FetchResponse, dict[str, tuple[int, int]]]:
        """Read what is there; while that is under ``min_bytes``, wait for a named partition to
        move and read what arrived, until the wait ends. The response and what it holds by topic
        (``ConsumerFetch.answer``)."""
        purgatory: Purgatory = self._replicas.purgatory
        deadline = Deadline(limits.max_wait_ms / 1000)  # in real time, as the wait on the signal
        held = 0  # what this fetch holds of the fetch memory, its grant in flight included
        try:
            due = True  # a pass is due: the first, or a partition moved, or memory was freed
            while True:
                # tickets before reading: a move or a release meanwhile wakes us
                with purgatory.watch(fetch.keys) as ticket:
                    memory_freed = self._memory_freed.ticket()
                    if due or fetch.moved(self._replicas.partitions):
                        due = False
                        granted = self._memory.grant(limits.max_bytes - fetch.read_bytes)
                        if granted == 0:
                            due = True  # nothing to read into: wait for a release, not for a move
                        else:
                            held += granted
                            read = await asyncio.to_thread(fetch.read_pass, self._replicas.fetchable, granted)
                            held += read - granted
                            self._settle(granted, read)
                            if fetch.read_bytes >= limits.min_bytes or fetch.urgent:
                                break
                    if deadline.expired():
                        break
                    await purgatory.wait_either(ticket, memory_freed if due else None, deadline.remaining_s())
            return fetch.answer()
        finally:
            self._settle(held, 0)

    def _settle(self, granted_bytes: int, read_bytes: int) -> None:
        """A read took ``read_bytes`` of a ``granted_bytes`` grant (an answered fetch: 0 of what
        it held); fetches waiting for memory try again when some was freed."""
        self._memory.settle(granted_bytes, read_bytes)
        if read_bytes < granted_bytes:
            self._memory_freed.notify_all()
