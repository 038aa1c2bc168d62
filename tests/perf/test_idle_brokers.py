"""Idle cost of replicas (issue #21): 3 brokers holding ``LANES_IDLE_PARTITIONS`` partitions at
RF 3 (default 1,000: 3,000 replicas, 1,000 per broker), no traffic. Prints each broker's CPU use
over ``LANES_IDLE_SECONDS`` (default 30) once every partition has its leader and full ISR.

Aim: under 3% of a core per broker. Kafka keeps one high-water-mark and one recovery-point
checkpoint file per data directory, written on an interval and only when something changed; a
broker that wrote three checkpoint files per replica, each with two fsyncs, on every
maintenance pass used 33-45% of a core with 3,000 replicas.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

import grpc

import lanes
from lanes.local.cluster import LocalCluster
from lanes.v1 import controller_pb2, controller_pb2_grpc
from tests.integration.processes import consecutive_free_ports

PARTITIONS = int(os.environ.get("LANES_IDLE_PARTITIONS", "1000"))
SECONDS = float(os.environ.get("LANES_IDLE_SECONDS", "30"))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_shares(pids: dict[int, int], seconds: float) -> dict[int, float]:
    """Per broker, the percentage of a core it used over the next ``seconds``."""
    before = {broker_id: cpu_seconds(pid) for broker_id, pid in pids.items()}
    began = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - began
    return {broker_id: (cpu_seconds(pid) - before[broker_id]) / elapsed * 100 for broker_id, pid in pids.items()}


def test_idle_brokers_holding_thousands_of_replicas_use_little_cpu() -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("LANES_BENCH_DIR")) as tmp:
        cluster = LocalCluster(
            Path(tmp),
            brokers=3,
            port_base=consecutive_free_ports(LocalCluster.ports_for(3)),
            offsets_topic_partitions=3,
            tls=False,  # idle cost of replication itself (TLS keeps connections, not polling)
            auth=False,
        )
        cluster.start()
        try:
            bootstrap = str(cluster.describe()["bootstrap"])
            started = time.monotonic()
            lanes.Admin(bootstrap).create_topic("idle", PARTITIONS, 3)
            assert cluster.controller is not None
            controller = cluster.controller.address

            async def all_in_sync() -> bool:
                async with grpc.aio.insecure_channel(controller) as channel:
                    stub = controller_pb2_grpc.ControllerStub(channel)
                    described = await stub.DescribeTopics(controller_pb2.DescribeTopicsRequest(names=["idle"]))
                partitions = described.topics[0].partitions
                return len(partitions) == PARTITIONS and all(p.leader_id > 0 and len(p.isr) == 3 for p in partitions)

            deadline = time.monotonic() + 600
            while not asyncio.run(all_in_sync()):
                assert time.monotonic() < deadline, "the partitions never got in sync"
                time.sleep(1)
            print(f"\n{PARTITIONS} partitions x RF 3 in sync after {time.monotonic() - started:.0f} s")
            pids = {broker_id: process.pid for broker_id, process in cluster.broker_processes.items()}
            previous = None
            for _ in range(12):  # until creation's aftermath (log opening, catching up) has settled
                shares = cpu_shares(pids, 10)
                if previous is not None and max(shares.values()) <= 1.2 * max(previous.values()) + 0.5:
                    break
                previous = shares
            for broker_id, share in sorted(cpu_shares(pids, SECONDS).items()):
                print(f"broker {broker_id}: {share:.1f}% of a core idle with {PARTITIONS} replicas (aim: under 3%)")
        finally:
            cluster.stop()
