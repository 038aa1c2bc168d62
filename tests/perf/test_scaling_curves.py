"""Cost as the work grows (issue #39; ``make bench``, never ``make test``), Lanes and Apache Kafka
side by side on the same machine, one broker each (Lanes as ``lanes up --insecure --controllers 1``,
Kafka a single KRaft node, 1 GiB heap):

- **partitions per broker** (``LANES_SCALE_PARTITIONS``, default 100,1000,10000; topics of at most
  1,000 partitions each): the time from CreateTopics until the broker serves every partition
  (metadata propagation: a produce to each partition answered), the broker's resident memory once
  idle (and per partition, above an empty broker's), its CPU use idle over ``LANES_SCALE_IDLE_S``
  (default 10 s), its restart (process start until every partition is served again), and produce
  throughput of 200,000 100-byte records keyed over every partition (``lanes.Producer``;
  confluent-kafka for Kafka);
- **consumer groups** (``LANES_SCALE_GROUPS``, default 10,100): that many single-member groups
  joining at once on one 6-partition topic (``lanes.aio`` consumers on one loop; confluent-kafka
  consumers for Kafka): the time until every member owns its partitions, and the coordinator's
  (Kafka: the broker's) resident memory growth;
- **producer processes** (``LANES_SCALE_PRODUCERS``, default 1,10): that many processes sending
  together to one 6-partition topic (``tests/perf/peers/scaling.py``): total throughput.

Results: a table on stdout, ``tests/perf/results/scaling.json`` and ``scaling.png`` (one panel per
curve); ``docs/performance.md`` carries the latest run.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import lanes
from lanes import aio
from lanes.local.cluster import LocalCluster
from tests.integration.processes import consecutive_free_ports, free_port
from tests.perf.peers import scaling
from tests.perf.peers.kafka import start_kafka
from tests.perf.peers.servers import Server, launch, wait_for_port
from tests.perf.test_idle_brokers import cpu_seconds

PARTITIONS = [int(n) for n in os.environ.get("LANES_SCALE_PARTITIONS", "100,1000,10000").split(",")]
GROUPS = [int(n) for n in os.environ.get("LANES_SCALE_GROUPS", "10,100").split(",")]
PRODUCERS = [int(n) for n in os.environ.get("LANES_SCALE_PRODUCERS", "1,10").split(",")]
IDLE_S = float(os.environ.get("LANES_SCALE_IDLE_S", "10"))
PER_TOPIC = 1_000
KEYED_RECORDS = 200_000
PROCESS_RECORDS = 200_000
RESULTS = Path(__file__).parent / "results"


def rss_mib(pid: int) -> float:
    """A process's resident memory, MiB (from /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def idle_cpu_percent(pid: int, seconds: float) -> float:
    before, began = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - before) / (time.monotonic() - began)


def topic_sizes(partitions: int) -> list[int]:
    """``partitions`` split into topics of at most ``PER_TOPIC``."""
    return [min(PER_TOPIC, partitions - start) for start in range(0, partitions, PER_TOPIC)]


def keyed_plan(topics: dict[str, int], records: int) -> list[tuple[str, bytes]]:
    """(topic, key) per record, spread at random (a fixed seed) over ``topics`` and at least as
    many keys as partitions: the same sends for both systems."""
    names = list(topics)
    keys = [f"key-{i}".encode() for i in range(max(1000, sum(topics.values())))]
    rng = random.Random(39)
    return [(names[rng.randrange(len(names))], keys[rng.randrange(len(keys))]) for _ in range(records)]


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 600) -> float:
    """Seconds until ``condition()`` held (polled every 0.2 s)."""
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > timeout_s:
            raise TimeoutError(f"{what} not within {timeout_s:.0f} s")
        time.sleep(0.2)
    return time.monotonic() - began


# ---------------------------------------------------------------------------------------------
# the two systems behind one face: create topics, serve check, produce, restart, pid


class LanesSystem:
    name = "lanes"

    def __init__(self, root: Path) -> None:
        self.cluster = LocalCluster(
            root,
            brokers=1,
            controllers=1,
            port_base=consecutive_free_ports(LocalCluster.ports_for(1, 1, 1)),
            offsets_topic_partitions=1,
            tls=False,
            auth=False,
        )
        self.cluster.start()
        self.bootstrap = str(self.cluster.describe()["bootstrap"])
        self.admin = lanes.Admin(self.bootstrap)

    def broker_pid(self) -> int:
        return self.cluster.broker_processes[1].pid

    def coordinator_pid(self) -> int:
        return next(iter(self.cluster.coordinator_processes.values())).pid

    def create(self, name: str, partitions: int) -> None:
        self.admin.create_topic(name, partitions, 1)

    def serves(self, topics: dict[str, int]) -> bool:
        """A record to every partition is answered (each leader took its partition over)."""
        try:
            with lanes.Producer(self.bootstrap, acks="1", unknown_topic_wait_ms=200, delivery_timeout_ms=5_000) as p:
                futures = [p.send(t, b"x", partition=n) for t, count in topics.items() for n in range(count)]
                p.flush()
            return all(f.exception(timeout=0) is None for f in futures)
        except lanes.errors.LanesError:
            return False

    def produce_keyed(self, topics: dict[str, int], records: int) -> float:
        plan, value = keyed_plan(topics, records), b"v" * 100
        with lanes.Producer(self.bootstrap, acks="1") as producer:
            began = time.perf_counter()
            for topic, key in plan:
                producer.send(topic, value, key)
            producer.flush()
            return records / (time.perf_counter() - began)

    def restart(self, topics: dict[str, int]) -> float:
        """Seconds from the broker process's start until it serves every partition again."""
        self.cluster.broker_processes[1].terminate()
        began = time.monotonic()
        self.cluster.start_broker(1)
        return time.monotonic() - began + wait_until(lambda: self.serves(topics), "the restarted broker serving")

    def close(self) -> None:
        self.admin.close()
        self.cluster.stop()


class KafkaSystem:
    name = "kafka"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port, self.controller_port = free_port(), free_port()
        self.server: Server = start_kafka(root, self.port, self.controller_port)
        self.bootstrap = self.server.address
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})

    def broker_pid(self) -> int:
        return self.server.process.pid

    coordinator_pid = broker_pid

    def create(self, name: str, partitions: int) -> None:
        self.admin.create_topics([NewTopic(name, partitions, 1)])[name].result(600)

    def serves(self, topics: dict[str, int]) -> bool:
        producer = confluent_kafka.Producer({"bootstrap.servers": self.bootstrap, "acks": "1", "linger.ms": 5,
                                             "message.timeout.ms": 5_000})  # fmt: skip
        failed: list[object] = []
        for topic, count in topics.items():
            for n in range(count):
                producer.produce(topic, b"x", partition=n, on_delivery=lambda e, _m: e is not None and failed.append(e))
        left = producer.flush(30)
        return not left and not failed

    def produce_keyed(self, topics: dict[str, int], records: int) -> float:
        plan, value = keyed_plan(topics, records), b"v" * 100
        producer = confluent_kafka.Producer({"bootstrap.servers": self.bootstrap, "acks": "1", "linger.ms": 5,
                                             "batch.size": 65536, "enable.idempotence": False})  # fmt: skip
        began = time.perf_counter()
        for topic, key in plan:
            while True:
                try:
                    producer.produce(topic, value, key)
                    break
                except BufferError:
                    producer.poll(0.001)
        if producer.flush(120):
            raise RuntimeError("kafka keyed produce left records undelivered")
        return records / (time.perf_counter() - began)

    def restart(self, topics: dict[str, int]) -> float:
        self.server.stop()
        began = time.monotonic()
        self.server = start_kafka_again(self.server)
        return time.monotonic() - began + wait_until(lambda: self.serves(topics), "the restarted Kafka serving")

    def close(self) -> None:
        self.server.stop()


def start_kafka_again(server: Server) -> Server:
    """The same node started again on its data directory (formatted once already)."""
    command = [str(argument) for argument in server.process.args]
    return wait_for_port(launch(server.name, command, server.port, server.data_dir), timeout_s=600)


@contextmanager
def system(kind: str, root: Path) -> Iterator[LanesSystem | KafkaSystem]:
    running: LanesSystem | KafkaSystem = LanesSystem(root) if kind == "lanes" else KafkaSystem(root)
    try:
        yield running
    finally:
        running.close()


# ---------------------------------------------------------------------------------------------
# the curves


def partitions_curve(kind: str, root: Path) -> list[dict[str, object]]:
    rows = []
    for partitions in PARTITIONS:
        with system(kind, root / f"{kind}-p{partitions}") as running:
            time.sleep(2)
            empty_mib = rss_mib(running.broker_pid())
            topics = {f"t{index}": size for index, size in enumerate(topic_sizes(partitions))}
            began = time.monotonic()
            for name, size in topics.items():
                running.create(name, size)
            propagation_s = time.monotonic() - began + wait_until(lambda t=topics: running.serves(t), "serving")
            time.sleep(2)
            mib = rss_mib(running.broker_pid())
            idle = idle_cpu_percent(running.broker_pid(), IDLE_S)
            throughput = running.produce_keyed(topics, KEYED_RECORDS)
            restart_s = running.restart(topics)
        row = {
            "system": kind,
            "partitions": partitions,
            "create_until_served_s": round(propagation_s, 2),
            "rss_mib": round(mib, 1),
            "rss_kib_per_partition": round(1024 * (mib - empty_mib) / partitions, 1),
            "idle_cpu_percent": round(idle, 2),
            "keyed_produce_rec_s": round(throughput),
            "restart_until_served_s": round(restart_s, 2),
        }
        print(row, flush=True)
        rows.append(row)
    return rows


async def _lanes_groups(bootstrap: str, topic: str, groups: int) -> float:
    consumers = [aio.Consumer(bootstrap, group_id=f"scale-{groups}-{n}") for n in range(groups)]
    try:
        began = time.monotonic()
        for consumer in consumers:
            consumer.subscribe([topic])
        pending = set(range(groups))
        while pending:
            results = await asyncio.gather(*(consumers[n].poll(timeout_ms=100) for n in pending))
            del results
            pending = {n for n in pending if len(consumers[n].assignment()) < 6}
            if time.monotonic() - began > 600:
                raise TimeoutError(f"{len(pending)} groups never got their partitions")
        return time.monotonic() - began
    finally:
        await asyncio.gather(*(consumer.close() for consumer in consumers))


def _kafka_groups(bootstrap: str, topic: str, groups: int) -> float:
    consumers = [
        confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"scale-{groups}-{n}"})
        for n in range(groups)
    ]
    try:
        began = time.monotonic()
        for consumer in consumers:
            consumer.subscribe([topic])
        pending = set(range(groups))
        while pending:
            for n in list(pending):
                consumers[n].poll(0)
                if len(consumers[n].assignment()) == 6:
                    pending.discard(n)
            if time.monotonic() - began > 600:
                raise TimeoutError(f"{len(pending)} groups never got their partitions")
            time.sleep(0.01)
        return time.monotonic() - began
    finally:
        for consumer in consumers:
            consumer.close()


def groups_curve(kind: str, root: Path) -> list[dict[str, object]]:
    rows = []
    with system(kind, root / f"{kind}-groups") as running:
        running.create("grouped", 6)
        wait_until(lambda: running.serves({"grouped": 6}), "serving")
        for groups in GROUPS:
            before = rss_mib(running.coordinator_pid())
            try:
                if isinstance(running, LanesSystem):
                    took_s = asyncio.run(_lanes_groups(running.bootstrap, "grouped", groups))
                else:
                    took_s = _kafka_groups(running.bootstrap, "grouped", groups)
            except RuntimeError as exc:  # confluent-kafka: ~1,000 librdkafka instances exhaust a process
                print(f"{kind}, {groups} groups: not measured ({exc})", flush=True)
                continue
            row = {
                "system": kind,
                "groups": groups,
                "all_assigned_s": round(took_s, 2),
                "coordinator_rss_growth_mib": round(rss_mib(running.coordinator_pid()) - before, 1),
            }
            print(row, flush=True)
            rows.append(row)
    return rows


def producers_curve(root: Path) -> list[dict[str, object]]:
    rows = []
    with system("lanes", root / "lanes-producers") as running:
        running.create("spread", 6)
        wait_until(lambda: running.serves({"spread": 6}), "serving")
        for processes in PRODUCERS:
            elapsed = scaling.lanes_produce_processes(
                running.bootstrap, "spread", PROCESS_RECORDS, b"v" * 100, acks="1", processes=processes
            )
            row = {"system": "lanes", "producers": processes, "rec_s": round(PROCESS_RECORDS / elapsed)}
            print(row, flush=True)
            rows.append(row)
    return rows


def chart(curves: dict[str, list[dict[str, object]]], path: Path) -> None:
    import matplotlib  # noqa: PLC0415 - only `make bench` installs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    panels = [
        ("partitions", "create_until_served_s", "create until served (s)"),
        ("partitions", "rss_mib", "broker memory (MiB)"),
        ("partitions", "idle_cpu_percent", "idle CPU (% of a core)"),
        ("partitions", "restart_until_served_s", "restart until served (s)"),
        ("partitions", "keyed_produce_rec_s", "keyed produce (records/s)"),
        ("groups", "all_assigned_s", "groups joining at once: all assigned (s)"),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    for axis, (curve, field, title) in zip(axes.flat, panels, strict=True):
        for kind, colour in (("lanes", "#2a7ab9"), ("kafka", "#e0a030")):
            points = [(r[curve], r[field]) for r in curves[curve] if r["system"] == kind]
            if points:
                axis.plot(*zip(*points, strict=True), marker="o", color=colour, label=kind)
        axis.set_xscale("log")
        axis.set_title(title)
        axis.set_xlabel(curve)
        axis.grid(alpha=0.3)
        axis.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


@pytest.mark.timeout(7200)
def test_cost_as_the_work_grows_lanes_and_kafka() -> None:
    with tempfile.TemporaryDirectory(prefix="lanes-scaling-", dir=os.environ.get("LANES_BENCH_DIR")) as scratch:
        root = Path(scratch)
        curves = {
            "partitions": partitions_curve("lanes", root) + partitions_curve("kafka", root),
            "groups": groups_curve("lanes", root) + groups_curve("kafka", root),
            "producers": producers_curve(root),
        }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scaling.json").write_text(json.dumps(curves, indent=2) + "\n")
    chart(curves, RESULTS / "scaling.png")
    for name, rows in curves.items():
        print(f"\n{name}")
        for row in rows:
            print("  " + ", ".join(f"{key}={value}" for key, value in row.items()))
    assert all(rows for rows in curves.values())
