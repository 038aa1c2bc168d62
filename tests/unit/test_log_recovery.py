"""Crash recovery: torn writes, scribbled bytes, cut files, interrupted rolls; the log reopens
ending exactly at the last valid batch, with everything before it intact and indexes rebuilt."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanes.clock import ManualClock
from lanes.protocol.records import Record
from lanes.storage.loader import CLEAN_SHUTDOWN_FILE
from lanes.storage.log import PartitionLog
from lanes.storage.manager import LogManager
from tests.unit.log_helpers import assert_indexes_agree_with_a_full_scan, config, producer_batch, read_all

CONFIG = config(segment_bytes=4000, index_interval_bytes=200)


def build(
    directory: Path, batches: int = 40, epoch_changes: tuple[int, ...] = (15, 30)
) -> tuple[PartitionLog, list[Record], ManualClock]:
    clock = ManualClock()
    log = PartitionLog.open(directory, CONFIG, clock=clock)
    records: list[Record] = []
    epoch = 0
    for index in range(batches):
        if index in epoch_changes:
            epoch += 1
        values = [b"batch-%d-record-%d" % (index, i) * (1 + index % 3) for i in range(1 + index % 4)]
        info = log.append_as_leader(producer_batch(values, clock.now_ms()), leader_epoch=epoch)
        records.extend(Record(info.first_offset + i, clock.now_ms(), None, v) for i, v in enumerate(values))
        clock.advance(7)
    return log, records, clock


def crash(log: PartitionLog) -> None:
    """The process dies: no flush, no checkpoint, no clean-shutdown marker."""
    for segment in log.segments():
        segment.release_files()


def batch_containing(log: PartitionLog, position: int) -> tuple[int, int]:
    """(start position, base offset) of the active segment's batch holding byte ``position``."""
    for start, header in log.segments()[-1].batch_headers(0):
        if start <= position < start + header.size_bytes:
            return start, header.base_offset
    raise AssertionError(f"no batch holds byte {position}")


def reopen(directory: Path, clock: ManualClock) -> PartitionLog:
    return PartitionLog.open(directory, CONFIG, clock=clock)


def check_recovered(log: PartitionLog, records: list[Record], expected_end: int) -> None:
    assert log.log_end_offset == expected_end
    assert read_all(log) == [r for r in records if r.offset < expected_end]
    assert_indexes_agree_with_a_full_scan(log)
    info = log.append_as_leader(producer_batch([b"after recovery"], 0), leader_epoch=9)  # appends go on
    assert info.first_offset == expected_end


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32), length=st.integers(1, 24))
def test_scribbled_bytes_in_the_active_segment_cut_the_log_at_the_damaged_batch(
    tmp_path_factory: pytest.TempPathFactory, seed: int, length: int
) -> None:
    directory = tmp_path_factory.mktemp("scribble")
    log, records, clock = build(directory)
    active = log.segments()[-1]
    rng = random.Random(seed)
    position = rng.randrange(active.size_bytes)
    original = active.log_path.read_bytes()
    garbage = bytes(rng.getrandbits(8) for _ in range(length))
    damaged = original[:position] + garbage + original[position + length :]
    damaged = damaged[: len(original)]
    first_change = next((i for i in range(len(original)) if damaged[i] != original[i]), None)
    expected_end = log.log_end_offset if first_change is None else batch_containing(log, first_change)[1]
    crash(log)
    active.log_path.write_bytes(damaged)
    check_recovered(reopen(directory, clock), records, expected_end)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32))
def test_a_file_cut_at_any_byte_ends_at_the_last_whole_batch(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    directory = tmp_path_factory.mktemp("cut")
    log, records, clock = build(directory)
    active = log.segments()[-1]
    cut = random.Random(seed).randrange(active.size_bytes)
    _, expected_end = batch_containing(log, cut)
    crash(log)
    os.truncate(active.log_path, cut)
    check_recovered(reopen(directory, clock), records, expected_end)


def test_every_single_bit_flip_in_the_last_batches_is_caught(tmp_path: Path) -> None:
    """Including the header fields outside the CRC: baseOffset (contiguity) and
    partitionLeaderEpoch (the epoch cache, written before the data)."""
    log, _records, clock = build(tmp_path, batches=6, epoch_changes=(2, 4))
    active = log.segments()[-1]
    last_start, last_base = batch_containing(log, active.size_bytes - 1)
    original = active.log_path.read_bytes()
    crash(log)
    for bit in range(last_start * 8, len(original) * 8):
        damaged = bytearray(original)
        damaged[bit // 8] ^= 1 << (bit % 8)
        active.log_path.write_bytes(bytes(damaged))
        (tmp_path / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
        recovered = reopen(tmp_path, clock)
        assert recovered.log_end_offset == last_base, f"bit {bit} went unnoticed"
        crash(recovered)
        active.log_path.write_bytes(original)
        (tmp_path / "recovery-point-checkpoint").unlink(missing_ok=True)


def test_a_clean_shutdown_reopens_without_scanning(tmp_path: Path) -> None:
    log, records, clock = build(tmp_path)
    log.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    reopened = reopen(tmp_path, clock)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists(), "the marker is consumed: a crash now is unclean"
    assert reopened.recovery_point == reopened.log_end_offset == records[-1].offset + 1
    assert read_all(reopened) == records


@pytest.mark.parametrize("damage", ["index missing", "time index missing", "index cut mid-entry", "index emptied"])
def test_a_damaged_index_found_at_a_clean_open_is_rebuilt(tmp_path: Path, damage: str) -> None:
    """Indexes are derived: one missing, cut mid-entry or emptied when the log opens (as its
    files were sized at the open: one ``stat`` each) is rebuilt from its segment, even after a
    clean stop, lookups agree with a full scan, and the rebuilt index is on disk afterwards (a
    closed segment's used to stay in memory only: every later open found it empty, and scanned)."""
    log, records, clock = build(tmp_path)
    closed_segments = [segment.base_offset for segment in log.segments()[:-1]]
    log.close()
    assert closed_segments, "the damage is done to a closed segment's indexes"
    stem = f"{closed_segments[0]:020d}"
    index, time_index = tmp_path / f"{stem}.index", tmp_path / f"{stem}.timeindex"
    if damage == "index missing":
        index.unlink()
    elif damage == "time index missing":
        time_index.unlink()
    elif damage == "index cut mid-entry":
        os.truncate(index, index.stat().st_size - 3)
    else:
        os.truncate(index, 0)
    reopened = reopen(tmp_path, clock)
    assert read_all(reopened) == records
    assert_indexes_agree_with_a_full_scan(reopened)
    reopened.close()
    assert index.exists()
    assert time_index.exists()
    if damage != "index emptied":  # (an empty index is a valid one: lookups then scan from the start)
        assert index.stat().st_size > 0, "rebuilt"
        assert index.stat().st_size % 8 == 0


def test_recovery_rescans_only_from_the_recovery_point(tmp_path: Path) -> None:
    log, records, clock = build(tmp_path, batches=100)
    segments = log.segments()
    assert len(segments) > 2
    recovery_point = log.recovery_point
    assert recovery_point == segments[-1].base_offset, "rolled segments are flushed at the roll"
    crash(log)
    # Damage an old segment's *index*: recovery does not rescan that segment's data, but rebuilds
    # implausible indexes wherever they are.
    with segments[0].index.path.open("ab") as index:
        index.write(b"\x00\x01\x02")
    check_recovered(reopen(tmp_path, clock), records, records[-1].offset + 1)


def test_a_crash_in_the_middle_of_a_roll(tmp_path: Path) -> None:
    log, records, clock = build(tmp_path)
    end = log.log_end_offset
    crash(log)
    # The new segment file was created, nothing else: no indexes, no data.
    (tmp_path / f"{end:020d}.log").touch()
    recovered = reopen(tmp_path, clock)
    assert recovered.segments()[-1].base_offset == end
    check_recovered(recovered, records, end)
    # Or only an index file of the new segment made it to disk: it is an orphan and goes.
    crash(recovered)
    orphan = tmp_path / f"{end + 10:020d}.index"
    orphan.write_bytes(b"\x00" * 8)
    reopen(tmp_path, clock)
    assert not orphan.exists()


def test_a_lost_epoch_checkpoint_is_rebuilt_from_the_batches(tmp_path: Path) -> None:
    log, records, clock = build(tmp_path, epoch_changes=(15, 30))
    entries = log.epochs.entries
    crash(log)
    (tmp_path / "leader-epoch-checkpoint").unlink()
    (tmp_path / "recovery-point-checkpoint").unlink(missing_ok=True)
    recovered = reopen(tmp_path, clock)
    assert recovered.epochs.entries == entries
    assert read_all(recovered) == records


@pytest.mark.parametrize("left", [b"", b"\x00" * 64], ids=["empty", "zeros"])
def test_a_machine_crash_that_empties_an_epoch_checkpoint_saved_without_fsync_loses_no_epoch(
    tmp_path: Path, left: bytes
) -> None:
    """Decision 0045: a new epoch is saved without fsync before its first batch. A power loss on a
    file system that does not order that rename may leave the file empty or zeroed: the epochs of
    the batches below the recovery point (which recovery does not scan) are learnt from their
    headers, those above it by recovery; none is lost."""
    log, records, clock = build(tmp_path, epoch_changes=(15,))
    log.flush()  # the recovery point passes epochs 0 and 1 (fsynced with them)
    for index in range(5):  # a new epoch, saved without fsync, and records not flushed
        info = log.append_as_leader(producer_batch([b"late-%d" % index], clock.now_ms()), leader_epoch=2)
        records.append(Record(info.first_offset, clock.now_ms(), None, b"late-%d" % index))
    entries = log.epochs.entries
    assert [epoch for epoch, _ in entries] == [0, 1, 2]
    crash(log)
    (tmp_path / "leader-epoch-checkpoint").write_bytes(left)
    recovered = reopen(tmp_path, clock)
    assert recovered.epochs.entries == entries
    assert read_all(recovered) == records
    assert reopen_after(recovered, tmp_path, clock).epochs.entries == entries, "and it was written back"


def test_a_lost_epoch_checkpoint_after_a_clean_stop_is_learnt_from_every_batch(tmp_path: Path) -> None:
    log, records, clock = build(tmp_path, epoch_changes=(15, 30))
    entries = log.epochs.entries
    log.close()
    (tmp_path / "leader-epoch-checkpoint").unlink()
    reopened = reopen(tmp_path, clock)
    assert reopened.epochs.entries == entries
    assert read_all(reopened) == records


def reopen_after(log: PartitionLog, directory: Path, clock: ManualClock) -> PartitionLog:
    crash(log)
    return reopen(directory, clock)


def test_a_log_not_opened_since_an_unclean_stop_is_still_recovered_after_a_clean_close(tmp_path: Path) -> None:
    """After a crash, a broker stopped before it opened every log (it opens them as the metadata
    names them) must not mark the data directory clean: the logs it never opened were never
    recovered, and a torn write in one would be trusted at the next start."""
    clock = ManualClock()
    manager = LogManager(tmp_path, clock=clock)
    opened = manager.open_log("a", 0, CONFIG)
    untouched = manager.open_log("b", 0, CONFIG)
    for log in (opened, untouched):
        log.append_as_leader(producer_batch([b"v"] * 3, clock.now_ms()), leader_epoch=0)
    valid_bytes = untouched.segments()[-1].size_bytes
    crash(opened)
    crash(untouched)  # the process dies: no marker
    segment_file = next((tmp_path / "b-0").glob("*.log"))
    with segment_file.open("ab") as torn:
        torn.write(b"\x00\x00\x00\x00\x00\x00\x00\x09half a batch")  # a write the crash tore
    after_crash = LogManager(tmp_path, clock=clock)
    assert not after_crash.clean_shutdown
    after_crash.open_log("a", 0, CONFIG)  # recovered; b is not opened in this run
    after_crash.close()
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists(), "b was never recovered"
    next_start = LogManager(tmp_path, clock=clock)
    recovered = next_start.open_log("b", 0, CONFIG)
    assert recovered.log_end_offset == 3
    assert segment_file.stat().st_size == valid_bytes, "the torn tail cut by recovery"
    next_start.open_log("a", 0, CONFIG)
    next_start.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists(), "every log opened: clean"
