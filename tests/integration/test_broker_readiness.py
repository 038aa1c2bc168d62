"""A broker's ``lanes.broker.InSync`` health (what its pod's readiness probe asks): NOT_SERVING
after a restart until it is back in the ISR of every partition it replicates, so a rolling
restart never takes a second broker down while the first is catching up."""

from __future__ import annotations

from pathlib import Path

from grpc_health.v1 import health_pb2, health_pb2_grpc

import lanes
from lanes.broker.__main__ import IN_SYNC_HEALTH
from tests.e2e.cli import wait_for
from tests.integration.processes import blocking_client_channel, running_cluster
from tests.integration.test_consumer_groups import produce

SERVING = health_pb2.HealthCheckResponse.SERVING


def in_sync_health(address: str) -> int:
    with blocking_client_channel(address) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=IN_SYNC_HEALTH), timeout=5
        )
        return int(answer.status)


def test_a_restarted_broker_is_ready_only_once_back_in_every_isr(tmp_path: Path) -> None:
    with running_cluster(tmp_path, brokers=2, replica_lag_time_max_ms=1000) as cluster:
        bootstrap = cluster.describe()["bootstrap"]
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("book", partitions=4, replication_factor=2)
            follower = cluster.broker_processes[2]
            wait_for(lambda: in_sync_health(follower.address) == SERVING, "broker 2 in sync")

            follower.kill()
            produce(bootstrap, "book", 2_000)  # the ISRs shrink to broker 1 meanwhile
            wait_for(lambda: all(p.isr == (1,) for p in admin.describe_topic("book").partitions), "ISRs without 2")

            restarted = cluster.start_broker(2)
            assert in_sync_health(restarted.address) != SERVING  # registered, but behind
            wait_for(lambda: in_sync_health(restarted.address) == SERVING, "in sync once caught up")
            assert all(2 in p.isr for p in admin.describe_topic("book").partitions)
