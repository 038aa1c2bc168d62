"""``python -m lanes.coordinator``: run a group coordinator until SIGTERM or SIGINT.

Prints one JSON line on stdout once it serves: ``{"service": "coordinator", "coordinator_id": N,
"address": "host:port"}``. Logs go to stderr. On SIGTERM it asks the controller to move its
shards to other coordinators, then stops.
"""

from __future__ import annotations

import argparse
import sys

from lanes.clock import SystemClock
from lanes.coordinator.core import GroupConfig
from lanes.coordinator.metrics import CoordinatorMetrics
from lanes.coordinator.service import GroupCoordinatorService, add_to_server
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.serving.server import (
    ServiceBinding,
    advertised_host,
    run_service,
    serve_until_signalled,
    server_listeners,
    service_argument_parser,
    start_server,
)
from lanes.v1 import common_pb2, coordinator_pb2

COORDINATOR_SERVICE = coordinator_pb2.DESCRIPTOR.services_by_name["GroupCoordinator"].full_name
_DEFAULTS = GroupConfig()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = service_argument_parser(
        "python -m lanes.coordinator", "Run a Lanes group coordinator.", default_port=9094, default_metrics_port=9403
    )
    parser.add_argument("--coordinator-id", type=int, required=True, help="this coordinator's id (stable)")
    parser.add_argument(
        "--controller", required=True, help="the controllers, host:port,... (some or all: the active one is found)"
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=_DEFAULTS.session_timeout_ms,
        help="remove a member silent this long (group.consumer.session.timeout.ms)",
    )
    parser.add_argument(
        "--heartbeat-interval-ms",
        type=int,
        default=_DEFAULTS.heartbeat_interval_ms,
        help="how often members heartbeat (group.consumer.heartbeat.interval.ms)",
    )
    parser.add_argument("--max-group-size", type=int, default=_DEFAULTS.max_group_size, help="most members per group")
    parser.add_argument(
        "--offsets-retention-minutes",
        type=int,
        default=_DEFAULTS.offsets_retention_ms // 60_000,
        help="keep an empty group's offsets this long (offsets.retention.minutes)",
    )
    return parser.parse_args(argv)


async def serve(options: argparse.Namespace) -> None:
    config = GroupConfig(
        session_timeout_ms=options.session_timeout_ms,
        heartbeat_interval_ms=options.heartbeat_interval_ms,
        max_group_size=options.max_group_size,
        offsets_retention_ms=options.offsets_retention_minutes * 60_000,
    )
    endpoint = common_pb2.Node(node_id=options.coordinator_id, host=advertised_host(options), port=options.port)
    metrics = ServiceMetrics("coordinator")
    service = GroupCoordinatorService(
        options.coordinator_id,
        controller_addresses=options.controller,
        endpoint=endpoint,
        clock=SystemClock(),
        config=config,
        metrics=CoordinatorMetrics(metrics),
    )
    running = await start_server(
        [ServiceBinding(COORDINATOR_SERVICE, lambda server: add_to_server(service, server))],
        host=options.host,
        port=options.port,
        metrics=metrics,
        metrics_port=options.metrics_port,
        **server_listeners(options, lambda: service.link.image, metrics=metrics),
    )
    endpoint.port, endpoint.internal_port = running.port, running.internal_port  # before registering
    endpoint.certificate_port = running.certificate_port
    await service.start()
    await serve_until_signalled(
        running,
        {"service": "coordinator", "coordinator_id": options.coordinator_id, "address": running.address},
        service.stop,
        metrics=metrics,
    )


def main(argv: list[str] | None = None) -> int:
    return run_service(parse_args, serve, argv)


if __name__ == "__main__":
    sys.exit(main())
