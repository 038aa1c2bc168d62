"""The broker's ``MetadataPublisher`` in process (real logs in a temporary directory, no gRPC): a
pass that makes this broker lead many partitions (a restart) prepares them for their first
appends in worker threads, a chunk per call, so that those appends run on the loop, and logs a
line per topic instead of one per partition; a pass leading a few logs each."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from lanes.broker.fetcher_manager import FetcherManager
from lanes.broker.metadata_publisher import LOGGED_LEADERSHIPS, MetadataPublisher, number_ranges
from lanes.broker.metrics import BrokerMetrics
from lanes.broker.purgatory import Purgatory
from lanes.broker.replica_manager import ReplicaManager
from lanes.clock import ManualClock
from lanes.metadata.image import MetadataImage
from lanes.runtime.metrics import ServiceMetrics
from lanes.storage.log import LogConfig
from lanes.storage.manager import LogManager
from lanes.v1 import metadata_pb2
from tests.unit.log_helpers import producer_batch

METRICS = BrokerMetrics(ServiceMetrics("broker"))


class Controller:
    """The engine's view of the controllers: a lease that holds, ``image``."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.session_timeout_s: float | None = 6.0

    def lease_held(self) -> bool:
        return True


def image_of(topics: dict[str, int], leader_epoch: int) -> MetadataImage:
    """Topics of that many partitions, each on broker 1 alone, led by it at ``leader_epoch``."""
    image = MetadataImage()
    offset = 0
    for name, partitions in topics.items():
        image.apply(
            offset,
            metadata_pb2.MetadataRecord(
                topic_created=metadata_pb2.TopicCreatedRecord(name=name, topic_id=f"{name}-id")
            ),
        )
        for index in range(partitions):
            offset += 1
            record = metadata_pb2.PartitionRecord(
                topic_id=f"{name}-id", partition=index, replicas=[1], isr=[1], leader_id=1, leader_epoch=leader_epoch
            )
            image.apply(offset, metadata_pb2.MetadataRecord(partition=record))
        offset += 1
    return image


async def publish(tmp_path: Path, image: MetadataImage) -> tuple[ReplicaManager, LogManager]:
    clock = ManualClock()
    replicas = ReplicaManager(1, Controller(image), clock, Purgatory(), METRICS)
    logs = LogManager(tmp_path, clock=clock)
    fetchers = FetcherManager(
        1, replicas.partitions, broker_epoch=lambda: 1, replica_lag_time_max_ms=30_000, on_fetcher_ended=lambda: None
    )
    publisher = MetadataPublisher(replicas, logs, fetchers, clock, METRICS, replica_lag_time_max_ms=30_000)
    async with publisher.lock:
        await publisher.apply_pending()
    await publisher.wait_prepared()
    return replicas, logs


def test_partitions_a_restarted_broker_leads_again_take_their_first_appends_on_its_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart: logs with records, led again at a new epoch, opened ten at a time. Each first
    append would read the active segment's first timestamp; the publisher reads it beforehand,
    per chunk, in a worker thread (``PartitionLog.prepare_for_appends``), so that append is light
    (its new epoch it writes itself, in place). Nothing is written ahead: a partition that then
    receives nothing costs nothing at the next stop and start."""
    monkeypatch.setattr("lanes.broker.metadata_publisher.OPEN_CHUNK_PARTITIONS", 10)
    topics = {"orders": 25, "audit": 3, "one": 1}
    asyncio.run(publish(tmp_path, image_of(topics, leader_epoch=1)))[1].close()  # logs with an epoch...
    written = LogManager(tmp_path, clock=ManualClock())
    for topic, count in topics.items():
        for index in range(count):
            log = written.open_log(topic, index, LogConfig.from_topic_configs({}), topic_id=f"{topic}-id")
            log.append_as_leader(producer_batch([b"v"], 0), 1)  # ...and a record each
    written.close()
    caplog.set_level(logging.INFO, logger="lanes.broker.metadata_publisher")
    replicas, logs = asyncio.run(publish(tmp_path, image_of(topics, leader_epoch=4)))
    try:
        assert len(replicas.partitions) == 29
        for partition in replicas.partitions.values():
            assert partition.leader_epoch == 4
            assert partition.log.segments()[-1].first_batch_timestamp_known, f"{partition.key}: read ahead"
            assert partition.log.epochs.unsaved, f"{partition.key}: its new epoch waits for its first batch"
            batch = producer_batch([b"v"], 0)
            assert partition.log.append_is_light(len(batch), partition.log.validate_produce(batch))
        leading = [m for m in (r.getMessage() for r in caplog.records) if m.startswith("leading") and "epoch 4" in m]
        # each chunk of ten led at most 20: a line per partition
        assert sorted(leading) == sorted(f"leading {t}-{i} at epoch 4" for t, n in topics.items() for i in range(n))
    finally:
        logs.close()


def test_a_pass_leading_many_partitions_logs_a_line_per_topic(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lanes.broker.metadata_publisher")
    _, logs = asyncio.run(publish(tmp_path, image_of({"orders": 25, "audit": 3, "one": 1}, leader_epoch=4)))
    logs.close()
    leading = [record.getMessage() for record in caplog.records if record.getMessage().startswith("leading")]
    assert sorted(leading) == [
        "leading 1 partition of one (0) at epoch 4",
        "leading 25 partitions of orders (0-24) at epoch 4",
        "leading 3 partitions of audit (0-2) at epoch 4",
    ]


def test_a_pass_leading_a_few_partitions_logs_each(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lanes.broker.metadata_publisher")
    _, logs = asyncio.run(publish(tmp_path, image_of({"orders": LOGGED_LEADERSHIPS}, leader_epoch=2)))
    logs.close()
    leading = [record.getMessage() for record in caplog.records if record.getMessage().startswith("leading")]
    assert sorted(leading) == sorted(f"leading orders-{index} at epoch 2" for index in range(LOGGED_LEADERSHIPS))


def test_number_ranges_name_runs_of_consecutive_numbers() -> None:
    assert number_ranges([9, 0, 1, 2, 3, 7, 10, 11, 12, 3]) == "0-3, 7, 9-12"
    assert number_ranges([5]) == "5"
    assert number_ranges([]) == ""
