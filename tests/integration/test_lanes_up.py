"""`lanes up` for real: a quorum of three controllers and three brokers as processes,
cluster.json, a clean stop on SIGTERM, and a restart on the same data directory that brings every
topic and record back."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import lanes
import lanes.aio
from lanes.errors import ErrorCode
from lanes.local.cluster import LocalCluster
from tests.integration.processes import consecutive_free_ports
from tests.integration.test_replication_process import produce_acks_all, read_all


def lanes_up(data_dir: Path, port_base: int) -> tuple[subprocess.Popen[str], dict]:  # type: ignore[type-arg]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lanes.cli",
            "up",
            "--data-dir",
            str(data_dir),
            "--brokers",
            "3",
            "--port-base",
            str(port_base),
            # restarts are what this is about, read with plain gRPC; the secure default is driven
            # by tests/e2e, as users run it
            "--insecure",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    cluster_file = data_dir / "cluster.json"
    deadline = time.monotonic() + 60
    while not cluster_file.exists():
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        assert time.monotonic() < deadline, "lanes up never wrote cluster.json"
        time.sleep(0.05)
    return process, json.loads(cluster_file.read_text())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def supervisors() -> Iterator[list[subprocess.Popen[str]]]:
    """The ``lanes up`` supervisors a test starts, stopped (with their cluster) however it ends."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for supervisor in started:
        if supervisor.poll() is None:
            supervisor.send_signal(signal.SIGTERM)
            try:
                supervisor.wait(timeout=60)
            except subprocess.TimeoutExpired:
                supervisor.kill()


def test_lanes_up_runs_a_cluster_that_survives_a_restart(
    tmp_path: Path, supervisors: list[subprocess.Popen[str]]
) -> None:
    data_dir = tmp_path / "lanes"
    base = consecutive_free_ports(LocalCluster.ports_for(3, 1, 3, console=True, kafka=True))
    supervisor, cluster = lanes_up(data_dir, base)
    supervisors.append(supervisor)
    assert cluster["pid"] == supervisor.pid
    assert cluster["bootstrap"] == ",".join(f"127.0.0.1:{base + i}" for i in range(3))
    assert cluster["controller"] == ",".join(f"127.0.0.1:{base + 3 + i}" for i in range(3)), "a quorum of three"
    assert [(c["id"], c["address"]) for c in cluster["controllers"]] == [
        (i, f"127.0.0.1:{base + 3 + i}") for i in range(3)
    ]
    assert [b["id"] for b in cluster["brokers"]] == [1, 2, 3]
    assert [(c["id"], c["address"]) for c in cluster["coordinators"]] == [(1, f"127.0.0.1:{base + 6}")]
    assert [b["metrics"] for b in cluster["brokers"]] == [f"127.0.0.1:{base + 7 + i}" for i in range(3)]
    assert [c["metrics"] for c in cluster["controllers"]] == [f"127.0.0.1:{base + 10 + i}" for i in range(3)]
    assert [c["metrics"] for c in cluster["coordinators"]] == [f"127.0.0.1:{base + 13}"]
    first_broker = cluster["brokers"][0]["address"]

    async def use() -> list[bytes]:
        admin = lanes.aio.Admin(cluster["bootstrap"])
        await admin.create_topic("greetings", partitions=1, replication_factor=3)
        leader = (await admin.describe_topic("greetings")).partitions[0].leader
        address = next(b["address"] for b in cluster["brokers"] if b["id"] == leader)
        deadline = time.monotonic() + 20
        while (outcome := await produce_acks_all(address, "greetings", [b"hello", b"world"])) is not ErrorCode.NONE:
            assert outcome.retriable, outcome
            assert time.monotonic() < deadline, outcome
            await asyncio.sleep(0.05)
        return await read_all(address, "greetings")

    assert asyncio.run(use()) == [b"hello", b"world"]
    greetings = lanes.TopicPartition("greetings", 0)
    with lanes.Consumer(cluster["bootstrap"], group_id="greeters") as consumer:
        consumer.commit({greetings: 2})
    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(timeout=60) == 0
    assert not (data_dir / "cluster.json").exists()
    assert not any(alive(b["pid"]) for b in cluster["brokers"]), "every broker stopped"

    supervisor, cluster = lanes_up(data_dir, base)
    supervisors.append(supervisor)

    async def read_again() -> list[bytes]:
        leader = (await lanes.aio.Admin(cluster["bootstrap"]).describe_topic("greetings")).partitions[0].leader
        address = next(b["address"] for b in cluster["brokers"] if b["id"] == leader)
        deadline = time.monotonic() + 20
        while True:
            try:
                return await read_all(address, "greetings")
            except AssertionError:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)

    assert asyncio.run(read_again()) == [b"hello", b"world"], "topics and records come back"
    with lanes.Consumer(cluster["bootstrap"], group_id="greeters") as consumer:
        assert consumer.committed([greetings]) == {greetings: 2}, "committed offsets come back"
    assert first_broker == cluster["brokers"][0]["address"]
    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(timeout=60) == 0
