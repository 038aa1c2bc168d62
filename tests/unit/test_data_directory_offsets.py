"""Replica offsets per data directory (issue #21): a broker's recovery points, log starts and
high-water marks live in three files at the top of its data directory, written only when one
changed (an idle broker with thousands of replicas wrote three files with two fsyncs each, per
replica, on every maintenance pass), at once after a truncation, and read back on restart."""

from __future__ import annotations

from pathlib import Path

from lanes.clock import ManualClock
from lanes.protocol.records import Record, encode_batch
from lanes.storage.checkpoint import PartitionFiles
from lanes.storage.log import PartitionLog
from lanes.storage.manager import LogManager
from tests.unit.log_helpers import config


def append(log: PartitionLog, count: int) -> None:
    log.append_as_leader(encode_batch([Record(i, 1, None, b"v") for i in range(count)]), leader_epoch=0)


def test_an_idle_data_directory_writes_no_checkpoint(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, clock=ManualClock())
    logs = [manager.open_log("orders", p, config()) for p in range(20)]
    for log in logs:
        append(log, 5)
        log.maybe_increment_high_watermark(5)
    manager.maintenance()
    assert manager.offsets.flush() == 0, "maintenance wrote what changed"
    files = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*-checkpoint")}
    assert set(files) == {
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
    }
    manager.maintenance()  # nothing changed
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*-checkpoint")} == files
    assert not list(tmp_path.glob("orders-*/*-checkpoint")) or all(
        p.name == "leader-epoch-checkpoint" for p in tmp_path.glob("orders-*/*-checkpoint")
    ), "no per-partition offset files"
    logs[3].maybe_increment_high_watermark(5)
    append(logs[3], 2)
    logs[3].maybe_increment_high_watermark(7)
    manager.maintenance()
    assert "orders-3 7" in (tmp_path / "replication-offset-checkpoint").read_text().splitlines()
    manager.close()


def test_offsets_survive_a_restart_and_a_truncation_is_written_at_once(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = LogManager(tmp_path, clock=clock)
    log = manager.open_log("orders", 0, config())
    for _ in range(10):
        append(log, 1)  # one record per batch: truncation cuts between batches
    log.maybe_increment_high_watermark(8)
    log.flush()
    manager.maintenance()
    log.truncate_to(6)  # a follower diverged: the lowered recovery point must be on disk now
    assert "orders-0 6" in (tmp_path / "recovery-point-offset-checkpoint").read_text().splitlines()
    manager.close()
    reopened = LogManager(tmp_path, clock=clock).open_log("orders", 0, config())
    assert (reopened.log_end_offset, reopened.high_watermark, reopened.recovery_point) == (6, 6, 6)


def test_a_log_directory_with_its_own_offset_files_is_adopted_and_they_are_retired(tmp_path: Path) -> None:
    clock = ManualClock()
    directory = tmp_path / "orders-0"
    log = PartitionLog.open(directory, config(), clock=clock, clean_shutdown=False)  # the layout before
    append(log, 10)
    log.maybe_increment_high_watermark(9)
    log.close()
    assert PartitionFiles().load(directory).high_watermark == 9
    manager = LogManager(tmp_path, clock=clock)
    adopted = manager.open_log("orders", 0, config())
    assert adopted.high_watermark == 9
    assert PartitionFiles().load(directory).high_watermark is None, "the stale per-partition files went"
    assert "orders-0 9" in (tmp_path / "replication-offset-checkpoint").read_text().splitlines()
    manager.close()


def test_a_new_log_never_inherits_the_offsets_of_a_deleted_one_of_the_same_name(tmp_path: Path) -> None:
    """Review of issue #21's change: the data-directory files are keyed by directory name. A
    topic recreated under the same name (its directory replaced because the topic id differs, or
    deleted and made again after a crash) took the old log's start, recovery point and mark."""
    clock = ManualClock()
    manager = LogManager(tmp_path, clock=clock)
    old = manager.open_log("t", 0, config(), topic_id="A")
    for _ in range(30):
        append(old, 1)
    old.maybe_increment_high_watermark(30)
    old.delete_records_before(20)
    manager.maintenance()
    recreated = manager.open_log("t", 0, config(), topic_id="B")
    assert (recreated.log_start_offset, recreated.log_end_offset, recreated.high_watermark) == (0, 0, 0)
    for _ in range(5):
        append(recreated, 1)
    recreated.maybe_increment_high_watermark(5)
    manager.maintenance()
    manager.delete_log("t", 0)  # then a crash: no maintenance, no close
    again = LogManager(tmp_path, clock=clock).open_log("t", 0, config(), topic_id="C")
    assert (again.log_start_offset, again.log_end_offset, again.high_watermark) == (0, 0, 0)
