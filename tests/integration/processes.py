"""Real service processes for integration tests (on lanes.local.processes)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

from lanes.local.cluster import LocalCluster
from lanes.local.processes import ServiceProcess, start_service

__all__ = [
    "ServiceProcess",
    "consecutive_free_ports",
    "free_port",
    "running_cluster",
    "start_controller",
    "start_service",
]


def free_port() -> int:
    """A TCP port nobody listens on right now (the kernel picked it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def consecutive_free_ports(count: int) -> int:
    """A base port with ``count`` free ports from it (for services that take consecutive ports)."""
    for _ in range(50):
        base = free_port()
        held = []
        try:
            for offset in range(count):
                candidate = socket.socket()
                held.append(candidate)
                candidate.bind(("127.0.0.1", base + offset))
            return base
        except OSError:
            continue
        finally:
            for candidate in held:
                candidate.close()
    raise AssertionError("no block of free ports")


def start_controller(
    data_dir: Path, port: int, log_path: Path, *, session_timeout_ms: int = 2000, heartbeat_interval_ms: int = 200
) -> ServiceProcess:
    """``python -m lanes.controller`` on ``port`` with short liveness timeouts for tests."""
    return start_service(
        "lanes.controller",
        [
            "--data-dir",
            str(data_dir),
            "--port",
            str(port),
            "--session-timeout-ms",
            str(session_timeout_ms),
            "--heartbeat-interval-ms",
            str(heartbeat_interval_ms),
        ],
        log_path,
    )


@contextlib.contextmanager
def running_cluster(data_dir: Path, brokers: int, **settings: int) -> Iterator[LocalCluster]:
    """A started ``LocalCluster`` (controllers, ``brokers`` brokers, coordinators) on free ports, stopped after."""
    coordinators = settings.get("coordinators", 1)
    controllers = settings.get("controllers", 1)
    cluster = LocalCluster(
        data_dir,
        brokers=brokers,
        port_base=consecutive_free_ports(LocalCluster.ports_for(brokers, coordinators, controllers)),
        **settings,
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
