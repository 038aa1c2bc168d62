"""Kafka's own load tools against Lanes' Kafka listener and against Apache Kafka on the same
machine, in one run (issue #38's performance item; ``make bench``): ``kafka-producer-perf-test``
(acks=1, 100 B and 1 KiB records) and ``kafka-consumer-perf-test`` reading them back, one broker
each, one partition. The same Java clients drive both, so the difference is the servers'.

Lanes runs as ``lanes up --insecure`` would (one broker, no TLS: Kafka's peer is plaintext too).
Results: a table on stdout and ``tests/perf/results/kafka-tools.json``; docs/performance.md
carries the latest run. ``LANES_BENCH_RECORDS`` sets the records per run (default 1,000,000).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import lanes
from lanes.local.cluster import LocalCluster
from tests.integration.processes import consecutive_free_ports, free_port
from tests.perf.peers.kafka import ToolRun, consumer_perf, producer_perf, start_kafka

RECORDS = int(os.environ.get("LANES_BENCH_RECORDS", "1000000"))
SIZES = (100, 1024)
RESULTS = Path(__file__).parent / "results" / "kafka-tools.json"


def _runs(bootstrap: str, prefix: str) -> dict[str, ToolRun]:
    found: dict[str, ToolRun] = {}
    for size in SIZES:
        topic = f"{prefix}-{size}"
        found[f"produce {size} B"] = producer_perf(bootstrap, topic, RECORDS, size, "acks=1", "linger.ms=5")
        found[f"consume {size} B"] = consumer_perf(bootstrap, topic, RECORDS)
    return found


def test_kafka_load_tools_against_lanes_and_kafka() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        kafka = start_kafka(root / "kafka", free_port(), free_port())
        try:  # (Kafka creates the topics on first use, one partition each: num.partitions=1)
            on_kafka = _runs(kafka.address, "perf")
        finally:
            kafka.stop()
        cluster = LocalCluster(
            root / "lanes",
            brokers=1,
            controllers=1,
            port_base=consecutive_free_ports(LocalCluster.ports_for(1, 1, 1, console=True, kafka=True)),
            tls=False,
            auth=False,
            kafka=True,
        )
        cluster.start()
        try:
            with lanes.Admin(str(cluster.describe()["bootstrap"])) as admin:
                for size in SIZES:
                    admin.create_topic(f"perf-{size}", partitions=1, replication_factor=1)
            on_lanes = _runs(str(cluster.describe()["kafka_bootstrap"]), "perf")
        finally:
            cluster.stop()
    rows = [
        (name, mine.records_per_s, on_kafka[name].records_per_s, mine.records_per_s / on_kafka[name].records_per_s)
        for name, mine in on_lanes.items()
    ]
    print(f"\n{'workload':<16}{'Lanes rec/s':>14}{'Kafka rec/s':>14}{'Lanes/Kafka':>13}")
    for name, mine, theirs, ratio in rows:
        print(f"{name:<16}{mine:>14,.0f}{theirs:>14,.0f}{ratio:>13.2f}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"records": RECORDS, "rows": rows}, indent=2) + "\n")
    assert all(mine > 0 and theirs > 0 for _, mine, theirs, _ in rows)
