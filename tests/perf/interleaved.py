"""Lanes against Apache Kafka in interleaved rounds, for figures too close to settle in one run.

``python -m tests.perf.interleaved latency|keyed [ROUNDS]`` starts a one-node Kafka (KRaft,
through confluent-kafka) and a one-broker Lanes side by side (``tests/perf/test_peers.py``'s
``kafka_cluster`` and ``lanes_cluster``), then runs one workload in rounds, Kafka then Lanes,
after a short warm-up round each, and prints every round and the medians:

- ``latency``: workload 3 at 10,000 records/s for 5 s, acks=1 (``peers.latency``): produce and
  end-to-end p50 / p99 / p99.9;
- ``keyed``: 300,000 x 100 B keyed over the 97 keys into 6 partitions, acks=1
  (``peers.produce``): records/s;
- ``consume``: 300,000 x 1 KiB written to one partition (acks=1), then read back by a group
  consumer committing after every poll or batch (``peers.consume``): records/s.

Each round starts on a new topic. Both servers run for the whole measurement, so a slow phase
of the machine touches both systems' rounds alike (the point of interleaving).
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

import lanes
from tests.perf.peers import consume, latency, produce
from tests.perf.test_peers import KEYED_PARTITIONS, KEYS, kafka_cluster, lanes_cluster, wait_until_served

LATENCY_SECONDS = 5.0
KEYED_RECORDS = 300_000
CONSUMED_RECORDS = 300_000


def _percentile_ms(seconds: list[float], quantile: float) -> float:
    observed = sorted(s for s in seconds if not math.isnan(s))
    return observed[min(len(observed) - 1, int(len(observed) * quantile))] * 1000


def _latency_round(system: str, bootstrap: str, topic: str, warm_up: bool) -> tuple[float, ...]:
    run = latency.kafka_latency if system == "kafka" else latency.lanes_latency
    measured = run(bootstrap, topic, 10_000, 1.0 if warm_up else LATENCY_SECONDS, 100, acks="1")
    produced, seen = measured.produce_s, measured.end_to_end_s
    return (
        _percentile_ms(produced, 0.5),
        _percentile_ms(produced, 0.99),
        _percentile_ms(seen, 0.5),
        _percentile_ms(seen, 0.99),
        _percentile_ms(seen, 0.999),
    )


def _keyed_round(system: str, bootstrap: str, topic: str, warm_up: bool) -> tuple[float, ...]:
    run = produce.kafka_produce if system == "kafka" else produce.lanes_produce
    count = 20_000 if warm_up else KEYED_RECORDS
    return (count / run(bootstrap, topic, count, os.urandom(100), acks="1", keys=KEYS),)


def _consume_round(system: str, bootstrap: str, topic: str, warm_up: bool) -> tuple[float, ...]:
    write = produce.kafka_produce if system == "kafka" else produce.lanes_produce
    read = consume.kafka_consume if system == "kafka" else consume.lanes_consume
    count = 20_000 if warm_up else CONSUMED_RECORDS
    write(bootstrap, topic, count, os.urandom(1024), acks="1")
    return (count / read(bootstrap, topic, count, f"group-{topic}"),)


WORKLOADS: dict[str, tuple[int, Callable[[str, str, str, bool], tuple[float, ...]], str]] = {
    "latency": (1, _latency_round, "produce p50, p99 | end to end p50, p99, p99.9 (ms)"),
    "keyed": (KEYED_PARTITIONS, _keyed_round, "records/s"),
    "consume": (1, _consume_round, "records/s"),
}


def main(workload: str, rounds: int) -> None:
    partitions, run_round, unit = WORKLOADS[workload]
    results: dict[str, list[tuple[float, ...]]] = {"kafka": [], "lanes": []}
    with tempfile.TemporaryDirectory(prefix="lanes-interleaved-") as scratch:
        root = Path(scratch)
        with kafka_cluster(root / "kafka", 1) as kafka, lanes_cluster(root / "lanes", 1) as lanes_bootstrap:
            kafka_admin = AdminClient({"bootstrap.servers": kafka})
            with lanes.Admin(lanes_bootstrap) as lanes_admin:
                for number in range(rounds + 1):
                    for system in ("kafka", "lanes"):
                        topic = f"{workload}-{system}-{number}"
                        if system == "kafka":
                            kafka_admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
                            bootstrap = kafka
                        else:
                            lanes_admin.create_topic(topic, partitions=partitions, replication_factor=1)
                            wait_until_served(lanes_bootstrap, topic, partitions)
                            bootstrap = lanes_bootstrap
                        figures = run_round(system, bootstrap, topic, number == 0)
                        if number:
                            results[system].append(figures)
                            print(f"{system} round {number}: {', '.join(f'{f:,.2f}' for f in figures)}", flush=True)
    print(f"medians ({unit}):")
    for system, rows in results.items():
        print(f"  {system}: {', '.join(f'{statistics.median(column):,.2f}' for column in zip(*rows, strict=True))}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3)
