"""Searching topics where their records are stored (``Broker.Scan``): ``lanes.aio.Scanner`` and
``lanes.Scanner``.

``scan`` asks each partition's leader to read and filter the partition itself, all partitions at
once, and yields what each finds as it finds it (``ScanUpdate``: matches and progress), so a
search of a million records ships only its matches. Conditions are ``Condition`` values or text
(``"value~error"``, ``"header:trace=abc"``, ``"$.price=42"``: ``lanes.search.record_filter``).

Each partition's stream is resumed where it stopped when its leader moves (NOT_LEADER_OR_FOLLOWER
and epoch errors: the metadata is refreshed and the scan goes on from ``next_offset``). At most
``SCANS_PER_BROKER`` partitions are scanned on one broker at once; a broker busy with this user's
other scans (THROTTLING_QUOTA_EXCEEDED) is asked again a moment later, within the request timeout. Other
errors end the scan with the typed exception. Leaving the loop early (``break``, an exception,
``aclose``) cancels every partition's scan on the brokers.

Threads: ``AsyncScanner`` on the caller's event loop; ``Scanner`` runs it on the clients'
background loop and hands updates to the caller's thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import grpc

from lanes.client import _loop
from lanes.client._cluster import ClusterView
from lanes.client._fetcher import ConsumerRecord
from lanes.errors import ErrorCode, LanesError, error_for
from lanes.protocol.records import TimestampType
from lanes.rpc.addresses import parse_addresses
from lanes.rpc.credentials import ClientCredentials
from lanes.rpc.tls import ClientTls
from lanes.rpc.wire import security_refusal
from lanes.search.record_filter import Condition, FilterError, RecordFilter, parse_condition
from lanes.v1 import broker_pb2

#: updates a scan holds for a caller that reads slower than the brokers find (then they wait)
_QUEUED_UPDATES = 64
#: partition scans one scanner runs on one broker at once (the others wait: a broker runs at most
#: 4 of one user's, lanes.broker.scans.MAX_SCANS_PER_PRINCIPAL, so two searches fit side by side)
SCANS_PER_BROKER = 2
#: leader moves (or unreachable leaders) a partition's scan follows before it gives up
_MAX_MOVES = 20
_MOVED = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)


@dataclass(frozen=True)
class ScanBudget:
    """What each partition's scan may spend (None: the broker's default; brokers cap each)."""

    max_records: int | None = None
    max_bytes: int | None = None
    max_cpu_ms: int | None = None
    max_matches: int | None = None

    def wire(self) -> broker_pb2.ScanBudget:
        return broker_pb2.ScanBudget(
            max_records=self.max_records or 0,
            max_bytes=self.max_bytes or 0,
            max_cpu_ms=self.max_cpu_ms or 0,
            max_matches=self.max_matches or 0,
        )


@dataclass(frozen=True)
class ScanProgress:
    """How far one partition's scan has come. ``ended``: why it stopped (``"end"``,
    ``"record-budget"``, ``"byte-budget"``, ``"cpu-budget"``, ``"match-limit"``), None while it runs."""

    next_offset: int
    scanned_records: int
    scanned_bytes: int
    matches: int
    cpu_ms: int
    log_start_offset: int
    high_watermark: int
    end_offset: int
    ended: str | None


@dataclass(frozen=True)
class ScanUpdate:
    """Matches one partition's scan found since its previous update, and its progress."""

    topic: str
    partition: int
    records: list[ConsumerRecord]
    progress: ScanProgress


_ENDS = {
    broker_pb2.SCAN_END_REACHED: "end",
    broker_pb2.SCAN_END_RECORD_BUDGET: "record-budget",
    broker_pb2.SCAN_END_BYTE_BUDGET: "byte-budget",
    broker_pb2.SCAN_END_CPU_BUDGET: "cpu-budget",
    broker_pb2.SCAN_END_MATCH_LIMIT: "match-limit",
}


def conditions_of(where: Sequence[Condition | str]) -> list[Condition]:
    """``where``'s conditions, text parsed (FilterError raised as INVALID_REQUEST LanesError)."""
    try:
        conditions = [parse_condition(c) if isinstance(c, str) else c for c in where]
        RecordFilter.of(conditions)  # checked here, with the broker's bounds
    except FilterError as exc:
        raise LanesError(str(exc), ErrorCode.INVALID_REQUEST) from None
    return conditions


def _condition_wire(condition: Condition) -> broker_pb2.ScanCondition:
    return broker_pb2.ScanCondition(
        field=int(condition.field),  # type: ignore[arg-type]
        test=int(condition.test),  # type: ignore[arg-type]
        name=condition.name,
        operand=condition.operand,
        negate=condition.negate,
    )


def _record(topic: str, partition: int, found: broker_pb2.ScannedRecord) -> ConsumerRecord:
    return ConsumerRecord(
        found.offset,
        found.timestamp_ms,
        found.key if found.HasField("key") else None,
        found.value if found.HasField("value") else None,
        tuple((h.key, h.value if h.HasField("value") else None) for h in found.headers),
        topic,
        partition,
        TimestampType.CREATE_TIME,
        -1,
    )


def _progress(wire: broker_pb2.ScanProgress) -> ScanProgress:
    return ScanProgress(
        wire.next_offset,
        wire.scanned_records,
        wire.scanned_bytes,
        wire.matches,
        wire.cpu_ms,
        wire.log_start_offset,
        wire.high_watermark,
        wire.end_offset,
        _ENDS.get(wire.end),
    )


class AsyncScanner:
    """Searches of topics on their brokers (see the module docstring). ``bootstrap``:
    ``host:port[,host:port...]`` of brokers."""

    def __init__(
        self,
        bootstrap: str,
        *,
        request_timeout_ms: int = 30_000,
        tls: ClientTls = "process",
        credentials: ClientCredentials = "process",
        client_id: str = "lanes-scanner",
    ) -> None:
        self._timeout_s = request_timeout_ms / 1000
        self._cluster = ClusterView(
            parse_addresses(bootstrap), self._timeout_s, tls=tls, credentials=credentials, client_id=client_id
        )
        self._slots: dict[str, asyncio.Semaphore] = {}

    async def partitions(self, topic: str) -> int:
        """How many partitions ``topic`` has (UnknownTopicOrPartitionError when none)."""
        errors = await self._cluster.refresh([topic])
        error = errors.get(topic)
        if error is not None and error.code:
            raise error_for(error.code, error.message)
        return self._cluster.partition_counts.get(topic, 0)

    async def scan(
        self,
        topic: str,
        where: Sequence[Condition | str] = (),
        *,
        partitions: Sequence[int] | None = None,
        start: int | Mapping[int, int] | None = None,
        start_time_ms: int | None = None,
        last: int | None = None,
        end_offset: int | None = None,
        from_time_ms: int | None = None,
        to_time_ms: int | None = None,
        budget: ScanBudget | None = None,
    ) -> AsyncIterator[ScanUpdate]:
        """Updates from every partition's scan (all of ``partitions`` when None) until each ends.

        Where each starts: ``start`` (an offset, or one per partition), ``start_time_ms`` (the first record at or after
        it), ``last`` (the last N records of each partition), else the beginning; it ends at
        ``end_offset`` or the high-water mark it saw when it started. ``from_time_ms`` and
        ``to_time_ms`` bound the records' timestamps. Raises INVALID_REQUEST for a malformed
        condition before asking any broker."""
        conditions = [_condition_wire(c) for c in conditions_of(where)]
        if sum(x is not None for x in (start, start_time_ms, last)) > 1:
            raise LanesError("give at most one of start, start_time_ms and last", ErrorCode.INVALID_REQUEST)
        count = await self.partitions(topic)
        wanted = list(range(count)) if partitions is None else list(partitions)
        for partition in wanted:
            if not 0 <= partition < count:
                raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic} has no partition {partition}")
        request = broker_pb2.ScanRequest(
            topic=topic,
            end_offset=end_offset or 0,
            conditions=conditions,
            from_timestamp_ms=from_time_ms or 0,
            to_timestamp_ms=to_time_ms or 0,
            budget=(budget or ScanBudget()).wire(),
        )
        if isinstance(start, int):
            request.start_offset = start
        elif start_time_ms is not None:
            request.start_timestamp_ms = start_time_ms
        elif last is not None:
            request.start_last = last
        queue: asyncio.Queue[ScanUpdate | BaseException | None] = asyncio.Queue(_QUEUED_UPDATES)
        starts = start if isinstance(start, Mapping) else {}
        tasks = [asyncio.ensure_future(self._partition(request, p, starts.get(p), queue)) for p in wanted]
        running = len(tasks)
        try:
            while running:
                update = await queue.get()
                if update is None:
                    running -= 1
                elif isinstance(update, BaseException):
                    raise update
                else:
                    yield update
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _partition(
        self,
        template: broker_pb2.ScanRequest,
        partition: int,
        start: int | None,
        queue: asyncio.Queue[ScanUpdate | BaseException | None],
    ) -> None:
        """One partition's scan: its updates, then None (or the exception that ended it), into ``queue``."""
        request = broker_pb2.ScanRequest()
        request.CopyFrom(template)
        request.partition = partition
        if start is not None:
            request.start_offset = start
        try:
            await self._scan_partition(request, queue)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # handed to the reader
            await queue.put(exc)
            return
        await queue.put(None)

    def _slot(self, address: str) -> asyncio.Semaphore:
        """The places this scanner's partition scans take on the broker at ``address``."""
        slot = self._slots.get(address)
        if slot is None:
            slot = self._slots[address] = asyncio.Semaphore(SCANS_PER_BROKER)
        return slot

    async def _scan_partition(
        self, request: broker_pb2.ScanRequest, queue: asyncio.Queue[ScanUpdate | BaseException | None]
    ) -> None:
        """Scan on the partition's leader, resumed on its new leader when it moves, and again a
        moment later when the broker runs as many scans of this user as it allows."""
        topic, partition = request.topic, request.partition
        moves = 0
        busy_until = time.monotonic() + self._timeout_s
        while moves < _MAX_MOVES:
            address = self._cluster.leader_address(topic, partition)
            if address is None:
                await self._cluster.refresh([topic])
                address = self._cluster.leader_address(topic, partition)
            if address is not None:
                async with self._slot(address):
                    outcome = await self._stream(address, request, queue)
                if outcome == "done":
                    return
                if outcome == "busy":
                    if time.monotonic() > busy_until:
                        raise error_for(
                            ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                            f"{topic}-{partition}: its leader stayed busy with this user's other scans",
                        )
                    await asyncio.sleep(0.2)
                    continue
                self._cluster.forget_leader(topic, partition, address)
            moves += 1
            await asyncio.sleep(min(1.0, 0.05 * moves))
            await self._cluster.refresh([topic])
        raise error_for(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition} found no leader to scan it")

    async def _stream(
        self, address: str, request: broker_pb2.ScanRequest, queue: asyncio.Queue[ScanUpdate | BaseException | None]
    ) -> str:
        """One Scan call: ``done``, ``moved`` (ask the new leader) or ``busy`` (ask again)."""
        topic, partition = request.topic, request.partition
        request.current_leader_epoch = self._cluster.leader_epoch(topic, partition)
        try:
            async for answer in self._cluster.stub(address).Scan(request, timeout=None):
                if answer.error.code in _MOVED:
                    return "moved"
                if answer.error.code == ErrorCode.THROTTLING_QUOTA_EXCEEDED:
                    return "busy"
                if answer.error.code:
                    raise error_for(answer.error.code, answer.error.message)
                records = [_record(topic, partition, r) for r in answer.records]
                update = ScanUpdate(topic, partition, records, _progress(answer.progress))
                await queue.put(update)
                request.start_offset = answer.progress.next_offset  # (a resumed scan goes on here)
                if update.progress.ended is not None:
                    return "done"
        except grpc.aio.AioRpcError as exc:
            refused = security_refusal(exc)
            if refused is not None:
                raise refused from None
            if exc.code() is not grpc.StatusCode.UNAVAILABLE:
                raise LanesError(f"scan of {topic}-{partition}: {exc.details()}") from exc
        return "moved"

    async def close(self) -> None:
        """Close the channels."""
        await self._cluster.close()

    async def __aenter__(self) -> AsyncScanner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class Scanner:
    """Searches of topics, synchronously (``lanes.aio.Scanner`` on the clients' background loop)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        request_timeout_ms: int = 30_000,
        tls: ClientTls = "process",
        credentials: ClientCredentials = "process",
        client_id: str = "lanes-scanner",
    ) -> None:
        self._scanner = AsyncScanner(
            bootstrap, request_timeout_ms=request_timeout_ms, tls=tls, credentials=credentials, client_id=client_id
        )

    def scan(self, topic: str, where: Sequence[Condition | str] = (), **options: object) -> Iterator[ScanUpdate]:
        """See ``AsyncScanner.scan`` (same options); closing the iterator cancels the scans."""
        updates = cast("AsyncGenerator[ScanUpdate]", self._scanner.scan(topic, where, **options))  # type: ignore[arg-type]
        try:
            while True:
                try:
                    yield _loop.run(anext(updates))
                except StopAsyncIteration:
                    return
        finally:
            _loop.run(updates.aclose())

    def close(self) -> None:
        """Close the channels."""
        _loop.run(self._scanner.close())

    def __enter__(self) -> Scanner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
