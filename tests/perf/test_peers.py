"""Lanes side by side with Redis Streams and NATS JetStream (issue #7; run by ``make bench``,
never by ``make test``). Every server is started here on its own loopback port and stopped by PID;
the same driver process runs the same workload against each; a warm-up run is excluded and each
figure is the median of ``LANES_BENCH_RUNS`` (default 3) runs with its spread.

So far: workload 1, produce throughput (100 B and 1 KiB values, ``LANES_BENCH_RECORDS`` records,
default 1,000,000). Next: consume throughput, latency at a fixed rate, partition and producer
scaling, the machine's limits, the chart, docs/performance.md.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import lanes
from lanes.runtime.local_cluster import LocalCluster
from tests.integration.processes import consecutive_free_ports, free_port
from tests.perf.peers.produce import lanes_produce, nats_produce, redis_produce
from tests.perf.peers.report import Figure, save, table
from tests.perf.peers.servers import start_nats, start_redis

RECORDS = int(os.environ.get("LANES_BENCH_RECORDS", "1000000"))
RUNS = int(os.environ.get("LANES_BENCH_RUNS", "3"))
VALUE_SIZES = (100, 1024)


@contextmanager
def lanes_cluster(data_dir: Path, brokers: int) -> Iterator[str]:
    cluster = LocalCluster(
        data_dir, brokers=brokers, port_base=consecutive_free_ports(brokers + 2), offsets_topic_partitions=1
    )
    try:
        yield str(cluster.start()["bootstrap"])
    finally:
        cluster.stop()


def measure(figure: Figure, run: Callable[[int, int], float], records: int) -> Figure:
    """A warm-up run (a tenth of the records, not counted), then ``RUNS`` timed runs as records/s."""
    run(-1, max(1, records // 10))
    for attempt in range(RUNS):
        figure.runs.append(records / run(attempt, records))
    return figure


def test_produce_throughput_against_peers() -> None:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="lanes-peers-") as scratch:
        root = Path(scratch)
        redis_server = start_redis(root / "redis", free_port())
        nats_server = start_nats(root / "nats", free_port())
        try:
            for size in VALUE_SIZES:
                value = os.urandom(size)
                workload = f"produce {RECORDS:,} x {size} B"
                figures.append(
                    measure(
                        Figure(workload, "redis streams", "XADD pipelined x1000, AOF everysec", "r/s"),
                        lambda n, count, size=size, value=value: redis_produce(
                            redis_server.address, f"s{size}-{n}", count, value
                        ),
                        RECORDS,
                    )
                )
                figures.append(
                    measure(
                        Figure(workload, "nats jetstream", "async publish, acked, file storage", "r/s"),
                        lambda n, count, size=size, value=value: nats_produce(
                            nats_server.address, f"bench.s{size}.r{n + 1}", count, value
                        ),
                        RECORDS,
                    )
                )
        finally:
            redis_server.stop()
            nats_server.stop()
        for brokers, acks, durability in ((1, "1", "acks=1, 1 broker"), (3, "all", "acks=all, RF 3, idempotent")):
            with lanes_cluster(root / f"lanes-{brokers}", brokers) as bootstrap:
                for size in VALUE_SIZES:
                    value = os.urandom(size)
                    topic = f"bench-{size}"
                    lanes.Admin(bootstrap).create_topic(
                        topic, 1, brokers, {"min.insync.replicas": str(min(2, brokers))}
                    )
                    figures.append(
                        measure(
                            Figure(f"produce {RECORDS:,} x {size} B", f"lanes acks={acks}", durability, "r/s"),
                            lambda _n, count, value=value, topic=topic, acks=acks: lanes_produce(
                                bootstrap, topic, count, value, acks=acks
                            ),
                            RECORDS,
                        )
                    )
    order = {"lanes acks=1": 0, "lanes acks=all": 1, "redis streams": 2, "nats jetstream": 3}
    figures.sort(key=lambda f: (f.workload, order[f.system]))
    print()
    print(table(figures))
    save(figures, {"records": RECORDS, "runs": RUNS, "value_sizes": list(VALUE_SIZES)})
    assert all(len(f.runs) == RUNS for f in figures)
