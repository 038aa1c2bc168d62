"""Scrape cost of a broker's /metrics with 1,000 partitions (run by `make bench`; prints
numbers, asserts nothing about time). docs/operations.md states the sizes this gives.

One broker (and a controller and a coordinator) on loopback, a topic of 1,000 partitions with a
record in each, then 20 scrapes: the median time to answer and the body's size, with the
per-partition series on (the default) and the broker-level series alone
(``--metrics-partition-series off`` leaves out what the first figure spends on partitions; here
it is computed by filtering the body, the broker being the same).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import lanes
from lanes.cli.watch import scrape_text
from tests.integration.processes import running_cluster

PARTITIONS = 1_000
SCRAPES = 20


def test_scraping_a_broker_with_1000_partitions() -> None:
    with tempfile.TemporaryDirectory() as tmp, running_cluster(Path(tmp), brokers=1) as cluster:
        described = cluster.describe()
        bootstrap = str(described["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("wide", partitions=PARTITIONS, replication_factor=1)
        with lanes.Producer(bootstrap, acks="1", enable_idempotence=False) as producer:
            for partition in range(PARTITIONS):
                producer.send("wide", b"x" * 100, partition=partition)
            producer.flush()
        address = described["brokers"][0]["metrics"]
        times_ms, body = [], ""
        for scrape in range(SCRAPES + 1):
            started = time.perf_counter()
            body = scrape_text(address)
            if scrape:  # the first one warms up (the broker may still be opening its 1,000 logs)
                times_ms.append((time.perf_counter() - started) * 1000)
        lines = body.splitlines()
        partition_lines = sum(1 for line in lines if line.startswith("lanes_partition_"))
        broker_only = sum(
            len(line) + 1
            for line in lines
            if not line.startswith(("lanes_partition_", "# HELP lanes_partition_", "# TYPE lanes_partition_"))
        )
        print(
            f"\n/metrics of a broker with {PARTITIONS:,} partitions: median {statistics.median(times_ms):.1f} ms, "
            f"p90 {statistics.quantiles(times_ms, n=10)[-1]:.1f} ms, max {max(times_ms):.1f} ms over {SCRAPES} scrapes "
            f"after a warm-up; {len(body.encode()) / 1024:.0f} KiB, {len(lines):,} lines "
            f"({partition_lines:,} per-partition samples); without per-partition series {broker_only / 1024:.0f} KiB"
        )
