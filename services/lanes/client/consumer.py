"""The Consumer: a member of a consumer group, or a free consumer that assigns partitions itself.

``lanes.aio.Consumer`` is the asynchronous core; ``lanes.Consumer`` the synchronous facade.

- Group mode (``group_id`` and ``subscribe``): the group's coordinator assigns partitions; the
  membership (``_membership.GroupMembership``) heartbeats in the background and ``poll`` applies
  its changes — revoked partitions are committed (auto-commit), handed to the listener and
  dropped before the coordinator hears they are free; assigned ones start from the group's
  committed offsets (else ``auto_offset_reset``). ``commit`` commits positions: the offset after
  the last record ``poll`` returned, so nothing unreturned is ever committed; with
  ``enable_auto_commit`` that happens every ``auto_commit_interval_ms`` inside ``poll``, on
  revocation and on ``close``. Not calling ``poll`` for ``max_poll_interval_ms`` leaves the group.
- Free mode: ``assign`` partitions, ``seek`` / ``seek_to_beginning`` / ``seek_to_end`` them, read
  ``position``; a partition without a position starts per ``auto_offset_reset`` (earliest or
  latest; ``none`` raises). With a ``group_id`` it may commit, while the group has no members.
- ``poll(timeout_ms)`` returns up to ``max_poll_records`` records in offset order per partition,
  fetching from each partition's leader (long-poll up to ``fetch_max_wait_ms``); while the caller
  processes them, the next fetch is already under way (prefetch), and a partition with at most
  one poll's or one fetch's worth of records left is fetched ahead, from where its buffer ends.
  Paused partitions are not fetched. A moved leader is found again through metadata.
- ``offsets_for_times``, ``beginning_offsets``, ``end_offsets`` look offsets up.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple, TypeVar

import grpc

from lanes.client import _loop
from lanes.client._cluster import ClusterView
from lanes.client._membership import GroupMembership, Step
from lanes.errors import (
    ErrorCode,
    LanesError,
    OffsetOutOfRangeError,
    RetriableError,
    error_code,
    error_for,
)
from lanes.protocol.names import validate_group_id, validate_topic_name
from lanes.protocol.records import BatchHeader, TimestampType, decode_batches
from lanes.rpc.wire import code_of
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, coordinator_pb2

T = TypeVar("T")
_log = logging.getLogger(__name__)


class CommitFailedError(LanesError):
    """The commit was refused because this member was fenced or left; its partitions may now be
    another member's. Do not retry: the records since the last commit will be redelivered."""

    default_code = ErrorCode.FENCED_MEMBER_EPOCH


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


def _consumer_records(topic: str, partition: int, data: bytes, start: int) -> list[ConsumerRecord]:
    """The records of fetched batches from offset ``start`` on, built by the codec with the
    batch's topic, partition, timestamp type and leader epoch appended."""

    def trailer(header: BatchHeader) -> tuple[str, int, TimestampType, int]:
        return (topic, partition, header.timestamp_type, header.partition_leader_epoch)

    records: list[ConsumerRecord] = []
    for batch in decode_batches(data, record_type=ConsumerRecord, trailer=trailer):
        decoded: list[ConsumerRecord] = batch.records  # type: ignore[assignment]  # decoded as ConsumerRecord
        if batch.header.base_offset < start:  # only a fetch's first batch may begin before the position
            decoded = [record for record in decoded if record.offset >= start]
        if batch.header.timestamp_type is TimestampType.LOG_APPEND_TIME:  # the broker's time, for every record
            decoded = [record._replace(timestamp=batch.header.max_timestamp) for record in decoded]
        records.extend(decoded)
    return records


class _Buffered:
    """A partition's fetched records not yet returned by ``poll``: taken from the front without
    copying the rest. ``end_offset`` is where the next fetch of the partition continues."""

    __slots__ = ("_next", "_records", "end_offset", "last_fetch_records")

    def __init__(self, records: list[ConsumerRecord], end_offset: int, last_fetch_records: int) -> None:
        self._records = records
        self._next = 0
        self.end_offset = end_offset
        self.last_fetch_records = last_fetch_records

    def __bool__(self) -> bool:
        return self._next < len(self._records)

    def __len__(self) -> int:
        return len(self._records) - self._next

    def extended(self, records: list[ConsumerRecord], end_offset: int) -> _Buffered:
        """The records left, then ``records`` (fetched from ``self.end_offset`` on)."""
        return _Buffered(self._records[self._next :] + records, end_offset, len(records))

    def take(self, count: int) -> list[ConsumerRecord]:
        chunk = self._records[self._next : self._next + count]
        self._next += len(chunk)
        return chunk


class RebalanceListener:
    """Callbacks around group rebalances, called inside ``poll`` (override what you need).

    ``on_partitions_revoked`` runs before revoked partitions are released (commit what you
    processed here); ``on_partitions_assigned`` after new ones are added (``seek`` works here);
    ``on_partitions_lost`` when the member was fenced or its session lapsed and the partitions may
    already belong to another member (do not commit; by default it calls ``on_partitions_revoked``).
    """

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        """Partitions about to be released."""

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        """Partitions just added."""

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        """Partitions gone without a clean release."""
        self.on_partitions_revoked(partitions)


Offset = int | tuple[int, str]  # an offset, or (offset, metadata) to commit
CommitCallback = Callable[[dict[TopicPartition, Offset], BaseException | None], None]


class AsyncConsumer:
    """Reads partitions a group assigns, or that the application assigns (asynchronously)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        client_id: str = "lanes-consumer",
        assignor: str = "",
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        max_poll_interval_ms: int = 300_000,
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 50 * 1024 * 1024,
        max_partition_fetch_bytes: int = 1024 * 1024,
        max_poll_records: int = 500,
        request_timeout_ms: int = 30_000,
    ) -> None:
        if auto_offset_reset not in {"earliest", "latest", "none"}:
            raise LanesError("auto_offset_reset must be earliest, latest or none", ErrorCode.INVALID_REQUEST)
        if group_id is not None:
            validate_group_id(group_id)
        if assignor and assignor not in {"uniform", "range", "roundrobin"}:
            raise LanesError(
                f"unknown assignor {assignor!r}; use uniform, range or roundrobin", ErrorCode.UNSUPPORTED_ASSIGNOR
            )
        self.bootstrap = [a.strip() for a in bootstrap.split(",") if a.strip()]
        self.group_id = group_id
        self.auto_offset_reset = auto_offset_reset
        self._min_bytes = fetch_min_bytes
        self._max_wait_ms = fetch_max_wait_ms
        self._max_bytes = fetch_max_bytes
        self._partition_max_bytes = max_partition_fetch_bytes
        self._max_poll_records = max_poll_records
        self._timeout_s = request_timeout_ms / 1000
        self._positions: dict[TopicPartition, int | None] = {}
        self._paused: set[TopicPartition] = set()
        self._buffer: dict[TopicPartition, _Buffered] = {}
        self._prefetch: asyncio.Task[None] | None = None
        self._cluster = ClusterView(self.bootstrap, self._timeout_s)
        self._auto_commit = enable_auto_commit and group_id is not None
        self._auto_commit_interval_s = auto_commit_interval_ms / 1000
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval_s
        self._listener = RebalanceListener()
        self._pending_commits: set[asyncio.Task[None]] = set()
        self._group = (
            GroupMembership(
                self._cluster,
                group_id,
                instance_id=group_instance_id or "",
                client_id=client_id,
                assignor=assignor,
                rebalance_timeout_ms=max_poll_interval_ms,
                request_timeout_s=self._timeout_s,
            )
            if group_id is not None
            else None
        )

    # -----------------------------------------------------------------------------------------
    # group membership

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str] = (),
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        """Join the group with these topics, or every topic matching ``pattern`` (full match;
        a string or compiled pattern as ``topics`` counts as a pattern). Replaces the previous
        subscription; the coordinator assigns the partitions."""
        if self._group is None:
            raise LanesError(
                "subscribe() needs a group_id; without one, assign() partitions", ErrorCode.INVALID_REQUEST
            )
        if isinstance(topics, (str, re.Pattern)):
            names: list[str] = []
            pattern = topics
        else:
            names = sorted(set(topics))
        regex = pattern.pattern if isinstance(pattern, re.Pattern) else (pattern or "")
        if not names and not regex:
            raise LanesError("subscribe to at least one topic, or a pattern", ErrorCode.INVALID_REQUEST)
        if names and regex:
            raise LanesError("subscribe to topics or to a pattern, not both", ErrorCode.INVALID_REQUEST)
        if regex:
            try:
                re.compile(regex)
            except re.error as exc:
                raise LanesError(f"pattern {regex!r} is invalid: {exc}", ErrorCode.INVALID_REGULAR_EXPRESSION) from None
        for name in names:
            validate_topic_name(name)
        if self._positions and not self._group.active:
            raise LanesError(
                "this consumer assign()ed partitions itself; it cannot also subscribe", ErrorCode.INVALID_REQUEST
            )
        self._listener = listener or RebalanceListener()
        self._group.subscribe(names, regex)

    def subscription(self) -> tuple[list[str], str] | None:
        """(topics, pattern) subscribed to, or None."""
        if self._group is None or self._group.subscription is None:
            return None
        return list(self._group.subscription.topic_names), self._group.subscription.topic_regex

    async def _next_group_step(self) -> Step | None:
        """Prepare the next rebalance step: commit what is revoked, position what is assigned."""
        if self._group is None or not self._group.active:
            return None
        step = self._group.next_step()
        if step is None:
            return None
        partitions = {TopicPartition(t, p) for t, p in step.partitions}
        if step.kind == "revoke" and self._auto_commit:
            try:
                await self._commit_positions({tp: self._positions[tp] for tp in partitions if self._positions.get(tp)})
            except LanesError as exc:
                _log.warning("group %s: commit before revoking %s failed: %s", self.group_id, sorted(partitions), exc)
        if step.kind == "assign":
            committed = await self.committed(partitions)
            self._drop_prefetch()
            for partition in sorted(partitions):
                self._positions[partition] = committed.get(partition)
        return step

    def _finish_group_step(self, step: Step) -> None:
        """The listener has run: release what was revoked or lost, and tell the coordinator."""
        if step.kind != "assign":
            self._drop_prefetch()
            for topic, partition in step.partitions:
                self._positions.pop(TopicPartition(topic, partition), None)
                self._paused.discard(TopicPartition(topic, partition))
        assert self._group is not None
        self._group.step_done(step)

    def _listener_call(self, step: Step) -> Callable[[], object]:
        partitions = {TopicPartition(t, p) for t, p in step.partitions}
        method = {
            "revoke": self._listener.on_partitions_revoked,
            "assign": self._listener.on_partitions_assigned,
            "lost": self._listener.on_partitions_lost,
        }[step.kind]
        return lambda: method(set(partitions))

    async def _apply_group_steps(self) -> None:
        while (step := await self._next_group_step()) is not None:
            outcome = self._listener_call(step)()
            if asyncio.iscoroutine(outcome):
                await outcome
            self._finish_group_step(step)

    # -----------------------------------------------------------------------------------------
    # offsets of the group

    async def commit(
        self,
        offsets: Mapping[TopicPartition, Offset] | None = None,
        *,
        asynchronous: bool = False,
        callback: CommitCallback | None = None,
    ) -> None:
        """Commit ``offsets`` (default: the position of every owned partition — the offset after
        the last record ``poll`` returned); a value may be ``(offset, metadata)`` to store a string
        with the offset (shown by ``Admin.describe_group``). Synchronous by default: returns once durable, raises
        CommitFailedError when the member was fenced. With ``asynchronous``, returns at once and
        calls ``callback(offsets, error_or_None)`` when done."""
        wanted: dict[TopicPartition, Offset] = (
            dict(offsets) if offsets is not None else {tp: p for tp, p in self._positions.items() if p is not None}
        )
        if not asynchronous:
            await self._commit_positions(wanted)
            if callback is not None:
                callback(wanted, None)
            return

        async def run() -> None:
            error: BaseException | None = None
            try:
                await self._commit_positions(wanted)
            except LanesError as exc:
                error = exc
            if callback is not None:
                callback(wanted, error)

        task = asyncio.get_running_loop().create_task(run())
        self._pending_commits.add(task)
        task.add_done_callback(self._pending_commits.discard)

    async def _commit_positions(self, offsets: Mapping[TopicPartition, Offset | None]) -> None:
        group = self._require_group("commit")
        entries = {tp: o for tp, o in offsets.items() if o is not None}
        if not entries:
            return
        by_topic: dict[str, list[coordinator_pb2.CommitOffsetsPartition]] = {}
        for tp, value in sorted(entries.items()):
            offset, metadata = value if isinstance(value, tuple) else (value, "")
            by_topic.setdefault(tp.topic, []).append(
                coordinator_pb2.CommitOffsetsPartition(
                    partition=tp.partition, committed_offset=offset, committed_leader_epoch=-1, metadata=metadata
                )
            )
        deadline = time.monotonic() + self._timeout_s
        while True:
            subscribed = group.active and group.member_epoch > 0
            request = coordinator_pb2.CommitOffsetsRequest(
                group_id=group.group_id,
                member_id=group.member_id if subscribed else "",
                member_epoch=group.member_epoch if subscribed else -1,
                topics=[coordinator_pb2.CommitOffsetsTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
            )
            retry = await self._commit_once(group, request)
            if not retry:
                return
            if time.monotonic() > deadline:
                raise error_for(ErrorCode.REQUEST_TIMED_OUT, f"commit to group {group.group_id!r} did not get through")
            await asyncio.sleep(0.1)

    async def _commit_once(self, group: GroupMembership, request: coordinator_pb2.CommitOffsetsRequest) -> bool:
        """One commit attempt; True when it should be retried."""
        try:
            answer = await group.coordinator_stub(await group.coordinator()).CommitOffsets(
                request, timeout=self._timeout_s
            )
        except grpc.aio.AioRpcError:
            group.forget_coordinator()
            return True
        except RetriableError:
            return True
        for topic in answer.topics:
            for part in topic.partitions:
                code = code_of(part.error)
                if code is ErrorCode.NONE:
                    continue
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    group.forget_coordinator()
                    return True
                if code.retriable:
                    return True
                if code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
                    raise CommitFailedError(f"group {group.group_id!r}: {part.error.message}", code)
                raise error_for(part.error.code, part.error.message)
        return False

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The group's committed offset of each partition (None when it has none)."""
        group = self._require_group("committed")
        wanted = sorted(set(partitions))
        by_topic: dict[str, list[int]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = coordinator_pb2.FetchOffsetsRequest(
            group_id=group.group_id,
            member_epoch=-1,
            partitions=[common_pb2.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                answer = await group.coordinator_stub(await group.coordinator()).FetchOffsets(
                    request, timeout=self._timeout_s
                )
                code = code_of(answer.error)
            except grpc.aio.AioRpcError:
                group.forget_coordinator()
                code = ErrorCode.NETWORK_EXCEPTION
            except RetriableError as exc:
                code = exc.code
            if code is ErrorCode.NONE:
                found: dict[TopicPartition, int | None] = dict.fromkeys(wanted)
                for topic in answer.topics:
                    for part in topic.partitions:
                        if part.committed_offset >= 0:
                            found[TopicPartition(topic.topic, part.partition)] = part.committed_offset
                return found
            if not code.retriable:
                raise error_for(answer.error.code, answer.error.message)
            if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                group.forget_coordinator()
            if time.monotonic() > deadline:
                raise error_for(ErrorCode.REQUEST_TIMED_OUT, f"offsets of group {group.group_id!r} could not be read")
            await asyncio.sleep(0.1)

    def _require_group(self, what: str) -> GroupMembership:
        if self._group is None:
            raise LanesError(f"{what}() needs a group_id", ErrorCode.INVALID_REQUEST)
        return self._group

    async def _auto_commit_if_due(self) -> None:
        if not self._auto_commit or time.monotonic() < self._next_auto_commit:
            return
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval_s
        try:
            await self._commit_positions(self._positions)
        except LanesError as exc:
            _log.warning("group %s: auto-commit failed: %s", self.group_id, exc)

    # -----------------------------------------------------------------------------------------
    # assignment and positions

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions from now on (positions of kept ones are kept)."""
        if self._group is not None and self._group.active:
            raise LanesError(
                "this consumer subscribed to a group; the group assigns its partitions", ErrorCode.INVALID_REQUEST
            )
        wanted = set(partitions)
        self._drop_prefetch()
        self._positions = {tp: self._positions.get(tp) for tp in sorted(wanted)}
        self._paused &= wanted

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer owns now (assigned by the group, or by ``assign``)."""
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
            where = f"group {self.group_id!r} has no committed offset" if self.group_id else "no position"
            raise OffsetOutOfRangeError(
                f"{where} for {', '.join(f'{tp.topic}-{tp.partition}' for tp in missing)} and auto_offset_reset is "
                "none: seek() to a position, reset the group's offsets, or use earliest or latest"
            )
        spec = (
            broker_pb2.OFFSET_SPEC_EARLIEST if self.auto_offset_reset == "earliest" else broker_pb2.OFFSET_SPEC_LATEST
        )
        for partition, (offset, _) in (await self._list_offsets(missing, spec)).items():
            self._positions[partition] = offset

    # -----------------------------------------------------------------------------------------
    # fetching

    async def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """Up to max_poll_records records; empty when none arrived within ``timeout_ms``. In a
        group, first applies rebalance steps (calling the listener) and auto-commits when due."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if self._group is not None:
                self._group.polled()
            await self._apply_group_steps()
            records = await self._poll_records(deadline)
            if records or time.monotonic() >= deadline:
                return records

    async def _poll_records(self, deadline: float) -> list[ConsumerRecord]:
        """Records from owned partitions until ``deadline``; returns early (empty) when a group
        member owns nothing yet or the group's assignment changed."""
        await self._auto_commit_if_due()
        if self._group is not None and self._group.active and not self._positions:
            await self._group.wait_for_change(max(0.0, min(deadline - time.monotonic(), 0.2)))
            return []
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
            room = self._max_poll_records - len(taken)
            if room <= 0:
                break
            chunk = self._buffer[partition].take(room)
            if chunk and partition in self._positions and partition not in self._paused:
                taken.extend(chunk)
                self._positions[partition] = chunk[-1].offset + 1
        return taken

    def _start_fetch(self, max_wait_ms: int) -> None:
        """Fetch the partitions with at most one poll's (or one fetch's) worth of records
        buffered, from where their buffer ends: the broker reads the next records while the
        caller works through those. A partition's buffer holds at most about two fetches."""
        fetchable = [tp for tp in self._positions if tp not in self._paused and self._wants_records(tp)]
        if fetchable:
            self._prefetch = asyncio.get_running_loop().create_task(self._fetch(fetchable, max_wait_ms))

    def _wants_records(self, partition: TopicPartition) -> bool:
        buffered = self._buffer.get(partition)
        return not buffered or len(buffered) <= max(self._max_poll_records, buffered.last_fetch_records)

    def _fetch_offset(self, partition: TopicPartition) -> int:
        """Where the partition's next fetch starts: after what is buffered, else its position."""
        buffered = self._buffer.get(partition)
        return buffered.end_offset if buffered else self._positions[partition] or 0

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
        fetched = {partition: self._fetch_offset(partition) for partition in partitions}
        for partition in partitions:
            topics.setdefault(partition.topic, broker_pb2.FetchTopic(topic=partition.topic)).partitions.append(
                broker_pb2.FetchPartition(
                    partition=partition.partition,
                    fetch_offset=fetched[partition],
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
                    self._buffer.pop(partition, None)  # read ahead of a log that was cut back
                    if self.auto_offset_reset == "none":
                        raise OffsetOutOfRangeError(part.error.message)
                    continue
                if code is not ErrorCode.NONE:
                    self._forget_leaders([partition])
                    continue
                self._buffer_fetched(partition, fetched[partition], topic.topic, part)

    def _buffer_fetched(
        self, partition: TopicPartition, offset: int, topic: str, part: broker_pb2.FetchPartitionResponse
    ) -> None:
        """Buffer the records fetched from ``offset``, behind the partition's buffered ones."""
        records = _consumer_records(topic, part.partition, part.records, offset)
        end_offset = records[-1].offset + 1 if records else offset
        buffered = self._buffer.get(partition)
        if buffered:
            self._buffer[partition] = buffered.extended(records, end_offset)
        elif records:
            self._buffer[partition] = _Buffered(records, end_offset, len(records))

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
        """Commit (auto-commit), release owned partitions to the listener, leave the group
        promptly, stop fetching and release connections."""
        try:
            if self._group is not None and self._group.active:
                if self._auto_commit:
                    try:
                        await self._commit_positions(self._positions)
                    except LanesError as exc:
                        _log.warning("group %s: commit on close failed: %s", self.group_id, exc)
                owned = set(self._positions)
                if owned:
                    outcome: object = self._listener_call(Step("revoke", frozenset(owned)))()
                    if asyncio.iscoroutine(outcome):
                        await outcome
                await self._group.leave()
            for task in list(self._pending_commits):
                with contextlib.suppress(Exception):
                    await task
        finally:
            self._drop_prefetch()
            self._positions.clear()
            await self._cluster.close()


class Consumer:
    """Reads partitions a group assigns or the application assigns (synchronously;
    ``lanes.aio.Consumer`` on a background loop)."""

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

    def paused(self) -> set[TopicPartition]:
        return self._consumer.paused()

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str] = (),
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        """See ``AsyncConsumer.subscribe``; the listener runs on the thread that calls ``poll``."""
        topics = topics if isinstance(topics, (str, re.Pattern)) else list(topics)
        _loop.run(_call(functools.partial(self._consumer.subscribe, pattern=pattern, listener=listener), topics))

    def subscription(self) -> tuple[list[str], str] | None:
        return self._consumer.subscription()

    def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """See ``AsyncConsumer.poll``. Rebalance callbacks run here, on the calling thread, so
        they may call ``commit`` and ``seek``."""
        deadline = time.monotonic() + timeout_ms / 1000
        consumer = self._consumer
        while True:
            if consumer._group is not None:
                consumer._group.polled()
            while (step := _loop.run(consumer._next_group_step())) is not None:
                consumer._listener_call(step)()
                _loop.run(_call(consumer._finish_group_step, step))
            records = _loop.run(consumer._poll_records(deadline))
            if records or time.monotonic() >= deadline:
                return records

    def commit(
        self,
        offsets: Mapping[TopicPartition, Offset] | None = None,
        *,
        asynchronous: bool = False,
        callback: CommitCallback | None = None,
    ) -> None:
        """See ``AsyncConsumer.commit``."""
        _loop.run(self._consumer.commit(offsets, asynchronous=asynchronous, callback=callback))

    def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """See ``AsyncConsumer.committed``."""
        return _loop.run(self._consumer.committed(list(partitions)))

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
