"""Kafka's own load tools against Lanes' Kafka listener and against Apache Kafka on the same
machine, in one run (issues #38 and #39; ``make bench``): ``kafka-producer-perf-test`` (acks=1,
100 B and 1 KiB records) and ``kafka-consumer-perf-test`` reading them back, one broker each, one
partition. The same Java clients drive both, so the difference is the servers'. Beside them,
``lanes bench`` with the same flags against Lanes' own face: each system with its own tool, so a
client's cost shows against its server's.

Lanes runs as ``lanes up --insecure`` would (one broker, no TLS: Kafka's peer is plaintext too).
Results: a table on stdout and ``tests/perf/results/kafka-tools.json``; docs/performance.md
carries the latest run. ``LANES_BENCH_RECORDS`` sets the records per run (default 1,000,000).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def _lanes_bench(bootstrap: str, prefix: str) -> dict[str, ToolRun]:
    """``lanes bench`` with ``_runs``' flags, against Lanes' gRPC face."""
    found: dict[str, ToolRun] = {}
    for size in SIZES:
        topic = f"{prefix}-{size}"
        for name, arguments in (
            (f"produce {size} B", ["produce", "--topic", topic, "--num-records", str(RECORDS), "--record-size",
                                   str(size), "--throughput", "-1", "--producer-props", "acks=1", "linger.ms=5"]),
            (f"consume {size} B", ["consume", "--topic", topic, "--messages", str(RECORDS)]),
        ):  # fmt: skip
            done = subprocess.run(
                [sys.executable, "-m", "lanes.cli", "bench", *arguments, "--bootstrap", bootstrap, "--output", "json"],
                capture_output=True, text=True, check=True, timeout=1800,
            )  # fmt: skip
            summary = json.loads(done.stdout)
            found[name] = ToolRun(summary["records_per_s"], summary["mb_per_s"])
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
                    admin.create_topic(f"bench-{size}", partitions=1, replication_factor=1)
            on_lanes = _runs(str(cluster.describe()["kafka_bootstrap"]), "perf")
            lanes_bench = _lanes_bench(str(cluster.describe()["bootstrap"]), "bench")
        finally:
            cluster.stop()
    rows = [
        (
            name,
            mine.records_per_s,
            on_kafka[name].records_per_s,
            mine.records_per_s / on_kafka[name].records_per_s,
            lanes_bench[name].records_per_s,
        )
        for name, mine in on_lanes.items()
    ]
    print(
        f"\n{'workload':<16}{'Kafka tools':>14}{'Kafka tools':>14}{'Lanes/Kafka':>13}{'lanes bench':>14}"
        f"\n{'':<16}{'-> Lanes':>14}{'-> Kafka':>14}{'':>13}{'-> Lanes':>14}"
    )
    for name, mine, theirs, ratio, own_tool in rows:
        print(f"{name:<16}{mine:>14,.0f}{theirs:>14,.0f}{ratio:>13.2f}{own_tool:>14,.0f}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"records": RECORDS, "rows": rows}, indent=2) + "\n")
    assert all(mine > 0 and theirs > 0 and own > 0 for _, mine, theirs, _, own in rows)
