"""The local cluster behind ``lanes up``: a quorum of K controllers, N brokers and M group
coordinators as real processes.

Layout under the data directory (default ``./.lanes``)::

    controller-<id>/     each controller's metadata log, snapshots and quorum state
                         (``controller/`` when the quorum is one controller)
    broker-<id>/         each broker's partition logs
    logs/<name>.log      each process's log (stderr)
    cluster.json         written once every broker and coordinator is live; removed by a clean stop

``cluster.json``: ``{"bootstrap": "host:port,...", "controller": "host:port,..." (every
controller: clients find the active one), "controllers": [{"id", "address", "pid", "data_dir",
"metrics"}], "brokers": [{"id", "address", "pid", "data_dir", "metrics"}], "coordinators": [{"id",
"address", "pid", "metrics"}], "console": {"url", "pid"} (when it runs), "pid": <supervisor pid>}``
(``metrics``: each process's Prometheus
endpoint, ``http://<metrics>/metrics``). Brokers listen on ``port_base``, ``port_base + 1``, ...;
the controllers (ids 0..K-1) on the ports after them; coordinators on the ports after those;
then, in the same order, each process's metrics endpoint, then its internal listener (where the
nodes call each other; ``--voters`` and ``--controller`` name controllers' internal listeners):
``ports_for`` ports from ``port_base`` in all (clients 9092-9098, metrics 9099-9105, internal
9106-9112 and, with ``certificate_listeners``, certificate listeners 9113-9119 for 3 brokers, 3
controllers and a coordinator). With ``tls`` and ``auth`` (what
``lanes up`` runs), cluster.json also holds ``"tls": {"ca"}``, ``"user": {"name",
"password_file"}`` (the ``admin`` user, the cluster's super user) and ``"metrics_token_file"``
(the bearer token every ``/metrics`` asks for).
Coordinators keep no files: groups and offsets live in ``__consumer_offsets``. Starting again on the
same data directory brings back every topic, record, group and committed offset.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import grpc

from lanes.deadline import Deadline, attempts
from lanes.local.certificates import Authority, create_authority, issue, write_file
from lanes.local.processes import LaunchedService, ServiceProcess, launch_service
from lanes.rpc.addresses import parse_addresses
from lanes.rpc.controllers import ControllerEndpoints
from lanes.rpc.credentials import UserPassword
from lanes.rpc.tls import TlsFiles, node_identity
from lanes.runtime.access.tokens import TokenSettings
from lanes.security.acls import NODE_NAME
from lanes.topic_configs import MIN_SEGMENT_BYTES
from lanes.v1 import controller_pb2

CLUSTER_FILE = "cluster.json"
#: The local cluster's administrator: its certificate's name, or with ``auth`` its user (the super user).
ADMIN_USER = "admin"
ADMIN_PRINCIPAL = f"User:{ADMIN_USER}"


def _password_file(path: Path) -> Path:
    """``path``, holding a new random password unless it exists (owner-only, written whole)."""
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_file(path, secrets.token_urlsafe(24).encode(), private=True)
    return path


class Placement(NamedTuple):
    """Where one process of the cluster runs: the address it listens on and a launcher command
    that execs the service in place (``ip netns exec NS``), or none."""

    host: str
    launcher: Sequence[str] = ()


@dataclass
class LocalCluster:
    """Starts, describes and stops the local cluster's processes."""

    data_dir: Path
    brokers: int = 3
    port_base: int = 9092
    host: str = "127.0.0.1"
    session_timeout_ms: int = 6000
    leader_imbalance_check_interval_ms: int = 300_000
    coordinators: int = 1
    offsets_topic_partitions: int = 50
    group_session_timeout_ms: int = 45_000
    group_heartbeat_interval_ms: int = 5_000
    replica_lag_time_max_ms: int = 30_000
    #: voters of the controller quorum (1: a single controller, no failover)
    controllers: int = 1
    #: metadata records between controller snapshots (each drops the log below the one before)
    snapshot_every_records: int = 10_000
    #: the smallest segment.bytes a topic may set (tests of retention lower it)
    min_segment_bytes: int = MIN_SEGMENT_BYTES
    #: TLS everywhere (the default, as ``lanes up``): a CA under ``<data_dir>/tls`` issues each
    #: process a certificate (its name is the identity); without ``auth`` every listener requires
    #: a client certificate, and an ``admin`` certificate (``client_tls``, in cluster.json) is
    #: what clients use
    tls: bool = True
    #: authentication and ACLs (the default; needs ``tls``): every call needs a principal; clients
    #: give the ``admin`` user's password (``client_credentials``), the super user
    #: (``--auth required``); nodes give their certificates on the internal listeners
    auth: bool = True
    #: with ``auth``: also accept OAuth bearer tokens (``--oauth-*`` of every process)
    oauth: TokenSettings | None = None
    #: with ``auth``: every process also serves a certificate listener (``--certificate-port``)
    #: for users whose client certificates a separate clients' CA under ``<data_dir>/tls/clients``
    #: signed (``issue_user_certificate``); cluster.json names them (``certificate_bootstrap``)
    certificate_listeners: bool = False
    #: calls in progress one client address may have on each process (None: the processes'
    #: default, ``--max-calls-per-address``)
    max_calls_per_address: int | None = None
    #: with ``auth``: how long a user's stream lives before it is authenticated again (None: the
    #: processes' default, ``--max-session-seconds``)
    max_session_seconds: float | None = None
    #: where a process runs, by name ("controller" or "controller-<id>", "broker-1",
    #: "coordinator-1"): its address and a launcher command (tests put each process in its own
    #: network namespace); default ``host``, none
    placement: Callable[[str], Placement] | None = None
    #: also run the console (``lanes up`` does): on ``console_port`` (None: the port after every
    #: other one of the cluster's, ``port_base + ports_for(...)``), over HTTPS with a certificate
    #: of the cluster's CA when ``tls``; users log in with their Lanes users when ``auth``
    console: bool = False
    console_port: int | None = None
    #: every broker also serves Kafka's wire protocol (``lanes up`` does): broker N on the Nth port after
    #: every other one of the cluster's, console included (``kafka_bootstrap`` in cluster.json), with the
    #: cluster's TLS and, under ``auth``, SASL against its users
    kafka: bool = False
    console_process: ServiceProcess | None = None
    controller_processes: dict[int, ServiceProcess] = field(default_factory=dict)
    #: ports of controllers started beyond the first ``controllers`` (to be added to the quorum)
    added_controller_ports: dict[int, int] = field(default_factory=dict)
    broker_processes: dict[int, ServiceProcess] = field(default_factory=dict)
    coordinator_processes: dict[int, ServiceProcess] = field(default_factory=dict)

    @staticmethod
    def ports_for(
        brokers: int, coordinators: int = 1, controllers: int = 1, *, console: bool = False, kafka: bool = False
    ) -> int:
        """Consecutive ports a cluster uses from ``port_base``: client listeners, then metrics,
        then internal listeners, then certificate listeners, one each per process; then the
        console's; then the brokers' Kafka listeners (``lanes up`` runs both)."""
        return 4 * (brokers + controllers + coordinators) + (1 if console else 0) + (brokers if kafka else 0)

    def _kafka_port(self, broker_id: int) -> int:
        """Broker ``broker_id``'s Kafka listener: after every other port (0, any free one, for a broker
        beyond the cluster's first ones)."""
        if not 1 <= broker_id <= self.brokers:
            return 0
        return (
            self.port_base
            + self.ports_for(self.brokers, self.coordinators, self.controllers, console=True)
            + (broker_id - 1)
        )

    def placed(self, name: str) -> Placement:
        """Where process ``name`` runs (see ``placement``)."""
        return self.placement(name) if self.placement is not None else Placement(self.host)

    def _metrics_port(self, grpc_port: int) -> str:
        """A process's metrics port: its gRPC port shifted past every process's gRPC port."""
        return str(grpc_port + self.brokers + self.controllers + self.coordinators)

    def _internal_port(self, grpc_port: int) -> int:
        """A process's internal listener: its gRPC port shifted past every metrics port."""
        return grpc_port + 2 * (self.brokers + self.controllers + self.coordinators)

    def _certificate_args(self, grpc_port: int) -> list[str]:
        """A process's certificate listener (its gRPC port shifted past every internal
        listener), with the clients' CA, when the cluster has them."""
        if not self.certificate_listeners:
            return []
        if not self.auth:
            raise ValueError("certificate listeners authenticate users: they need auth")
        port = grpc_port + 3 * (self.brokers + self.controllers + self.coordinators)
        return ["--certificate-port", str(port), "--tls-client-ca", str(self.clients_authority().cert_file)]

    def clients_authority(self) -> Authority:
        """The clients' CA (``<data_dir>/tls/clients``): it signs users' certificates, never a node's."""
        return create_authority(self.data_dir / "tls" / "clients", name="Lanes local clients CA")

    def issue_user_certificate(self, user: str) -> TlsFiles:
        """A client certificate naming ``user`` from the clients' CA (``<data_dir>/tls/clients/<user>.crt``
        and ``.key``), with the cluster's CA to trust: what a client of the certificate listeners uses."""
        if NODE_NAME.fullmatch(user):
            raise ValueError(f"{user} is a node's name, not a user's")
        issued = issue(self.clients_authority(), self.data_dir / "tls" / "clients", user, hosts=(), server=False)
        return TlsFiles(self.data_dir / "tls" / "ca.crt", issued.cert_file, issued.key_file)

    def controller_name(self, controller_id: int) -> str:
        """The process (and placement, and log file) name of a controller."""
        return "controller" if self.controllers == 1 else f"controller-{controller_id}"

    def controller_port(self, controller_id: int) -> int:
        if controller_id in self.added_controller_ports:
            return self.added_controller_ports[controller_id]
        return self.port_base + self.brokers + controller_id

    @property
    def controller(self) -> ServiceProcess | None:
        """Controller 0 (the only one in a quorum of one)."""
        return self.controller_processes.get(0)

    @property
    def controller_addresses(self) -> str:
        """Every controller's client listener, ``host:port,...`` (what clients are given)."""
        return ",".join(
            f"{self.placed(self.controller_name(i)).host}:{self.controller_port(i)}" for i in range(self.controllers)
        )

    def controller_internal_address(self, controller_id: int) -> str:
        """Where nodes dial a controller: its internal listener (what ``add_controller`` names)."""
        host = self.placed(self.controller_name(controller_id)).host
        return f"{host}:{self._internal_port(self.controller_port(controller_id))}"

    def start_controller(self, controller_id: int, port: int | None = None) -> ServiceProcess:
        """Start (or restart) controller ``controller_id`` with its own port and data directory.
        An id beyond the first ``controllers`` needs a ``port`` the first time: it starts as an
        observer of the quorum, to be added (``lanes cluster add-controller``)."""
        self.controller_processes[controller_id] = self._launch_controller(controller_id, port).ready()
        return self.controller_processes[controller_id]

    def _launch_controller(self, controller_id: int, port: int | None = None) -> LaunchedService:
        if port is not None:
            self.added_controller_ports[controller_id] = port
        elif controller_id >= self.controllers and controller_id not in self.added_controller_ports:
            raise ValueError(f"controller {controller_id} is not one of the first {self.controllers}: give it a port")
        previous = self.controller_processes.get(controller_id)
        if previous is not None and previous.process.poll() is None:
            raise RuntimeError(f"controller {controller_id} is still running (pid {previous.pid})")
        name = self.controller_name(controller_id)
        placed = self.placed(name)
        voters = ",".join(f"{i}@{self.controller_internal_address(i)}" for i in range(self.controllers))
        return launch_service(
            "lanes.controller",
            [
                "--data-dir",
                str(self.data_dir / name),
                "--node-id",
                str(controller_id),
                "--voters",
                voters,
                "--host",
                placed.host,
                "--port",
                str(self.controller_port(controller_id)),
                "--internal-port",
                str(self._internal_port(self.controller_port(controller_id))),
                "--metrics-port",
                self._metrics_port(self.controller_port(controller_id)),
                "--metrics-named-series",  # a local cluster's user is its operator: every series
                "on",
                *self._bootstrap_admin_args(),
                "--session-timeout-ms",
                str(self.session_timeout_ms),
                "--heartbeat-interval-ms",
                str(max(100, min(1000, self.session_timeout_ms // 4))),
                "--leader-imbalance-check-interval-ms",
                str(self.leader_imbalance_check_interval_ms),
                "--default-replication-factor",
                str(min(3, self.brokers)),
                "--offsets-topic-partitions",
                str(self.offsets_topic_partitions),
                "--snapshot-every-records",
                str(self.snapshot_every_records),
                "--min-segment-bytes",
                str(self.min_segment_bytes),
                *self._certificate_args(self.controller_port(controller_id)),
                *self._tls_args(node_identity("controller", controller_id), placed.host),
                *self._limit_args(),
            ],
            self.data_dir / "logs" / f"{name}.log",
            launcher=placed.launcher,
        )

    @property
    def client_tls(self) -> TlsFiles | None:
        """What clients trust and present: with ``auth`` the CA only (they give a password,
        ``client_credentials``), else the ``admin`` client certificate too (issued on first use);
        None without ``tls``."""
        if not self.tls:
            return None
        directory = self.data_dir / "tls"
        if self.auth:
            create_authority(directory)
            return TlsFiles(directory / "ca.crt")
        files = TlsFiles(directory / "ca.crt", directory / "admin.crt", directory / "admin.key")
        if not all(p is not None and p.exists() for p in (files.ca_file, files.cert_file, files.key_file)):
            files = issue(create_authority(directory), directory, "admin", hosts=(), server=False)
        return files

    @property
    def client_credentials(self) -> UserPassword | None:
        """With ``auth``: the ``admin`` user and its password (made on first use, kept in
        ``<data-dir>/tls/admin.password``, readable by its owner only); else None."""
        if not self.auth:
            return None
        return UserPassword(ADMIN_USER, _password_file(self.data_dir / "tls" / "admin.password").read_text().strip())

    def client_environment(self) -> dict[str, str]:
        """The environment a client process needs to reach this cluster as its admin (what
        ``lanes.rpc.tls`` and ``lanes.rpc.credentials`` read): ``LANES_TLS_CA`` (with
        ``LANES_TLS_CERT`` and ``LANES_TLS_KEY`` without ``auth``), ``LANES_USERNAME``,
        ``LANES_PASSWORD_FILE`` and ``LANES_METRICS_TOKEN_FILE`` (scrapes) with ``auth``; empty for
        a plaintext cluster."""
        client_tls = self.client_tls
        if client_tls is None:
            return {}
        environment = {"LANES_TLS_CA": str(client_tls.ca_file)}
        if client_tls.cert_file is not None and client_tls.key_file is not None:
            environment |= {"LANES_TLS_CERT": str(client_tls.cert_file), "LANES_TLS_KEY": str(client_tls.key_file)}
        if self.auth:
            password_file = _password_file(self.data_dir / "tls" / "admin.password")
            environment |= {"LANES_USERNAME": ADMIN_USER, "LANES_PASSWORD_FILE": str(password_file)}
            environment["LANES_METRICS_TOKEN_FILE"] = str(self.metrics_token_file)
        return environment

    def _bootstrap_admin_args(self) -> list[str]:
        """A controller's flags creating the ``admin`` user with the cluster (with ``auth``)."""
        if not self.auth:
            return []
        return [
            "--bootstrap-user",
            ADMIN_USER,
            "--bootstrap-password-file",
            str(_password_file(self.data_dir / "tls" / "admin.password")),
        ]

    def _tls_args(self, name: str, host: str) -> list[str]:
        """A process's ``--tls-*`` flags: a certificate issued now for ``name`` serving ``host``
        (a restart renews it), or nothing without ``tls``."""
        if not self.tls:
            if self.auth:
                raise ValueError("auth needs tls: nodes prove who they are by their certificates")
            return []
        directory = self.data_dir / "tls"
        files = issue(
            create_authority(directory), directory, name, hosts=list(dict.fromkeys([host, "127.0.0.1", "localhost"]))
        )
        return [
            "--tls-ca",
            str(files.ca_file),
            "--tls-cert",
            str(files.cert_file),
            "--tls-key",
            str(files.key_file),
            "--tls-client-auth",  # with auth, users give passwords; nodes use the internal listener
            "none" if self.auth else "required",
            *(["--auth", "required", "--super-users", ADMIN_PRINCIPAL] if self.auth else []),
            *(["--metrics-token-file", str(self.metrics_token_file)] if self.metrics_token_file else []),
            *self._oauth_args(),
        ]

    @property
    def metrics_token_file(self) -> Path | None:
        """With ``auth``: the bearer token a scrape of a process's ``/metrics`` gives (made on
        first use, owner-only, in ``<data-dir>/tls/metrics.token``); else None (metrics open)."""
        return _password_file(self.data_dir / "tls" / "metrics.token") if self.auth else None

    def _limit_args(self) -> list[str]:
        given = []
        if self.max_calls_per_address is not None:
            given += ["--max-calls-per-address", str(self.max_calls_per_address)]
        if self.max_session_seconds is not None:
            given += ["--max-session-seconds", str(self.max_session_seconds)]
        return given

    def _oauth_args(self) -> list[str]:
        if self.oauth is None:
            return []
        if not self.auth:
            raise ValueError("bearer tokens authenticate users: they need auth")
        settings = self.oauth
        return [
            *("--oauth-issuer", settings.issuer, "--oauth-audience", settings.audience),
            *("--oauth-jwks", settings.jwks, "--oauth-principal-claim", settings.principal_claim),
        ]

    @property
    def cluster_file(self) -> Path:
        return self.data_dir / CLUSTER_FILE

    def start(self, ready_timeout_s: float = 60) -> dict[str, Any]:
        """Start every process, wait until every broker is live and every shard of
        ``__consumer_offsets`` has a coordinator, write and return cluster.json."""
        if self.brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)  # the nodes' data, keys and passwords: the owner's only
        # every process launched before any is waited for: they start up side by side
        launched: list[tuple[dict[int, ServiceProcess], int, LaunchedService]] = []
        try:
            for controller_id in range(self.controllers):
                launched.append((self.controller_processes, controller_id, self._launch_controller(controller_id)))
            for broker_id in range(1, self.brokers + 1):
                launched.append((self.broker_processes, broker_id, self._launch_broker(broker_id)))
            for coordinator_id in range(1, self.coordinators + 1):
                launched.append((self.coordinator_processes, coordinator_id, self._launch_coordinator(coordinator_id)))
            while launched:
                processes, node_id, launch = launched[0]
                processes[node_id] = launch.ready()
                launched.pop(0)
            asyncio.run(self._wait_until_ready(ready_timeout_s))
            if self.console:
                self.console_process = self._launch_console().ready()
        except BaseException:
            for _, _, launch in launched:
                launch.abandon()
            self.stop()
            raise
        description = self.describe()
        temporary = self.cluster_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(description, indent=2) + "\n")
        temporary.replace(self.cluster_file)
        return description

    def _launch_console(self) -> LaunchedService:
        """``python -m lanes.console`` against the brokers (see ``console``)."""
        port = self.console_port
        if port is None:
            port = self.port_base + self.ports_for(self.brokers, self.coordinators, self.controllers)
        args = [
            "--bootstrap",
            ",".join(p.address for _, p in sorted(self.broker_processes.items())),
            "--host",
            self.host,
            "--port",
            str(port),
            "--login",
            "required" if self.auth else "none",
        ]
        client_tls = self.client_tls
        if client_tls is not None:
            served = issue(create_authority(self.data_dir / "tls"), self.data_dir / "tls", "console")
            args += ["--tls-ca", str(client_tls.ca_file), "--tls-cert", str(served.cert_file)]
            args += ["--tls-key", str(served.key_file)]
            if client_tls.cert_file is not None and client_tls.key_file is not None:  # (no users: the admin's)
                args += ["--tls-client-cert", str(client_tls.cert_file), "--tls-client-key", str(client_tls.key_file)]
        return launch_service("lanes.console", args, self.data_dir / "logs" / "console.log")

    def start_broker(self, broker_id: int) -> ServiceProcess:
        """Start (or restart, after a crash or a stop) broker ``broker_id`` on its own port and data directory."""
        self.broker_processes[broker_id] = self._launch_broker(broker_id).ready()
        return self.broker_processes[broker_id]

    def _launch_broker(self, broker_id: int) -> LaunchedService:
        return self._launch_node(
            "broker",
            broker_id,
            self.broker_processes,
            [
                "--data-dir",
                str(self.data_dir / f"broker-{broker_id}"),
                "--replica-lag-time-max-ms",
                str(self.replica_lag_time_max_ms),
                *(["--kafka-port", str(self._kafka_port(broker_id))] if self.kafka else []),
            ],
            port=self.port_base + broker_id - 1,
        )

    def start_coordinator(self, coordinator_id: int) -> ServiceProcess:
        """Start (or restart) group coordinator ``coordinator_id`` on its own port."""
        self.coordinator_processes[coordinator_id] = self._launch_coordinator(coordinator_id).ready()
        return self.coordinator_processes[coordinator_id]

    def _launch_coordinator(self, coordinator_id: int) -> LaunchedService:
        return self._launch_node(
            "coordinator",
            coordinator_id,
            self.coordinator_processes,
            [
                "--session-timeout-ms",
                str(self.group_session_timeout_ms),
                "--heartbeat-interval-ms",
                str(self.group_heartbeat_interval_ms),
            ],
            port=self.port_base + self.brokers + self.controllers + coordinator_id - 1,
        )

    def _launch_node(
        self, kind: str, node_id: int, processes: dict[int, ServiceProcess], args: list[str], *, port: int
    ) -> LaunchedService:
        """``python -m lanes.<kind> --<kind>-id N --controller ... --host ... --port ... args``."""
        previous = processes.get(node_id)
        if previous is not None and previous.process.poll() is None:
            raise RuntimeError(f"{kind} {node_id} is still running (pid {previous.pid})")
        placed = self.placed(f"{kind}-{node_id}")
        return launch_service(
            f"lanes.{kind}",
            [
                f"--{kind}-id",
                str(node_id),
                "--controller",
                ",".join(self.controller_internal_address(i) for i in range(self.controllers)),
                "--host",
                placed.host,
                "--port",
                str(port),
                "--internal-port",
                str(self._internal_port(port)),
                "--metrics-port",
                self._metrics_port(port),
                "--metrics-named-series",
                "on",
                *self._certificate_args(port),
                *self._tls_args(node_identity(kind, node_id), placed.host),
                *self._limit_args(),
                *args,
            ],
            self.data_dir / "logs" / f"{kind}-{node_id}.log",
            launcher=placed.launcher,
        )

    def describe(self) -> dict[str, Any]:
        """What cluster.json holds (with ``tls``: the client's CA, certificate and key files; with
        ``auth``: the CA, and the admin user with its password file)."""
        client_tls = self.client_tls
        return {
            **(
                {
                    "tls": {
                        "ca": str(client_tls.ca_file),
                        **(
                            {"cert": str(client_tls.cert_file), "key": str(client_tls.key_file)}
                            if client_tls.cert_file is not None
                            else {}
                        ),
                    }
                }
                if client_tls is not None
                else {}
            ),
            **(
                {
                    "user": {"name": ADMIN_USER, "password_file": str(self.data_dir / "tls" / "admin.password")},
                    "metrics_token_file": str(self.metrics_token_file),
                }
                if self.auth
                else {}
            ),
            "bootstrap": ",".join(p.address for _, p in sorted(self.broker_processes.items())),
            **(
                {
                    "kafka_bootstrap": ",".join(
                        str(p.ready["kafka_address"]) for _, p in sorted(self.broker_processes.items())
                    )
                }
                if self.kafka
                else {}
            ),
            **(
                {
                    "certificate_bootstrap": ",".join(
                        str(p.ready["certificate_address"]) for _, p in sorted(self.broker_processes.items())
                    ),
                    "clients_ca": str(self.clients_authority().cert_file),
                }
                if self.certificate_listeners
                else {}
            ),
            "controller": self.controller_addresses,
            "controllers": [
                {
                    "id": controller_id,
                    "address": p.address,
                    "pid": p.pid,
                    "data_dir": str(self.data_dir / self.controller_name(controller_id)),
                    "metrics": p.ready.get("metrics_address"),
                }
                for controller_id, p in sorted(self.controller_processes.items())
            ],
            "brokers": [
                {
                    "id": broker_id,
                    "address": p.address,
                    "pid": p.pid,
                    "data_dir": str(self.data_dir / f"broker-{broker_id}"),
                    "metrics": p.ready.get("metrics_address"),
                }
                for broker_id, p in sorted(self.broker_processes.items())
            ],
            "coordinators": [
                {"id": coordinator_id, "address": p.address, "pid": p.pid, "metrics": p.ready.get("metrics_address")}
                for coordinator_id, p in sorted(self.coordinator_processes.items())
            ],
            **(
                {"console": {"url": self.console_process.ready["url"], "pid": self.console_process.pid}}
                if self.console_process is not None
                else {}
            ),
            "pid": os.getpid(),
        }

    async def _active_controller_call(self, call: Callable[[Any], Any], timeout_s: float = 10) -> Any:
        """``call(stub)`` on the active controller (found and followed), retried while the
        quorum elects one."""
        controllers = ControllerEndpoints(
            parse_addresses(self.controller_addresses, "the controller list"),
            tls=self.client_tls,
            credentials=self.client_credentials,
        )
        try:
            async for _ in attempts(Deadline(timeout_s), 0.1):
                address, stub = controllers.target()
                try:
                    return await call(stub)
                except grpc.aio.AioRpcError as exc:
                    controllers.failed(exc, address)
            raise RuntimeError(f"no active controller among {self.controller_addresses} within {timeout_s:.0f} s")
        finally:
            await controllers.close()

    async def _wait_until_ready(self, timeout_s: float) -> None:
        deadline = Deadline(timeout_s)
        async for _ in attempts(deadline, 0.1):
            cluster = await self._active_controller_call(
                lambda stub: stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=5),
                max(deadline.remaining_s(), 1),
            )
            shards = sum(len(c.shards) for c in cluster.coordinators)
            wanted_shards = self.offsets_topic_partitions if self.coordinators else 0
            if (
                len(cluster.brokers) == self.brokers
                and len(cluster.coordinators) == self.coordinators
                and shards == wanted_shards
            ):
                return
        raise RuntimeError(
            f"{len(cluster.brokers)} of {self.brokers} brokers and {len(cluster.coordinators)} of "
            f"{self.coordinators} coordinators ({shards} of {wanted_shards} shards) came up; "
            f"see {self.data_dir}/logs"
        )

    def health(self) -> str:
        """One line: live brokers, topics, partitions offline or under-replicated."""
        return asyncio.run(self._health())

    async def _health(self) -> str:
        cluster = await self._active_controller_call(
            lambda stub: stub.DescribeCluster(controller_pb2.DescribeClusterRequest(include_fenced=True), timeout=5)
        )
        topics = await self._active_controller_call(
            lambda stub: stub.DescribeTopics(controller_pb2.DescribeTopicsRequest(), timeout=5)
        )
        live = sum(1 for b in cluster.brokers if not b.fenced)
        partitions = [p for t in topics.topics for p in t.partitions]
        offline = sum(1 for p in partitions if p.leader_id < 0)
        under = sum(1 for p in partitions if len(p.isr) < len(p.replicas))
        return (
            f"{live}/{len(cluster.brokers)} brokers live, {len(topics.topics)} topics, {len(partitions)} partitions "
            f"({offline} offline, {under} under-replicated)"
        )

    def dead_processes(self) -> list[str]:
        """Names of processes that exited on their own."""
        processes = {f"broker-{i}": p for i, p in self.broker_processes.items()}
        processes |= {f"coordinator-{i}": p for i, p in self.coordinator_processes.items()}
        processes |= {self.controller_name(i): p for i, p in self.controller_processes.items()}
        if self.console_process is not None:
            processes["console"] = self.console_process
        return [name for name, p in processes.items() if p.process.poll() is not None]

    def stop(self) -> None:
        """SIGTERM the console, the coordinators (their shards move), the brokers (they hand
        leadership away and close cleanly), then the controllers."""
        if self.console_process is not None:
            self.console_process.terminate()
        for process in self.coordinator_processes.values():
            process.terminate()
        for process in self.broker_processes.values():
            if process.process.poll() is None:
                process.process.terminate()
        for process in self.broker_processes.values():
            process.terminate()
        for process in self.controller_processes.values():
            if process.process.poll() is None:
                process.process.terminate()
        for process in self.controller_processes.values():
            process.terminate()
        self.cluster_file.unlink(missing_ok=True)
