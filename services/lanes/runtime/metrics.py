"""Prometheus metrics of one service process: its registry, its ``/metrics`` endpoint, and RPC
timing for every gRPC method it serves.

Every Lanes service (controller, broker, coordinator) owns one ``ServiceMetrics``:

- the registry holds the client library's process, platform and GC collectors (CPU, memory,
  open file descriptors, garbage collections), ``lanes_rpc_duration_seconds`` (a histogram per
  service, method and gRPC status code, fed by ``RpcMetricsInterceptor``), the service's own
  counters, and *snapshot collectors*;
- ``lanes_throttle_seconds_total`` {service, quota}: time calls of clients over their quotas
  waited before any work (Kafka's throttle time);
- a snapshot collector reports state the service already keeps (log offsets, ISR sizes, group
  states...) when Prometheus scrapes, not as it changes: the hot path pays nothing for it. The
  scrape runs in the HTTP server's thread while the state belongs to the service's event loop, so
  the snapshot function is run *on that loop* (``run_coroutine_threadsafe``) and sees a
  consistent state;
- ``serve_http(host, port, health)`` starts the endpoint (port 0 picks a free one) in a daemon
  thread, with ``/healthz?service=NAME``: 200 while the service (the whole process without a
  name) reports SERVING, 503 otherwise, 404 for a name it does not know. Kubernetes probes ask
  it there: the kubelet's gRPC probe speaks no TLS, and the gRPC listeners do.

Who may read ``/metrics`` (``MetricsAccess``): with a token file (``--metrics-token-file``), a
scrape must carry ``Authorization: Bearer <token>`` (compared in constant time; the file is read
again when it changes, so the token rotates without a restart); a service with ``--auth
required`` and no token file answers 403 (metrics name topics, groups and their offsets: a
cluster that asks every client who it is does not tell anyone who asks). ``/healthz`` stays open:
probes, and it tells nothing but SERVING. Series labelled with a ``topic`` or a ``group`` are
served only where the operator asks for them (``--metrics-named-series on``); without, the
scrape leaves them out.

Conventions: names start with ``lanes_``, values are in base units (seconds, bytes), counters end
in ``_total``. Label values are bounded: topics and partitions (per-partition series can be
switched off with ``--metrics-partition-series off``), groups, methods, error codes — never
client ids or offsets.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, make_server

import grpc
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import ThreadingWSGIServer, make_wsgi_app
from prometheus_client.gc_collector import GCCollector
from prometheus_client.metrics_core import Metric
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from lanes.rpc.watched_file import WatchedFile
from lanes.runtime.interceptors import CallInterceptor, Wrappers

_log = logging.getLogger(__name__)

#: RPC latency buckets, seconds: from a loopback round trip (~0.5 ms) to a long-poll's end.
RPC_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: How long a scrape waits for the service's loop to take its snapshot.
SNAPSHOT_TIMEOUT_S = 5.0

Snapshot = Callable[[], Awaitable[Iterable[Metric]]]


#: How often the metrics server's thread looks for a shutdown request: ``stop`` waits up to this
#: long (the standard library's 0.5 s made every process's exit half a second slower).
_SHUTDOWN_POLL_S = 0.05


class _SnapshotCollector(Collector):
    """Runs ``snapshot`` on ``loop`` at each scrape; a snapshot that fails is logged and skipped
    (the rest of the scrape still answers)."""

    def __init__(self, snapshot: Snapshot, loop: asyncio.AbstractEventLoop) -> None:
        self._snapshot = snapshot
        self._loop = loop

    def describe(self) -> list[Metric]:
        """Nothing up front: without ``describe`` the registry would ``collect`` at registration,
        which waits for the loop that is registering (a deadlock until the timeout)."""
        return []

    def collect(self) -> Iterator[Metric]:
        async def take() -> list[Metric]:
            return list(await self._snapshot())

        try:
            metrics = asyncio.run_coroutine_threadsafe(take(), self._loop).result(SNAPSHOT_TIMEOUT_S)
        except Exception:  # a scrape must not take the endpoint down
            _log.exception("metrics snapshot failed")
            return
        yield from metrics


#: Labels whose values are names users chose: series with them are served only when asked for.
NAMED_LABELS = frozenset({"topic", "group"})
#: The shortest metrics token accepted (a guessable token is no protection).
MIN_TOKEN_CHARS = 16


def _token(text: str) -> str:
    token = text.strip()
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise ValueError(f"a metrics token is one word of at least {MIN_TOKEN_CHARS} characters")
    return token


@dataclass(frozen=True)
class MetricsAccess:
    """Who may read ``/metrics`` and what it shows (see the module docstring): ``token_file``
    (None: no token), ``closed`` (no token and none may read: ``--auth required``),
    ``named_series`` (serve series labelled with topics and groups)."""

    token_file: Path | None = None
    closed: bool = False
    named_series: bool = True

    def checker(self) -> Callable[[str], str | None]:
        """``check(authorization header)``: None when the scrape may read, else why not."""
        if self.token_file is None:
            closed = "this service requires authentication: it serves metrics with a --metrics-token-file only"
            return lambda header: closed if self.closed else None
        token = WatchedFile(self.token_file, _token)
        token.current()  # an unusable file fails at start, not at the first scrape

        def check(header: str) -> str | None:
            expected = f"Bearer {token.current()}".encode()
            return None if hmac.compare_digest(header.encode(), expected) else "a bearer token is required"

        return check


#: Metrics open to anyone, every series served (tests, and services without security).
OPEN_METRICS = MetricsAccess()


class _WithoutNamedSeries(Collector):
    """``registry``'s metrics without the samples labelled by ``NAMED_LABELS``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        for family in self._registry.collect():
            family.samples = [sample for sample in family.samples if NAMED_LABELS.isdisjoint(sample.labels)]
            yield family


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr: Prometheus and probes ask every few seconds."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ServiceMetrics:
    """The metrics of one service process (``service``: controller, broker, coordinator)."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.rpc_duration = Histogram(
            "lanes_rpc_duration_seconds",
            "Time to answer a gRPC request, by service, method and status code (the count is the request rate).",
            ["service", "method", "code"],
            buckets=RPC_BUCKETS_S,
            registry=self.registry,
        )
        self.throttle_seconds = Counter(
            "lanes_throttle_seconds",
            "Time calls of clients over their quotas were held before any work, by service and quota.",
            ["service", "quota"],
            registry=self.registry,
        )
        self._http: Any = None

    def observe_rpc(self, method: str, seconds: float, code: grpc.StatusCode = grpc.StatusCode.OK) -> None:
        """Record one answered request of ``method``."""
        self.rpc_duration.labels(self.service, method, code.name).observe(seconds)

    def throttled(self, quota: str, waited_ms: int) -> None:
        """Calls under ``quota`` were held ``waited_ms`` (a client over it: KIP-219's mute)."""
        self.throttle_seconds.labels(self.service, quota).inc(waited_ms / 1000)

    def add_snapshot(self, snapshot: Snapshot) -> None:
        """Report what ``snapshot()`` (run on the calling loop) returns at every scrape."""
        self.registry.register(_SnapshotCollector(snapshot, asyncio.get_running_loop()))

    def interceptor(self) -> RpcMetricsInterceptor:
        return RpcMetricsInterceptor(self)

    def serve_http(
        self,
        host: str,
        port: int,
        health: Callable[[str], bool | None] = lambda name: None,
        access: MetricsAccess = OPEN_METRICS,
    ) -> str:
        """Serve ``/metrics`` to those ``access`` admits and ``/healthz`` to anyone
        (``health(name)``: whether service ``name`` is serving, None when unknown) on
        ``host:port`` (0: a free port) in a daemon thread; return the address it listens on."""
        registry = self.registry
        if not access.named_series:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(_WithoutNamedSeries(self.registry))
        metrics = make_wsgi_app(registry)
        refusal = access.checker()

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") != "/healthz":
                refused = refusal(str(environ.get("HTTP_AUTHORIZATION", "")))
                if refused is not None:
                    status = "401 Unauthorized" if access.token_file is not None else "403 Forbidden"
                    start_response(
                        status, [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Bearer realm="lanes-metrics"')]
                    )
                    return [f"{refused}\n".encode()]
                return metrics(environ, start_response)  # type: ignore[no-any-return]
            name = parse_qs(environ.get("QUERY_STRING", "")).get("service", [""])[0]
            serving = health(name)
            status, body = (
                ("404 Not Found", b"UNKNOWN\n")
                if serving is None
                else ("200 OK", b"SERVING\n")
                if serving
                else ("503 Service Unavailable", b"NOT_SERVING\n")
            )
            start_response(status, [("Content-Type", "text/plain")])
            return [body]

        self._http = make_server(host, port, app, ThreadingWSGIServer, handler_class=_QuietHandler)
        threading.Thread(
            target=self._http.serve_forever, args=(_SHUTDOWN_POLL_S,), daemon=True, name="metrics-http"
        ).start()
        return f"{host}:{self._http.server_port}"

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None


class RpcMetricsInterceptor(CallInterceptor):
    """Times every unary-unary call into ``lanes_rpc_duration_seconds``. Streaming calls are
    long-lived (a produce stream, a metadata watch): the services time the requests inside them."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self._metrics = metrics

    def wrappers(self, method: str) -> Wrappers:
        name = method.rsplit("/", 1)[-1]
        return {"unary_unary": lambda behavior: self._timed(name, behavior)}

    def _timed(self, method: str, behavior: Any) -> Any:
        metrics = self._metrics

        async def timed(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = time.perf_counter()
            code = grpc.StatusCode.UNKNOWN  # an exception the handler did not turn into a status
            try:
                answer = await behavior(request, context)
            except asyncio.CancelledError:
                code = grpc.StatusCode.CANCELLED
                raise
            except Exception:
                code = context.code() or code  # context.abort sets it
                raise
            else:
                code = context.code() or grpc.StatusCode.OK  # None unless the handler set one
                return answer
            finally:
                metrics.observe_rpc(method, time.perf_counter() - started, code)

        return timed
