"""The controller's metadata log as the quorum's Raft log: durable, atomic per decision, whole
batches to followers, epochs per entry, snapshots that never drop entries, restart-safe."""

from __future__ import annotations

import itertools
import os
import random
from pathlib import Path

from lanes.clock import ManualClock
from lanes.controller.core import ControllerCore, NewTopic
from lanes.controller.metadata_log import MetadataLog
from lanes.controller.raft import Entry
from lanes.metadata.image import MetadataImage
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


def test_snapshots_keep_every_entry_and_survive_a_damaged_newest_snapshot(tmp_path: Path) -> None:
    controller = build(tmp_path)
    controller.log.snapshot(controller.image)
    controller.commit(controller.core.create_topic(NewTopic("after-first-snapshot", 1, 1)))
    newest = controller.log.snapshot(controller.image)
    controller.commit(controller.core.create_topic(NewTopic("after-snapshots", 1, 1)))
    assert controller.log.start_offset == 0, "a voter that lost its directory fetches from offset 0"
    expected = controller.image.to_records()
    controller.log.close()
    assert Controller(tmp_path).image.to_records() == expected
    # Damage the newest snapshot: the previous one plus the log still rebuild everything.
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))
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
