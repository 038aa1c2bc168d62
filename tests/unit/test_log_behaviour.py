"""Partition log behaviour: refusals that leave the log untouched, retention, flushing, follower
appends, timestamps, leader epochs, many partitions through the LogManager."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from lanes.clock import ManualClock
from lanes.errors import CorruptRecordError, ErrorCode, LanesError, MessageTooLargeError, OffsetOutOfRangeError
from lanes.protocol.records import Record, TimestampType, decode_batches, encode_batch
from lanes.storage.checkpoint import write_checkpoint
from lanes.storage.epochs import LeaderEpochCache
from lanes.storage.files import FileCache, fsync_file, pread_cached, pwritev_all
from lanes.storage.log import PartitionLog
from lanes.storage.manager import LogManager, parse_log_directory_name
from tests.unit.log_helpers import config, producer_batch, read_all

HOUR_MS = 60 * 60 * 1000


def fill(log: PartitionLog, clock: ManualClock, batches: int, step_ms: int = 1000, size: int = 100) -> None:
    for _ in range(batches):
        log.append_as_leader(producer_batch([b"x" * size] * 3, clock.now_ms()), leader_epoch=0)
        clock.advance(step_ms)
    log.update_high_watermark(log.log_end_offset)


# ---------------------------------------------------------------------------------------------
# bad input is refused and loses nothing


def test_bad_batches_are_refused_and_the_log_is_untouched(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(max_message_bytes=2000), clock=clock)
    fill(log, clock, 2)
    before = (log.log_end_offset, log.size_bytes, read_all(log))
    oversized = producer_batch([b"y" * 3000], clock.now_ms())
    with pytest.raises(MessageTooLargeError, match=r"max\.message\.bytes"):
        log.append_as_leader(oversized, leader_epoch=0)
    corrupt = bytearray(producer_batch([b"z"], clock.now_ms()))
    corrupt[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        log.append_as_leader(bytes(corrupt), leader_epoch=0)
    with pytest.raises(CorruptRecordError, match="truncated"):
        log.append_as_leader(producer_batch([b"z"], 0)[:-3], leader_epoch=0)
    assert (log.log_end_offset, log.size_bytes, read_all(log)) == before
    assert log.append_as_leader(producer_batch([b"ok"], 0), leader_epoch=0).first_offset == before[0]


def test_a_produce_carries_one_batch_with_no_record_beyond_the_timestamp_bound(tmp_path: Path) -> None:
    """As Kafka's LogValidator: one batch per partition per request (each could name a producer
    of its own), and no record later than ``message.timestamp.after.max.ms`` on the log's clock
    (KIP-937); LogAppendTime topics stamp their own time and take any."""
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(message_timestamp_after_max_ms=HOUR_MS), clock=clock)
    two = producer_batch([b"a"], clock.now_ms()) + producer_batch([b"b"], clock.now_ms())
    with pytest.raises(LanesError, match="one record batch per partition, not 2") as refused:
        log.append_as_leader(two, leader_epoch=0)
    assert refused.value.code == ErrorCode.INVALID_RECORD
    with pytest.raises(LanesError, match=r"1 ms beyond message\.timestamp\.after\.max\.ms") as late:
        log.append_as_leader(producer_batch([b"c"], clock.now_ms() + HOUR_MS + 1), leader_epoch=0)
    assert late.value.code == ErrorCode.INVALID_TIMESTAMP
    assert log.log_end_offset == 0
    log.append_as_leader(producer_batch([b"d"], clock.now_ms() + HOUR_MS), leader_epoch=0)
    clock.advance(1)
    log.append_as_leader(producer_batch([b"e"], clock.now_ms() + HOUR_MS), leader_epoch=0)
    assert log.log_end_offset == 2

    stamped = PartitionLog.open(tmp_path / "stamped", config(message_timestamp_type="LogAppendTime"), clock=clock)
    stamped.append_as_leader(producer_batch([b"f"], clock.now_ms() + 10 * HOUR_MS), leader_epoch=0)
    assert stamped.log_end_offset == 1


def test_follower_appends_keep_the_leaders_offsets_and_refuse_going_backwards(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(), clock=clock)
    replicated = encode_batch(
        [Record(10, 1, None, b"a"), Record(11, 2, None, b"b")], base_offset=10, partition_leader_epoch=3
    )
    log.truncate_fully_and_start_at(10)
    info = log.append_as_follower(replicated)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (10, 11, 12)
    assert log.epochs.entries == [(3, 10)]
    with pytest.raises(CorruptRecordError, match="below the log end offset"):
        log.append_as_follower(replicated)
    assert log.log_end_offset == 12


# ---------------------------------------------------------------------------------------------
# retention


def test_time_retention_deletes_expired_segments_but_never_the_active_one(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=1000, retention_ms=HOUR_MS), clock=clock)
    fill(log, clock, 30, step_ms=60_000)  # 30 minutes of data over several segments
    segments = log.segments()
    assert len(segments) > 3
    clock.advance(HOUR_MS - 10 * 60_000)  # the first ~10 minutes are now older than an hour
    deleted = log.apply_retention()
    assert 0 < deleted < len(segments) - 1
    first = log.segments()[0]
    assert log.log_start_offset == first.base_offset
    assert first.max_timestamp >= clock.now_ms() - HOUR_MS
    clock.advance(10 * HOUR_MS)  # everything expired
    log.apply_retention()
    assert log.segment_count == 1, "the active segment stays even when expired"
    assert read_all(log) == read_all(log, start=log.segments()[0].base_offset)


def test_size_retention_keeps_the_log_under_retention_bytes(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=1000, retention_bytes=3000), clock=clock)
    fill(log, clock, 40)
    assert log.size_bytes > 3000
    log.apply_retention()
    assert log.size_bytes - log.segments()[0].size_bytes < 3000 <= log.size_bytes + 1000


def test_retention_stops_at_the_high_watermark(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=1000, retention_ms=1), clock=clock)
    fill(log, clock, 20)
    log.update_high_watermark(log.segments()[2].base_offset)
    clock.advance(HOUR_MS)
    assert log.apply_retention() == 2
    assert log.log_start_offset == log.segments()[0].base_offset <= log.high_watermark


def test_compact_only_logs_keep_old_segments_and_delete_records_moves_the_start(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=1000, retention_ms=1, cleanup_policy="compact"), clock=clock)
    for _ in range(10):
        log.append_as_leader(producer_batch([b"v" * 100] * 3, clock.now_ms(), keys=[b"a", b"b", b"c"]), 0)
    log.update_high_watermark(log.log_end_offset)
    clock.advance(HOUR_MS)
    assert log.apply_retention() == 0
    target = log.segments()[2].base_offset + 1
    assert log.delete_records_before(target) == target
    assert log.segments()[0].base_offset <= target < log.segments()[1].base_offset
    assert all(r.offset >= target for r in read_all(log))
    with pytest.raises(OffsetOutOfRangeError):
        log.read(target - 1, 100)
    with pytest.raises(OffsetOutOfRangeError, match="high-water mark"):
        log.delete_records_before(log.log_end_offset + 1)


# ---------------------------------------------------------------------------------------------
# flushing


def test_flush_messages_one_makes_every_append_durable_before_it_returns(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(flush_messages=1), clock=clock)
    for _ in range(5):
        log.append_as_leader(producer_batch([b"v"], 0), 0)
        assert log.recovery_point == log.log_end_offset


def test_flush_ms_flushes_once_the_oldest_append_is_old_enough(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(flush_ms=500), clock=clock)
    log.append_as_leader(producer_batch([b"v"], 0), 0)
    clock.advance(499)
    assert not log.maybe_flush_by_time()
    assert log.recovery_point == 0
    clock.advance(1)
    assert log.maybe_flush_by_time()
    assert log.recovery_point == log.log_end_offset == 1


def test_concurrent_appends_and_flushes_all_end_durable(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(), clock=clock)

    def writer() -> None:
        for _ in range(50):
            info = log.append_as_leader(producer_batch([b"v" * 50], 0), 0)
            log.flush(info.last_offset + 1)
            assert log.recovery_point > info.last_offset

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert log.log_end_offset == 200
    assert log.recovery_point == 200
    assert [r.offset for r in read_all(log)] == list(range(200))


# ---------------------------------------------------------------------------------------------
# timestamps and epochs


def test_offset_for_timestamp_finds_the_first_record_at_or_after(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=1000, index_interval_bytes=100), clock=clock)
    stamps = []
    for index in range(40):
        log.append_as_leader(
            encode_batch([Record(0, clock.now_ms(), None, b"a"), Record(1, clock.now_ms() + 5, None, b"b")]), 0
        )
        stamps.append((index * 2, clock.now_ms()))
        stamps.append((index * 2 + 1, clock.now_ms() + 5))
        clock.advance(10)
    for target in (stamps[0][1] - 1, stamps[17][1], stamps[17][1] + 1, stamps[-1][1]):
        expected = next(offset for offset, stamp in stamps if stamp >= target)
        found = log.offset_for_timestamp(target)
        assert found is not None
        assert found.offset == expected
    assert log.offset_for_timestamp(stamps[-1][1] + 1) is None


def test_record_time_at_is_the_time_of_the_first_record_at_or_after_an_offset(tmp_path: Path) -> None:
    """What a coordinator asks (OFFSET_SPEC_RECORD_TIME) to know how old a group's oldest
    unconsumed record is: the broker reads it, no record leaves."""
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=1000), clock=clock)
    for _ in range(20):
        log.append_as_leader(
            encode_batch([Record(0, clock.now_ms(), None, b"a"), Record(1, clock.now_ms() + 5, None, b"b")]), 0
        )
        clock.advance(10)
    log.update_high_watermark(30)
    found = log.record_time_at(13)  # mid-batch: the record itself, not its batch's first
    assert found is not None
    assert (found.offset, found.timestamp_ms) == (13, ManualClock().now_ms() + 6 * 10 + 5)
    assert log.record_time_at(30) is None, "nothing below the high-water mark at or after it"


def test_log_append_time_topics_stamp_the_brokers_time(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(message_timestamp_type="LogAppendTime"), clock=clock)
    info = log.append_as_leader(producer_batch([b"a", b"b"], 5), 0)
    assert info.log_append_time_ms == clock.now_ms()
    (batch,) = decode_batches(log.read(0, 1000).records)
    assert batch.header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.header.max_timestamp == clock.now_ms()
    found = log.offset_for_timestamp(clock.now_ms())
    assert found is not None
    assert found.offset == 0


def test_leader_epoch_cache_answers_where_each_epoch_ends(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path / "epochs")
    for epoch, start in [(1, 0), (3, 10), (4, 25)]:
        cache.assign(epoch, start)
    cache.assign(2, 30)  # older epochs never enter after newer ones
    assert cache.entries == [(1, 0), (3, 10), (4, 25)]
    assert cache.end_offset_for(1, log_end_offset=40) == (1, 10)
    assert cache.end_offset_for(2, log_end_offset=40) == (1, 10), "an unknown epoch maps to the largest below it"
    assert cache.end_offset_for(4, log_end_offset=40) == (4, 40)
    assert cache.end_offset_for(0, log_end_offset=40) == (0, 0), (
        "an epoch older than every cached one ends where the oldest cached epoch starts (Kafka's answer; "
        "(-1, -1) left a follower refetching forever, issue #21 mechanism 6)"
    )
    assert cache.end_offset_for(-1, log_end_offset=40) == (-1, -1), "no epoch asked, none answered"
    assert cache.epoch_for(12) == 3
    cache.truncate_from_end(25)
    assert cache.entries == [(1, 0), (3, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [(3, 12)]
    assert LeaderEpochCache(tmp_path / "epochs").entries == [(3, 12)], "a truncation is written at once"


def test_a_new_epoch_is_written_before_its_first_record_not_when_leadership_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 0045: taking a leadership (``epochs.assign`` at the log end, on the broker's event
    loop) writes no file; the first append of the epoch, as leader or as follower, writes the
    checkpoint before its data (without fsync), so recovery still knows the epoch of every batch on
    disk; a flush fsyncs it before the recovery point passes those batches; an epoch with no
    record is never written."""
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(), clock=clock)
    checkpoint = tmp_path / "leader-epoch-checkpoint"
    on_disk_at_append: list[list[tuple[int, int]]] = []
    append_locked = PartitionLog._append_locked

    def watched(self: PartitionLog, *args: object) -> None:
        on_disk_at_append.append(LeaderEpochCache(checkpoint).entries)
        append_locked(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(PartitionLog, "_append_locked", watched)
    # what happened to the file: ("saved", entries) without fsync, ("fsynced", recovery point then),
    # ("saved and fsynced", entries)
    writes: list[tuple[str, object]] = []

    def recorded(
        path: Path, entries: list[tuple[int, ...]], *, durable: bool = True, in_place_only: bool = False
    ) -> bool:
        writes.append(("saved and fsynced" if durable else "saved", list(entries)))
        return write_checkpoint(path, entries, durable=durable, in_place_only=in_place_only)

    def fsynced(path: Path) -> None:
        writes.append(("fsynced", log.recovery_point))
        fsync_file(path)

    monkeypatch.setattr("lanes.storage.epochs.fsync_file", fsynced)
    monkeypatch.setattr("lanes.storage.loader.fsync_file", fsynced)
    monkeypatch.setattr("lanes.storage.epochs.write_checkpoint", recorded)
    batch = producer_batch([b"first"], clock.now_ms())
    log.epochs.assign(3, log.log_end_offset)  # as Partition.make_leader does
    assert not checkpoint.exists(), "a leadership taken writes nothing"
    # the first append writes the epoch, in place (light: on the loop too, decision 0054)
    assert log.append_is_light(len(batch), log.validate_produce(batch))
    log.append_as_leader(batch, leader_epoch=3)
    assert on_disk_at_append == [[(3, 0)]], "written before the data"
    assert log.append_is_light(len(batch), log.validate_produce(batch)), "later appends of the epoch are light"
    replicated = bytearray(producer_batch([b"replicated"], clock.now_ms()))
    replicated[:8] = (1).to_bytes(8, "big")  # base offset 1
    replicated[12:16] = (4).to_bytes(4, "big")  # partition leader epoch 4
    log.append_as_follower(bytes(replicated))
    assert on_disk_at_append[-1] == [(3, 0), (4, 1)], "a follower writes a new epoch before its data too"
    log.flush()
    assert log.recovery_point == 2
    assert writes == [
        ("saved", [(3, 0)]),  # before the first batch of epoch 3
        ("saved", [(3, 0), (4, 1)]),
        ("fsynced", 0),  # before the recovery point passed their batches
    ]
    log.epochs.assign(5, log.log_end_offset)  # a leadership taken, then the process dies
    for segment in log.segments():
        segment.release_files()
    writes.clear()
    recovered = PartitionLog.open(tmp_path, config(), clock=clock)
    assert [kind for kind, _ in writes] == ["fsynced"], "what the crash left may not have been fsynced"
    assert recovered.recovered_bytes_cut == 0
    assert [r.value for r in read_all(recovered)] == [b"first", b"replicated"]
    assert recovered.epochs.entries == [(3, 0), (4, 1)], "an epoch with no record may be forgotten, nothing else"
    recovered.epochs.assign(6, recovered.log_end_offset)
    writes.clear()
    recovered.close()
    assert writes == [], "closing writes no epoch without a record (nothing needs it), and syncs nothing unsaved"
    assert LeaderEpochCache(checkpoint).entries == [(3, 0), (4, 1)]


def test_a_roll_makes_the_epochs_durable_before_the_recovery_point_passes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=200), clock=clock)
    durable_at: list[int] = []  # the recovery point when each durable write of the epochs happened

    def fsynced(path: Path) -> None:
        durable_at.append(log.recovery_point)
        fsync_file(path)

    monkeypatch.setattr("lanes.storage.epochs.fsync_file", fsynced)
    log.append_as_leader(producer_batch([b"x" * 150], clock.now_ms()), leader_epoch=7)
    assert log.recovery_point == 0
    log.append_as_leader(producer_batch([b"y" * 150], clock.now_ms()), leader_epoch=7)  # rolls
    assert log.recovery_point == 1, "the roll made the first segment durable"
    assert durable_at == [0], "the epochs were made durable first (an fsync of the saved file)"


def test_a_light_append_on_the_loop_never_waits_for_a_flush_making_the_epochs_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 0041: a light append runs on the event loop, so it must not wait for the fsync a
    flush does of the epoch checkpoint (outside the log's lock)."""
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(), clock=clock)
    log.append_as_leader(producer_batch([b"first"], clock.now_ms()), leader_epoch=1)
    fsyncing, release = threading.Event(), threading.Event()

    def slow_fsync(path: Path) -> None:
        fsyncing.set()
        assert release.wait(10)
        fsync_file(path)

    monkeypatch.setattr("lanes.storage.epochs.fsync_file", slow_fsync)
    flush = threading.Thread(target=log.flush)
    flush.start()
    try:
        assert fsyncing.wait(10)
        batch = producer_batch([b"light"], clock.now_ms())
        headers = log.validate_produce(batch)
        assert log.append_is_light(len(batch), headers)
        appended = log.append_as_leader(batch, leader_epoch=1, validated=headers, wait=False)
        assert appended is not None, "appended at once while the flush fsyncs the epochs"
    finally:
        release.set()
        flush.join(10)


def test_an_epoch_assigned_while_a_truncation_is_written_is_not_taken_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop assigns (holding no log lock) while a worker thread writes a truncation: the
    assignment must stay unwritten until a flush writes it, or its first batch would reach the
    disk before the checkpoint knows its epoch (and recovery would cut it)."""
    cache = LeaderEpochCache(tmp_path / "epochs")
    cache.assign(1, 0)
    cache.assign(2, 10)
    cache.save()
    writing, release = threading.Event(), threading.Event()

    def slow_write(
        path: Path, entries: list[tuple[int, ...]], *, durable: bool = True, in_place_only: bool = False
    ) -> bool:
        writing.set()
        assert release.wait(10)
        return write_checkpoint(path, entries, durable=durable, in_place_only=in_place_only)

    monkeypatch.setattr("lanes.storage.epochs.write_checkpoint", slow_write)
    truncation = threading.Thread(target=cache.truncate_from_start, args=(5,))
    truncation.start()
    assert writing.wait(10)
    cache.assign(3, 20)  # the loop, meanwhile: returns at once (no I/O, no wait for the write)
    release.set()
    truncation.join(10)
    assert cache.unsaved, "the assignment made during the write is still to be written"
    assert LeaderEpochCache(tmp_path / "epochs").entries == [(1, 5), (2, 10)]
    cache.save()
    assert LeaderEpochCache(tmp_path / "epochs").entries == [(1, 5), (2, 10), (3, 20)]
    assert not cache.unsaved


# ---------------------------------------------------------------------------------------------
# many partitions


def test_many_partitions_share_a_bounded_number_of_open_files(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = LogManager(tmp_path, clock=clock, max_open_files=32)
    descriptors_before = len(os.listdir("/proc/self/fd"))
    small = config(segment_bytes=600)
    for partition in range(400):
        log = manager.open_log("orders", partition, small)
        for _ in range(3):
            log.append_as_leader(producer_batch([b"p%d" % partition] * 4, clock.now_ms()), 0)
    assert manager.files.open_count() <= 32
    assert len(os.listdir("/proc/self/fd")) - descriptors_before <= 40
    assert all(len(read_all(manager.open_log("orders", p, small))) == 12 for p in range(0, 400, 37))
    manager.close()
    assert sorted(manager.discover()) == [("orders", p) for p in range(400)]
    restarted = LogManager(tmp_path, clock=clock, max_open_files=32)
    assert restarted.clean_shutdown
    assert restarted.open_log("orders", 399, small).log_end_offset == 12
    assert parse_log_directory_name("my-topic-12") == ("my-topic", 12)
    assert parse_log_directory_name("not a partition") is None


def test_segment_ms_measures_record_time_like_kafka(tmp_path: Path) -> None:
    """Old producer timestamps do not roll a segment per append; a batch segment.ms newer than
    the segment's first batch does."""
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_ms=HOUR_MS), clock=clock)
    ancient = clock.now_ms() - 365 * 24 * HOUR_MS
    for _ in range(5):
        log.append_as_leader(producer_batch([b"v"], ancient), 0)
    assert log.segment_count == 1
    log.append_as_leader(producer_batch([b"v"], ancient + HOUR_MS + 1), 0)
    assert log.segment_count == 2


def test_segment_ms_falls_back_to_the_segment_age_without_timestamps(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_ms=HOUR_MS), clock=clock)
    log.append_as_leader(producer_batch([b"v"], -1), 0)
    clock.advance(HOUR_MS)
    log.append_as_leader(producer_batch([b"v"], -1), 0)
    assert log.segment_count == 1
    clock.advance(1)
    log.append_as_leader(producer_batch([b"v"], -1), 0)
    assert log.segment_count == 2


def test_a_loops_append_never_renames_an_epoch_checkpoint_grown_past_a_sector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first append of a leadership writes its epoch on the loop only in place: a checkpoint
    of more than a sector (a compacted topic after many leaderships) is replaced by a rename,
    which ext4 answers with a writeback, so the loop's append is not made and the one in a
    thread writes it (review of decision 0054)."""
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(), clock=clock)
    for epoch in range(60):  # "0\n60\n" and 60 lines of "epoch offset": past 512 bytes
        log.append_as_leader(producer_batch([b"v"], clock.now_ms()), leader_epoch=epoch * 100_000)
    checkpoint = tmp_path / "leader-epoch-checkpoint"
    assert checkpoint.stat().st_size > 512
    log.epochs.assign(99_000_000, log.log_end_offset)
    batch = producer_batch([b"new epoch"], clock.now_ms())
    renames: list[object] = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda *args: renames.append(args) or real_replace(*args))
    assert log.append_as_leader(batch, leader_epoch=99_000_000, wait=False) is None
    assert renames == [], "nothing renamed on the loop"
    assert log.log_end_offset == 60, "nor appended"
    assert log.append_as_leader(batch, leader_epoch=99_000_000) is not None  # (in a thread: renames)
    assert renames
    assert LeaderEpochCache(checkpoint).entries[-1] == (99_000_000, 60)
    log.close()


def test_a_log_prepared_for_appends_after_a_restart_takes_its_next_append_on_the_loop(tmp_path: Path) -> None:
    """After a restart the first append would read the active segment's first timestamp (not
    light: a hop to a thread, 10,000 of them in a broker's start). ``prepare_for_appends`` reads
    it beforehand (the broker, in one worker-thread call per chunk of new leaders) and writes
    nothing: a new leadership's epoch waits for its first batch (written ahead, it would cost an
    fsync at the clean stop and a durable rewrite at the next open); a closed log refuses."""
    clock = ManualClock()
    indexed = config(segment_ms=HOUR_MS, index_interval_bytes=1)  # (reopened, the tail is read from the last batch)
    log = PartitionLog.open(tmp_path, indexed, clock=clock)
    for _ in range(3):
        log.append_as_leader(producer_batch([b"v"], clock.now_ms()), 0)
    log.close()
    log = PartitionLog.open(tmp_path, indexed, clock=clock)
    batch = producer_batch([b"v"], clock.now_ms())
    assert not log.append_is_light(len(batch), log.validate_produce(batch))
    log.prepare_for_appends()
    assert log.append_is_light(len(batch), log.validate_produce(batch))
    log.epochs.assign(1, log.log_end_offset)  # a new leadership, as Partition.make_leader notes it
    log.prepare_for_appends()
    assert LeaderEpochCache(tmp_path / "leader-epoch-checkpoint").entries == [(0, 0)], "nothing written"
    assert log.append_is_light(len(batch), log.validate_produce(batch)), "its first append writes it, in place"
    with log.epochs._file_lock:  # another thread writing the epoch file: a loop's append is not made
        assert log.append_as_leader(batch, 1, wait=False) is None
    assert LeaderEpochCache(tmp_path / "leader-epoch-checkpoint").entries == [(0, 0)]
    assert log.log_end_offset == 3
    assert log.append_as_leader(batch, 1, wait=False) is not None
    assert LeaderEpochCache(tmp_path / "leader-epoch-checkpoint").entries == [(0, 0), (1, 3)]
    assert [record.offset for record in read_all(log)] == [0, 1, 2, 3]
    log.close()
    with pytest.raises(LanesError, match="closed"):
        log.prepare_for_appends()


def test_after_a_restart_the_first_append_reads_the_segments_first_timestamp_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """segment.ms needs the active segment's first batch timestamp, read from the file after a
    restart: that append is not light (10,000 such reads on the loop stalled a broker's start),
    and once read the next ones are, with the same roll decision as before the restart. (A
    segment whose tail is read from its start at the restart knows it without a read.)"""
    clock = ManualClock()
    indexed = config(segment_ms=HOUR_MS, index_interval_bytes=1)  # (reopened, the tail is read from the last batch)
    log = PartitionLog.open(tmp_path, indexed, clock=clock)
    first = clock.now_ms() - 2 * HOUR_MS
    for _ in range(3):
        log.append_as_leader(producer_batch([b"v"], first), 0)
    log.close()
    log = PartitionLog.open(tmp_path, indexed, clock=clock)
    reads: list[int] = []
    real = log._segments[-1].batch_headers
    monkeypatch.setattr(log._segments[-1], "batch_headers", lambda position: reads.append(position) or real(position))
    batch = producer_batch([b"v"], first + HOUR_MS)
    assert not log.append_is_light(len(batch), log.validate_produce(batch))
    assert reads == [], "the loop's question reads nothing"
    log.append_as_leader(batch, 0)
    assert reads == [0]
    assert log.segment_count == 1
    late = producer_batch([b"v"], first + HOUR_MS + 1)  # segment.ms after the first batch: rolls
    assert not log.append_is_light(len(late), log.validate_produce(late))
    light = producer_batch([b"v"], first + 1)
    assert log.append_is_light(len(light), log.validate_produce(light))
    log.append_as_leader(late, 0)
    assert log.segment_count == 2
    log.close()
    log = PartitionLog.open(tmp_path, indexed, clock=clock)  # the new active segment: one batch
    assert log.append_is_light(len(light), log.validate_produce(light))


def test_vectored_writes_finish_after_short_writes_and_beyond_iov_max(tmp_path: Path) -> None:
    path = tmp_path / "vectored"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    buffers = [bytes([i % 256]) * (i % 7 + 1) for i in range(3000)]  # more buffers than IOV_MAX
    try:
        assert pwritev_all(fd, buffers, 10) == sum(map(len, buffers))
        assert path.read_bytes()[10:] == b"".join(buffers)
    finally:
        os.close(fd)


def test_log_manager_maintenance_applies_retention_flush_ms_and_checkpoints(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = LogManager(tmp_path, clock=clock)
    expiring = manager.open_log("events", 0, config(segment_bytes=600, retention_ms=HOUR_MS, flush_ms=1000))
    fill(expiring, clock, 10)
    assert expiring.segment_count > 2
    assert expiring.recovery_point < expiring.log_end_offset
    clock.advance(2 * HOUR_MS)
    manager.maintenance()
    assert expiring.segment_count == 1
    assert expiring.recovery_point == expiring.log_end_offset, "flush.ms elapsed"
    replication = (tmp_path / "replication-offset-checkpoint").read_text().splitlines()
    assert f"events-0 {expiring.high_watermark}" in replication, "the data directory's high-water marks"
    assert not (tmp_path / "events-0" / "high-watermark-checkpoint").exists(), "no file per partition"
    manager.delete_log("events", 0)
    assert not (tmp_path / "events-0").exists()
    assert manager.get("events", 0) is None


def test_a_read_counts_the_records_of_the_batches_it_returns(tmp_path: Path) -> None:
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(), clock=clock)
    fill(log, clock, 4)  # 4 batches of 3 records
    assert log.read(0, 1 << 20).records_count == 12
    assert log.read(4, 1 << 20).records_count == 9  # from the batch holding offset 4: whole batches
    assert log.read(0, 1 << 20, upper_bound_offset=6).records_count == 6
    assert log.read(12, 1 << 20).records_count == 0
    log.close()


def test_the_leaders_high_watermark_only_moves_forward(tmp_path: Path) -> None:
    """Issue #21, mechanism 2 (second half): follower fetches served in several worker threads
    each set the leader's mark from the value they computed; a late, smaller one moved it back.
    The leader's update is monotonic (a follower's may still go down, to its leader's)."""
    log = PartitionLog.open(tmp_path / "orders-0", config(), clock=ManualClock())
    log.append_as_leader(encode_batch([Record(i, 1, None, b"v") for i in range(20)]), leader_epoch=0)
    assert log.maybe_increment_high_watermark(12) == 12
    assert log.maybe_increment_high_watermark(10) == 12, "a stale value never moves it back"
    assert log.maybe_increment_high_watermark(99) == 20, "clamped to the log end"
    assert log.update_high_watermark(5) == 5, "a follower takes its leader's mark as it is"


def test_truncating_at_the_log_end_drops_an_epoch_that_never_wrote(tmp_path: Path) -> None:
    """Found by the replication simulation (issue #21): a broker that became leader assigned its
    epoch at its log end, wrote nothing, and was demoted. As a follower it sent that epoch as its
    last fetched one; the leader answered a diverging epoch ending at the same offset, and the
    truncation there was a no-op that left the epoch in the cache: it diverged again on every
    fetch and never rejoined the ISR. As Kafka's truncateTo, the epoch cache is cut at the log
    end even when no record goes."""
    log = PartitionLog.open(tmp_path / "orders-0", config(), clock=ManualClock())
    log.append_as_leader(encode_batch([Record(i, 1, None, b"v") for i in range(5)]), leader_epoch=0)
    log.epochs.assign(1, log.log_end_offset)  # led epoch 1 and wrote nothing
    assert log.epochs.latest_epoch == 1
    assert log.truncate_to(log.log_end_offset) == 5
    assert log.epochs.latest_epoch == 0, "the empty epoch would make the next fetch diverge again"
    assert log.epochs.end_offset_for(0, log.log_end_offset) == (0, 5)


@pytest.mark.parametrize(
    "overrides",
    [
        {"segment_bytes": 2_000},
        {"segment_ms": 5_000},
        {"flush_messages": 7},
        {"segment_bytes": 3_000, "flush_messages": 4, "message_timestamp_type": "LogAppendTime"},
    ],
)
def test_append_is_light_foretells_exactly_the_appends_that_roll_or_fsync(
    tmp_path: Path, overrides: dict[str, object]
) -> None:
    """Decision 0041: the broker appends on its event loop only what ``append_is_light`` calls
    light, so it must say "light" exactly when the append neither rolls a segment nor flushes."""
    import random  # noqa: PLC0415 - this test's only use

    rng = random.Random(39)
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(**overrides), clock=clock)
    light_seen = heavy_seen = 0
    for _ in range(300):
        clock.advance(rng.randrange(0, 1_500))
        values = [b"v" * rng.randrange(1, 200) for _ in range(rng.randrange(1, 4))]
        batch = producer_batch(values, clock.now_ms() if rng.random() < 0.9 else -1)
        light = log.append_is_light(len(batch), log.validate_produce(batch))
        segments, durable = log.segment_count, log.recovery_point
        log.append_as_leader(batch, 0)
        rolled_or_flushed = log.segment_count != segments or log.recovery_point != durable
        assert light is not rolled_or_flushed
        light_seen += light
        heavy_seen += not light
    assert light_seen > 0
    assert heavy_seen > 0


def test_a_light_read_answers_what_the_waiting_read_answers_or_nothing(tmp_path: Path) -> None:
    """Decisions 0042 and 0048: the broker reads on its event loop only when the read is light
    (its position known without I/O: a segment's start, where a recent append or read ended; the
    log's lock free; its bytes in the page cache); a light read must return exactly what the
    read that waits returns, and decline everything else."""
    import random  # noqa: PLC0415 - this test's only use

    rng = random.Random(42)
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=3_000), clock=clock)
    ends = [0]
    read_on = 0
    light_seen = declined = older_segments = 0
    for _ in range(300):
        clock.advance(10)
        log.append_as_leader(producer_batch([b"v" * rng.randrange(1, 200)] * rng.randrange(1, 4), clock.now_ms()), 0)
        ends.append(log.log_end_offset)
        log.update_high_watermark(ends[-1 - rng.randrange(0, 2)] if len(ends) > 2 else log.log_end_offset)
        recent = ends[-1 - rng.randrange(0, 3)]
        offset = rng.choice([recent, rng.choice(ends), rng.randrange(0, log.log_end_offset + 1), read_on, read_on])
        max_bytes = rng.choice([1, 300, 1 << 16])
        min_one_batch = rng.random() < 0.8
        known = log.known_position(offset)
        light = log.read(
            offset, max_bytes, upper_bound_offset=log.high_watermark, min_one_batch=min_one_batch, wait=False
        )
        waiting = log.read(offset, max_bytes, upper_bound_offset=log.high_watermark, min_one_batch=min_one_batch)
        read_on = waiting.next_offset
        if light is None:
            declined += 1
            continue
        light_seen += 1
        assert light == waiting
        assert known is not None
        assert known == log.position(offset)
        older_segments += offset < log.active_segment_base_offset
    assert light_seen > 50
    assert declined > 20
    assert older_segments > 10, "a consumer reading on through older segments reads on the loop too"
    assert log.read(ends[-1], 1 << 16, wait=False) is not None
    held = threading.Event()
    release = threading.Event()

    def hold_the_log() -> None:
        with log._lock:  # another thread inside the log (an append, a roll's fsync)
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold_the_log)
    holder.start()
    held.wait(10)
    try:
        assert log.read(ends[-1], 1 << 16, wait=False) is None, "the event loop never waits for a thread"
    finally:
        release.set()
        holder.join()
    log.close()


def test_a_light_read_takes_no_batch_larger_than_asked_and_no_position_a_truncation_moved(tmp_path: Path) -> None:
    """Decisions 0042 and 0048's bounds: the event loop never reads more than it asked for (a first batch
    larger than ``max_bytes`` goes to a worker thread), and a position remembered before a
    truncation and re-append is not trusted; at a segment roll, the position is the new
    segment's start, as ``position`` says."""
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=3_000), clock=clock)
    log.append_as_leader(producer_batch([b"s"], clock.now_ms()), 0)
    start = log.log_end_offset
    log.append_as_leader(producer_batch([b"x" * 5_000], clock.now_ms()), 0)  # one large batch
    log.update_high_watermark(log.log_end_offset)
    assert log.read(start, 1_000, upper_bound_offset=log.high_watermark, wait=False) is None
    assert log.read(start, 1 << 16, upper_bound_offset=log.high_watermark, wait=False) == log.read(
        start, 1 << 16, upper_bound_offset=log.high_watermark
    )

    segments = log.segment_count
    log.append_as_leader(producer_batch([b"a", b"b"], clock.now_ms()), 0)  # rolls: the last segment was full
    assert log.segment_count == segments + 1
    base = log.active_segment_base_offset
    position = log.known_position(base)
    assert position is not None
    assert position == log.position(base), "the new segment's start, not the old one's end"
    log.update_high_watermark(log.log_end_offset)
    assert log.read(base, 1 << 16, wait=False) == log.read(base, 1 << 16)

    end = log.log_end_offset
    log.append_as_leader(producer_batch([b"c", b"d", b"e"], clock.now_ms()), 0)
    log.truncate_to(base)  # a new leader's log: cut back, then other batches
    log.append_as_leader(producer_batch([b"f"] * 5, clock.now_ms()), 1)
    assert end in range(base, log.log_end_offset), "the old end now lies inside a batch"
    assert log.known_position(end) is None
    assert log.read(end, 1 << 16, wait=False) is None, "no position from before the truncation"
    log.close()


def test_a_batch_too_large_for_a_read_that_may_return_nothing_is_not_skipped(tmp_path: Path) -> None:
    """A read that may return nothing (``min_one_batch=False``: a fetch's later partitions, once
    the first returned records) and meets a first batch larger than what is left answers nothing
    from that batch on: it never goes on to the next segment, whose batches come after the one
    left out (a consumer taking them would skip its records without a trace)."""
    clock = ManualClock()
    log = PartitionLog.open(tmp_path, config(segment_bytes=3_000), clock=clock)
    log.append_as_leader(producer_batch([b"s"], clock.now_ms()), 0)
    large = log.log_end_offset
    log.append_as_leader(producer_batch([b"x" * 5_000], clock.now_ms()), 0)  # a segment of its own
    log.append_as_leader(producer_batch([b"a", b"b"], clock.now_ms()), 0)  # in the next segment
    log.update_high_watermark(log.log_end_offset)
    assert log.segment_count == 3
    read = log.read(large, 1_000, upper_bound_offset=log.high_watermark, min_one_batch=False)
    assert (read.records, read.next_offset, read.records_count) == (b"", large, 0)
    whole = log.read(large, 1_000, upper_bound_offset=log.high_watermark)
    assert [batch.header.base_offset for batch in decode_batches(whole.records)] == [large]
    log.close()


def test_a_light_read_never_waits_for_the_disk_nor_opens_a_file(tmp_path: Path) -> None:
    """Decision 0048: the event loop reads only bytes in the page cache (``preadv2`` with
    ``RWF_NOWAIT``) through a descriptor open already; bytes the kernel dropped, or a segment
    whose file the cache closed, go to a read that waits (which brings them back)."""
    clock = ManualClock()
    files = FileCache()
    log = PartitionLog.open(tmp_path / "orders-0", config(segment_bytes=3_000), clock=clock, files=files)
    fill(log, clock, 30, size=300)  # several segments
    log.flush()  # clean pages: the kernel may drop them
    assert log.segment_count > 3
    first = log.read(3, 1_500)  # notes where it ended
    second_offset = first.next_offset
    known = log.known_position(second_offset)
    assert known is not None
    assert known.position > 0, "inside a segment, where a read ended"
    expected = log.read(second_offset, 1 << 16)

    if not _drops_clean_pages(tmp_path / "probe"):
        pytest.skip("this file system keeps its pages in memory (tmpfs): nothing to drop")
    with files.lease(known.segment.log_path) as fd:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    assert log.read(second_offset, 1 << 16, wait=False) is None, "not in the page cache: not on the loop"
    assert log.read(second_offset, 1 << 16) == expected  # reads it back into the cache
    assert log.read(second_offset, 1 << 16, wait=False) == expected

    files.close()  # (as an eviction by other logs' reads would)
    assert log.read(second_offset, 1 << 16, wait=False) is None, "its file is closed: opening it may wait"
    assert log.read(second_offset, 1 << 16) == expected
    log.close()


def _drops_clean_pages(path: Path) -> bool:
    """Whether the file system under ``path`` drops a file's clean pages when told to (not tmpfs).
    Probed on a file of its own: a read that finds pages missing starts reading them ahead."""
    path.write_bytes(b"p" * 8192)
    fd = os.open(path, os.O_RDWR)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return pread_cached(fd, 100, 0) is None
    finally:
        os.close(fd)
