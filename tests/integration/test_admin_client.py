"""The Admin client against a real local cluster: topics, partitions, configs, cluster, and typed
errors that say what to do; the async twin too."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

import lanes
import lanes.aio
from lanes.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    LanesError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from lanes.local.cluster import LocalCluster
from tests.integration.processes import running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("admin") / "lanes", 2) as local:
        yield local


def bootstrap(cluster: LocalCluster) -> str:
    return str(cluster.describe()["bootstrap"])


def test_topics_partitions_and_configs(cluster: LocalCluster) -> None:
    admin = lanes.Admin(bootstrap(cluster))
    topic_id = admin.create_topic("orders", partitions=3, replication_factor=2, config={"retention.ms": "60000"})
    assert topic_id
    described = admin.describe_topic("orders")
    assert (described.name, described.topic_id, len(described.partitions)) == ("orders", topic_id, 3)
    assert all(len(p.replicas) == 2 and p.leader in p.replicas for p in described.partitions)
    assert "orders" in admin.list_topics()
    admin.create_partitions("orders", 5)
    assert len(admin.describe_topic("orders").partitions) == 5
    admin.alter_configs("orders", set={"cleanup.policy": "compact,delete"}, delete=["retention.ms"])
    configs = admin.describe_configs("orders")
    assert configs["cleanup.policy"].value == "compact,delete"
    assert not configs["cleanup.policy"].is_default
    assert configs["retention.ms"].is_default
    assert configs["retention.ms"].documentation
    cluster_info = admin.describe_cluster()
    assert [b.broker_id for b in cluster_info.brokers] == [1, 2]
    assert cluster_info.controller == cluster.describe()["controller"]
    admin.delete_topic("orders")
    assert "orders" not in admin.list_topics()


def test_errors_are_typed_and_say_what_to_do(cluster: LocalCluster) -> None:
    admin = lanes.Admin(bootstrap(cluster))
    admin.create_topic("payments", partitions=2, replication_factor=1)
    with pytest.raises(TopicAlreadyExistsError, match="already exists"):
        admin.create_topic("payments")
    with pytest.raises(InvalidPartitionsError, match="can only grow"):
        admin.create_partitions("payments", 1)
    with pytest.raises(InvalidConfigError, match=r"retention\.ms"):
        admin.alter_configs("payments", set={"retention.ms": "a week"})
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.describe_topic("nope")
    with pytest.raises(LanesError, match="replication factor 5 is larger than the 2 live brokers"):
        admin.create_topic("wide", replication_factor=5)
    with pytest.raises(LanesError, match="could name the controller"):
        lanes.Admin("127.0.0.1:1", request_timeout_ms=500).list_topics()


def test_the_async_admin(cluster: LocalCluster) -> None:
    async def scenario() -> list[str]:
        admin = lanes.aio.Admin(bootstrap(cluster))
        await admin.create_topic("async-topic", partitions=1, replication_factor=1)
        return await admin.list_topics()

    assert "async-topic" in asyncio.run(scenario())


def test_describe_logs_reports_every_replica_with_offsets_and_size(cluster: LocalCluster) -> None:
    admin = lanes.Admin(bootstrap(cluster))
    admin.create_topic("sized", partitions=2, replication_factor=2)
    with lanes.Producer(bootstrap(cluster)) as producer:
        for i in range(10):
            producer.send("sized", b"x" * 100, partition=i % 2)
    deadline = time.monotonic() + 10
    while True:  # followers catch up asynchronously
        replicas = admin.describe_logs(["sized"])
        if all(r.log_end_offset == 5 for r in replicas) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert [(r.partition, r.broker_id) for r in replicas] == [(0, 1), (0, 2), (1, 1), (1, 2)]
    leaders = {p.partition: p.leader for p in admin.describe_topic("sized").partitions}
    for replica in replicas:
        assert replica.is_leader == (leaders[replica.partition] == replica.broker_id)
        assert (replica.log_start_offset, replica.log_end_offset, replica.segments) == (0, 5, 1)
        assert replica.size_bytes > 500
    assert {r.high_watermark for r in replicas if r.is_leader} == {5}
    assert admin.describe_logs(["no-such-topic"]) == []
    cluster_info = admin.describe_cluster()
    assert [c.coordinator_id for c in cluster_info.coordinators] == [1]
    assert cluster_info.metadata_offset > 0
