"""Every service's Prometheus endpoint, scraped for real while a known workload runs against a
local cluster: the figures must match what happened (records in = records produced, bytes out
cover the bytes read, under-replicated goes to 1 while a follower is paused and back to 0)."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import lanes
from lanes.cli.watch import Samples, scrape, total
from lanes.local.cluster import LocalCluster
from lanes.local.processes import start_service
from tests.e2e.cli import wait_for
from tests.integration.processes import free_port, running_cluster


def scraped(*addresses: str) -> Samples:
    """The samples of every endpoint, summed by (name, labels); each must answer."""
    samples, unreachable = scrape(addresses)
    assert not unreachable, f"no answer from {unreachable}"
    return samples


def brokers_sum(cluster: LocalCluster, name: str, **labels: str) -> float:
    return total(scraped(*(b["metrics"] for b in cluster.describe()["brokers"])), name, **labels)


def test_every_service_reports_what_the_workload_did(tmp_path: Path) -> None:
    records, value_bytes = 3_000, 200
    with running_cluster(tmp_path, brokers=2) as cluster:
        described = cluster.describe()
        bootstrap = str(described["bootstrap"])
        addresses = [
            described["controllers"][0]["metrics"],
            *(b["metrics"] for b in described["brokers"]),
            *(c["metrics"] for c in described["coordinators"]),
        ]
        assert all(addresses), f"a service announced no metrics endpoint: {addresses}"
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("metered", partitions=3, replication_factor=2)
        sent_from = time.time()
        with lanes.Producer(bootstrap, acks="all") as producer:
            for n in range(records):
                producer.send("metered", n.to_bytes(4, "big") * (value_bytes // 4), key=str(n % 17).encode())
            producer.flush()
        sent_until = time.time()

        assert brokers_sum(cluster, "lanes_broker_records_in_total", topic="metered") == records
        bytes_in = brokers_sum(cluster, "lanes_broker_bytes_in_total", topic="metered")
        assert bytes_in > records * value_bytes * 0.5  # batches as stored (compressible values)
        assert brokers_sum(cluster, "lanes_partition_log_end_offset", topic="metered") == 2 * records  # RF 2
        wait_for(
            lambda: brokers_sum(cluster, "lanes_partition_high_watermark", topic="metered") == 2 * records,
            "the followers' high-water marks",
        )
        assert brokers_sum(cluster, "lanes_broker_leader_partitions") >= 3
        assert brokers_sum(cluster, "lanes_broker_under_replicated_partitions") == 0
        assert (
            brokers_sum(cluster, "lanes_broker_disk_total_bytes")
            > brokers_sum(cluster, "lanes_broker_disk_free_bytes")
            > 0
        )

        fsyncs = brokers_sum(cluster, "lanes_broker_fsync_duration_seconds_count")
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("synced", partitions=1, replication_factor=2, config={"flush.messages": "1"})
        with lanes.Producer(bootstrap, acks="all") as producer:
            for n in range(5):
                producer.send("synced", b"%d" % n).result(timeout=30)  # one batch, one fsync per replica each
        assert brokers_sum(cluster, "lanes_broker_fsync_duration_seconds_count") >= fsyncs + 10

        with lanes.Consumer(bootstrap) as consumer:
            consumer.assign([lanes.TopicPartition("metered", p) for p in range(3)])
            consumer.seek_to_beginning()
            read = 0
            deadline = time.monotonic() + 30
            while read < records and time.monotonic() < deadline:
                read += len(consumer.poll(timeout_ms=500))
        assert read == records
        assert brokers_sum(cluster, "lanes_broker_bytes_out_total", topic="metered") >= bytes_in
        assert brokers_sum(cluster, "lanes_broker_records_out_total", topic="metered") >= records

        broker = scraped(described["brokers"][0]["metrics"])
        assert total(broker, "lanes_rpc_duration_seconds_count", service="broker", method="Metadata", code="OK") > 0
        assert total(broker, "process_cpu_seconds_total") > 0
        assert total(broker, "python_gc_objects_collected_total") > 0
        controller = scraped(described["controllers"][0]["metrics"])
        created = total(controller, "lanes_rpc_duration_seconds_count", method="CreateTopics", code="OK")
        assert created == 2  # metered and synced
        coordinator = scraped(described["coordinators"][0]["metrics"])
        assert total(coordinator, "process_resident_memory_bytes") > 0

        # consumer lag: a group that committed the start of partition 0, nothing of 1, all of 2
        partitions = [lanes.TopicPartition("metered", p) for p in range(3)]
        with lanes.Consumer(bootstrap, group_id="readers") as consumer:
            ends = {tp.partition: end for tp, end in consumer.end_offsets(partitions).items()}
            consumer.commit({partitions[0]: 10, partitions[2]: ends[2]})
        scraped_from = time.time()
        coordinator = scraped(described["coordinators"][0]["metrics"])
        scraped_until = time.time()
        lag = {
            labels["partition"]: sample
            for (name, label_pairs), sample in coordinator.items()
            if name == "lanes_consumer_group_lag_records" and (labels := dict(label_pairs))["group"] == "readers"
        }
        assert lag == {"0": ends[0] - 10, "2": 0}  # partition 1: no commit, no owner, left out
        seconds = total(
            coordinator, "lanes_consumer_group_lag_seconds", group="readers", topic="metered", partition="0"
        )
        # the age of the record at offset 10, appended between sent_from and sent_until (ms precision)
        assert scraped_from - sent_until - 0.002 <= seconds <= scraped_until - sent_from + 0.002
        assert total(coordinator, "lanes_consumer_group_lag_seconds", group="readers", partition="2") == 0
        assert total(coordinator, "lanes_consumer_group_committed_offset", group="readers", partition="0") == 10
        assert total(coordinator, "lanes_coordinator_groups", state="empty") == 1
        assert total(coordinator, "lanes_coordinator_offset_commits_total", result="ok") == 2
        logs = "".join(path.read_text() for path in (tmp_path / "logs").glob("*.log"))
        assert "metrics snapshot failed" not in logs


def test_under_replicated_partitions_follow_a_paused_follower(tmp_path: Path) -> None:
    # The session outlasts the pause (the follower is not fenced); the ISR drops it after 1.5 s.
    # No coordinator: no __consumer_offsets, whose partitions would be under-replicated too.
    with running_cluster(
        tmp_path, brokers=2, coordinators=0, session_timeout_ms=30_000, replica_lag_time_max_ms=1500
    ) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("watched", partitions=1, replication_factor=2)
            leader = admin.describe_topic("watched").partitions[0].leader
        follower = 2 if leader == 1 else 1
        leader_metrics = next(b["metrics"] for b in cluster.describe()["brokers"] if b["id"] == leader)

        def under_replicated() -> float:
            return total(scraped(leader_metrics), "lanes_broker_under_replicated_partitions")

        assert under_replicated() == 0
        shrinks_before = total(scraped(leader_metrics), "lanes_broker_isr_shrinks_total")
        cluster.broker_processes[follower].process.send_signal(signal.SIGSTOP)
        try:
            wait_for(lambda: under_replicated() == 1, "under-replicated to go to 1 with the follower paused")
            assert total(scraped(leader_metrics), "lanes_broker_isr_shrinks_total") == shrinks_before + 1
        finally:
            cluster.broker_processes[follower].process.send_signal(signal.SIGCONT)
        wait_for(lambda: under_replicated() == 0, "under-replicated back to 0 once the follower resumed")
        assert total(scraped(leader_metrics), "lanes_broker_isr_expands_total") >= 1


def test_services_write_json_log_lines_when_asked(tmp_path: Path) -> None:
    log_path = tmp_path / "controller.log"
    controller = start_service(
        "lanes.controller",
        ["--data-dir", str(tmp_path / "controller"), "--port", str(free_port()), "--log-format", "json"],
        log_path,
    )
    assert controller.terminate() == 0
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    assert lines, log_path.read_text()
    assert all(line["service"] == "controller" and line["node_id"] == 0 for line in lines)
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert "shutting down" in [line["message"] for line in lines[-3:]], "the stop is logged, as JSON too"
