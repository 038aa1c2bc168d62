"""A follower told that its log diverged at an offset the leader cannot name (an undefined epoch
end) truncates to its high-water mark, which every replica holds, and reports no progress, so
its fetcher pauses instead of fetching again at once (issue #21, mechanism 6: it used to ignore
the answer and refetch in a busy loop)."""

from __future__ import annotations

from pathlib import Path

from lanes.broker.partition import FetchedPartition, Partition
from lanes.clock import ManualClock
from lanes.errors import ErrorCode
from lanes.protocol.records import Record, encode_batch
from lanes.storage.log import LogConfig, PartitionLog
from lanes.topic_partition import TopicPartition


def test_an_undefined_divergence_truncates_to_the_high_watermark_and_pauses(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "orders-0", LogConfig.from_topic_configs(), clock=ManualClock())
    for epoch in (1, 2):
        log.append_as_leader(encode_batch([Record(i, 1, None, b"v") for i in range(5)]), epoch)
    log.update_high_watermark(5)
    partition = Partition(TopicPartition("orders", 0), "id", log)
    partition.make_follower(leader_id=1, leader_epoch=3)
    fetched = FetchedPartition(ErrorCode.NONE, high_watermark=5, log_start_offset=0, diverging=(-1, -1))
    progressed = partition.apply_fetched(3, log.log_end_offset, fetched)
    assert log.log_end_offset == 5, "truncated to the high-water mark"
    assert not progressed, "no progress: the fetcher pauses before asking again"


def test_an_answer_for_an_older_epoch_or_a_moved_log_is_dropped(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "orders-0", LogConfig.from_topic_configs(), clock=ManualClock())
    log.append_as_leader(encode_batch([Record(i, 1, None, b"v") for i in range(5)]), 1)
    partition = Partition(TopicPartition("orders", 0), "id", log)
    partition.make_follower(leader_id=1, leader_epoch=3)
    cut = FetchedPartition(ErrorCode.NONE, high_watermark=0, log_start_offset=0, diverging=(1, 2))
    assert partition.apply_fetched(2, 5, cut), "an older epoch's answer is skipped"
    assert partition.apply_fetched(3, 4, cut), "an answer to a fetch from another log end is skipped"
    assert log.log_end_offset == 5
    partition.make_leader(
        leader_epoch=4,
        partition_epoch=1,
        replicas=[1, 2],
        isr=[1, 2],
        min_insync_replicas=1,
        leader_id=2,
        now_ms=0,
        replica_lag_time_max_ms=1000,
    )
    assert partition.apply_fetched(3, 5, cut)
    assert log.log_end_offset == 5, "a leader never applies a fetched answer"
