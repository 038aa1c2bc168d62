"""The Consumer, free mode: the application assigns partitions and keeps its positions.

``lanes.aio.Consumer`` is the asynchronous core; ``lanes.Consumer`` the synchronous facade.

- ``assign`` partitions, ``seek`` / ``seek_to_beginning`` / ``seek_to_end`` them, read
  ``position``; a partition without a position starts per ``auto_offset_reset`` (earliest or
  latest; ``none`` raises).
- ``poll(timeout_ms)`` returns up to ``max_poll_records`` records in offset order per partition,
  fetching from each partition's leader (long-poll up to ``fetch_max_wait_ms``); while the caller
  processes them, the next fetch is already under way (prefetch). Paused partitions are not
  fetched. A moved leader is found again through metadata.
- ``offsets_for_times``, ``beginning_offsets``, ``end_offsets`` look offsets up.
Consumer groups (subscribe, commit) arrive with issue #5: ``group_id`` is refused until then, and
the fetch path (positions, buffer, prefetch) is what group membership will drive.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import grpc

from lanes.client import _loop
from lanes.client._cluster import ClusterView
from lanes.protocol.errors import (
    ErrorCode,
    LanesError,
    OffsetOutOfRangeError,
    RetriableError,
    error_code,
    error_for,
)
from lanes.protocol.records import TimestampType, decode_batches
from lanes.v1 import broker_pb2, broker_pb2_grpc

T = TypeVar("T")


@dataclass(frozen=True, order=True)
class TopicPartition:
    """A partition of a topic."""

    topic: str
    partition: int


@dataclass(frozen=True)
class ConsumerRecord:
    """A record as a consumer sees it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    leader_epoch: int


class AsyncConsumer:
    """Reads assigned partitions (asynchronously)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        group_id: str | None = None,
        auto_offset_reset: str = "latest",
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 50 * 1024 * 1024,
        max_partition_fetch_bytes: int = 1024 * 1024,
        max_poll_records: int = 500,
        request_timeout_ms: int = 30_000,
    ) -> None:
        if group_id is not None:
            raise LanesError(
                "consumer groups arrive with issue #5: use assign() without group_id", ErrorCode.INVALID_REQUEST
            )
        if auto_offset_reset not in {"earliest", "latest", "none"}:
            raise LanesError("auto_offset_reset must be earliest, latest or none", ErrorCode.INVALID_REQUEST)
        self.bootstrap = [a.strip() for a in bootstrap.split(",") if a.strip()]
        self.auto_offset_reset = auto_offset_reset
        self._min_bytes = fetch_min_bytes
        self._max_wait_ms = fetch_max_wait_ms
        self._max_bytes = fetch_max_bytes
        self._partition_max_bytes = max_partition_fetch_bytes
        self._max_poll_records = max_poll_records
        self._timeout_s = request_timeout_ms / 1000
        self._positions: dict[TopicPartition, int | None] = {}
        self._paused: set[TopicPartition] = set()
        self._buffer: dict[TopicPartition, list[ConsumerRecord]] = {}
        self._prefetch: asyncio.Task[None] | None = None
        self._cluster = ClusterView(self.bootstrap, self._timeout_s)

    # -----------------------------------------------------------------------------------------
    # assignment and positions

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions from now on (positions of kept ones are kept)."""
        wanted = set(partitions)
        self._drop_prefetch()
        self._positions = {tp: self._positions.get(tp) for tp in sorted(wanted)}
        self._paused &= wanted

    def assignment(self) -> set[TopicPartition]:
        """The assigned partitions."""
        return set(self._positions)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """The next record read from ``partition`` is at ``offset``."""
        self._check_assigned(partition)
        self._drop_prefetch()
        self._positions[partition] = offset

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Move to the first retained record (every assigned partition when none are named)."""
        await self._seek_to(partitions, broker_pb2.OFFSET_SPEC_EARLIEST)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Move past the last record (every assigned partition when none are named)."""
        await self._seek_to(partitions, broker_pb2.OFFSET_SPEC_LATEST)

    async def _seek_to(self, partitions: tuple[TopicPartition, ...], spec: broker_pb2.OffsetSpec) -> None:
        targets = list(partitions) or list(self._positions)
        for partition in targets:
            self._check_assigned(partition)
        offsets = await self._list_offsets(targets, spec)
        self._drop_prefetch()
        for partition, (offset, _) in offsets.items():
            self._positions[partition] = offset

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record to read from ``partition``."""
        self._check_assigned(partition)
        await self._ensure_positions([partition])
        position = self._positions[partition]
        assert position is not None
        return position

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching these partitions (positions are kept)."""
        self._drop_prefetch()
        self._paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch these partitions again."""
        self._paused.difference_update(partitions)

    def paused(self) -> set[TopicPartition]:
        """The paused partitions."""
        return set(self._paused)

    def _check_assigned(self, partition: TopicPartition) -> None:
        if partition not in self._positions:
            raise LanesError(
                f"{partition.topic}-{partition.partition} is not assigned; assign() it first", ErrorCode.INVALID_REQUEST
            )

    def _drop_prefetch(self) -> None:
        if self._prefetch is not None:
            self._prefetch.cancel()
            self._prefetch = None
        self._buffer.clear()

    # -----------------------------------------------------------------------------------------
    # offsets

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """First retained offset of each partition."""
        return {
            tp: offset
            for tp, (offset, _) in (await self._list_offsets(list(partitions), broker_pb2.OFFSET_SPEC_EARLIEST)).items()
        }

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The high-water mark of each partition (the offset the next record will get)."""
        return {
            tp: offset
            for tp, (offset, _) in (await self._list_offsets(list(partitions), broker_pb2.OFFSET_SPEC_LATEST)).items()
        }

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        """(offset, timestamp) of the first record at or after each timestamp, or None if none."""
        found: dict[TopicPartition, tuple[int, int] | None] = {}
        for partition, timestamp in timestamps.items():
            result = await self._list_offsets([partition], broker_pb2.OFFSET_SPEC_TIMESTAMP, timestamp)
            offset, stamp = result[partition]
            found[partition] = None if offset < 0 else (offset, stamp)
        return found

    async def _list_offsets(
        self, partitions: list[TopicPartition], spec: broker_pb2.OffsetSpec, timestamp_ms: int = 0
    ) -> dict[TopicPartition, tuple[int, int]]:
        results: dict[TopicPartition, tuple[int, int]] = {}
        deadline = time.monotonic() + self._timeout_s
        pending = list(partitions)
        while pending:
            await self._refresh([tp.topic for tp in pending])
            retry = []
            for partition in pending:
                request = broker_pb2.ListOffsetsRequest(
                    topics=[
                        broker_pb2.ListOffsetsTopic(
                            topic=partition.topic,
                            partitions=[
                                broker_pb2.ListOffsetsPartition(
                                    partition=partition.partition,
                                    spec=spec,
                                    timestamp_ms=timestamp_ms,
                                    current_leader_epoch=-1,
                                )
                            ],
                        )
                    ]
                )
                try:
                    answer = await self._stub_for(partition).ListOffsets(request, timeout=self._timeout_s)
                except (grpc.aio.AioRpcError, LanesError):
                    retry.append(partition)
                    continue
                part = answer.topics[0].partitions[0]
                error = error_for(part.error.code, part.error.message) if part.error.code else None
                if error is None:
                    results[partition] = (part.offset, part.timestamp_ms)
                elif error.retriable:
                    retry.append(partition)
                else:
                    raise error
            if retry and time.monotonic() > deadline:
                raise error_for(ErrorCode.REQUEST_TIMED_OUT, f"offsets of {retry} could not be looked up")
            if retry:
                await asyncio.sleep(0.1)
            pending = retry
        return results

    async def _ensure_positions(self, partitions: Iterable[TopicPartition]) -> None:
        missing = [tp for tp in partitions if self._positions.get(tp) is None]
        if not missing:
            return
        if self.auto_offset_reset == "none":
            raise OffsetOutOfRangeError(f"no position for {missing} and auto_offset_reset is none: seek() first")
        spec = (
            broker_pb2.OFFSET_SPEC_EARLIEST if self.auto_offset_reset == "earliest" else broker_pb2.OFFSET_SPEC_LATEST
        )
        for partition, (offset, _) in (await self._list_offsets(missing, spec)).items():
            self._positions[partition] = offset

    # -----------------------------------------------------------------------------------------
    # fetching

    async def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """Up to max_poll_records records; empty when none arrived within ``timeout_ms``."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if not self._buffered() and self._prefetch is None:
                self._start_fetch(max(0, int((deadline - time.monotonic()) * 1000)))
            if not self._buffered() and self._prefetch is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._prefetch), max(0.0, deadline - time.monotonic()))
                if self._prefetch is not None and self._prefetch.done():
                    done, self._prefetch = self._prefetch, None
                    done.result()  # raises what the fetch raised
            records = self._take()
            if records or time.monotonic() >= deadline:
                if self._prefetch is None:
                    self._start_fetch(self._max_wait_ms)  # the next fetch runs while the caller works
                return records

    def _buffered(self) -> bool:
        return any(self._buffer.values())

    def _take(self) -> list[ConsumerRecord]:
        taken: list[ConsumerRecord] = []
        for partition in list(self._buffer):
            records = self._buffer[partition]
            room = self._max_poll_records - len(taken)
            if room <= 0:
                break
            chunk, self._buffer[partition] = records[:room], records[room:]
            if chunk and partition in self._positions and partition not in self._paused:
                taken.extend(chunk)
                self._positions[partition] = chunk[-1].offset + 1
        return taken

    def _start_fetch(self, max_wait_ms: int) -> None:
        fetchable = [tp for tp in self._positions if tp not in self._paused and not self._buffer.get(tp)]
        if fetchable:
            self._prefetch = asyncio.get_running_loop().create_task(self._fetch(fetchable, max_wait_ms))

    async def _fetch(self, partitions: list[TopicPartition], max_wait_ms: int) -> None:
        await self._ensure_positions(partitions)
        unknown = {tp.topic for tp in partitions if self._cluster.leader_address(tp.topic, tp.partition) is None}
        await self._refresh(sorted(unknown))
        by_leader: dict[str | None, list[TopicPartition]] = {}
        for partition in partitions:
            by_leader.setdefault(self._cluster.leader_address(partition.topic, partition.partition), []).append(
                partition
            )
        await asyncio.gather(*(self._fetch_from(leader, group, max_wait_ms) for leader, group in by_leader.items()))

    async def _fetch_from(self, address: str | None, partitions: list[TopicPartition], max_wait_ms: int) -> None:
        if address is None:
            self._forget_leaders(partitions)
            await asyncio.sleep(0.1)
            return
        topics: dict[str, broker_pb2.FetchTopic] = {}
        for partition in partitions:
            topics.setdefault(partition.topic, broker_pb2.FetchTopic(topic=partition.topic)).partitions.append(
                broker_pb2.FetchPartition(
                    partition=partition.partition,
                    fetch_offset=self._positions[partition] or 0,
                    current_leader_epoch=-1,
                    partition_max_bytes=self._partition_max_bytes,
                )
            )
        request = broker_pb2.FetchRequest(
            max_wait_ms=max_wait_ms, min_bytes=self._min_bytes, max_bytes=self._max_bytes, topics=list(topics.values())
        )
        try:
            answer = await self._cluster.stub(address).Fetch(request, timeout=self._timeout_s + max_wait_ms / 1000)
        except grpc.aio.AioRpcError:
            self._forget_leaders(partitions)
            return
        for topic in answer.topics:
            for part in topic.partitions:
                partition = TopicPartition(topic.topic, part.partition)
                code = error_code(part.error.code)
                if code is ErrorCode.OFFSET_OUT_OF_RANGE:
                    self._positions[partition] = None  # reset per auto_offset_reset at the next fetch
                    if self.auto_offset_reset == "none":
                        raise OffsetOutOfRangeError(part.error.message)
                    continue
                if code is not ErrorCode.NONE:
                    self._forget_leaders([partition])
                    continue
                start = self._positions.get(partition) or 0
                self._buffer[partition] = [
                    ConsumerRecord(
                        topic.topic,
                        part.partition,
                        record.offset,
                        batch.header.max_timestamp
                        if batch.header.timestamp_type is TimestampType.LOG_APPEND_TIME
                        else record.timestamp,
                        batch.header.timestamp_type,
                        record.key,
                        record.value,
                        record.headers,
                        batch.header.partition_leader_epoch,
                    )
                    for batch in decode_batches(part.records)
                    for record in batch.records
                    if record.offset >= start
                ]

    def _forget_leaders(self, partitions: Iterable[TopicPartition]) -> None:
        for partition in partitions:
            self._cluster.forget_leader(partition.topic, partition.partition)

    # -----------------------------------------------------------------------------------------
    # metadata

    def _stub_for(self, partition: TopicPartition) -> broker_pb2_grpc.BrokerStub:
        address = self._cluster.leader_address(partition.topic, partition.partition)
        if address is None:
            raise error_for(ErrorCode.LEADER_NOT_AVAILABLE, f"{partition} has no known leader")
        return self._cluster.stub(address)

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
        for partition in self._positions:
            count = self._cluster.partition_counts.get(partition.topic)
            if partition.topic in topics and count is not None and partition.partition >= count:
                raise error_for(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"{partition.topic} has partitions 0..{count - 1}; partition {partition.partition} does not exist "
                    "(assign an existing one, or add partitions with Admin.create_partitions)",
                )

    async def close(self) -> None:
        """Stop fetching and release connections."""
        self._drop_prefetch()
        await self._cluster.close()


class Consumer:
    """Reads assigned partitions (synchronously; ``lanes.aio.Consumer`` on a background loop)."""

    def __init__(self, bootstrap: str, **settings: object) -> None:
        self._consumer = _loop.run(_create(bootstrap, settings))

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """See ``AsyncConsumer.assign``."""
        _loop.run(_call(self._consumer.assign, list(partitions)))

    def assignment(self) -> set[TopicPartition]:
        return self._consumer.assignment()

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """See ``AsyncConsumer.seek``."""
        _loop.run(_call(self._consumer.seek, partition, offset))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        _loop.run(self._consumer.seek_to_beginning(*partitions))

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        _loop.run(self._consumer.seek_to_end(*partitions))

    def position(self, partition: TopicPartition) -> int:
        return _loop.run(self._consumer.position(partition))

    def pause(self, *partitions: TopicPartition) -> None:
        _loop.run(_call(self._consumer.pause, *partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        _loop.run(_call(self._consumer.resume, *partitions))

    def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """See ``AsyncConsumer.poll``."""
        return _loop.run(self._consumer.poll(timeout_ms))

    def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return _loop.run(self._consumer.beginning_offsets(list(partitions)))

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return _loop.run(self._consumer.end_offsets(list(partitions)))

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        return _loop.run(self._consumer.offsets_for_times(timestamps))

    def close(self) -> None:
        _loop.run(self._consumer.close())

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _create(bootstrap: str, settings: Mapping[str, object]) -> AsyncConsumer:
    return AsyncConsumer(bootstrap, **settings)  # type: ignore[arg-type]


async def _call(function: Callable[..., T], *args: object) -> T:
    """Run a synchronous method of the async consumer on its loop (it owns the loop's tasks)."""
    return function(*args)
