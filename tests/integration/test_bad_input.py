"""Bad input through the clients never harms the cluster: each mistake gets a typed error that says
what to do, no process dies, and the logs hold exactly what was written before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import lanes
from lanes.errors import (
    ErrorCode,
    InvalidConfigError,
    InvalidTopicError,
    LanesError,
    MessageTooLargeError,
    UnknownTopicOrPartitionError,
)
from lanes.local.cluster import LocalCluster
from tests.integration.processes import running_cluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "lanes", 2, session_timeout_ms=2000) as local:
        yield local


def test_mistakes_get_typed_errors_and_leave_the_cluster_and_its_logs_intact(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    admin = lanes.Admin(bootstrap)
    admin.create_topic("accounts", partitions=2, replication_factor=2, config={"max.message.bytes": "4096"})
    partitions = [lanes.TopicPartition("accounts", p) for p in (0, 1)]
    with lanes.Producer(bootstrap) as producer:
        for index in range(20):
            producer.send("accounts", b"good-%d" % index, partition=index % 2).result(timeout=30)

        with pytest.raises(UnknownTopicOrPartitionError, match="create it first"):
            producer.send("no-such-topic", b"x").result(timeout=30)
        with pytest.raises(UnknownTopicOrPartitionError, match=r"partitions 0\.\.1"):
            producer.send("accounts", b"x", partition=5).result(timeout=30)
        with pytest.raises(MessageTooLargeError, match=r"max\.message\.bytes"):
            producer.send("accounts", b"x" * 10_000, partition=0).result(timeout=30)

    with pytest.raises(InvalidTopicError, match="name"):
        admin.create_topic("bad name!", partitions=1)
    with pytest.raises(InvalidConfigError, match=r"retention\.ms"):
        admin.alter_configs("accounts", set={"retention.ms": "forever"})
    with pytest.raises(InvalidConfigError, match=r"no\.such\.config"):
        admin.alter_configs("accounts", set={"no.such.config": "1"})
    with pytest.raises(LanesError, match="larger than the 2 live brokers") as too_wide:
        admin.create_topic("wide", partitions=1, replication_factor=3)
    assert too_wide.value.code is ErrorCode.INVALID_REPLICATION_FACTOR

    with lanes.Consumer(bootstrap) as consumer:
        consumer.assign([lanes.TopicPartition("accounts", 9)])
        with pytest.raises(UnknownTopicOrPartitionError, match=r"partitions 0\.\.1"):
            consumer.poll(timeout_ms=2000)
    with lanes.Consumer(bootstrap) as consumer:
        consumer.assign([lanes.TopicPartition("no-such-topic", 0)])
        with pytest.raises(LanesError, match="no-such-topic"):
            consumer.poll(timeout_ms=2000)

    assert cluster.dead_processes() == [], "every process is still up"
    assert admin.describe_configs("accounts")["retention.ms"].is_default, "the refused config was not applied"
    with lanes.Consumer(bootstrap) as consumer:
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        assert consumer.end_offsets(partitions) == dict.fromkeys(partitions, 10), "nothing bad reached a log"
        values = []
        while len(values) < 20:
            values.extend(record.value for record in consumer.poll(timeout_ms=1000))
    assert sorted(values) == sorted(b"good-%d" % index for index in range(20))
