"""Topic configs altered while a broker leads the partition take effect there (they were only
read when leadership began): retention deletes, min.insync.replicas refuses acks=all writes."""

from __future__ import annotations

from pathlib import Path

import lanes
from lanes.client import TopicPartition
from lanes.errors import NotEnoughReplicasError
from tests.e2e.cli import wait_for
from tests.integration.processes import running_cluster
from tests.integration.test_consumer_groups import produce


def test_configs_altered_under_a_leader_apply_to_its_partition(tmp_path: Path) -> None:
    with running_cluster(tmp_path, brokers=1, min_segment_bytes=100) as cluster:  # a segment per batch
        bootstrap = str(cluster.describe()["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("shrinking", partitions=1, replication_factor=1, config={"segment.bytes": "500"})
            for start in (0, 30, 60):  # a batch each, each rolls a segment
                produce(bootstrap, "shrinking", 30, start=start)
            admin.alter_configs("shrinking", set={"retention.bytes": "1"})
            partition = TopicPartition("shrinking", 0)
            with lanes.Consumer(bootstrap) as consumer:
                wait_for(lambda: consumer.beginning_offsets([partition])[partition] > 0, "retention by size", 30)

            admin.alter_configs("shrinking", set={"min.insync.replicas": "2"})
            with lanes.Producer(bootstrap, delivery_timeout_ms=3000, request_timeout_ms=1000) as producer:

                def refused() -> bool:
                    try:
                        producer.send("shrinking", b"x").result(timeout=10)
                    except NotEnoughReplicasError:
                        return True
                    return False

                wait_for(refused, "acks=all refused below min.insync.replicas", 30)
