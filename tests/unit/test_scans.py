"""The broker's scans (lanes.broker.scans) over a real log: chunks, budgets, where a scan can go
on, and the share of the broker one user's scans may take."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from lanes.broker.scans import CHUNK_BYTES, DEFAULT_BUDGET, LIMIT_BUDGET, MAX_SCANS_PER_PRINCIPAL, PartitionScan, Scans
from lanes.clock import ManualClock
from lanes.errors import ErrorCode
from lanes.search.record_filter import RecordFilter, parse_condition
from lanes.storage.log import PartitionLog
from lanes.v1 import broker_pb2
from tests.unit.log_helpers import config, producer_batch

RECORDS = 20_000


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> PartitionLog:
    """20,000 records of ~110 bytes in batches of 500: ``n`` in every value, one ``needle``."""
    opened = PartitionLog.open(tmp_path_factory.mktemp("scans") / "t-0", config(), clock=ManualClock())
    for first in range(0, RECORDS, 500):
        values = [b'{"n": %d, "pad": "%s"}' % (i, b"x" * 80) for i in range(first, first + 500)]
        if first == 12_000:
            values[7] = b'{"n": 12007, "needle": true}'
        opened.append_as_leader(producer_batch(values, 1_000 + first), 0)
    opened.update_high_watermark(RECORDS)
    return opened


async def answers(scan: PartitionScan) -> list[broker_pb2.ScanResponse]:
    return [answer async for answer in scan.steps()]


def scan_of(log: PartitionLog, where: list[str], start: int = 0, **budget: int) -> list[broker_pb2.ScanResponse]:
    chosen = DEFAULT_BUDGET.capped(broker_pb2.ScanBudget(**budget))
    record_filter = RecordFilter.of([parse_condition(c) for c in where])
    return asyncio.run(answers(PartitionScan(log, record_filter, chosen, start, log.high_watermark)))


def test_a_scan_reads_in_chunks_and_sends_only_matches(log: PartitionLog) -> None:
    found = scan_of(log, ["value~needle"])
    assert len(found) > 1, "one answer per chunk, as the scan goes"
    assert [r.offset for a in found for r in a.records] == [12_007]
    last = found[-1].progress
    assert last.end == broker_pb2.SCAN_END_REACHED
    assert last.scanned_records == RECORDS
    assert last.next_offset == RECORDS
    assert last.scanned_bytes == log.size_bytes
    assert all(a.progress.scanned_bytes <= (i + 1) * (CHUNK_BYTES + 64 * 1024) for i, a in enumerate(found))


def test_budgets_end_a_scan_where_a_later_one_goes_on(log: PartitionLog) -> None:
    by_records = scan_of(log, ["$.needle"], max_records=3_000)[-1].progress
    assert by_records.end == broker_pb2.SCAN_END_RECORD_BUDGET
    assert 3_000 <= by_records.scanned_records < 3_000 + 10_000
    rest = scan_of(log, ["$.needle"], start=by_records.next_offset)
    assert [r.offset for a in rest for r in a.records] == [12_007]
    assert rest[-1].progress.scanned_records == RECORDS - by_records.next_offset

    by_bytes = scan_of(log, ["value~absent"], max_bytes=1)[-1].progress
    assert by_bytes.end == broker_pb2.SCAN_END_BYTE_BUDGET
    assert by_bytes.next_offset == 500, "at least one batch, to make progress"

    by_matches = scan_of(log, ["$.n"], start=10, max_matches=25)
    assert [r.offset for a in by_matches for r in a.records] == list(range(10, 35))
    assert by_matches[-1].progress.end == broker_pb2.SCAN_END_MATCH_LIMIT
    assert by_matches[-1].progress.next_offset == 35


def test_requested_budgets_are_capped_and_zero_means_the_default() -> None:
    asked = broker_pb2.ScanBudget(max_records=0, max_bytes=1 << 60, max_cpu_ms=-5, max_matches=10)
    chosen = DEFAULT_BUDGET.capped(asked)
    assert chosen.max_records == DEFAULT_BUDGET.max_records
    assert chosen.max_bytes == LIMIT_BUDGET.max_bytes
    assert chosen.max_cpu_ms == DEFAULT_BUDGET.max_cpu_ms
    assert chosen.max_matches == 10


class _OneLog(Scans):
    """Scans whose every request scans ``log`` (the leader lookup is the ReplicaManager's, tested apart)."""

    def __init__(self, log: PartitionLog) -> None:
        super().__init__(replicas=None)  # type: ignore[arg-type]
        self.log = log

    async def _start(self, request: broker_pb2.ScanRequest) -> PartitionScan:
        budget = DEFAULT_BUDGET.capped(request.budget)
        return PartitionScan(self.log, RecordFilter.of([]), budget, 0, self.log.high_watermark)


def test_one_user_runs_two_scans_at_once_and_a_cancelled_one_frees_its_place(log: PartitionLog) -> None:
    async def run() -> None:
        scans = _OneLog(log)
        request = broker_pb2.ScanRequest(topic="t", budget=broker_pb2.ScanBudget(max_matches=1))
        held: list[AsyncIterator[broker_pb2.ScanResponse]] = []
        for _ in range(MAX_SCANS_PER_PRINCIPAL):
            scan = scans.scan(request, "mallory")
            assert (await anext(scan)).error.code == 0
            held.append(scan)
        refused = await anext(scans.scan(request, "mallory"))
        assert refused.error.code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        assert "4 scans of one user" in refused.error.message
        other = await anext(scans.scan(request, "alice"))
        assert other.error.code == 0, "another user is not held back"
        await held[0].aclose()  # type: ignore[attr-defined]  # (what a cancelled call does)
        again = await anext(scans.scan(request, "mallory"))
        assert again.error.code == 0

    asyncio.run(run())
