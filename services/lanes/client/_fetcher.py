"""The fetcher behind a consumer (aiokafka's seam): it owns the consumer's positions, paused
partitions and fetched-but-unreturned records, and fetches from each partition's leader.

- ``positions``: the offset of the next record ``records`` returns per owned partition (None:
  not yet known, looked up per ``auto_offset_reset`` at the next fetch). Only this object writes
  it; the consumer changes ownership through ``assign``/``seek``/``release``.
- Fetching runs in rounds (``_prefetch``) while the caller works through what the earlier ones
  brought: a round asks every owned partition no fetch holds, from where its buffer ends, each
  leader's share a task of its own (one per broker, as Kafka's fetcher), and ends when the
  first leader's fetch ends; the others go on into the next round, so a broker where nothing
  comes (a long-poll) never holds back the next fetch from a busy one. Fetched
  batches are buffered as their wire bytes and decoded a batch at a time as polls take records
  (``_Buffered``); a fetch that brought records starts the next when it lands, until
  ``fetch_max_bytes`` wait to be decoded, so the broker reads ahead while polls decode. A fetch
  is a ``FetchStream`` call: while its answers come back full, the broker reads on from where
  each ended and sends that too (decision 0050), each answer buffered as it arrives (a waiting
  poll wakes at the first). Any change of ownership or position drops the buffer and the fetch
  under way (``drop_prefetch``). A consumer caught up at a broker (its last answer there was
  not full) asks the stream to ``follow`` (decision 0052): the broker long-polls again after each
  answer that brought records, so each record reaches the consumer as it is written, without a
  call per answer; each answer is awaited within a request's time of the last. A broker
  without ``FetchStream`` is asked with ``Fetch`` (one long-poll per answer).
- A moved leader is found again through metadata; OFFSET_OUT_OF_RANGE resets the position.

Owned by the client's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Iterable
from typing import NamedTuple

import grpc

from lanes.client._cluster import ClusterView
from lanes.clock import Clock
from lanes.deadline import Deadline, attempts
from lanes.errors import (
    CorruptRecordError,
    ErrorCode,
    LogTruncationError,
    OffsetOutOfRangeError,
    RetriableError,
    error_code,
    error_for,
)
from lanes.protocol.fetch_stream import FOLLOW_FOR_S, answer_is_full
from lanes.protocol.records import BatchHeader, TimestampType, decode_checked_batch, validate_batch
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2

#: Pause before looking a partition's leader or offsets up again.
_log = logging.getLogger(__name__)
_RETRY_PAUSE_S = 0.1


class ConsumerRecord(NamedTuple):
    """A record as a consumer sees it. A named tuple whose first five fields are a decoded
    record's, so the record codec builds it directly (in C) with the batch's fields appended:
    no per-record Python work between the wire and ``poll``."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    topic: str
    partition: int
    timestamp_type: TimestampType
    leader_epoch: int


class _Fetched(NamedTuple):
    """One fetch's bytes for a partition: whole batches, each checked when it arrived (``batches``:
    its position and header), the first possibly starting before ``start`` (records before it
    are skipped)."""

    data: bytes
    start: int
    batches: list[tuple[int, BatchHeader]]


def _records_from(header: BatchHeader, start: int) -> int:
    """How many of the batch's records are at or after ``start``, by its header: exact unless
    compaction left gaps in its offsets after ``start`` (then at most that)."""
    return max(0, min(header.records_count, header.last_offset - max(header.base_offset, start) + 1))


class _Buffered:
    """A partition's fetched records not yet returned by ``poll``: records decoded already (taken
    from the front without copying the rest), then fetched batches still in their wire bytes,
    decoded a batch at a time as polls need records. A fetch costs its bytes until then, not a
    Python object per record, and the next fetch, sent while polls decode this one, is read by the
    broker meanwhile.

    ``end_offset`` is where the next fetch of the partition continues (after the last batch);
    ``len`` counts the records left by the batch headers, exact once everything is decoded (a
    compacted batch holds fewer records than its offsets span). Owned by the client's loop.
    """

    __slots__ = (
        "_decoded",
        "_fetched",
        "_next",
        "_next_batch",
        "_partition",
        "_topic",
        "_undecoded",
        "end_offset",
        "fetched_bytes",
    )

    def __init__(self, topic: str, partition: int, end_offset: int) -> None:
        self._topic = topic
        self._partition = partition
        self._decoded: list[ConsumerRecord] = []
        self._next = 0
        self._fetched: deque[_Fetched] = deque()
        self._next_batch = 0  # index of the next batch to decode in the first fetch
        self._undecoded = 0  # records left in ``_fetched``, by their batch headers
        #: bytes of the fetches in ``_fetched`` (the decoded records left are at most a poll's and a batch's)
        self.fetched_bytes = 0
        self.end_offset = end_offset

    def __bool__(self) -> bool:
        return self._next < len(self._decoded) or bool(self._fetched)

    def __len__(self) -> int:
        return len(self._decoded) - self._next + self._undecoded

    def add(self, data: bytes, start: int) -> int:
        """Queue a fetch's batches (their records from ``start`` on) behind what is buffered.
        Each batch is checked whole (lengths, CRC, offsets that only grow) before its header is
        trusted to say where the next fetch continues; records are decoded when taken. Returns
        how many records it added (by the headers). Raises CorruptRecordError (nothing of this
        fetch is kept)."""
        records = 0
        position = 0
        end_offset = self.end_offset if self else start
        previous_end = -1
        batches = []
        while position < len(data):
            try:
                header = validate_batch(data, position)
            except CorruptRecordError as exc:
                raise CorruptRecordError(f"{self._topic}-{self._partition}: {exc}") from exc
            if header.base_offset < previous_end:
                raise CorruptRecordError(
                    f"{self._topic}-{self._partition}: batch at byte {position} begins at offset "
                    f"{header.base_offset}, before the previous batch's end {previous_end}"
                )
            previous_end = header.next_offset
            batches.append((position, header))
            records += _records_from(header, start)
            end_offset = max(end_offset, header.next_offset)
            position += header.size_bytes
        if batches:
            self._fetched.append(_Fetched(data, start, batches))
            self._undecoded += records
            self.fetched_bytes += len(data)
        self.end_offset = end_offset
        return records

    def take(self, count: int) -> list[ConsumerRecord]:
        """Up to ``count`` records from the front, decoding batches as needed: fewer only once
        nothing is left."""
        while len(self._decoded) - self._next < count and self._fetched:
            try:
                self._decode_batch()
            except Exception:
                if self._next < len(self._decoded):
                    break  # the records before the batch first; it raises at the next take
                raise
        chunk = self._decoded[self._next : self._next + count]
        self._next += len(chunk)
        return chunk

    def _decode_batch(self) -> None:
        fetched = self._fetched[0]
        position, header = fetched.batches[self._next_batch]
        batch = decode_checked_batch(fetched.data, position, header, record_type=ConsumerRecord, trailer=self._trailer)
        self._next_batch += 1
        if self._next_batch == len(fetched.batches):
            self._fetched.popleft()
            self._next_batch = 0
            self.fetched_bytes -= len(fetched.data)
        self._undecoded -= _records_from(header, fetched.start)
        decoded: list[ConsumerRecord] = batch.records  # type: ignore[assignment]  # decoded as ConsumerRecord
        if header.base_offset < fetched.start:  # only a fetch's first batch may begin before its start
            decoded = [record for record in decoded if record.offset >= fetched.start]
        if header.timestamp_type is TimestampType.LOG_APPEND_TIME:  # the broker's time, for every record
            decoded = [record._replace(timestamp=header.max_timestamp) for record in decoded]
        if self._next:
            del self._decoded[: self._next]
            self._next = 0
        self._decoded.extend(decoded)

    def _trailer(self, header: BatchHeader) -> tuple[str, int, TimestampType, int]:
        return (self._topic, self._partition, header.timestamp_type, header.partition_leader_epoch)


class Fetcher:
    """Positions, paused partitions, the record buffer and the fetches of one consumer."""

    def __init__(
        self,
        cluster: ClusterView,
        *,
        group_id: str | None,
        auto_offset_reset: str,
        fetch_min_bytes: int,
        fetch_max_wait_ms: int,
        fetch_max_bytes: int,
        max_partition_fetch_bytes: int,
        max_poll_records: int,
        request_timeout_s: float,
        clock: Clock,
    ) -> None:
        self._cluster = cluster
        self._group_id = group_id
        self.auto_offset_reset = auto_offset_reset
        self._min_bytes = fetch_min_bytes
        self._max_wait_ms = fetch_max_wait_ms
        self._max_bytes = fetch_max_bytes
        self._partition_max_bytes = max_partition_fetch_bytes
        self._max_poll_records = max_poll_records
        self._timeout_s = request_timeout_s
        self._clock = clock
        self.positions: dict[TopicPartition, int | None] = {}
        #: (position, leader epoch of the record before it), recorded as ``poll`` returns records:
        #: checked against a new leader's log before fetching from it (KIP-320). An entry whose
        #: position is no longer the partition's (a seek, a reset) is not checked.
        self._position_epochs: dict[TopicPartition, tuple[int, int]] = {}
        #: the leader epoch each partition was last fetched or checked at
        self._checked_epochs: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()
        self._buffer: dict[TopicPartition, _Buffered] = {}
        #: records the latest fetch brought (all partitions): if any, it starts the next when it lands
        self._last_fetch_records = 0
        #: the fetch round under way: it asks every owned, unpaused partition no leader's fetch
        #: holds, and ends when the first leader's fetch ends (``_fetch``)
        self._prefetch: asyncio.Task[None] | None = None
        #: the fetch under way at each leader (at most one per broker, as Kafka's fetcher), with
        #: the partitions it asks for; it outlives the round that started it when another leader's
        #: ended first (an idle broker's long-poll holds no busy broker's next fetch)
        self._leader_fetches: dict[str | None, _LeaderFetch] = {}
        #: set when an answer of the fetch under way is buffered (a poll waiting for records wakes)
        self._arrived: asyncio.Future[None] | None = None
        #: brokers whose last answer was full (this consumer is behind there): their FetchStream
        #: reads on; at the others it follows (decision 0052)
        self._reading_on: set[str] = set()
        #: brokers that do not offer FetchStream (an older version): asked with Fetch
        self._unary_fetch_only: set[str] = set()

    # -----------------------------------------------------------------------------------------
    # ownership and positions

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Own exactly ``partitions`` (positions of kept ones are kept, new ones unknown)."""
        wanted = set(partitions)
        self.drop_prefetch()
        self.positions = {tp: self.positions.get(tp) for tp in sorted(wanted)}
        self.paused &= wanted

    def add(self, positions: dict[TopicPartition, int | None]) -> None:
        """Own these partitions too, from these positions."""
        self.drop_prefetch()
        for partition in sorted(positions):
            self.positions[partition] = positions[partition]

    def release(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop owning ``partitions`` (revoked or lost)."""
        self.drop_prefetch()
        for partition in partitions:
            self.positions.pop(partition, None)
            self.paused.discard(partition)

    def seek(self, positions: dict[TopicPartition, int]) -> None:
        """Read each owned partition from its given offset next."""
        self.drop_prefetch()
        self.positions.update(positions)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self.drop_prefetch()
        self.paused.update(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch ``partitions`` again: a round still under way ends (not the leaders' fetches),
        so the next one asks for them at once, not when a following stream ends (a round that
        ended stays, to raise what it raised)."""
        resumed = self.paused.intersection(partitions)
        self.paused -= resumed
        if resumed and self._prefetch is not None and not self._prefetch.done():
            self._prefetch.cancel()
            self._prefetch = None

    def drop_prefetch(self) -> None:
        """Forget buffered records and cancel the fetches under way."""
        if self._prefetch is not None:
            self._prefetch.cancel()
            self._prefetch = None
        for fetch in self._leader_fetches.values():
            fetch.task.cancel()
        self._leader_fetches.clear()
        self._buffer.clear()

    def close(self) -> None:
        self.drop_prefetch()
        self.positions.clear()

    # -----------------------------------------------------------------------------------------
    # offsets

    async def list_offsets(
        self, partitions: list[TopicPartition], spec: broker_pb2.OffsetSpec, timestamp_ms: int = 0
    ) -> dict[TopicPartition, tuple[int, int]]:
        """(offset, timestamp) per partition: one ListOffsets request per leader, all leaders at
        once; partitions whose leader moved or did not answer are asked again within the timeout."""
        results: dict[TopicPartition, tuple[int, int]] = {}
        pending = list(dict.fromkeys(partitions))
        async for _ in attempts(Deadline(self._timeout_s, self._clock), _RETRY_PAUSE_S):
            if not pending:
                return results
            await self._refresh([tp.topic for tp in pending])
            by_leader: dict[str, list[TopicPartition]] = {}
            retry = []
            for partition in pending:
                address = self._cluster.leader_address(partition.topic, partition.partition)
                if address is None:
                    retry.append(partition)
                else:
                    by_leader.setdefault(address, []).append(partition)
            asked = list(by_leader.items())
            answers = await asyncio.gather(
                *(self._ask_offsets(address, wanted, spec, timestamp_ms) for address, wanted in asked),
                return_exceptions=True,
            )
            refusal: Exception | None = None
            for (address, wanted), answer in zip(asked, answers, strict=True):
                if isinstance(answer, grpc.aio.AioRpcError):
                    self._forget_leaders(wanted, suspect=address)
                    retry.extend(wanted)
                    continue
                if isinstance(answer, BaseException):
                    raise answer
                answered = {
                    TopicPartition(topic.topic, part.partition): part
                    for topic in answer.topics
                    for part in topic.partitions
                }
                for partition in wanted:
                    part = answered.get(partition)
                    if part is None:
                        retry.append(partition)
                        continue
                    error = error_for(part.error.code, part.error.message) if part.error.code else None
                    if error is None:
                        results[partition] = (part.offset, part.timestamp_ms)
                    elif error.retriable:
                        self._refused(partition, address, error.code)
                        retry.append(partition)
                    else:
                        refusal = refusal or error
            if refusal is not None:
                raise refusal
            pending = retry
            if not pending:
                return results
        raise error_for(ErrorCode.REQUEST_TIMED_OUT, f"offsets of {pending} could not be looked up")

    async def _ask_offsets(
        self, address: str, partitions: list[TopicPartition], spec: broker_pb2.OffsetSpec, timestamp_ms: int
    ) -> broker_pb2.ListOffsetsResponse:
        """One ListOffsets request for ``partitions``, all led by the broker at ``address``."""
        by_topic: dict[str, list[int]] = {}
        for partition in partitions:
            by_topic.setdefault(partition.topic, []).append(partition.partition)
        request = broker_pb2.ListOffsetsRequest(
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic=topic,
                    partitions=[
                        broker_pb2.ListOffsetsPartition(
                            partition=number, spec=spec, timestamp_ms=timestamp_ms, current_leader_epoch=-1
                        )
                        for number in numbers
                    ],
                )
                for topic, numbers in by_topic.items()
            ]
        )
        answer: broker_pb2.ListOffsetsResponse = await self._cluster.stub(address).ListOffsets(
            request, timeout=self._timeout_s
        )
        return answer

    async def ensure_positions(self, partitions: Iterable[TopicPartition]) -> None:
        missing = [tp for tp in partitions if self.positions.get(tp) is None]
        if not missing:
            return
        if self.auto_offset_reset == "none":
            where = f"group {self._group_id!r} has no committed offset" if self._group_id else "no position"
            raise OffsetOutOfRangeError(
                f"{where} for {', '.join(f'{tp.topic}-{tp.partition}' for tp in missing)} and auto_offset_reset is "
                "none: seek() to a position, reset the group's offsets, or use earliest or latest"
            )
        spec = (
            broker_pb2.OFFSET_SPEC_EARLIEST if self.auto_offset_reset == "earliest" else broker_pb2.OFFSET_SPEC_LATEST
        )
        for partition, (offset, _) in (await self.list_offsets(missing, spec)).items():
            if partition in self.positions and self.positions[partition] is None:  # (still owned, not
                self.positions[partition] = offset  # set meanwhile by a seek, records or another lookup)

    # -----------------------------------------------------------------------------------------
    # fetching

    async def records(self, deadline: Deadline) -> list[ConsumerRecord]:
        """Up to ``max_poll_records`` buffered or fetched records of owned, unpaused partitions,
        waiting for a fetch until ``deadline``; positions move past what is returned. The next
        fetch starts before returning, so it runs while the caller works (and while later polls
        decode what the last one brought)."""
        while True:
            if not self._buffered():
                self._collect_prefetch()
                if self._prefetch is None:  # (a long poll asks again after each wait, as Kafka's)
                    self._start_fetch(min(int(deadline.remaining_s() * 1000), self._max_wait_ms))
                if self._prefetch is not None:
                    await self._wait_for_answer(self._prefetch, deadline)
                    self._collect_prefetch()  # raises once what it raised
                else:  # nothing to fetch (every partition paused): not a busy wait until the deadline
                    await asyncio.sleep(min(deadline.remaining_s(), _RETRY_PAUSE_S))
            records = self._take()
            if records or deadline.expired():
                prefetch = self._prefetch
                if prefetch is not None and prefetch.done() and not prefetch.cancelled() and not prefetch.exception():
                    self._prefetch = None  # fetched: its records are buffered (a failure is raised next time)
                if self._prefetch is None:
                    self._start_fetch(self._max_wait_ms)
                return records

    async def _wait_for_answer(self, fetch: asyncio.Task[None], deadline: Deadline) -> None:
        """Until ``fetch`` buffers an answer (a stream's first: its later ones arrive while the
        caller works) or ends, or ``deadline``."""
        arrived: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._arrived = arrived
        try:
            await asyncio.wait([fetch, arrived], timeout=deadline.remaining_s(), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._arrived = None
            arrived.cancel()

    def _collect_prefetch(self) -> None:
        """Forget the fetch under way once it finished, raising what it raised."""
        if self._prefetch is not None and self._prefetch.done():
            done, self._prefetch = self._prefetch, None
            done.result()

    def _buffered(self) -> bool:
        return any(self._buffer.values())

    def _buffered_bytes(self) -> int:
        """Bytes of fetched batches waiting to be decoded (at most about ``fetch_max_bytes``)."""
        return sum(buffered.fetched_bytes for buffered in self._buffer.values())

    def _take(self) -> list[ConsumerRecord]:
        """Up to ``max_poll_records`` records from the buffers, a partition at a time; each
        partition taken from goes to the back, so that every partition with records gets its
        turn. A batch that does not decode raises, unless records were taken before it: those
        are returned and its partition goes first, to raise at the next poll (the position
        stays before the batch)."""
        taken: list[ConsumerRecord] = []
        for partition in list(self._buffer):
            room = self._max_poll_records - len(taken)
            if room <= 0:
                break
            buffered = self._buffer[partition]
            if not buffered:
                continue
            try:
                chunk = buffered.take(room)
            except Exception:
                if not taken:
                    raise
                self._buffer = {partition: self._buffer.pop(partition), **self._buffer}
                break
            self._buffer[partition] = self._buffer.pop(partition)
            if chunk and partition in self.positions and partition not in self.paused:
                taken.extend(chunk)
                self.positions[partition] = chunk[-1].offset + 1
                self._position_epochs[partition] = (chunk[-1].offset + 1, chunk[-1].leader_epoch)
        return taken

    def _start_fetch(self, max_wait_ms: int) -> None:
        """Fetch every owned, unpaused partition from where its buffer ends, unless
        ``fetch_max_bytes`` of fetched batches wait to be decoded already (each leader's fetch
        asks for the room left when it starts: with fetches at N brokers the buffers hold at most
        about N + 1 times that). One fetch asks for every partition (not one after another as
        each runs dry); a fetch that brought records starts the next when it lands
        (``_fetched``), so the broker reads ahead while polls decode and the caller works, as
        librdkafka's prefetch does: a partition's fetches are not bounded by one round trip
        per poll."""
        if self._buffered_bytes() >= self._max_bytes:
            return
        held = {tp for fetch in self._leader_fetches.values() if not fetch.task.done() for tp in fetch.partitions}
        fetchable = [tp for tp in self.positions if tp not in self.paused and tp not in held]
        if fetchable or self._leader_fetches:
            self._prefetch = asyncio.get_running_loop().create_task(self._fetch(fetchable, max_wait_ms))
            self._prefetch.add_done_callback(self._fetched)

    def _fetched(self, fetch: asyncio.Task[None]) -> None:
        """A fetch ended (the loop): if it brought records, the next one starts now. A failed
        one stays for ``records`` to raise; an empty one (caught up) leaves the next, a long
        poll, to the next poll."""
        if fetch.cancelled() or fetch.exception() is not None or fetch is not self._prefetch:
            return  # (a dropped round's failure is seen here: not reported as never retrieved)
        if self._last_fetch_records > 0:
            self._prefetch = None
            self._start_fetch(self._max_wait_ms)

    def _fetch_offset(self, partition: TopicPartition) -> int:
        """Where the partition's next fetch starts: after what was fetched since the position last
        changed (past a compacted batch's trailing gap, too), else at the position."""
        buffered = self._buffer.get(partition)
        return buffered.end_offset if buffered is not None else self.positions[partition] or 0

    async def _fetch(self, partitions: list[TopicPartition], max_wait_ms: int) -> None:
        """One round: ``partitions`` (those no leader's fetch holds) are asked of their leaders,
        each leader's fetch a task of its own; the round ends when the first of every leader's
        fetch under way ends (raising what it raised), the others going on."""
        self._last_fetch_records = 0  # counted as answers are buffered
        self._collect_leader_fetches()
        await self.ensure_positions(partitions)
        unknown = {tp.topic for tp in partitions if self._cluster.leader_address(tp.topic, tp.partition) is None}
        await self._refresh(sorted(unknown))
        unchecked = [tp for tp in partitions if self._leader_changed(tp)]
        if unchecked:
            await self._check_positions(unchecked)
        by_leader: dict[str | None, list[TopicPartition]] = {}
        for partition in partitions:
            by_leader.setdefault(self._cluster.leader_address(partition.topic, partition.partition), []).append(
                partition
            )
        # a fetch that ended while this round looked leaders up and checked positions: its
        # partitions are not in this round, so the round ends at once and the next asks for them
        ended_meanwhile = self._collect_leader_fetches()
        loop = asyncio.get_running_loop()
        for leader, group in by_leader.items():
            asked = group
            under_way = self._leader_fetches.get(leader)
            if under_way is not None:  # a partition moved to a broker fetched from already: one fetch
                under_way.task.cancel()  # (between answers: what it buffered stays, the next reads on)
                asked = sorted({*under_way.partitions, *group})
            task = loop.create_task(self._fetch_from(leader, asked, max_wait_ms))
            task.add_done_callback(_retrieve)
            self._leader_fetches[leader] = _LeaderFetch(task, frozenset(asked))
        if self._leader_fetches and not ended_meanwhile:
            tasks = [fetch.task for fetch in self._leader_fetches.values()]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            self._collect_leader_fetches()

    def _collect_leader_fetches(self) -> bool:
        """Forget the leaders' fetches that ended, raising the first failure among them (each
        leader's fetch fails on its own; one failure at a time reaches the caller); whether any
        ended."""
        ended = [leader for leader, fetch in self._leader_fetches.items() if fetch.task.done()]
        for task in [self._leader_fetches.pop(leader).task for leader in ended]:
            if not task.cancelled() and task.exception() is not None:
                task.result()
        return bool(ended)

    def _leader_changed(self, partition: TopicPartition, epoch: int | None = None) -> bool:
        """Whether the partition's position came from an older leader than the one known now (or
        of ``epoch``), and can be checked (its records carried an epoch)."""
        recorded = self._position_epochs.get(partition)
        if recorded is None or recorded[1] < 0 or recorded[0] != self.positions.get(partition):
            return False
        if epoch is None:
            epoch = self._cluster.leader_epoch(partition.topic, partition.partition)
        return epoch >= 0 and epoch > self._checked_epochs.get(partition, -1)

    async def _check_positions(self, partitions: list[TopicPartition]) -> None:
        """KIP-320: ask each partition's new leader where the epoch of the last record returned
        ends in its log. If it ends before the position, records the consumer read are not in the
        new leader's log (they were truncated: possible only when every replica holding them lost
        them): the position goes back to where the logs agree, with a warning, and with
        ``auto_offset_reset="none"`` a LogTruncationError is raised instead. Records buffered from
        the old leader are dropped first (they are fetched again from the new one)."""
        by_leader: dict[str, list[TopicPartition]] = {}
        for partition in partitions:
            self._buffer.pop(partition, None)
            address = self._cluster.leader_address(partition.topic, partition.partition)
            if address is not None:
                by_leader.setdefault(address, []).append(partition)
        for address, group in by_leader.items():
            asked = {tp: self._cluster.leader_epoch(tp.topic, tp.partition) for tp in group}
            topics: dict[str, broker_pb2.OffsetForLeaderEpochTopic] = {}
            for partition in group:
                topics.setdefault(
                    partition.topic, broker_pb2.OffsetForLeaderEpochTopic(topic=partition.topic)
                ).partitions.append(
                    broker_pb2.OffsetForLeaderEpochPartition(
                        partition=partition.partition,
                        current_leader_epoch=asked[partition],
                        leader_epoch=self._position_epochs[partition][1],
                    )
                )
            request = broker_pb2.OffsetForLeaderEpochRequest(replica_id=-1, topics=list(topics.values()))
            try:
                answer = await self._cluster.stub(address).OffsetForLeaderEpoch(request, timeout=self._timeout_s)
            except grpc.aio.AioRpcError:
                self._forget_leaders(group, suspect=address)
                continue
            for topic in answer.topics:
                for part in topic.partitions:
                    partition = TopicPartition(topic.topic, part.partition)
                    if partition not in asked:
                        continue
                    if part.error.code:
                        self._refused(partition, address, error_code(part.error.code))
                        continue
                    self._check_position(partition, part.end.leader_epoch, part.end.end_offset)
                    self._checked_epochs[partition] = asked[partition]

    def _check_position(self, partition: TopicPartition, epoch: int, end_offset: int) -> None:
        position, position_epoch = self._position_epochs[partition]
        if end_offset < 0 or end_offset >= position or self.positions.get(partition) != position:
            return  # the new leader's log holds everything read (or cannot tell: nothing to undo)
        message = (
            f"{partition.topic}-{partition.partition}: records before the position {position} (leader epoch "
            f"{position_epoch}) are not in the new leader's log, which diverges from offset {end_offset}"
        )
        if self.auto_offset_reset == "none":
            raise LogTruncationError(f"{message}; seek() to continue", ErrorCode.OFFSET_OUT_OF_RANGE)
        _log.warning("%s: reading on from %d", message, end_offset)
        self.positions[partition] = end_offset
        self._position_epochs[partition] = (end_offset, epoch)

    async def _fetch_from(self, address: str | None, partitions: list[TopicPartition], max_wait_ms: int) -> None:
        if address is None:
            self._forget_leaders(partitions)
            await asyncio.sleep(_RETRY_PAUSE_S)  # the next fetch looks for the leader again
            return
        await self._cluster.unthrottled(address)  # a broker throttling this client is not asked meanwhile
        epochs = {
            partition: self._cluster.leader_epoch(partition.topic, partition.partition) for partition in partitions
        }
        # a leader that changed since the check in _fetch is checked at the next fetch first
        asked = [partition for partition in partitions if not self._leader_changed(partition, epochs[partition])]
        if not asked:
            await asyncio.sleep(_RETRY_PAUSE_S)  # their check failed: not at once again
            return
        # (this fetch holds the partitions it left out until it ends: it does not follow then)
        all_asked, partitions = len(asked) == len(partitions), asked
        topics: dict[str, broker_pb2.FetchTopic] = {}
        fetched = {partition: self._fetch_offset(partition) for partition in partitions}
        for partition in partitions:
            topics.setdefault(partition.topic, broker_pb2.FetchTopic(topic=partition.topic)).partitions.append(
                broker_pb2.FetchPartition(
                    partition=partition.partition,
                    fetch_offset=fetched[partition],
                    current_leader_epoch=epochs[partition],
                    partition_max_bytes=self._partition_max_bytes,
                )
            )
        room = max(1, self._max_bytes - self._buffered_bytes())
        streamed = address not in self._unary_fetch_only
        follow = streamed and all_asked and address not in self._reading_on  # caught up: each record as it comes
        request = broker_pb2.FetchRequest(
            max_wait_ms=max_wait_ms,
            min_bytes=self._min_bytes,
            max_bytes=room,
            topics=list(topics.values()),
            follow=follow,
        )
        # each answer within a request's time of the last; a unary fetch and a stream reading a
        # backlog within it in all, a following stream (its length depends on the records that
        # come) within the time the broker follows for and its last answer's
        timeout_s = self._timeout_s + max_wait_ms / 1000
        stub = self._cluster.stub(address)
        call_timeout_s = timeout_s + FOLLOW_FOR_S if follow else timeout_s
        stream = stub.FetchStream(request, timeout=call_timeout_s) if streamed else None
        answers = aiter(_one(stub.Fetch(request, timeout=timeout_s)) if stream is None else stream)
        failed = full = False
        try:
            while True:
                try:
                    async with asyncio.timeout(timeout_s):
                        answer = await anext(answers)
                except StopAsyncIteration:
                    break
                refused, sizes = self._take_answer(answer, address, fetched, epochs)
                failed |= refused
                for partition in fetched:  # the stream's next answer reads on from there
                    buffered = self._buffer.get(partition)
                    if buffered is not None:
                        fetched[partition] = buffered.end_offset
                full = answer_is_full(((size, self._partition_max_bytes) for size in sizes), room)
                if self._buffered_bytes() >= self._max_bytes:
                    break  # enough to decode: the rest waits for the next fetch
                if failed or answer.throttle_time_ms or not (full or (follow and any(sizes))):
                    break  # the broker ends the stream here: the next fetch need not wait for its end
            if full:
                self._reading_on.add(address)
            else:
                self._reading_on.discard(address)
        except TimeoutError:  # no answer within a request's time: as a call past its deadline
            self._forget_leaders(partitions, suspect=address)
            await asyncio.sleep(_RETRY_PAUSE_S)  # (not at once again: other brokers' rounds go on)
            return
        except grpc.aio.AioRpcError as exc:
            if exc.code() is grpc.StatusCode.UNIMPLEMENTED and address not in self._unary_fetch_only:
                self._unary_fetch_only.add(address)  # asked again at the next fetch, with Fetch
                return
            self._forget_leaders(partitions, suspect=address)
            await asyncio.sleep(_RETRY_PAUSE_S)
            return
        finally:
            if stream is not None:
                stream.cancel()  # (nothing when it ended: a broken-off stream stops the broker reading)
        if failed:
            await asyncio.sleep(_RETRY_PAUSE_S)  # the next fetch looks the leaders up again

    def _take_answer(
        self,
        answer: broker_pb2.FetchResponse,
        address: str,
        fetched: dict[TopicPartition, int],
        epochs: dict[TopicPartition, int],
    ) -> tuple[bool, list[int]]:
        """Buffer one answer of a fetch from ``address`` that read each partition from
        ``fetched``; whether a partition was refused (the leaders are looked up again), and the
        record bytes each partition brought (a bytes field is copied at each read: read once)."""
        self._cluster.throttle(address, answer.throttle_time_ms)
        failed = False
        sizes: list[int] = []
        for topic in answer.topics:
            for part in topic.partitions:
                records = part.records
                sizes.append(len(records))
                partition = TopicPartition(topic.topic, part.partition)
                code = error_code(part.error.code)
                if code is ErrorCode.OFFSET_OUT_OF_RANGE and fetched.get(partition) != self.positions.get(partition):
                    self._buffer.pop(partition, None)  # a fetch ahead of the position: read again from it
                    continue
                if code is ErrorCode.OFFSET_OUT_OF_RANGE:
                    self.positions[partition] = None  # reset per auto_offset_reset at the next fetch
                    self._buffer.pop(partition, None)  # read ahead of a log that was cut back
                    if self.auto_offset_reset == "none":
                        raise OffsetOutOfRangeError(part.error.message)
                    continue
                if code is not ErrorCode.NONE:
                    self._refused(partition, address, code)
                    failed = True
                    continue
                if partition in fetched:  # served by the leader of this epoch: positions hold there
                    self._checked_epochs[partition] = max(self._checked_epochs.get(partition, -1), epochs[partition])
                    self._buffer_fetched(partition, fetched[partition], topic.topic, records)
        if self._arrived is not None and not self._arrived.done():
            self._arrived.set_result(None)
        return failed, sizes

    def _buffer_fetched(self, partition: TopicPartition, offset: int, topic: str, records: bytes) -> None:
        """Buffer the batches fetched from ``offset``, behind the partition's buffered ones."""
        buffered = self._buffer.get(partition)
        if buffered is None:
            buffered = self._buffer[partition] = _Buffered(topic, partition.partition, offset)
        self._last_fetch_records += buffered.add(records, offset)

    def _forget_leaders(self, partitions: Iterable[TopicPartition], suspect: str | None = None) -> None:
        for partition in partitions:
            self._cluster.forget_leader(partition.topic, partition.partition, suspect)

    def _refused(self, partition: TopicPartition, address: str, code: ErrorCode | None) -> None:
        """The broker at ``address`` answered ``code`` for ``partition`` (``ClusterView.refused``)."""
        self._cluster.refused(partition.topic, partition.partition, address, code or ErrorCode.UNKNOWN_SERVER_ERROR)

    async def _refresh(self, topics: list[str]) -> None:
        """Refresh leaders; an unknown topic raises, an unreachable cluster is retried later."""
        if not topics:
            return
        try:
            errors = await self._cluster.refresh(topics)
        except RetriableError:
            return  # no broker answered: the next fetch or lookup tries again
        for error in errors.values():
            if error_code(error.code) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise error_for(error.code, error.message)
        for partition in self.positions:
            count = self._cluster.partition_counts.get(partition.topic)
            if partition.topic in topics and count is not None and partition.partition >= count:
                raise error_for(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"{partition.topic} has partitions 0..{count - 1}; partition {partition.partition} does not exist "
                    "(assign an existing one, or add partitions with Admin.create_partitions)",
                )


class _LeaderFetch(NamedTuple):
    """A leader's fetch under way and the partitions it asks for."""

    task: asyncio.Task[None]
    partitions: frozenset[TopicPartition]


def _retrieve(task: asyncio.Task[None]) -> None:
    """Mark a leader's fetch's failure seen (it is raised by the round that collects it; one
    dropped by a seek is not reported as never retrieved)."""
    if not task.cancelled():
        task.exception()


async def _one(call: Awaitable[broker_pb2.FetchResponse]) -> AsyncIterator[broker_pb2.FetchResponse]:
    """A unary call's answer as a stream of one."""
    yield await call
