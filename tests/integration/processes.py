"""Real service processes for integration tests (on lanes.local.processes)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import grpc

from lanes.local.cluster import LocalCluster
from lanes.local.processes import ServiceProcess, start_service
from lanes.v1 import broker_pb2, broker_pb2_grpc, controller_pb2

__all__ = [
    "ServiceProcess",
    "consecutive_free_ports",
    "free_port",
    "running_cluster",
    "start_controller",
    "start_service",
    "wait_until_brokers_apply_metadata",
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


def wait_until_brokers_apply_metadata(cluster: LocalCluster, timeout_s: float = 30) -> None:
    """Until every broker has applied the metadata the active controller has committed now (a
    user, ACL or quota just set applies on brokers a moment after the controller answers)."""
    committed = asyncio.run(
        cluster._active_controller_call(
            lambda stub: stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=5)
        )
    ).metadata_offset
    tls, user = cluster.client_tls, cluster.client_credentials
    credentials = None
    if tls is not None:
        credentials = tls.channel_credentials()
        if user is not None:
            credentials = grpc.composite_channel_credentials(credentials, user.call_credentials())
    deadline = time.monotonic() + timeout_s
    for broker in cluster.broker_processes.values():
        with (
            grpc.secure_channel(broker.address, credentials)
            if credentials
            else grpc.insecure_channel(broker.address) as channel
        ):
            stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
            while stub.Metadata(broker_pb2.MetadataRequest(topics=["__none__"]), timeout=5).metadata_offset < committed:
                assert time.monotonic() < deadline, f"broker at {broker.address} did not apply metadata {committed}"
                time.sleep(0.05)
