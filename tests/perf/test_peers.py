"""Lanes side by side with Apache Kafka, Redis Streams and NATS JetStream, and against the
machine's limits (issues #7 and #39; run by ``make bench``, never by ``make test``;
docs/performance.md explains it).

Every server is started here on its own loopback port and stopped by PID; this one driver process
runs the same workloads with the same record counts and sizes against each system, each from the
Python client its users would pick (Kafka: confluent-kafka; Kafka runs acks=1 on one KRaft node and
acks=all on three, RF 3, as Lanes does):

1. produce throughput (``tests/perf/peers/produce.py``), 100 B and 1 KiB values; and 100 B values
   keyed over 97 keys into 6 partitions (Lanes and Kafka acks=1; Redis with the key as a field);
2. consume throughput of the records each produce run wrote (``consume.py``);
3. produce and end-to-end latency at a fixed offered rate (``latency.py``);
4. Lanes only: 1, 6 and 24 partitions; 1 and 3 producer processes (``scaling.py``);
5. the machine's limits: sequential writes to the data directory's filesystem, loopback gRPC
   (``limits.py``).

Each figure is the median of ``LANES_BENCH_RUNS`` (default 3) runs, after a warm-up run that is
not counted (a tenth of the records, or one second of latency). Results: a table on stdout,
``tests/perf/results/latest.json`` and ``latest.png``.

Settings (environment): ``LANES_BENCH_RECORDS`` (default 1,000,000), ``LANES_BENCH_RUNS`` (3),
``LANES_BENCH_LATENCY_RATE`` (10,000 records/s), ``LANES_BENCH_LATENCY_SECONDS`` (5),
``LANES_BENCH_DIR`` (where data directories go; default: the system's temporary directory).
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import lanes
from lanes.errors import LanesError
from lanes.local.cluster import LocalCluster
from tests.integration.processes import consecutive_free_ports, free_port
from tests.perf.peers import consume, latency, limits, produce, scaling
from tests.perf.peers.kafka import start_kafka_cluster
from tests.perf.peers.report import Figure, chart, save, table
from tests.perf.peers.servers import Server, start_grpc_sink, start_nats, start_redis

RECORDS = int(os.environ.get("LANES_BENCH_RECORDS", "1000000"))
RUNS = int(os.environ.get("LANES_BENCH_RUNS", "3"))
LATENCY_RATE_PER_S = int(os.environ.get("LANES_BENCH_LATENCY_RATE", "10000"))
LATENCY_SECONDS = float(os.environ.get("LANES_BENCH_LATENCY_SECONDS", "5"))
VALUE_SIZES = (100, 1024)
#: the keyed workload (issue #39's measurement): 100 B values over 97 keys into 6 partitions
KEYS = tuple(f"ticker-{index}".encode() for index in range(97))
KEYED_PARTITIONS = 6
LATENCY_VALUE_BYTES = 100
PARTITION_COUNTS = (1, 6, 24)
PRODUCER_PROCESSES = (1, 3)
BATCH_BYTES = 64 * 1024  # the producer's batch_size: the chunk of the disk and gRPC limits
REQUEST_BYTES = 1024 * 1024  # the producer's max_request_size: what a busy partition sends at once
PERCENTILES = ((50, 0.5), (99, 0.99), (99.9, 0.999))

LANES_ACKS_1 = "acks=1, 1 broker, page cache (no fsync)"
LANES_ACKS_ALL = "acks=all, 3 brokers RF 3, min.insync=2, idempotent, no fsync"
KAFKA_ACKS_1 = "acks=1, 1 KRaft node, page cache (no fsync)"
KAFKA_ACKS_ALL = "acks=all, 3 KRaft nodes RF 3, min.insync=2, idempotent, no fsync"
REDIS = "XADD pipelined x1000, AOF appendfsync everysec"
NATS = "publish_async, each acked by the stream, file storage"

WARM_UP = -1  # the run number of the warm-up run


_STARTED = time.monotonic()


def progress(figure: Figure) -> Figure:
    """One line per figure as it completes, so a long run shows where it is."""
    print(
        f"[{time.monotonic() - _STARTED:6.0f} s] {figure.workload} / {figure.system}: "
        + ", ".join(f"{run:,.2f}" for run in figure.runs)
        + f" {figure.unit}",
        flush=True,
    )
    return figure


def measure(figure: Figure, run: Callable[[int], float]) -> Figure:
    """``run(WARM_UP)`` (not counted), then ``RUNS`` timed runs; ``run(n)`` returns the figure."""
    run(WARM_UP)
    for attempt in range(RUNS):
        figure.runs.append(run(attempt))
    return progress(figure)


def records_for(run: int) -> int:
    return max(1, RECORDS // 10) if run == WARM_UP else RECORDS


@contextmanager
def lanes_cluster(data_dir: Path, brokers: int) -> Iterator[str]:
    cluster = LocalCluster(
        data_dir,
        brokers=brokers,
        port_base=consecutive_free_ports(LocalCluster.ports_for(brokers)),
        offsets_topic_partitions=1,
        tls=False,  # the peers run plaintext: like with like (tests/perf/test_tls.py prices security)
        auth=False,
    )
    try:
        yield str(cluster.start()["bootstrap"])
    finally:
        cluster.stop()


@contextmanager
def peer(server: Server) -> Iterator[Server]:
    try:
        yield server
    finally:
        server.stop()


def wait_until_served(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30) -> None:
    """Brokers learn of a new topic from the controller shortly after it is created."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            end_offset(bootstrap, topic, partitions)
            return
        except LanesError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def end_offset(bootstrap: str, topic: str, partitions: int) -> int:
    with lanes.Consumer(bootstrap) as consumer:
        ends = consumer.end_offsets([lanes.TopicPartition(topic, p) for p in range(partitions)])
    return sum(ends.values())


def latency_figures(system: str, settings: str, run: Callable[[int], latency.Latencies]) -> list[Figure]:
    """Figures for produce and end-to-end p50/p99/p99.9 (ms) from the same runs."""
    figures = {
        (kind, label): Figure(
            f"latency {kind} p{label} @ {LATENCY_RATE_PER_S:,}/s", system, settings, "ms", higher_is_better=False
        )
        for kind in ("produce", "end-to-end")
        for label, _fraction in PERCENTILES
    }
    run(WARM_UP)
    for attempt in range(RUNS):
        result = run(attempt)
        for kind, samples in (("produce", result.produce_s), ("end-to-end", result.end_to_end_s)):
            ordered = sorted(samples)
            for label, fraction in PERCENTILES:
                value = ordered[min(len(ordered) - 1, math.ceil(len(ordered) * fraction) - 1)]
                figures[(kind, label)].runs.append(value * 1000)
    return [progress(figure) for figure in figures.values()]


def latency_seconds(run: int) -> float:
    return 1.0 if run == WARM_UP else LATENCY_SECONDS


# ---------------------------------------------------------------------------------------------
# the systems


def throughput_figures(
    system: str,
    settings: tuple[str, str],
    produce_run: Callable[[str, int, bytes], float],
    consume_run: Callable[[str, int, str], float],
    delete: Callable[[list[str]], None],
) -> list[Figure]:
    """Workloads 1 and 2 for one system and every value size: ``produce_run(stream, count,
    value)`` and ``consume_run(stream, count, group)`` return seconds; run ``n`` writes stream
    ``s<size>-<n>`` and the consume run ``n`` reads it back; ``delete`` frees the streams after.
    ``settings``: what produce and consume figures state about durability and acknowledgement."""
    figures = []
    for size in VALUE_SIZES:
        value = os.urandom(size)

        def stream(n: int, size: int = size) -> str:
            return f"s{size}-{n}"

        figures.append(
            measure(
                Figure(f"produce {RECORDS:,} x {size} B", system, settings[0], "rec/s"),
                lambda n, stream=stream, value=value: records_for(n) / produce_run(stream(n), records_for(n), value),
            )
        )
        figures.append(
            measure(
                Figure(f"consume {RECORDS:,} x {size} B", system, settings[1], "rec/s"),
                lambda n, stream=stream: records_for(n) / consume_run(stream(n), records_for(n), f"g-{stream(n)}"),
            )
        )
        delete([stream(n) for n in (WARM_UP, *range(RUNS))])
    return figures


@contextmanager
def kafka_cluster(data_dir: Path, nodes: int) -> Iterator[str]:
    servers = start_kafka_cluster(data_dir, [(free_port(), free_port()) for _ in range(nodes)])
    try:
        yield ",".join(server.address for server in servers)
    finally:
        for server in servers:
            server.stop()


def bench_kafka(root: Path, nodes: int) -> list[Figure]:
    """Apache Kafka through confluent-kafka: acks=1 on one node, acks=all on three (RF 3)."""
    from confluent_kafka.admin import AdminClient, NewTopic  # noqa: PLC0415 - the bench's peer only

    acks, settings = ("1", KAFKA_ACKS_1) if nodes == 1 else ("all", KAFKA_ACKS_ALL)
    system = f"kafka acks={acks}"
    with kafka_cluster(root / f"kafka-{nodes}", nodes) as bootstrap:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        replicas = min(3, nodes)

        def topic(name: str, partitions: int = 1) -> str:
            config = {"min.insync.replicas": str(min(2, replicas))}
            admin.create_topics([NewTopic(name, partitions, replicas, config=config)])[name].result(60)
            return name

        def delete_topics(names: list[str]) -> None:
            for future in admin.delete_topics(names).values():
                future.result(60)

        figures = throughput_figures(
            system,
            (settings, "group consumer x1000, commit per batch"),
            lambda name, count, value: produce.kafka_produce(bootstrap, topic(name), count, value, acks=acks),
            lambda name, count, group: consume.kafka_consume(bootstrap, name, count, group),
            delete_topics,
        )
        if nodes == 1:
            figures += keyed_figures(
                system,
                (settings, "group consumer x1000, commit per batch"),
                lambda name, count, value: produce.kafka_produce(
                    bootstrap, topic(name, KEYED_PARTITIONS), count, value, acks=acks, keys=KEYS
                ),
                lambda name, count, group: consume.kafka_consume(bootstrap, name, count, group),
            )
        figures += latency_figures(
            system,
            f"{settings.split(',')[0]}, linger 0 ms; free consumer",
            lambda n: latency.kafka_latency(
                bootstrap, topic(f"latency-{n}"), LATENCY_RATE_PER_S, latency_seconds(n), LATENCY_VALUE_BYTES, acks=acks
            ),
        )
    return figures


def keyed_figures(
    system: str,
    settings: tuple[str, str],
    produce_run: Callable[[str, int, bytes], float],
    consume_run: Callable[[str, int, str], float],
) -> list[Figure]:
    """The keyed workload: ``produce_run(stream, count, value)`` sends 100 B values keyed over
    ``KEYS`` in turn (``KEYED_PARTITIONS`` partitions where the system has them); the consume run
    reads them back as a group."""
    value = os.urandom(100)
    workload = f"{RECORDS:,} x 100 B keyed, {len(KEYS)} keys"
    return [
        measure(
            Figure(f"produce {workload}", system, settings[0], "rec/s"),
            lambda n: records_for(n) / produce_run(f"keyed-{n}", records_for(n), value),
        ),
        measure(
            Figure(f"consume {workload}", system, settings[1], "rec/s"),
            lambda n: records_for(n) / consume_run(f"keyed-{n}", records_for(n), f"g-keyed-{n}"),
        ),
    ]


def bench_redis(root: Path) -> list[Figure]:
    with peer(start_redis(root / "redis", free_port())) as server:
        address = server.address
        return (
            throughput_figures(
                "redis streams",
                (REDIS, "XREADGROUP x1000 + XACK"),
                lambda name, count, value: produce.redis_produce(address, name, count, value),
                lambda name, count, group: consume.redis_consume(address, name, count, group),
                lambda names: produce.redis_delete(address, names),
            )
            + keyed_figures(
                "redis streams",
                (REDIS + "; the key a field", "XREADGROUP x1000 + XACK"),
                lambda name, count, value: produce.redis_produce(address, name, count, value, KEYS),
                lambda name, count, group: consume.redis_consume(address, name, count, group),
            )
            + latency_figures(
                "redis streams",
                "XADD pipelined per 1 ms tick; XREAD BLOCK",
                lambda n: latency.redis_latency(
                    address, f"latency-{n}", LATENCY_RATE_PER_S, latency_seconds(n), LATENCY_VALUE_BYTES
                ),
            )
        )


def bench_nats(root: Path) -> list[Figure]:
    with peer(start_nats(root / "nats", free_port())) as server:
        address = server.address
        return throughput_figures(
            "nats jetstream",
            (NATS, "pull fetch x1000, AckPolicy.ALL"),
            lambda name, count, value: produce.nats_produce(address, name, count, value),
            lambda name, count, group: consume.nats_consume(address, name, count, group),
            lambda names: produce.nats_delete(address, names),
        ) + latency_figures(
            "nats jetstream",
            "publish_async per record; pull fetch",
            lambda n: latency.nats_latency(
                address, f"latency.r{n + 1}", LATENCY_RATE_PER_S, latency_seconds(n), LATENCY_VALUE_BYTES
            ),
        )


def bench_lanes(root: Path, brokers: int) -> list[Figure]:
    acks, settings = ("1", LANES_ACKS_1) if brokers == 1 else ("all", LANES_ACKS_ALL)
    system = f"lanes acks={acks}"
    with lanes_cluster(root / f"lanes-{brokers}", brokers) as bootstrap:
        admin = lanes.Admin(bootstrap)
        configs = {"min.insync.replicas": str(min(2, brokers))}

        def topic(name: str, partitions: int = 1) -> str:
            admin.create_topic(name, partitions, brokers, configs)
            wait_until_served(bootstrap, name, partitions)
            return name

        def delete_topics(names: list[str]) -> None:
            for name in names:
                admin.delete_topic(name)

        figures = throughput_figures(
            system,
            (settings, "group consumer x1000, commit per poll"),
            lambda name, count, value: produce.lanes_produce(bootstrap, topic(name), count, value, acks=acks),
            lambda name, count, group: consume.lanes_consume(bootstrap, name, count, group),
            delete_topics,
        )
        figures += latency_figures(
            system,
            f"{settings.split(',')[0]}, linger 0 ms; free consumer",
            lambda n: latency.lanes_latency(
                bootstrap,
                topic(f"latency-{n}"),
                LATENCY_RATE_PER_S,
                latency_seconds(n),
                LATENCY_VALUE_BYTES,
                acks=acks,
            ),
        )
        if brokers == 1:
            figures += keyed_figures(
                system,
                (settings, "group consumer x1000, commit per poll"),
                lambda name, count, value: produce.lanes_produce(
                    bootstrap, topic(name, KEYED_PARTITIONS), count, value, acks=acks, keys=KEYS
                ),
                lambda name, count, group: consume.lanes_consume(bootstrap, name, count, group),
            )
            value = os.urandom(100)
            figures.append(
                measure(
                    Figure(
                        f"produce {RECORDS:,} x 100 B keyed, {len(KEYS)} keys, send_batch", system, settings, "rec/s"
                    ),
                    lambda n: (
                        records_for(n)
                        / produce.lanes_produce(
                            bootstrap,
                            topic(f"keyed-batch-{n}", KEYED_PARTITIONS),
                            records_for(n),
                            value,
                            acks=acks,
                            keys=KEYS,
                            batch=True,
                        )
                    ),
                )
            )
            figures += scaling_figures(bootstrap, topic)
    return figures


def scaling_figures(bootstrap: str, topic: Callable[[str, int], str]) -> list[Figure]:
    """Workload 4 on the one-broker cluster (acks=1, 100-byte values); every run's records are
    counted back from the partitions' end offsets."""
    value = os.urandom(100)
    figures = []
    shapes = [(p, 1) for p in PARTITION_COUNTS] + [(6, q) for q in PRODUCER_PROCESSES if q > 1]
    for partitions, processes in shapes:

        def run(n: int, partitions: int = partitions, processes: int = processes) -> float:
            name = topic(f"scale-{partitions}-{processes}-{n}", partitions)
            count = records_for(n)
            if processes == 1:
                elapsed, expected = produce.lanes_produce(bootstrap, name, count, value, acks="1"), count
            else:  # each process also writes a warm-up record
                elapsed = scaling.lanes_produce_processes(bootstrap, name, count, value, acks="1", processes=processes)
                expected = count + processes
            written = end_offset(bootstrap, name, partitions)
            if written != expected:
                raise RuntimeError(f"{name}: {written:,} records written, expected {expected:,}")
            return count / elapsed

        figures.append(
            measure(
                Figure(
                    f"scaling: produce {RECORDS:,} x 100 B",
                    f"lanes {partitions} part., {processes} proc.",
                    LANES_ACKS_1 + "; keyless (sticky)",
                    "rec/s",
                ),
                run,
            )
        )
    return figures


def bench_limits(root: Path) -> list[Figure]:
    """The data directory's filesystem and loopback gRPC, for chunks/messages of a batch's size."""
    figures = []
    root.mkdir(parents=True, exist_ok=True)
    volume = 512 * 1024 * 1024
    for chunk_bytes in (BATCH_BYTES, REQUEST_BYTES):
        chunk = os.urandom(chunk_bytes)
        label = f"{chunk_bytes // 1024} KiB"
        figures.append(
            measure(
                Figure(f"limit: sequential write, {label} chunks", "filesystem", "no fsync (page cache)", "MiB/s"),
                lambda _n, chunk=chunk: limits.raw_write_mb_s(root, chunk, volume // len(chunk), fsync=False),
            )
        )
        figures.append(
            measure(
                Figure(f"limit: sequential write, {label} chunks", "filesystem", "fdatasync per chunk", "MiB/s"),
                lambda _n, chunk=chunk: limits.raw_write_mb_s(
                    root, chunk, max(20, 64 * 1024 * 1024 // len(chunk)), fsync=True
                ),
            )
        )
    with peer(start_grpc_sink(root / "grpc", free_port())) as sink:
        figures.append(
            measure(
                Figure(
                    f"limit: loopback gRPC round trip, {LATENCY_VALUE_BYTES + 100} B",
                    "grpc.aio, 1 in flight",
                    "mean per request: the latency floor",
                    "ms",
                    higher_is_better=False,
                ),
                lambda _n: limits.grpc_round_trip_ms(sink.address, LATENCY_VALUE_BYTES + 100, 3_000),
            )
        )
        for message_bytes in (BATCH_BYTES, REQUEST_BYTES):
            requests = max(200, 2 * 1024 * 1024 * 1024 // message_bytes // 4)
            for in_flight in (1, 4):
                figures.append(
                    measure(
                        Figure(
                            f"limit: loopback gRPC, {message_bytes // 1024} KiB messages",
                            f"grpc.aio, {in_flight} in flight",
                            "Python grpc.aio server that stores nothing",
                            "MiB/s",
                        ),
                        lambda _n, size=message_bytes, count=requests, depth=in_flight: limits.grpc_loopback_mb_s(
                            sink.address, size, count, depth
                        ),
                    )
                )
    return figures


@pytest.mark.timeout(1800)
def test_lanes_against_kafka_redis_jetstream_and_the_machine() -> None:
    started = time.monotonic()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="lanes-peers-", dir=os.environ.get("LANES_BENCH_DIR")) as scratch:
        root = Path(scratch)
        figures += bench_limits(root / "limits")
        figures += bench_lanes(root, brokers=1)
        figures += bench_lanes(root, brokers=3)
        figures += bench_kafka(root, nodes=1)
        figures += bench_kafka(root, nodes=3)
        figures += bench_redis(root)
        figures += bench_nats(root)
    order = {
        "lanes acks=1": 0,
        "lanes acks=all": 1,
        "kafka acks=1": 2,
        "kafka acks=all": 3,
        "redis streams": 4,
        "nats jetstream": 5,
    }
    workloads = list(dict.fromkeys(f.workload for f in figures))
    figures.sort(key=lambda f: (workloads.index(f.workload), order.get(f.system, 4)))
    lanes_1k = next(f for f in figures if f.system == "lanes acks=1" and f.workload.endswith("x 1024 B"))
    lanes_mib_s = lanes_1k.median * 1024 / (1024 * 1024)
    settings = {
        "records": RECORDS,
        "runs": RUNS,
        "value_sizes": list(VALUE_SIZES),
        "latency_rate_per_s": LATENCY_RATE_PER_S,
        "latency_seconds": LATENCY_SECONDS,
        "lanes_acks_1_produce_1k_mib_s": lanes_mib_s,
        "elapsed_s": round(time.monotonic() - started),
    }
    print(
        f"\n\nLanes against Apache Kafka, Redis Streams, NATS JetStream and the machine (median of {RUNS} runs "
        "after a warm-up)"
    )
    print("lanes/this: Lanes acks=1 (acks=all for an acks=all row; throughput: higher is better; latency: lower")
    print("is better) over the row;")
    print(f"for limits, Lanes acks=1 produce of 1 KiB values ({lanes_mib_s:,.0f} MiB/s of values) over the limit\n")
    print(table(figures, lanes_mib_s))
    json_path = save(figures, settings)
    png_path = chart(figures, lanes_mib_s)
    print(f"\nsaved {json_path} and {png_path} ({settings['elapsed_s']} s)")
    assert all(len(f.runs) == RUNS for f in figures)
