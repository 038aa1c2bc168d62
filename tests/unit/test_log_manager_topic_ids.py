"""Partition directories know their topic's id (KIP-516's ``partition.metadata``), so a topic
deleted and created again under the same name never inherits the old topic's records, and the
directories of topics deleted while a broker was down are removed (issue #21, mechanism 5)."""

from __future__ import annotations

from pathlib import Path

from lanes.clock import ManualClock
from lanes.protocol.records import Record, encode_batch
from lanes.storage.manager import LogManager
from tests.unit.log_helpers import config


def test_a_recreated_topic_never_inherits_the_old_topics_records(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, clock=ManualClock())
    old = manager.open_log("orders", 0, config(), topic_id="old-id")
    old.append_as_leader(encode_batch([Record(0, 1, None, b"of the old topic")]), leader_epoch=0)
    manager.close()

    restarted = LogManager(tmp_path, clock=ManualClock())
    new = restarted.open_log("orders", 0, config(), topic_id="new-id")
    assert new.log_end_offset == 0, "the directory of the old topic was not reused"
    restarted.close()
    again = LogManager(tmp_path, clock=ManualClock())
    assert again.open_log("orders", 0, config(), topic_id="new-id").log_end_offset == 0
    again.close()


def test_a_directory_without_a_topic_id_is_adopted(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, clock=ManualClock())
    log = manager.open_log("orders", 0, config())  # written before topic ids existed
    log.append_as_leader(encode_batch([Record(0, 1, None, b"kept")]), leader_epoch=0)
    manager.close()
    restarted = LogManager(tmp_path, clock=ManualClock())
    assert restarted.open_log("orders", 0, config(), topic_id="the-id").log_end_offset == 1
    restarted.close()


def test_the_log_of_a_topic_deleted_while_the_broker_was_down_is_removed(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, clock=ManualClock())
    manager.open_log("gone", 0, config(), topic_id="gone-id")
    manager.close()
    restarted = LogManager(tmp_path, clock=ManualClock())
    assert ("gone", 0) in restarted.discover()
    restarted.delete_log("gone", 0)  # never opened in this run
    assert ("gone", 0) not in restarted.discover()
    assert not (tmp_path / "gone-0").exists()
