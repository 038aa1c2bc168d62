"""Apache Kafka as a peer: a single-node KRaft broker (broker and controller in one process) from
the jars ``tools/kafka/fetch.sh`` copies out of Maven Central, on loopback ports of its own with a
data directory of its own, formatted, started, waited for and stopped by PID; and Kafka's own load
tools (``kafka-producer-perf-test``, ``kafka-consumer-perf-test``) run against it or against Lanes'
Kafka listeners, their summaries parsed.

The broker gets a 1 GiB heap (Kafka's default start script's) and no fsync per message (Kafka's
default: replication and the page cache are the durability), as Lanes has none.
"""

from __future__ import annotations

import base64
import re
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.perf.peers.servers import Server, launch, wait_for_port

_REPOSITORY = Path(__file__).resolve().parents[3]
HEAP = "-Xmx1g"


def kafka_libs() -> str:
    """The directory holding Kafka's jars (fetched once, cached under ~/.cache/lanes)."""
    found = subprocess.run(
        [str(_REPOSITORY / "tools" / "kafka" / "fetch.sh")], capture_output=True, text=True, check=True, timeout=900
    )
    return found.stdout.strip()


def _java(libs: str, main: str, *args: str, heap: str = "-Xmx512m") -> list[str]:
    return ["java", heap, "-cp", f"{libs}/*", main, *args]


def start_kafka(data_dir: Path, port: int, controller_port: int) -> Server:
    """A single-node Kafka (KRaft, combined roles) listening on 127.0.0.1:``port``."""
    return start_kafka_cluster(data_dir, [(port, controller_port)])[0]


def start_kafka_cluster(data_dir: Path, ports: list[tuple[int, int]]) -> list[Server]:
    """A Kafka of ``len(ports)`` nodes, each a broker and a voter of the KRaft controller quorum
    (combined roles, as one node is), node ``i + 1`` listening on 127.0.0.1:``ports[i][0]`` for
    clients and ``ports[i][1]`` for the quorum. Several nodes: replication factor 3 and
    ``min.insync.replicas=2`` by default (also for the offsets topic), as Lanes' three-broker peer."""
    libs = kafka_libs()
    nodes = len(ports)
    replicas = min(3, nodes)
    voters = ",".join(f"{node + 1}@127.0.0.1:{quorum}" for node, (_client, quorum) in enumerate(ports))
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    configured = []
    for node, (port, controller_port) in enumerate(ports):
        directory = data_dir if nodes == 1 else data_dir / f"node-{node + 1}"
        directory.mkdir(parents=True, exist_ok=True)
        settings = directory / "server.properties"
        settings.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    f"node.id={node + 1}",
                    f"controller.quorum.voters={voters}",
                    f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "inter.broker.listener.name=PLAINTEXT",
                    f"log.dirs={directory / 'logs'}",
                    "num.partitions=1",
                    f"default.replication.factor={replicas}",
                    f"min.insync.replicas={min(2, replicas)}",
                    f"offsets.topic.replication.factor={replicas}",
                    f"transaction.state.log.replication.factor={replicas}",
                    f"transaction.state.log.min.isr={min(2, replicas)}",
                    "group.initial.rebalance.delay.ms=0",
                    "",
                ]
            )
        )
        subprocess.run(
            _java(libs, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(settings)),
            capture_output=True,
            check=True,
            timeout=120,
        )
        configured.append((directory, settings, port))
    # every node started before any is waited for: a broker listens once the quorum has a leader
    servers = [
        launch(f"kafka-{node + 1}", _java(libs, "kafka.Kafka", str(settings), heap=HEAP), port, directory)
        for node, (directory, settings, port) in enumerate(configured)
    ]
    try:
        for server in servers:
            wait_for_port(server, timeout_s=90)
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers


@dataclass(frozen=True)
class ToolRun:
    """One load tool run's summary: records per second and MB per second (Kafka's tools' MB: 2^20 bytes)."""

    records_per_s: float
    mb_per_s: float


def producer_perf(bootstrap: str, topic: str, records: int, record_bytes: int, *props: str) -> ToolRun:
    """``kafka-producer-perf-test`` at full speed; ``props`` are producer settings (``acks=1``)."""
    done = subprocess.run(
        _java(
            kafka_libs(),
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic", topic, "--num-records", str(records), "--record-size", str(record_bytes),
            "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}", *props,
        ),
        capture_output=True, text=True, check=True, timeout=1800,
    )  # fmt: skip
    # "1000000 records sent, 212314.225053 records/sec (20.25 MB/sec), 1.23 ms avg latency, ..."
    found = re.search(r"records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)", done.stdout)
    assert found is not None, done.stdout[-2000:]
    return ToolRun(float(found.group(1)), float(found.group(2)))


def consumer_perf(bootstrap: str, topic: str, records: int) -> ToolRun:
    """``kafka-consumer-perf-test`` reading ``records`` from the beginning (a group of one)."""
    done = subprocess.run(
        _java(
            kafka_libs(),
            "org.apache.kafka.tools.ConsumerPerformance",
            "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records),
            "--group", f"perf-{uuid.uuid4().hex[:8]}", "--timeout", "60000",
        ),
        capture_output=True, text=True, check=True, timeout=1800,
    )  # fmt: skip
    # header line, then "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, ..."
    lines = [line for line in done.stdout.splitlines() if line.strip() and not line.startswith("start.time")]
    fields = [field.strip() for field in lines[-1].split(",")]
    return ToolRun(float(fields[5]), float(fields[3]))
