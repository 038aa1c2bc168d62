"""The broker's scrape-time gauges from replica states (pure: no service, no HTTP)."""

from __future__ import annotations

from prometheus_client.metrics_core import Metric

from lanes.broker.metrics import BrokerMetrics, ReplicaState
from lanes.runtime.metrics import ServiceMetrics


def replica(partition: int, *, leader: bool, isr: int = 3, replicas: int = 3, lag: int = 0) -> ReplicaState:
    return ReplicaState(
        topic="t",
        partition=partition,
        log_start_offset=10,
        log_end_offset=100 + partition,
        high_watermark=90,
        size_bytes=1000,
        segments=2,
        leader=leader,
        replicas=replicas if leader else 0,
        in_sync_replicas=isr if leader else 0,
        min_insync_replicas=2 if leader else 0,
        lag_records=lag,
    )


def by_name(metrics: list[Metric]) -> dict[str, list[tuple[dict[str, str], float]]]:
    return {m.name: [(s.labels, s.value) for s in m.samples] for m in metrics}


def test_broker_totals_count_under_replicated_and_under_min_isr_partitions_it_leads() -> None:
    gauges = by_name(
        BrokerMetrics(ServiceMetrics("broker")).gauges(
            [
                replica(0, leader=True),  # healthy
                replica(1, leader=True, isr=2),  # under-replicated, not under min ISR
                replica(2, leader=True, isr=1),  # both
                replica(3, leader=False, lag=7),
                replica(4, leader=False, lag=3),
            ]
        )
    )
    assert gauges["lanes_broker_partitions"] == [({}, 5)]
    assert gauges["lanes_broker_leader_partitions"] == [({}, 3)]
    assert gauges["lanes_broker_under_replicated_partitions"] == [({}, 2)]
    assert gauges["lanes_broker_under_min_isr_partitions"] == [({}, 1)]
    assert gauges["lanes_broker_log_size_bytes"] == [({}, 5000)]
    assert gauges["lanes_broker_log_segments"] == [({}, 10)]
    assert gauges["lanes_broker_replica_max_lag_records"] == [({}, 7)]
    assert ({"topic": "t", "partition": "3"}, 103) in gauges["lanes_partition_log_end_offset"]
    assert gauges["lanes_partition_in_sync_replicas"] == [
        ({"topic": "t", "partition": "0"}, 3),
        ({"topic": "t", "partition": "1"}, 2),
        ({"topic": "t", "partition": "2"}, 1),
    ]
    assert [labels["partition"] for labels, _ in gauges["lanes_partition_replica_lag_records"]] == ["3", "4"]


def test_partition_series_can_be_switched_off() -> None:
    metrics = BrokerMetrics(ServiceMetrics("broker"), partition_series=False)
    names = {m.name for m in metrics.gauges([replica(p, leader=p % 2 == 0) for p in range(100)])}
    assert not any(name.startswith("lanes_partition_") for name in names)
    assert "lanes_broker_under_replicated_partitions" in names


def test_per_partition_errors_are_counted_by_code_name() -> None:
    metrics = BrokerMetrics(ServiceMetrics("broker"))
    metrics.partition_error("Produce", 6)  # NOT_LEADER_OR_FOLLOWER
    metrics.partition_error("Produce", 6)
    metrics.partition_error("Fetch", 99_999)  # a code this version does not know
    errors = {
        (s.labels["rpc"], s.labels["code"]): s.value
        for m in metrics.partition_errors.collect()
        for s in m.samples
        if s.name.endswith("_total")
    }
    assert errors == {("Produce", "NOT_LEADER_OR_FOLLOWER"): 2, ("Fetch", "UNKNOWN_SERVER_ERROR"): 1}
