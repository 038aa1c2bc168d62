"""The controller's metadata log as the quorum's Raft log: durable, atomic per decision, whole
batches to followers, epochs per entry (also below the log start), snapshots that drop the log
below the one before, snapshots received from the leader, restart-safe."""

from __future__ import annotations

import itertools
import os
import random
from pathlib import Path

import pytest

from lanes.clock import ManualClock
from lanes.controller.core import ControllerCore, NewTopic
from lanes.controller.metadata_log import MetadataLog
from lanes.controller.raft import Entry, SnapshotId
from lanes.errors import LanesError
from lanes.metadata.image import MetadataImage
from lanes.protocol.records import Record, encode_batch
from lanes.v1 import metadata_pb2


class Controller:
    """Decide, append, apply: what the active controller does for every request (here every
    entry counts as committed at once, as in a quorum of one)."""

    def __init__(self, directory: Path, epoch: int = 1) -> None:
        self.log = MetadataLog(directory, ManualClock())
        self.epoch = epoch
        self.image = self.log.load_snapshot()
        for offset, entry in enumerate(self.log.entries(self.image.last_offset + 1, 10**9), self.image.last_offset + 1):
            self.image.apply(offset, metadata_pb2.MetadataRecord.FromString(entry.data))
        ids = itertools.count(len(self.image.topics) * 1000 + 1)
        self.core = ControllerCore(self.image, rng=random.Random(1), new_id=lambda: f"id-{next(ids)}")

    def commit(self, decision) -> None:  # type: ignore[no-untyped-def]
        first = self.log.end_offset
        self.log.append(write(self.epoch, *(record.SerializeToString() for record in decision.records)))
        for index, record in enumerate(decision.records):
            self.image.apply(first + index, record)


def write(epoch: int, *data: bytes) -> list[Entry]:
    """One write (a decision), as the leader's core appends it."""
    return [Entry(epoch, item, index == len(data) - 1) for index, item in enumerate(data)]


def build(directory: Path) -> Controller:
    controller = Controller(directory)
    controller.commit(controller.core.create_cluster(now_ms=1))
    for broker_id in (1, 2, 3):
        controller.commit(
            controller.core.register("broker", broker_id, f"i{broker_id}", cluster_id="", host="h", port=broker_id)
        )
        epoch = controller.image.brokers[broker_id].epoch
        controller.commit(controller.core.heartbeat("broker", broker_id, epoch, controller.image.last_offset))
    for index in range(5):
        controller.commit(controller.core.create_topic(NewTopic(f"topic-{index}", 3, 2)))
    controller.commit(controller.core.fence("broker", 2, "session timeout"))
    return controller


def test_a_restart_rebuilds_exactly_the_same_state(tmp_path: Path) -> None:
    controller = build(tmp_path)
    expected = controller.image.to_records()
    controller.log.close()
    reopened = Controller(tmp_path)
    assert reopened.image.to_records() == expected
    assert reopened.image.last_offset == controller.image.last_offset


def test_a_snapshot_drops_the_log_below_the_one_before_and_a_damaged_newest_falls_back(tmp_path: Path) -> None:
    controller = build(tmp_path)
    first = controller.log.snapshot(controller.image)
    first_end = controller.image.last_offset + 1
    assert controller.log.start_offset == 0, "the first snapshot drops nothing: a follower may need the log"
    controller.commit(controller.core.create_topic(NewTopic("after-first-snapshot", 1, 1)))
    newest = controller.log.snapshot(controller.image)
    assert controller.log.start_offset == first_end, "the log now starts at the older snapshot's end"
    assert first.exists()
    controller.commit(controller.core.create_topic(NewTopic("after-snapshots", 1, 1)))
    expected = controller.image.to_records()
    controller.log.close()
    assert Controller(tmp_path).image.to_records() == expected
    # Damage the newest snapshot: the previous one plus the log still rebuild everything.
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))
    assert Controller(tmp_path).image.to_records() == expected


def test_epochs_below_the_log_start_are_answered_from_the_snapshot_header(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, ManualClock())
    log.append(write(1, b""))
    log.append(write(1, b"a"))
    log.append(write(3, b""))
    log.append(write(3, b"b", b"c"))
    log.append(write(7, b""))
    image = MetadataImage()
    image.last_offset = 3
    header = log.snapshot_header(4)
    log.adopt_snapshot(header, log.write_snapshot(header, image.to_records()))
    header = log.snapshot_header(6)
    log.adopt_snapshot(header, log.write_snapshot(header, image.to_records()))
    assert (log.start_offset, log.end_offset) == (4, 6)
    assert log.latest_snapshot == SnapshotId(6, 7)
    assert [log.epoch_at(offset) for offset in range(6)] == [1, 1, 3, 3, 3, 7]
    assert log.end_offset_for_epoch(1) == (1, 2)
    assert log.end_offset_for_epoch(5) == (3, 5)
    assert log.last_epoch == 7
    log.close()
    reopened = MetadataLog(tmp_path, ManualClock())
    assert [reopened.epoch_at(offset) for offset in range(6)] == [1, 1, 3, 3, 3, 7]


def test_a_received_snapshot_replaces_the_log_and_survives_a_restart(tmp_path: Path) -> None:
    leader = build(tmp_path / "leader")
    leader.log.snapshot(leader.image)
    snapshot = leader.log.latest_snapshot
    assert snapshot is not None
    follower = MetadataLog(tmp_path / "follower", ManualClock())
    follower.append(write(1, b""))  # behind, with an entry the snapshot holds too
    position = 0
    while found := leader.log.read_snapshot(snapshot, position, 100):
        chunk, size = found
        follower.write_snapshot_chunk(snapshot, position, chunk)
        position += len(chunk)
        if position == size:
            break
    assert follower.install_snapshot(snapshot)
    assert (follower.start_offset, follower.end_offset, follower.last_epoch) == (snapshot.end_offset,) * 2 + (1,)
    assert follower.load_snapshot().to_records() == leader.image.to_records()
    follower.append(write(2, b""))
    assert follower.end_offset_for_epoch(1) == (1, snapshot.end_offset)
    follower.close()
    reopened = MetadataLog(tmp_path / "follower", ManualClock())
    assert (reopened.start_offset, reopened.end_offset, reopened.last_epoch) == (
        snapshot.end_offset,
        snapshot.end_offset + 1,
        2,
    )
    assert reopened.load_snapshot().to_records() == leader.image.to_records()


def test_a_damaged_received_snapshot_is_refused_and_the_log_kept(tmp_path: Path) -> None:
    leader = build(tmp_path / "leader")
    leader.log.snapshot(leader.image)
    snapshot = leader.log.latest_snapshot
    assert snapshot is not None
    found = leader.log.read_snapshot(snapshot, 0, 10**9)
    assert found is not None
    damaged = bytearray(found[0])
    damaged[-5] ^= 0xFF
    follower = MetadataLog(tmp_path / "follower", ManualClock())
    follower.append(write(1, b""))
    follower.write_snapshot_chunk(snapshot, 0, bytes(damaged))
    assert not follower.install_snapshot(snapshot)
    assert (follower.start_offset, follower.end_offset) == (0, 1)
    assert not list((tmp_path / "follower").glob("snapshot-*"))


def test_an_install_interrupted_before_the_log_was_emptied_is_finished_at_open(tmp_path: Path) -> None:
    leader = build(tmp_path / "leader")
    leader.log.snapshot(leader.image)
    snapshot = leader.log.latest_snapshot
    assert snapshot is not None
    follower_dir = tmp_path / "follower"
    follower = MetadataLog(follower_dir, ManualClock())
    follower.append(write(1, b""))
    follower.close()
    # the snapshot file is in place; the process died before emptying its log
    (leader.log.directory / f"snapshot-{snapshot.end_offset - 1:020d}.bin").rename(
        follower_dir / f"snapshot-{snapshot.end_offset - 1:020d}.bin"
    )
    reopened = MetadataLog(follower_dir, ManualClock())
    assert (reopened.start_offset, reopened.end_offset) == (snapshot.end_offset, snapshot.end_offset)
    assert reopened.load_snapshot().to_records() == leader.image.to_records()


def test_a_snapshot_without_a_header_is_ignored(tmp_path: Path) -> None:
    """Written before snapshot transfer existed (then the log was never trimmed)."""
    controller = build(tmp_path)
    expected = controller.image.to_records()
    controller.log.close()
    legacy = encode_batch([Record(i, 0, None, r.SerializeToString()) for i, r in enumerate(expected[:2])])
    (tmp_path / f"snapshot-{5:020d}.bin").write_bytes(legacy)
    reopened = MetadataLog(tmp_path, ManualClock())
    assert reopened.latest_snapshot is None
    assert Controller(tmp_path).image.to_records() == expected


def test_a_torn_decision_is_dropped_whole(tmp_path: Path) -> None:
    controller = build(tmp_path)
    before = controller.image.to_records()
    end = controller.log.end_offset
    controller.commit(controller.core.create_topic(NewTopic("torn", 8, 3 - 1)))  # one batch of 9+ records
    segment = sorted((tmp_path / "metadata").glob("*.log"))[-1]
    # The process dies mid-write: the last batch is cut short (and no clean shutdown).
    os.truncate(segment, segment.stat().st_size - 10)
    reopened = Controller(tmp_path)
    assert reopened.log.end_offset == end
    assert reopened.image.to_records() == before
    assert reopened.image.topic("torn") is None


def test_entries_are_whole_decisions_with_their_epochs(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, ManualClock())
    log.append(write(1, b""))  # a leader-change entry
    log.append(write(1, b"a", b"b", b"c"))  # one decision
    log.append([*write(2, b""), *write(3, b""), *write(3, b"d", b"e")])  # fetched: three writes, two epochs
    assert (log.end_offset, log.last_epoch) == (8, 3)
    assert [log.epoch_at(offset) for offset in range(8)] == [1, 1, 1, 1, 2, 3, 3, 3]
    assert log.entries(1, 2) == write(1, b"a", b"b", b"c"), "a decision is never split"
    assert log.entries(0, 2) == write(1, b""), "whole batches while they fit"
    assert log.entries(4, 100) == [*write(2, b""), *write(3, b""), *write(3, b"d", b"e")], (
        "a follower's append keeps the leader's writes apart"
    )
    assert log.entries(2, 100)[:2] == [Entry(1, b"b", False), Entry(1, b"c", True)], "from inside a write"
    assert log.end_offset_for_epoch(1) == (1, 4)
    assert log.end_offset_for_epoch(2) == (2, 5)
    assert log.end_offset_for_epoch(9) == (3, 8)
    log.truncate_to(6)
    assert log.end_offset == 6, "a cut between two fetched writes takes nothing more"
    log.truncate_to(4)
    assert (log.end_offset, log.last_epoch) == (4, 1)
    log.append(write(4, b"e"))
    log.close()
    reopened = MetadataLog(tmp_path, ManualClock())
    assert (reopened.end_offset, reopened.last_epoch) == (5, 4)
    assert reopened.end_offset_for_epoch(3) == (1, 4), "epochs 2 and 3 were truncated away"
    assert MetadataLog(tmp_path / "empty", ManualClock()).end_offset_for_epoch(5) == (0, 0)


def test_read_serves_watchers_from_an_offset(tmp_path: Path) -> None:
    controller = build(tmp_path)
    records = controller.log.read(0)
    rebuilt = MetadataImage()
    for offset, record in records:
        rebuilt.apply(offset, record)
    assert rebuilt.to_records() == controller.image.to_records()
    tail = controller.log.read(controller.image.last_offset)
    assert [offset for offset, _ in tail] == [controller.image.last_offset]
    assert len(controller.log.read(0, max_records=3)) >= 3


def test_an_install_interrupted_over_a_longer_divergent_tail_is_finished_at_open(tmp_path: Path) -> None:
    """The follower's log is longer than the installed snapshot but of another epoch there: the
    log is emptied to start at the snapshot's end, as Kafka's truncateToLatestSnapshot does."""
    leader = MetadataLog(tmp_path / "leader", ManualClock())
    for _ in range(20):
        leader.append(write(5, b""))
    header = leader.snapshot_header(20)
    snapshot_file = leader.write_snapshot(header, MetadataImage().to_records())
    follower_dir = tmp_path / "follower"
    follower = MetadataLog(follower_dir, ManualClock())
    for _ in range(30):
        follower.append(write(3, b""))  # an uncommitted tail of an older epoch
    follower.close()
    snapshot_file.rename(follower_dir / snapshot_file.name)
    reopened = MetadataLog(follower_dir, ManualClock())
    assert (reopened.start_offset, reopened.end_offset, reopened.last_epoch) == (20, 20, 5)
    assert [reopened.epoch_at(offset) for offset in (0, 19)] == [5, 5]


def test_reading_below_the_log_start_is_an_error(tmp_path: Path) -> None:
    controller = build(tmp_path)
    controller.log.snapshot(controller.image)
    controller.commit(controller.core.create_topic(NewTopic("more", 1, 1)))
    controller.log.snapshot(controller.image)
    assert controller.log.start_offset > 0
    with pytest.raises(LanesError, match="below the log start"):
        controller.log.read(0)


def test_a_snapshot_in_transfer_and_the_log_after_it_are_kept_when_newer_ones_come(tmp_path: Path) -> None:
    controller = build(tmp_path)
    controller.log.snapshot(controller.image)
    in_transfer = controller.log.latest_snapshot
    assert in_transfer is not None
    for index in range(3):
        controller.commit(controller.core.create_topic(NewTopic(f"later-{index}", 1, 1)))
        header = controller.log.snapshot_header(controller.image.last_offset + 1)
        path = controller.log.write_snapshot(header, controller.image.to_records())
        controller.log.adopt_snapshot(header, path, in_transfer={in_transfer})
    assert controller.log.read_snapshot(in_transfer, 0, 10) is not None, "still served"
    assert controller.log.start_offset == in_transfer.end_offset, "a follower that installs it fetches from there"
    controller.commit(controller.core.create_topic(NewTopic("last", 1, 1)))
    header = controller.log.snapshot_header(controller.image.last_offset + 1)
    controller.log.adopt_snapshot(header, controller.log.write_snapshot(header, controller.image.to_records()))
    assert controller.log.read_snapshot(in_transfer, 0, 10) is None, "dropped once no longer in transfer"
    assert controller.log.start_offset > in_transfer.end_offset
