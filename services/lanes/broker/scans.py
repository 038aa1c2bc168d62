"""Searches of partitions on their leader (``Broker.Scan``): ``Scans`` runs them, one
``PartitionScan`` each, within budgets and a share of the broker.

A scan reads its partition's log below the high-water mark it saw when it started, one chunk of
at most ``CHUNK_BYTES`` per worker-thread trip, and filters each chunk where it was read
(``lanes.search.batch_scan``): only the matches leave the broker. Between chunks it yields a
``ScanProgress`` (and the matches found), so the face streams them as they are found and the
caller can cancel at any time; it ends at its end offset, or when a budget runs out (records,
bytes, the CPU time of its trips, matches), saying which.

A broker runs at most ``MAX_SCANS`` at once and ``MAX_SCANS_PER_PRINCIPAL`` of one principal:
more are refused (THROTTLING_QUOTA_EXCEEDED), so one user's searches cannot take the broker
from the others. Budgets a request leaves at 0 take ``DEFAULT_BUDGET``; larger ones are capped
at ``LIMIT_BUDGET``.

Owned by the broker's event loop; a scan's chunks run in worker threads, one at a time.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass

from lanes.broker.partition import Partition
from lanes.broker.replica_manager import ReplicaManager
from lanes.errors import ErrorCode, LanesError, OffsetOutOfRangeError, error_code
from lanes.protocol.records import Record
from lanes.rpc.wire import wire_error
from lanes.search.batch_scan import ScanStep, scan_batches
from lanes.search.record_filter import Check, Condition, Field, FilterError, RecordFilter
from lanes.storage.log import PartitionLog
from lanes.v1 import broker_pb2, common_pb2

#: bytes one chunk reads (one worker-thread trip; a cancelled scan stops after at most one)
CHUNK_BYTES = 1024 * 1024
MAX_SCANS = 16
MAX_SCANS_PER_PRINCIPAL = 4


@dataclass(frozen=True)
class Budget:
    """What one scan may spend."""

    max_records: int
    max_bytes: int
    max_cpu_ms: int
    max_matches: int

    def capped(self, asked: broker_pb2.ScanBudget) -> Budget:
        """``asked``, with 0 fields taking this budget's (the default) and none above ``LIMIT_BUDGET``."""

        def pick(wanted: int, default: int, limit: int) -> int:
            return default if wanted <= 0 else min(wanted, limit)

        return Budget(
            pick(asked.max_records, self.max_records, LIMIT_BUDGET.max_records),
            pick(asked.max_bytes, self.max_bytes, LIMIT_BUDGET.max_bytes),
            pick(asked.max_cpu_ms, self.max_cpu_ms, LIMIT_BUDGET.max_cpu_ms),
            pick(asked.max_matches, self.max_matches, LIMIT_BUDGET.max_matches),
        )


DEFAULT_BUDGET = Budget(max_records=10_000_000, max_bytes=1 << 30, max_cpu_ms=10_000, max_matches=500)
LIMIT_BUDGET = Budget(max_records=100_000_000, max_bytes=8 << 30, max_cpu_ms=60_000, max_matches=10_000)


def record_filter_of(request: broker_pb2.ScanRequest) -> RecordFilter:
    """The request's filter, checked (FilterError)."""
    conditions = []
    for number, wanted in enumerate(request.conditions, 1):
        try:
            field, test = Field(wanted.field), Check(wanted.test)
        except ValueError:
            raise FilterError(f"condition {number}: its field and test must be set") from None
        conditions.append(Condition(field, test, wanted.operand, wanted.name, wanted.negate))
    return RecordFilter.of(conditions, request.from_timestamp_ms or None, request.to_timestamp_ms or None)


def scanned_record(record: Record) -> broker_pb2.ScannedRecord:
    return broker_pb2.ScannedRecord(
        offset=record.offset,
        timestamp_ms=record.timestamp,
        key=record.key,
        value=record.value,
        headers=[broker_pb2.ScannedHeader(key=key, value=value) for key, value in record.headers],
    )


class PartitionScan:
    """One scan (see the module docstring). ``progress`` is what the caller is told."""

    def __init__(self, log: PartitionLog, record_filter: RecordFilter, budget: Budget, start: int, end: int) -> None:
        self._log = log
        self._filter = record_filter
        self._budget = budget
        self.progress = broker_pb2.ScanProgress(
            next_offset=start,
            log_start_offset=log.log_start_offset,
            high_watermark=log.high_watermark,
            end_offset=end,
        )
        self._cpu_s = 0.0

    def _over_budget(self) -> broker_pb2.ScanEnd:
        progress, budget = self.progress, self._budget
        if progress.next_offset >= progress.end_offset:
            return broker_pb2.SCAN_END_REACHED
        if progress.matches >= budget.max_matches:
            return broker_pb2.SCAN_END_MATCH_LIMIT
        if progress.scanned_records >= budget.max_records:
            return broker_pb2.SCAN_END_RECORD_BUDGET
        if progress.scanned_bytes >= budget.max_bytes:
            return broker_pb2.SCAN_END_BYTE_BUDGET
        if progress.cpu_ms >= budget.max_cpu_ms:
            return broker_pb2.SCAN_END_CPU_BUDGET
        return broker_pb2.SCAN_END_UNSPECIFIED

    def _chunk(self) -> ScanStep:
        """Read and filter the next chunk (a worker thread)."""
        started = time.thread_time()
        progress = self.progress
        offset = max(progress.next_offset, self._log.log_start_offset)  # (retention may have moved it)
        room = self._budget.max_bytes - progress.scanned_bytes
        read = self._log.read(offset, min(CHUNK_BYTES, room), upper_bound_offset=progress.high_watermark)
        step = scan_batches(
            read.records, offset, progress.end_offset, self._filter, self._budget.max_matches - progress.matches
        )
        if not read.records:  # nothing below the mark from here (deleted under the scan)
            step.next_offset = progress.end_offset
        self._cpu_s += time.thread_time() - started
        return step

    async def steps(self) -> AsyncIterator[broker_pb2.ScanResponse]:
        """Answers until the scan ends: each with the matches of a chunk and the progress; the
        last one with ``progress.end`` set."""
        progress = self.progress
        while (end := self._over_budget()) == broker_pb2.SCAN_END_UNSPECIFIED:
            try:
                step = await asyncio.to_thread(self._chunk)
            except OffsetOutOfRangeError:  # retention deleted what was next: go on from the log start
                progress.next_offset = self._log.log_start_offset
                continue
            progress.next_offset = max(progress.next_offset, step.next_offset)
            progress.scanned_records += step.records
            progress.scanned_bytes += step.bytes
            progress.matches += len(step.matches)
            progress.cpu_ms = int(self._cpu_s * 1000)
            progress.end = self._over_budget()
            yield broker_pb2.ScanResponse(
                error=wire_error(ErrorCode.NONE), records=[scanned_record(r) for r in step.matches], progress=progress
            )
            if progress.end != broker_pb2.SCAN_END_UNSPECIFIED:
                return
        progress.end = end
        yield broker_pb2.ScanResponse(error=wire_error(ErrorCode.NONE), progress=progress)


class Scans:
    """The broker's scans (see the module docstring). Owned by the broker's event loop."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self._replicas = replicas
        self._running: Counter[str] = Counter()

    async def scan(self, request: broker_pb2.ScanRequest, principal: str) -> AsyncIterator[broker_pb2.ScanResponse]:
        """The answers to ``request`` (see ``PartitionScan.steps``), or one answer with its error."""
        if sum(self._running.values()) >= MAX_SCANS or self._running[principal] >= MAX_SCANS_PER_PRINCIPAL:
            yield _failed(
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"this broker runs at most {MAX_SCANS_PER_PRINCIPAL} scans of one user and {MAX_SCANS} in all; "
                "retry when one has ended",
            )
            return
        self._running[principal] += 1
        try:
            try:
                scan = await self._start(request)
            except LanesError as exc:
                yield _failed(exc.code, exc.message, self._replicas.leader_hint(request.topic, request.partition))
                return
            async for answer in scan.steps():
                yield answer
        finally:
            self._running[principal] -= 1
            if not self._running[principal]:
                del self._running[principal]

    async def _start(self, request: broker_pb2.ScanRequest) -> PartitionScan:
        try:
            record_filter = record_filter_of(request)
        except FilterError as exc:
            raise LanesError(str(exc), ErrorCode.INVALID_REQUEST) from None
        led = self._replicas.led(request.topic, request.partition, request.current_leader_epoch)
        if not isinstance(led, Partition):
            raise LanesError(led.message, error_code(led.code) or ErrorCode.UNKNOWN_SERVER_ERROR)
        log = led.log
        start, mark = log.log_start_offset, log.high_watermark
        which = request.WhichOneof("start")
        name = f"{request.topic}-{request.partition}"
        if which == "start_offset":
            if request.start_offset > mark:
                raise LanesError(
                    f"{name}: offset {request.start_offset} is past the high-water mark {mark} "
                    f"(the partition holds offsets {start} to {mark - 1})",
                    ErrorCode.OFFSET_OUT_OF_RANGE,
                )
            start = max(start, request.start_offset)
        elif which == "start_timestamp_ms":
            found = await asyncio.to_thread(log.offset_for_timestamp, request.start_timestamp_ms)
            start = mark if found is None else max(start, min(found.offset, mark))
        elif which == "start_last":
            if request.start_last < 0:
                raise LanesError(
                    f"start_last is a count of records, not {request.start_last}", ErrorCode.INVALID_REQUEST
                )
            start = max(start, mark - request.start_last)
        end = mark if request.end_offset <= 0 else min(mark, request.end_offset)
        budget = DEFAULT_BUDGET.capped(request.budget)
        return PartitionScan(log, record_filter, budget, start, max(start, end))


def _failed(code: ErrorCode, message: str, hint: common_pb2.LeaderHint | None = None) -> broker_pb2.ScanResponse:
    answer = broker_pb2.ScanResponse(
        error=wire_error(code, message), progress=broker_pb2.ScanProgress(end=broker_pb2.SCAN_END_ERROR)
    )
    if hint is not None:
        answer.current_leader.CopyFrom(hint)
    return answer
