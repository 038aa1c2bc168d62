"""gRPC server bootstrap shared by every Lanes service process.

``start_server`` builds a ``grpc.aio`` server on ``host:port``, adds the given service
bindings, the standard health service (``grpc.health.v1.Health``: the overall status under
``""`` and one status per service) and server reflection (so ``grpcurl`` and friends can list
and call the services), starts it and returns a ``RunningServer``.

Lifecycle: every service is SERVING once ``start_server`` returns. ``RunningServer.stop``
first marks everything NOT_SERVING (load balancers and probes stop sending work), then stops
the server, letting in-flight RPCs finish within the grace period. Owned by one event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import resource
import signal
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from lanes.allocator import keep_freed_memory
from lanes.errors import LanesError
from lanes.metadata.image import MetadataImage
from lanes.rpc.channels import MAX_MESSAGE_BYTES
from lanes.rpc.tls import TlsFiles, process_tls
from lanes.rpc.tls import configure as configure_tls
from lanes.runtime.access.authentication_service import AuthenticationService
from lanes.runtime.access.authentication_service import add_to_server as add_authentication
from lanes.runtime.access.guard import AnonymousCallers, Guard, Listener
from lanes.runtime.access.password_sessions import PasswordSessions
from lanes.runtime.access.tokens import TokenSettings, TokenVerifier
from lanes.runtime.metrics import OPEN_METRICS, MetricsAccess, ServiceMetrics
from lanes.runtime.quotas.address_limits import AddressLimits
from lanes.runtime.quotas.loop_time import install as time_tasks
from lanes.runtime.quotas.request_quota import RequestTimeQuota
from lanes.runtime.serving.logs import FORMATS, configure_logging
from lanes.v1 import authentication_pb2

#: The Authentication service's full name (reflection lists it where it is served).
AUTHENTICATION_SERVICE = authentication_pb2.DESCRIPTOR.services_by_name["Authentication"].full_name

#: The health service's name for the whole server.
OVERALL_HEALTH = ""
#: How long the HTTP health endpoint waits for the event loop to answer.
HEALTH_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class ServerLimits:
    """What one server accepts from its callers, so that no caller can take a process's memory
    or file descriptors. Beyond a limit gRPC itself answers: RESOURCE_EXHAUSTED for a
    larger request or one call too many, a refused stream or connection.

    - ``max_request_bytes``: the largest request message (a broker's default fits a produce
      request of many 1 MiB batches; Kafka's ``socket.request.max.bytes`` is 100 MiB, but Kafka
      reads a request into a bounded pool, and gRPC holds each one whole).
    - ``max_concurrent_rpcs``: calls in progress on the whole server (long-polls included); as
      many may wait for the event loop to take them (gRPC's own pending limits, 1,000 soft and
      3,000 hard, cancelled a burst of long-polls beyond them with a bare CANCELLED).
    - ``max_streams_per_connection``: HTTP/2 streams one connection may have open; a client's
      further calls queue on its side.
    - ``max_connections``: open connections; also at most half the process's file-descriptor
      limit (``start_server`` raises the soft limit to the hard one first).
    - ``max_metadata_bytes``: request headers (gRPC's own limit, stated).
    - ``max_connection_idle_ms``: a connection without calls for this long is closed (Kafka's
      ``connections.max.idle.ms``; a client reconnects at its next call).

    Per caller address, on client listeners (``lanes.runtime.quotas.address_limits``, flags
    ``--max-calls-per-address`` and ``--max-connections-per-address``): a quarter of the calls
    in progress, and a tenth of the connections, so one address cannot take them all.
    """

    max_request_bytes: int = 4 * 1024 * 1024
    max_concurrent_rpcs: int = 20_000
    max_streams_per_connection: int = 1_000
    max_connections: int = 10_000
    max_metadata_bytes: int = 16 * 1024
    max_connection_idle_ms: int = 600_000

    def options(self, file_descriptors: int) -> list[tuple[str, int]]:
        """The server's channel arguments, with connections taking at most half of
        ``file_descriptors`` (the rest for segments, indexes and outgoing channels)."""
        return [
            ("grpc.max_receive_message_length", self.max_request_bytes),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_concurrent_streams", self.max_streams_per_connection),
            (
                "grpc.max_allowed_incoming_connections",
                max(_MIN_CONNECTIONS, min(self.max_connections, file_descriptors // 2)),
            ),
            ("grpc.server.max_pending_requests", self.max_concurrent_rpcs),
            ("grpc.server.max_pending_requests_hard_limit", self.max_concurrent_rpcs),
            ("grpc.max_metadata_size", self.max_metadata_bytes),
            ("grpc.absolute_max_metadata_size", self.max_metadata_bytes),
            ("grpc.max_connection_idle_ms", self.max_connection_idle_ms),
        ]


#: Per-address defaults (``lanes.runtime.quotas.address_limits``): a quarter of a server's calls in
#: progress, a tenth of its connections.
MAX_CALLS_PER_ADDRESS = ServerLimits.max_concurrent_rpcs // 4
MAX_CONNECTIONS_PER_ADDRESS = ServerLimits.max_connections // 10


#: Connections a server accepts however low the file-descriptor limit.
_MIN_CONNECTIONS = 64


def raise_file_descriptor_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit (a broker holds a file per
    segment and index, and one per connection); the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for target in (hard, 1_048_576, 65_536, 10_240):  # an unlimited hard limit is refused on some systems
        if target == resource.RLIM_INFINITY or target <= soft:
            continue
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            break
        except (ValueError, OSError):
            continue
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


@dataclass(frozen=True)
class ServiceBinding:
    """One gRPC service to serve: its fully qualified name and how to add it to a server."""

    name: str
    add_to_server: Callable[[grpc.aio.Server], None]


@dataclass(frozen=True)
class InternalListener:
    """A second listener for the cluster's own traffic (replication, registration, the quorum,
    coordinators' writes), as KRaft separates its listeners: on ``port`` (0 picks a free one),
    with mutual TLS whenever the process has TLS, its own ``interceptors``, and its own pool of
    calls, so clients' long-polls never take the slots replication needs."""

    port: int
    interceptors: Sequence[grpc.aio.ServerInterceptor] = ()


@dataclass(frozen=True)
class CertificateListener:
    """A client listener that serves only callers presenting a certificate ``client_ca`` signed
    (the clients' CA), whose common name is their user (Kafka's SSL listener with
    ``ssl.client.auth=required``), beside the client listener where users give passwords or
    tokens: on ``port`` (0 picks a free one), with its own ``interceptors`` and pool of calls."""

    port: int
    client_ca: Path
    interceptors: Sequence[grpc.aio.ServerInterceptor] = ()


class RunningServer:
    """A started server (its client listener, and its internal one when it has one): bound
    ports, health status, and a graceful stop."""

    def __init__(
        self,
        servers: Sequence[tuple[grpc.aio.Server, HealthServicer]],
        host: str,
        port: int,
        service_names: Sequence[str],
        *,
        internal_port: int = 0,
        certificate_port: int = 0,
    ) -> None:
        self.servers = tuple(servers)
        self.host = host
        self.port = port
        self.internal_port = internal_port
        self.certificate_port = certificate_port
        self.service_names = tuple(service_names)
        #: what each service reports (``""``: the whole server), for the HTTP health endpoint
        self.serving: dict[str, bool] = {}
        #: where ``/metrics`` and ``/healthz`` are served (``start_server``'s ``metrics_port``)
        self.metrics_address: str | None = None
        self._loop = asyncio.get_running_loop()

    def health_from_thread(self, service: str) -> bool | None:
        """Whether ``service`` serves, asked from another thread (the HTTP endpoint's) through the
        event loop: a loop that does not answer within ``HEALTH_TIMEOUT_S`` is not healthy."""

        async def ask() -> bool | None:
            return self.serving.get(service)

        try:
            return asyncio.run_coroutine_threadsafe(ask(), self._loop).result(HEALTH_TIMEOUT_S)
        except Exception:  # the loop is stuck or gone
            return False

    @property
    def address(self) -> str:
        """``host:port`` to dial (the client listener)."""
        return f"{self.host}:{self.port}"

    async def set_serving(self, serving: bool, service: str = OVERALL_HEALTH) -> None:
        """Report ``service`` (or, by default, the whole server) as serving or not."""
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        self.serving[service] = serving
        for _, health in self.servers:
            await health.set(service, status)

    async def stop(self, grace_s: float = 5.0) -> None:
        """Mark everything NOT_SERVING, then stop; in-flight RPCs get ``grace_s`` to finish."""
        for name in self.serving:
            self.serving[name] = False
        for _, health in self.servers:
            await health.enter_graceful_shutdown()
        await asyncio.gather(*(server.stop(grace_s) for server, _ in self.servers))


async def start_server(
    bindings: Sequence[ServiceBinding],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    metrics: ServiceMetrics | None = None,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    limits: ServerLimits = ServerLimits(),
    tls: TlsFiles | None = None,
    require_client_cert: bool = False,
    internal: InternalListener | None = None,
    certificates: CertificateListener | None = None,
    metrics_port: int = -1,
    metrics_access: MetricsAccess = OPEN_METRICS,
    sessions: PasswordSessions | None = None,
) -> RunningServer:
    """Start a server for ``bindings`` on ``host:port`` (port 0 picks a free one); it takes what
    ``limits`` allow, sends messages up to the channels' ``MAX_MESSAGE_BYTES``, and times its
    calls into ``metrics`` (outermost), then runs ``interceptors`` in order. With ``tls`` it
    listens over TLS only (``require_client_cert``: mutual TLS), reloading renewed files. With
    ``internal``, a second server serves the same bindings on the internal listener, and with
    ``certificates`` another on the certificate listener (TLS only). With
    ``metrics_port`` (-1: none; 0: a free one), ``/metrics`` (to those ``metrics_access``
    admits) and ``/healthz`` are served on it from now on, so probes see the process before its
    service has started. With ``sessions``, every listener serves the Authentication service too
    (users' SCRAM logins, ``lanes.runtime.access.authentication_service``)."""
    time_tasks(asyncio.get_running_loop())  # request-time quotas count the tasks a call starts
    listeners: list[tuple[int, Sequence[grpc.aio.ServerInterceptor], bool, Path | None]] = [
        (port, interceptors, require_client_cert, None)
    ]
    if internal is not None:
        listeners.append((internal.port, internal.interceptors, True, None))
    if certificates is not None:
        if tls is None:
            raise ValueError("a certificate listener needs TLS")
        listeners.append((certificates.port, certificates.interceptors, True, certificates.client_ca))
    servers: list[tuple[grpc.aio.Server, HealthServicer]] = []
    ports = []
    names = [binding.name for binding in bindings]
    for listen_port, listener_interceptors, client_certs, client_ca in listeners:
        server = grpc.aio.server(
            options=[*limits.options(raise_file_descriptor_limit()), ("grpc.so_reuseport", 0)],
            interceptors=[*([metrics.interceptor()] if metrics is not None else []), *listener_interceptors],
            maximum_concurrent_rpcs=limits.max_concurrent_rpcs,
        )
        for binding in bindings:
            binding.add_to_server(server)
        if sessions is not None:
            add_authentication(AuthenticationService(sessions), server)
        health = HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        served = [*names, *([AUTHENTICATION_SERVICE] if sessions is not None else [])]
        health_name = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
        reflection.enable_server_reflection([*served, health_name, reflection.SERVICE_NAME], server)
        try:
            if tls is None:
                bound_port = server.add_insecure_port(f"{host}:{listen_port}")
            else:
                credentials = tls.server_credentials(require_client_cert=client_certs, client_ca=client_ca)
                bound_port = server.add_secure_port(f"{host}:{listen_port}", credentials)
        except RuntimeError as exc:  # grpc reports every bind failure this way
            raise OSError(f"cannot listen on {host}:{listen_port}: the address is in use or not available") from exc
        await server.start()
        servers.append((server, health))
        ports.append(bound_port)
    running = RunningServer(
        servers,
        host,
        ports[0],
        names,
        internal_port=ports[1] if internal is not None else 0,
        certificate_port=ports[-1] if certificates is not None else 0,
    )
    for name in (OVERALL_HEALTH, *names):
        await running.set_serving(True, name)
    if metrics is not None and metrics_port >= 0:
        try:
            running.metrics_address = metrics.serve_http(host, metrics_port, running.health_from_thread, metrics_access)
        except OSError as exc:
            raise OSError(f"cannot serve metrics on {host}:{metrics_port}: {exc.strerror or exc}") from exc
    return running


async def serve_until_signalled(
    running: RunningServer,
    readiness: Mapping[str, Any],
    stop_service: Callable[[], Awaitable[None]],
    grace_s: float = 5,
    *,
    metrics: ServiceMetrics | None = None,
    hand_off: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Print the readiness line (one JSON object on stdout, with ``metrics_address`` when
    ``start_server`` serves metrics and ``internal_address`` with an internal listener), serve
    until SIGTERM or SIGINT, then stop (``metrics``' endpoint last): ``hand_off`` while still
    serving (a broker's controlled shutdown), the server (in-flight requests get ``grace_s``),
    then the service."""
    readiness = dict(readiness)
    if running.internal_port:
        readiness["internal_address"] = f"{running.host}:{running.internal_port}"
    if running.certificate_port:
        readiness["certificate_address"] = f"{running.host}:{running.certificate_port}"
    if running.metrics_address is not None:
        readiness["metrics_address"] = running.metrics_address
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):  # before the readiness line: a SIGTERM right after it stops cleanly
        loop.add_signal_handler(signum, stop.set)
    print(json.dumps(readiness), flush=True)
    await stop.wait()
    logging.getLogger(__name__).info("shutting down")
    try:
        if hand_off is not None:
            await hand_off()
    finally:
        await running.stop(grace_s=grace_s)
    await stop_service()
    if metrics is not None:
        metrics.stop()


WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", ""})


def service_argument_parser(
    prog: str, description: str, default_port: int, default_metrics_port: int
) -> argparse.ArgumentParser:
    """An argument parser with what every service takes: ``--host``, ``--port``,
    ``--metrics-port`` (env ``LANES_METRICS_PORT``), ``--log-level``."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on, and to advertise without --advertised-host"
    )
    parser.add_argument(
        "--advertised-host",
        default=os.environ.get("LANES_ADVERTISED_HOST") or None,
        help="the name other nodes and clients reach this node by, when it differs from --host (in Kubernetes: the "
        "pod's stable DNS name, with --host 0.0.0.0; env LANES_ADVERTISED_HOST)",
    )
    parser.add_argument(
        "--port", type=int, default=default_port, help=f"gRPC port (default {default_port}; 0 picks a free one)"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=int(os.environ.get("LANES_METRICS_PORT", default_metrics_port)),
        help=f"port of the Prometheus /metrics endpoint, on --host (env LANES_METRICS_PORT; default "
        f"{default_metrics_port}; 0 picks a free one; -1 serves none)",
    )
    parser.add_argument(
        "--metrics-token-file",
        type=Path,
        default=os.environ.get("LANES_METRICS_TOKEN_FILE") or None,
        help="a file holding the bearer token a scrape of /metrics must give (Authorization: Bearer TOKEN; read "
        "again when it changes). With --auth required, metrics are served with a token only (env "
        "LANES_METRICS_TOKEN_FILE)",
    )
    parser.add_argument(
        "--metrics-named-series",
        choices=("on", "off"),
        default=os.environ.get("LANES_METRICS_NAMED_SERIES", "off"),
        help="on: serve series labelled with topic and group names too (per-topic rates, per-group lag); off: "
        "leave them out (env LANES_METRICS_NAMED_SERIES; default off)",
    )
    parser.add_argument(
        "--tls-ca",
        type=Path,
        default=os.environ.get("LANES_TLS_CA") or None,
        help="the CA certificate (PEM) every peer's certificate is signed by; with it, this node listens and "
        "connects over TLS only (env LANES_TLS_CA)",
    )
    parser.add_argument(
        "--tls-cert",
        type=Path,
        default=os.environ.get("LANES_TLS_CERT") or None,
        help="this node's certificate chain (PEM), re-read when the file changes (env LANES_TLS_CERT)",
    )
    parser.add_argument(
        "--tls-key",
        type=Path,
        default=os.environ.get("LANES_TLS_KEY") or None,
        help="this node's private key (PEM; env LANES_TLS_KEY)",
    )
    parser.add_argument(
        "--internal-port",
        type=int,
        default=int(os.environ.get("LANES_INTERNAL_PORT", "-1")),
        help="port of the internal listener, where the cluster's nodes call each other (mutual TLS with TLS on: "
        "only nodes' certificates); nodes dial it once registered. -1: none, nodes use --port; 0 picks a free "
        "one (env LANES_INTERNAL_PORT; default -1)",
    )
    parser.add_argument(
        "--certificate-port",
        type=int,
        default=int(os.environ.get("LANES_CERTIFICATE_PORT", "-1")),
        help="port of the certificate listener: clients presenting a certificate the clients' CA "
        "(--tls-client-ca) signed, whose common name is their user, beside --port where users give passwords or "
        "tokens; clients that call here are told the other nodes' certificate listeners. Needs --auth required. "
        "-1: none; 0 picks a free one (env LANES_CERTIFICATE_PORT; default -1)",
    )
    parser.add_argument(
        "--tls-client-ca",
        type=Path,
        default=os.environ.get("LANES_TLS_CLIENT_CA") or None,
        help="the CA (PEM) that signs the certificates of users on the certificate listener, re-read when it "
        "changes; a certificate it signed never names a node (env LANES_TLS_CLIENT_CA; default: --tls-ca)",
    )
    parser.add_argument(
        "--tls-client-auth",
        choices=("none", "required"),
        default=os.environ.get("LANES_TLS_CLIENT_AUTH", "required"),
        help="on the client listener (--port): required: accept only callers presenting a certificate the CA "
        "signed, whose common name is their principal, and check that a call made in a node's name carries that "
        "node's certificate (mutual TLS; Kafka's ssl.client.auth); none: any TLS caller (with --auth required, "
        "users give a username and password; nodes use the internal listener) (env LANES_TLS_CLIENT_AUTH; "
        "default required)",
    )
    parser.add_argument(
        "--auth",
        choices=("none", "required"),
        default=os.environ.get("LANES_AUTH", "none"),
        help="required: every call needs a principal (a client certificate, or a username and password) and is "
        "authorized by the cluster's ACLs (lanes acls); needs TLS, and an --internal-port or --tls-client-auth "
        "required. none: callers are not asked who they are (env LANES_AUTH; default none)",
    )
    parser.add_argument(
        "--super-users",
        default=os.environ.get("LANES_SUPER_USERS", ""),
        help="principals every ACL check lets through, separated by ';' (Kafka's super.users), e.g. "
        "'User:admin'; the cluster's nodes need not be named (env LANES_SUPER_USERS)",
    )
    parser.add_argument(
        "--oauth-issuer",
        default=os.environ.get("LANES_OAUTH_ISSUER") or None,
        help="with --auth required, also accept OAuth bearer tokens (JWTs) this issuer signed: its name, as "
        "tokens carry it in iss (env LANES_OAUTH_ISSUER); needs --oauth-audience and --oauth-jwks",
    )
    parser.add_argument(
        "--oauth-audience",
        default=os.environ.get("LANES_OAUTH_AUDIENCE") or None,
        help="the audience a token must name in aud (env LANES_OAUTH_AUDIENCE)",
    )
    parser.add_argument(
        "--oauth-jwks",
        default=os.environ.get("LANES_OAUTH_JWKS") or None,
        help="the issuer's signing keys: a JWKS file (re-read when it changes) or its jwks_uri "
        "(https://...; env LANES_OAUTH_JWKS)",
    )
    parser.add_argument(
        "--oauth-principal-claim",
        default=os.environ.get("LANES_OAUTH_PRINCIPAL_CLAIM", "sub"),
        help="the claim naming the user (env LANES_OAUTH_PRINCIPAL_CLAIM; default sub)",
    )
    parser.add_argument(
        "--max-session-seconds",
        type=float,
        default=float(os.environ.get("LANES_MAX_SESSION_SECONDS", "3600")),
        help="with --auth required: a stream a user opened ends after this long (a token's ends when it "
        "expires), and the client opens a new one, authenticated again, so a deleted user or a changed "
        "password stops open streams too (Kafka's connections.max.reauth.ms, KIP-368; env "
        "LANES_MAX_SESSION_SECONDS; default 3600; 0: only tokens' expiry)",
    )
    parser.add_argument(
        "--max-calls-per-address",
        type=int,
        default=int(os.environ.get("LANES_MAX_CALLS_PER_ADDRESS", MAX_CALLS_PER_ADDRESS)),
        help="calls in progress (long-polls and open streams included) one client address may have on the client "
        f"listener; more are refused with RESOURCE_EXHAUSTED (env LANES_MAX_CALLS_PER_ADDRESS; default "
        f"{MAX_CALLS_PER_ADDRESS}, a quarter of the server's)",
    )
    parser.add_argument(
        "--max-connections-per-address",
        type=int,
        default=int(os.environ.get("LANES_MAX_CONNECTIONS_PER_ADDRESS", MAX_CONNECTIONS_PER_ADDRESS)),
        help="connections with calls in progress one client address may have on the client listener (Kafka's "
        f"max.connections.per.ip; env LANES_MAX_CONNECTIONS_PER_ADDRESS; default {MAX_CONNECTIONS_PER_ADDRESS})",
    )
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        default=os.environ.get("LANES_LOG_FORMAT", "text"),
        help="log lines on stderr as text or as JSON objects (env LANES_LOG_FORMAT; default text)",
    )
    parser.set_defaults(service=prog.rsplit(".", 1)[-1])
    return parser


def service_tls(options: argparse.Namespace) -> TlsFiles | None:
    """The TLS files ``--tls-*`` name (None: plaintext), made the process's default
    (``lanes.rpc.tls.process_tls``): the service's server and every channel it opens use them."""
    if options.tls_ca is None:
        if options.tls_cert is not None or options.tls_key is not None:
            raise SystemExit(f"lanes.{options.service}: --tls-cert and --tls-key need --tls-ca")
        configure_tls(None)
        return None
    if options.tls_cert is None or options.tls_key is None:
        raise SystemExit(f"lanes.{options.service}: --tls-ca needs this node's --tls-cert and --tls-key")
    files = TlsFiles(options.tls_ca, options.tls_cert, options.tls_key)
    configure_tls(
        files, callers_verified=options.tls_client_auth == "required" or getattr(options, "internal_port", -1) >= 0
    )
    return files


def server_listeners(
    options: argparse.Namespace,
    image: Callable[[], MetadataImage],
    gate: Callable[[Listener], Sequence[grpc.aio.ServerInterceptor]] = lambda listener: (),
    metrics: ServiceMetrics | None = None,
) -> dict[str, Any]:
    """``start_server``'s listener arguments from a service's flags: who may read its metrics
    (``--metrics-token-file``, closed without one under ``--auth required``), TLS files, whether the
    client listener requires certificates, the internal listener (``--internal-port``), and on
    each the guard (``lanes.runtime.access.guard``, with ``--auth required``) reading users and ACLs
    from ``image``, on the client listener first the per-address limits
    (``--max-calls-per-address``, ``--max-connections-per-address``) and after the guard
    request-time quotas (``lanes.runtime.quotas.request_quota``,
    counting throttles in ``metrics``), then the service's own ``gate`` interceptors."""
    tls = process_tls()
    auth = options.auth == "required"
    internal_port = getattr(options, "internal_port", -1)
    if auth and (tls is None or (internal_port < 0 and options.tls_client_auth == "none")):
        raise SystemExit(
            f"lanes.{options.service}: --auth required needs TLS (--tls-ca, --tls-cert, --tls-key), and nodes "
            "need certificates: an --internal-port (mutual TLS), or --tls-client-auth required"
        )
    super_users = [name.strip() for name in options.super_users.split(";") if name.strip()]
    tokens = token_verifier(options, auth)
    # Users' password sessions (SCRAM logins), on this process: as long as --max-session-seconds
    # allows (a day without one), renewed by clients before they end.
    lifetime_s = options.max_session_seconds if options.max_session_seconds > 0 else 86_400.0
    sessions = PasswordSessions(image, lifetime_s=lifetime_s) if auth else None

    # Without --auth, a guard still keeps the cluster's own RPCs to nodes wherever certificates
    # can prove who calls: on the internal listener, and on the client one when a listener
    # verifies callers (else the cluster trusts its network).
    identities = tls is not None and (internal_port >= 0 or options.tls_client_auth == "required")

    if options.max_calls_per_address < 1 or options.max_connections_per_address < 1:
        raise SystemExit(f"lanes.{options.service}: per-address limits are at least 1")
    per_address = AddressLimits(options.max_calls_per_address, options.max_connections_per_address)

    def interceptors(listener: Listener) -> list[grpc.aio.ServerInterceptor]:
        if auth or identities:
            first: list[grpc.aio.ServerInterceptor] = [
                Guard(
                    image,
                    super_users,
                    listener=listener,
                    authorize=auth,
                    tokens=tokens,
                    max_session_s=options.max_session_seconds,
                    sessions=sessions if listener == "client" else None,
                )
            ]
        else:  # no principals: a client listener's callers are ANONYMOUS (quotas), an internal one's the cluster
            first = [AnonymousCallers()] if listener == "client" else []
        if listener != "internal":  # request time after the gate: a standby controller redirects at once
            return [per_address, *first, *gate(listener), RequestTimeQuota(image, metrics)]
        return [*first, *gate(listener)]

    certificate_port = getattr(options, "certificate_port", -1)
    certificates = None
    if certificate_port >= 0:
        if tls is None or not auth:
            raise SystemExit(f"lanes.{options.service}: --certificate-port needs TLS and --auth required")
        client_ca = getattr(options, "tls_client_ca", None) or tls.ca_file
        certificates = CertificateListener(certificate_port, client_ca, interceptors("certificates"))
    return {
        "tls": tls,
        "require_client_cert": options.tls_client_auth == "required",
        "interceptors": interceptors("client"),
        "internal": InternalListener(internal_port, interceptors("internal")) if internal_port >= 0 else None,
        "certificates": certificates,
        "sessions": sessions,
        "metrics_access": MetricsAccess(
            options.metrics_token_file, closed=auth, named_series=options.metrics_named_series == "on"
        ),
    }


def token_verifier(options: argparse.Namespace, auth: bool) -> TokenVerifier | None:
    """The bearer tokens the client listener accepts (``--oauth-*``), or None."""
    given = {"--oauth-issuer": options.oauth_issuer, "--oauth-audience": options.oauth_audience}
    given["--oauth-jwks"] = options.oauth_jwks
    if not any(given.values()):
        return None
    missing = [flag for flag, value in given.items() if not value]
    if missing or not auth:
        needed = f"also {', '.join(missing)}" if missing else "--auth required"
        raise SystemExit(f"lanes.{options.service}: OAuth bearer tokens need {needed}")
    return TokenVerifier(
        TokenSettings(options.oauth_issuer, options.oauth_audience, options.oauth_jwks, options.oauth_principal_claim)
    )


def advertised_host(options: argparse.Namespace) -> str:
    """The host this node registers for others to dial: ``--advertised-host``, else ``--host``.
    A wildcard address cannot be dialled, so it must come with an advertised name."""
    host = str(getattr(options, "advertised_host", None) or options.host)
    if host in WILDCARD_HOSTS:
        raise SystemExit(
            f"lanes.{options.service}: --host {options.host} listens on every interface and cannot be dialled; "
            "set --advertised-host (env LANES_ADVERTISED_HOST) to the name others reach this node by"
        )
    return host


def run_service(
    parse_args: Callable[[list[str] | None], argparse.Namespace],
    serve: Callable[[argparse.Namespace], Coroutine[Any, Any, None]],
    argv: list[str] | None,
) -> int:
    """The ``main`` of every service module: parse, configure logging, serve until signalled."""
    options = parse_args(argv)
    # Everything a service writes is its own: the metadata log and snapshots (users' stored keys),
    # segments, checkpoints: files 0600, directories 0700.
    os.umask(0o077)
    keep_freed_memory()  # megabyte fetch and produce buffers reused, not faulted in anew (decision 0046)
    node_id = next(
        (getattr(options, name) for name in ("broker_id", "coordinator_id", "node_id") if hasattr(options, name)), None
    )
    configure_logging(options.log_level, options.log_format, service=options.service, node_id=node_id)
    service_tls(options)  # before anything opens a channel
    try:
        asyncio.run(serve(options))
    except LanesError as exc:  # a refusal to start (a data directory in use, ...): said plainly
        logging.getLogger(options.service).error("not starting: %s", exc.message)
        return 2
    return 0
