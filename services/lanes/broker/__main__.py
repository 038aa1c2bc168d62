"""``python -m lanes.broker``: run a broker until SIGTERM or SIGINT.

Prints one JSON line on stdout once it serves: ``{"service": "broker", "broker_id": N,
"address": "host:port"}``. Logs go to stderr. On SIGTERM it stops accepting requests, finishes
those in flight, hands its leaderships away (controlled shutdown) and closes its logs cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from lanes.broker.byte_rate_quotas import ByteRateQuotas
from lanes.broker.fetch_limits import FETCH_MAX_BYTES, FETCH_MEMORY_BYTES, REPLICA_FETCH_RESPONSE_MAX_BYTES
from lanes.broker.forwarding import ControllerForwarding, GroupLink
from lanes.broker.metrics import BrokerMetrics
from lanes.broker.node import PRODUCER_ID_EXPIRATION_MS, BrokerNode
from lanes.broker.service import BrokerService, add_to_server
from lanes.clock import SystemClock
from lanes.kafka.access import KafkaAccess
from lanes.kafka.apis import KafkaApis
from lanes.kafka.listener import KafkaListener
from lanes.kafka.sasl import KafkaAuthentication
from lanes.rpc.channels import MAX_MESSAGE_BYTES
from lanes.rpc.tls import process_tls
from lanes.runtime.access.password_sessions import PasswordSessions
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.serving.server import (
    RunningServer,
    ServerLimits,
    ServiceBinding,
    advertised_host,
    run_service,
    serve_until_signalled,
    server_listeners,
    service_argument_parser,
    start_server,
    token_verifier,
)
from lanes.v1 import broker_pb2, common_pb2

#: A broker's largest request by default: many 1 MiB batches in one produce request.
BROKER_MAX_REQUEST_BYTES = 16 * 1024 * 1024
#: The largest fetch answer a broker may be configured for: a gRPC message, less room for the
#: answer's own fields.
MAX_FETCH_ANSWER_BYTES = MAX_MESSAGE_BYTES - 4 * 1024 * 1024

BROKER_SERVICE = broker_pb2.DESCRIPTOR.services_by_name["Broker"].full_name


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = service_argument_parser(
        "python -m lanes.broker", "Run a Lanes broker.", default_port=9092, default_metrics_port=9402
    )
    parser.add_argument("--broker-id", type=int, required=True, help="this broker's id (stable across restarts)")
    parser.add_argument("--data-dir", type=Path, required=True, help="where partition logs live")
    parser.add_argument(
        "--controller", required=True, help="the controllers, host:port,... (some or all: the active one is found)"
    )
    parser.add_argument("--rack", default="", help="this broker's rack, for rack-aware placement")
    parser.add_argument(
        "--replica-lag-time-max-ms",
        type=int,
        default=30_000,
        help="a follower not caught up for this long leaves the ISR (replica.lag.time.max.ms)",
    )
    parser.add_argument(
        "--producer-id-expiration-ms",
        type=int,
        default=PRODUCER_ID_EXPIRATION_MS,
        help="an idempotent producer that wrote nothing to a partition for this long is forgotten there "
        "(producer.id.expiration.ms; default one day)",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        default=BROKER_MAX_REQUEST_BYTES,
        help="the largest request accepted, a produce request above all (default 16 MiB; keep it above every "
        "topic's max.message.bytes)",
    )
    parser.add_argument(
        "--fetch-max-bytes",
        type=int,
        default=FETCH_MAX_BYTES,
        help="the largest answer to a consumer's fetch, whatever it asks (fetch.max.bytes; default 55 MiB)",
    )
    parser.add_argument(
        "--replica-fetch-response-max-bytes",
        type=int,
        default=REPLICA_FETCH_RESPONSE_MAX_BYTES,
        help="the largest answer to a follower's fetch (replica.fetch.response.max.bytes; default 10 MiB)",
    )
    parser.add_argument(
        "--fetch-memory-bytes",
        type=int,
        default=FETCH_MEMORY_BYTES,
        help="record bytes all consumer fetches may hold at once; beyond it fetches wait (default 128 MiB)",
    )
    parser.add_argument(
        "--metrics-partition-series",
        choices=("on", "off"),
        default=os.environ.get("LANES_METRICS_PARTITION_SERIES", "on"),
        help="report per-partition series (offsets, size, ISR, lag); off keeps a broker with many partitions' "
        "scrapes small (env LANES_METRICS_PARTITION_SERIES; default on)",
    )
    parser.add_argument(
        "--kafka-port",
        type=int,
        default=-1,
        help="also serve Kafka's wire protocol on this port, for Kafka's own clients and tools (0: any free port; "
        "default -1: none); with the client listener's TLS, and under --auth required SASL (SCRAM-SHA-512, "
        "SCRAM-SHA-256, OAUTHBEARER with --oauth-*) or a client certificate",
    )
    options = parser.parse_args(argv)
    for flag, value in (
        ("--fetch-max-bytes", options.fetch_max_bytes),
        ("--replica-fetch-response-max-bytes", options.replica_fetch_response_max_bytes),
    ):
        if not 0 < value <= MAX_FETCH_ANSWER_BYTES:  # the answer must fit a gRPC message
            parser.error(f"{flag} must be between 1 and {MAX_FETCH_ANSWER_BYTES} (an answer fits one gRPC message)")
    if options.fetch_memory_bytes <= 0 or options.max_request_bytes <= 0:
        parser.error("--fetch-memory-bytes and --max-request-bytes must be positive")
    return options


#: The health service a broker pod's readiness probe asks (gRPC probe ``service``).
IN_SYNC_HEALTH = "lanes.broker.InSync"


async def serve(options: argparse.Namespace) -> None:
    endpoint = common_pb2.Node(
        node_id=options.broker_id, host=advertised_host(options), port=options.port, rack=options.rack
    )
    metrics = ServiceMetrics("broker")
    node = BrokerNode(
        options.broker_id,
        options.data_dir,
        controller_addresses=options.controller,
        endpoint=endpoint,
        clock=SystemClock(),
        replica_lag_time_max_ms=options.replica_lag_time_max_ms,
        producer_id_expiration_ms=options.producer_id_expiration_ms,
        metrics=BrokerMetrics(metrics, partition_series=options.metrics_partition_series == "on"),
        fetch_memory_bytes=options.fetch_memory_bytes,
    )
    quotas = ByteRateQuotas(node.clock, metrics)
    service = BrokerService(
        node,
        fetch_max_bytes=options.fetch_max_bytes,
        replica_fetch_response_max_bytes=options.replica_fetch_response_max_bytes,
        quotas=quotas,
    )
    listeners = server_listeners(options, lambda: node.image, metrics=metrics)
    running = await start_server(
        [ServiceBinding(BROKER_SERVICE, lambda server: add_to_server(service, server))],
        host=options.host,
        port=options.port,
        metrics=metrics,
        metrics_port=options.metrics_port,
        **listeners,
        limits=ServerLimits(max_request_bytes=options.max_request_bytes),
    )
    endpoint.port, endpoint.internal_port = running.port, running.internal_port  # before registering
    endpoint.certificate_port = running.certificate_port
    kafka: KafkaListener | None = None
    # the Kafka face's group and admin requests, forwarded to the coordinators and the active controller
    groups = GroupLink(lambda: node.image)
    controller = ControllerForwarding(lambda: node.link.controllers.address)
    if options.kafka_port >= 0:  # (listening before registering, so its port is advertised)
        kafka = kafka_listener(options, node, quotas, listeners["sessions"], groups, controller)
        await kafka.start()
        endpoint.kafka_port = kafka.port
    await node.start()
    reporting = asyncio.create_task(report_in_sync(node, running))

    async def stop() -> None:
        reporting.cancel()
        if kafka is not None:
            await kafka.stop()
        await groups.close()
        await controller.close()
        await node.stop()

    ready: dict[str, object] = {"service": "broker", "broker_id": options.broker_id, "address": running.address}
    if kafka is not None:
        ready["kafka_address"] = f"{endpoint.host}:{kafka.port}"
    await serve_until_signalled(
        running,
        ready,
        stop,
        metrics=metrics,
        hand_off=node.hand_off,
    )


def kafka_listener(  # noqa: PLR0917 - the listener's parts, each built by serve
    options: argparse.Namespace,
    node: BrokerNode,
    quotas: ByteRateQuotas,
    sessions: PasswordSessions | None,
    groups: GroupLink,
    controller: ControllerForwarding,
) -> KafkaListener:
    """The Kafka listener the flags ask for: the client listener's TLS (a client certificate the
    CA signed required with ``--tls-client-auth required``), its users and ACLs under
    ``--auth required`` (password sessions of this process, bearer tokens with ``--oauth-*``), the
    byte-rate quotas the gRPC face counts in, the broker's request and fetch limits."""
    auth = options.auth == "required"
    tls = process_tls()
    authentication = KafkaAuthentication(
        required=auth,
        sessions=sessions,
        tokens=token_verifier(options, auth),
        max_session_s=options.max_session_seconds,
    )
    super_users = [name.strip() for name in options.super_users.split(";") if name.strip()]
    apis = KafkaApis(
        node,
        quotas=quotas,
        authentication=authentication,
        access=KafkaAccess(lambda: node.image, super_users, authorize=auth),
        groups=groups,
        controller=controller,
        fetch_max_bytes=options.fetch_max_bytes,
    )
    context = None
    if tls is not None:
        context = tls.ssl_server_context(require_client_cert=options.tls_client_auth == "required")
    return KafkaListener(
        apis,
        options.host,
        options.kafka_port,
        max_request_bytes=options.max_request_bytes,
        ssl_context=context,
        max_connections_per_address=options.max_connections_per_address,
    )


async def report_in_sync(node: BrokerNode, running: RunningServer, interval_s: float = 1.0) -> None:
    """Keep the ``lanes.broker.InSync`` health status current (``BrokerNode.in_sync``)."""
    while True:
        await running.set_serving(node.in_sync(), IN_SYNC_HEALTH)
        await asyncio.sleep(interval_s)


def main(argv: list[str] | None = None) -> int:
    return run_service(parse_args, serve, argv)


if __name__ == "__main__":
    sys.exit(main())
