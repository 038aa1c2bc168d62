"""Compaction: latest value per key with original offsets, tombstones and their horizon, lag
and ratio settings, reads during compaction, and crashes at every step of a clean."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from lanes.clock import ManualClock
from lanes.errors import ErrorCode, LanesError
from lanes.protocol.records import Record
from lanes.storage.cleaner import CleanerThread, LogCleaner
from lanes.storage.log import PartitionLog
from tests.unit.log_helpers import assert_indexes_agree_with_a_full_scan, config, producer_batch, read_all

DAY_MS = 24 * 60 * 60 * 1000
COMPACTED = config(cleanup_policy="compact", segment_bytes=1500, index_interval_bytes=100, delete_retention_ms=DAY_MS)


class CrashError(Exception):
    """Raised by a fault hook: the process 'dies' at that step."""


def keyed_stream(
    log: PartitionLog, clock: ManualClock, seed: int = 1, writes: int = 300, keys: int = 20
) -> list[Record]:
    """Random updates and tombstones over a few keys; returns every record written."""
    rng = random.Random(seed)
    written: list[Record] = []
    for _ in range(writes // 3):
        chosen = [b"key-%02d" % rng.randrange(keys) for _ in range(3)]
        values: list[bytes | None] = [
            None if rng.random() < 0.15 else b"value-%d" % rng.randrange(10**6) for _ in chosen
        ]
        info = log.append_as_leader(producer_batch(values, clock.now_ms(), keys=list(chosen)), leader_epoch=0)
        written.extend(
            Record(info.first_offset + i, clock.now_ms(), k, v)
            for i, (k, v) in enumerate(zip(chosen, values, strict=True))
        )
        clock.advance(1000)
    log.roll()
    log.update_high_watermark(log.log_end_offset)  # replicated: compaction may act on all of it
    return written


def latest_per_key(records: list[Record], below: int) -> dict[bytes, Record]:
    latest: dict[bytes, Record] = {}
    for record in records:
        if record.offset < below and record.key is not None:
            latest[record.key] = record
    return latest


def test_compaction_keeps_exactly_the_latest_record_per_key_at_its_offset(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, COMPACTED, clock=clock)
    written = keyed_stream(log, clock)
    end = log.segments()[-1].base_offset
    result = LogCleaner(clock).clean(log, force=True)
    assert result is not None
    assert result.records_kept < result.records_read
    after = read_all(log)
    expected = sorted(latest_per_key(written, end).values(), key=lambda r: r.offset)
    assert [r for r in after if r.offset < end] == expected, "latest per key, original offsets, tombstones kept"
    assert [r for r in after if r.offset >= end] == [r for r in written if r.offset >= end]
    assert len({r.offset for r in after}) == len(after)
    assert_indexes_agree_with_a_full_scan(log)
    # Reopening reads the same thing; the log end never moves.
    log.close()
    reopened = PartitionLog.open(tmp_path, COMPACTED, clock=clock)
    assert read_all(reopened) == after
    assert reopened.log_end_offset == written[-1].offset + 1


def test_tombstones_go_after_delete_retention_and_offsets_leave_gaps(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, COMPACTED, clock=clock)
    log.append_as_leader(producer_batch([b"a1", b"b1"], clock.now_ms(), keys=[b"a", b"b"]), 0)
    log.append_as_leader(producer_batch([None, b"b2"], clock.now_ms(), keys=[b"a", b"b"]), 0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = LogCleaner(clock)
    cleaner.clean(log, force=True)
    assert [(r.offset, r.key, r.value) for r in read_all(log)] == [(2, b"a", None), (3, b"b", b"b2")]
    clock.advance(DAY_MS - 1)
    cleaner.clean(log, force=True)
    assert [r.offset for r in read_all(log)] == [2, 3], "the tombstone stays until its delete horizon"
    clock.advance(2)
    cleaner.clean(log, force=True)
    assert [(r.offset, r.value) for r in read_all(log)] == [(3, b"b2")]
    assert log.log_end_offset == 4


def test_min_compaction_lag_and_dirty_ratio_are_honoured(tmp_path: Path) -> None:
    clock = ManualClock()
    lagging = config(cleanup_policy="compact", segment_bytes=1500, min_compaction_lag_ms=60_000)
    log = PartitionLog.open(tmp_path, lagging, clock=clock)
    log.append_as_leader(producer_batch([b"1", b"2"], clock.now_ms(), keys=[b"k", b"k"]), 0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = LogCleaner(clock)
    assert cleaner.clean(log) is None, "records younger than min.compaction.lag.ms stay"
    clock.advance(60_001)
    assert cleaner.clean(log) is not None
    assert [r.value for r in read_all(log)] == [b"2"]
    # Nothing dirty left: the ratio is 0 and a pass does nothing.
    assert cleaner.dirty_ratio(log) == 0.0
    assert cleaner.clean(log) is None


def test_delete_policy_logs_are_never_compacted(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=1500), clock=clock)
    log.append_as_leader(producer_batch([b"1", b"2"], clock.now_ms(), keys=[b"k", b"k"]), 0)
    log.roll()
    assert LogCleaner(clock).clean(log, force=True) is None
    assert len(read_all(log)) == 2


def test_keyless_records_are_refused_on_compacted_topics(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, COMPACTED, clock=ManualClock())
    with pytest.raises(LanesError, match="needs one on every record") as raised:
        log.append_as_leader(producer_batch([b"v"], 0), 0)
    assert raised.value.code is ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 0


def test_reads_during_compaction_never_see_a_partial_state(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, COMPACTED, clock=clock)
    written = keyed_stream(log, clock, writes=900)
    end = log.segments()[-1].base_offset
    before = {r.offset: r for r in read_all(log)}
    compacted = latest_per_key(written, end)
    failures: list[str] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            seen = read_all(log)
            offsets = [r.offset for r in seen]
            if offsets != sorted(set(offsets)):
                failures.append("offsets out of order or repeated")
            for record in seen:
                if before.get(record.offset) != record:
                    failures.append(f"record at {record.offset} was never written: {record}")
            visible = {r.key for r in seen if r.offset < end}
            if visible != set(compacted):
                failures.append("a key's latest record disappeared during compaction")

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    LogCleaner(clock).clean(log, force=True)
    done.set()
    for thread in threads:
        thread.join()
    assert not failures, failures[:3]


@pytest.mark.parametrize("step", ["cleaned-written", "swap-committed", "indexes-dropped", "log-replaced", "swapped"])
def test_a_crash_at_any_step_of_a_clean_loses_nothing(tmp_path: Path, step: str) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, COMPACTED, clock=clock)
    written = keyed_stream(log, clock)
    end = log.segments()[-1].base_offset
    original = {r.offset: r for r in read_all(log)}
    crossings = 0

    def fault(name: str) -> None:
        nonlocal crossings
        if name == step:
            crossings += 1
            if crossings == 2:  # crash while swapping the second segment
                raise CrashError(name)

    with pytest.raises(CrashError):
        LogCleaner(clock, fault=fault).clean(log, force=True)
    for segment in log.segments():
        segment.release_files()
    recovered = PartitionLog.open(tmp_path, COMPACTED, clock=clock)
    seen = read_all(recovered)
    assert all(original[r.offset] == r for r in seen), "only records that were written"
    latest = latest_per_key(written, end)
    visible = {r.key: r for r in seen if r.offset < end}
    assert all(visible[key] == record for key, record in latest.items()), "every latest value survives"
    assert recovered.log_end_offset == written[-1].offset + 1
    assert_indexes_agree_with_a_full_scan(recovered)
    assert not list(tmp_path.glob("*.cleaned"))
    assert not list(tmp_path.glob("*.swap"))
    # A later pass finishes the job, once replication has re-established the high-water mark.
    recovered.update_high_watermark(recovered.log_end_offset)
    LogCleaner(clock).clean(recovered, force=True)
    assert [r for r in read_all(recovered) if r.offset < end] == sorted(latest.values(), key=lambda r: r.offset)


def test_a_truncation_interrupts_compaction(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, COMPACTED, clock=clock)
    written = keyed_stream(log, clock)
    high_watermark = log.update_high_watermark(log.segments()[3].base_offset)  # replicated so far
    target = high_watermark + 1  # a follower truncates only above the high-water mark
    truncations: list[threading.Thread] = []

    def truncate_midway(name: str) -> None:
        if name == "cleaned-written" and not truncations:
            truncation = threading.Thread(target=log.truncate_to, args=(target,))
            truncation.start()
            truncations.append(truncation)
            while not log.cleaner_abort.is_set():
                pass

    assert LogCleaner(clock, fault=truncate_midway).clean(log, force=True) is None, "the pass stops early"
    truncations[0].join()
    assert log.log_end_offset <= target
    assert not list(tmp_path.glob("*.cleaned"))
    visible = {r.key: r for r in read_all(log)}
    for key, record in latest_per_key(written, high_watermark).items():
        assert visible[key].offset >= record.offset, "no replicated latest value was lost"
    assert_indexes_agree_with_a_full_scan(log)


def test_compact_and_delete_policy_does_both(tmp_path: Path) -> None:
    clock = ManualClock()
    both = config(cleanup_policy="compact,delete", segment_bytes=1500, retention_ms=DAY_MS)
    log = PartitionLog.open(tmp_path, both, clock=clock)
    written = keyed_stream(log, clock)
    end = log.segments()[-1].base_offset
    assert LogCleaner(clock).clean(log, force=True) is not None
    compacted = read_all(log)
    assert [r for r in compacted if r.offset < end] == sorted(
        latest_per_key(written, end).values(), key=lambda r: r.offset
    )
    clock.advance(2 * DAY_MS)
    assert log.apply_retention() > 0, "old segments expire despite compaction"
    assert log.segment_count == 1
    assert read_all(log) == [r for r in compacted if r.offset >= log.log_start_offset]


def test_the_cleaner_thread_compacts_in_the_background(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, COMPACTED, clock=clock)
    written = keyed_stream(log, clock)
    end = log.segments()[-1].base_offset
    expected = sorted(latest_per_key(written, end).values(), key=lambda r: r.offset)
    thread = CleanerThread(LogCleaner(clock), lambda: [log], interval_s=0.01)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while [r for r in read_all(log) if r.offset < end] != expected:
            assert time.monotonic() < deadline, "the cleaner thread never compacted the log"
            time.sleep(0.01)
    finally:
        thread.stop()
