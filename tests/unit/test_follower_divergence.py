"""A follower told that its log diverged at an offset the leader cannot name (an undefined epoch
end) truncates to its high-water mark, which every replica holds, and reports no progress, so
its fetcher pauses instead of fetching again at once (issue #21, mechanism 6: it used to ignore
the answer and refetch in a busy loop)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from lanes.broker.follower import FollowerFetcher
from lanes.clock import ManualClock
from lanes.protocol.records import Record, encode_batch
from lanes.storage.log import LogConfig, PartitionLog
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2


def test_an_undefined_divergence_truncates_to_the_high_watermark_and_pauses(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "orders-0", LogConfig.from_topic_configs(), clock=ManualClock())
    for epoch in (1, 2):
        log.append_as_leader(encode_batch([Record(i, 1, None, b"v") for i in range(5)]), epoch)
    log.update_high_watermark(5)
    key = TopicPartition("orders", 0)
    lock = threading.Lock()

    async def scenario() -> bool:
        fetcher = FollowerFetcher(
            broker_id=2,
            broker_epoch=lambda: 1,
            leader_address="127.0.0.1:1",  # never dialled: the answer is handed to _apply
            partitions=lambda: {key: (log, 3, "id")},
            leader_high_watermarks={},
            replica_lock=lambda _: lock,
            still_following=lambda followed, epoch: followed == key and epoch == 3,
        )
        response = broker_pb2.ReplicaFetchResponse()
        part = response.topics.add(topic="orders").partitions.add(partition=0, high_watermark=5)
        part.diverging_epoch.CopyFrom(broker_pb2.EpochEndOffset(leader_epoch=-1, end_offset=-1))
        return fetcher._apply({key: (log, 3, "id")}, {key: log.log_end_offset}, response)

    progressed = asyncio.run(scenario())
    assert log.log_end_offset == 5, "truncated to the high-water mark"
    assert not progressed, "no progress: the fetcher pauses before asking again"
