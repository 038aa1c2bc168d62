"""Real service processes for integration tests (on lanes.local.processes).

Clusters run secure by default (``LocalCluster``: TLS, the ``admin`` user's password, ACLs), as
``lanes up`` does. While ``running_cluster`` (or ``clients_of``) holds one, this process's
environment names its CA and admin user (``LocalCluster.client_environment``), so clients built
with their defaults, ``lanes`` commands run as subprocesses and ``client_channel`` reach it as
its admin; processes started by hand (plaintext) are reached with the same calls outside one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import grpc

from lanes.local.cluster import LocalCluster
from lanes.local.processes import ServiceProcess, start_service
from lanes.rpc.channels import MESSAGE_SIZE_OPTIONS
from lanes.rpc.credentials import UserPassword
from lanes.rpc.tls import TlsFiles
from lanes.v1 import broker_pb2, broker_pb2_grpc, controller_pb2

__all__ = [
    "ServiceProcess",
    "blocking_client_channel",
    "client_channel",
    "clients_of",
    "consecutive_free_ports",
    "free_port",
    "running_cluster",
    "start_controller",
    "start_service",
    "wait_until_brokers_apply_metadata",
]


def _ephemeral_start() -> int:
    """Where the kernel's range of ports for outgoing connections begins."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


#: slices of the service ports: one per pytest-xdist worker (gw0, gw1, ...), the last one for a
#: process outside xdist (make test runs the Spark and e2e tests in one beside the workers)
_PORT_SLICES = 8


def _worker_slice(low: int, high: int) -> tuple[int, int]:
    """This process's share of ``[low, high)``: the workers and the process beside them pick from
    disjoint slices, so one never probes a port free that another's service is about to bind (a
    controller failed with "Address already in use" that way)."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(name[2:]) % (_PORT_SLICES - 1) if name[2:].isdigit() else _PORT_SLICES - 1
    size = (high - low) // _PORT_SLICES
    return low + index * size, low + (index + 1) * size - 100  # room for a block of consecutive ones


#: Ports tests give services: below the ephemeral range, so a service restarted on its port never
#: finds it taken by some client's outgoing connection, to which the kernel gives ephemeral ports
#: (a killed broker's metrics port was: "Address already in use" on its restart); one slice of it
#: per xdist worker.
_SERVICE_PORTS = _worker_slice(10_000, _ephemeral_start())


def free_port() -> int:
    """A TCP port nobody listens on right now, outside the kernel's ephemeral range."""
    pick = random.SystemRandom()
    for _ in range(200):
        port = pick.randrange(*_SERVICE_PORTS)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port below the ephemeral range")


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
def running_cluster(data_dir: Path, brokers: int, **settings: Any) -> Iterator[LocalCluster]:
    """A started ``LocalCluster`` (controllers, ``brokers`` brokers, coordinators) on free ports, stopped after.
    ``__consumer_offsets`` has 3 shards unless ``settings`` say otherwise (each shard is a partition
    to create and a shard for a coordinator to load: 50 make every start slower)."""
    settings.setdefault("offsets_topic_partitions", 3)
    coordinators = settings.get("coordinators", 1)
    controllers = settings.get("controllers", 1)
    cluster = LocalCluster(
        data_dir,
        brokers=brokers,
        port_base=consecutive_free_ports(
            LocalCluster.ports_for(
                brokers,
                coordinators,
                controllers,
                console=bool(settings.get("console") or settings.get("kafka")),
                kafka=bool(settings.get("kafka")),
            )
        ),
        **settings,
    )
    cluster.start()
    try:
        with clients_of(cluster):
            yield cluster
    finally:
        cluster.stop()


#: The environment a client reads its cluster's CA, certificate and user from.
CLIENT_ENVIRONMENT = (
    "LANES_TLS_CA",
    "LANES_TLS_CERT",
    "LANES_TLS_KEY",
    "LANES_USERNAME",
    "LANES_PASSWORD",
    "LANES_PASSWORD_FILE",
    "LANES_TOKEN_FILE",
    "LANES_METRICS_TOKEN_FILE",
)


@contextlib.contextmanager
def clients_of(cluster: LocalCluster) -> Iterator[None]:
    """This process's environment names ``cluster``'s CA and admin user while held, and nothing
    else (a plaintext cluster: none of ``CLIENT_ENVIRONMENT``, whatever the shell exported);
    restored after. Clients with default ``tls`` and ``credentials``, and subprocesses, reach it."""
    given = cluster.client_environment()
    before = {name: os.environ.get(name) for name in CLIENT_ENVIRONMENT}
    for name in CLIENT_ENVIRONMENT:
        os.environ.pop(name, None)
    os.environ.update(given)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _client_credentials() -> grpc.ChannelCredentials | None:
    """The environment's TLS and user as channel credentials; None for plaintext."""
    tls, user = TlsFiles.from_environment(), UserPassword.from_environment()
    if tls is None:
        return None
    credentials = tls.channel_credentials()
    if user is not None:
        credentials = grpc.composite_channel_credentials(credentials, user.call_credentials())
    return credentials


def channel_options(extra: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """Lanes' message sizes unless ``extra`` sets them, and ``extra``."""
    named = {name for name, _ in extra}
    return [option for option in MESSAGE_SIZE_OPTIONS if option[0] not in named] + list(extra)


def client_channel(address: str, options: Sequence[tuple[str, int]] = ()) -> grpc.aio.Channel:
    """A ``grpc.aio`` channel to ``address`` as a client opens one: over TLS as the
    environment's user while a secure cluster runs (``clients_of``), plaintext otherwise;
    gRPC ``options`` beyond Lanes' message sizes."""
    credentials = _client_credentials()
    if credentials is None:
        return grpc.aio.insecure_channel(address, options=channel_options(options))
    return grpc.aio.secure_channel(address, credentials, options=channel_options(options))


def blocking_client_channel(address: str) -> grpc.Channel:
    """``client_channel``, blocking."""
    credentials = _client_credentials()
    if credentials is None:
        return grpc.insecure_channel(address, options=channel_options(()))
    return grpc.secure_channel(address, credentials, options=channel_options(()))


def wait_until_brokers_apply_metadata(cluster: LocalCluster, timeout_s: float = 30) -> None:
    """Until every broker has applied the metadata the active controller has committed now (a
    user, ACL or quota just set applies on brokers a moment after the controller answers)."""
    committed = asyncio.run(
        cluster._active_controller_call(
            lambda stub: stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=5)
        )
    ).metadata_offset
    deadline = time.monotonic() + timeout_s
    for broker in cluster.broker_processes.values():
        with clients_of(cluster), blocking_client_channel(broker.address) as channel:
            stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
            while stub.Metadata(broker_pb2.MetadataRequest(topics=["__none__"]), timeout=5).metadata_offset < committed:
                assert time.monotonic() < deadline, f"broker at {broker.address} did not apply metadata {committed}"
                time.sleep(0.05)
