"""``python -m lanes.controller``: run the controller service until SIGTERM or SIGINT.

Prints one JSON line on stdout once it serves: ``{"service": "controller", "address": "host:port",
"cluster_id": ...}`` (supervisors and tests wait for it). Logs go to stderr.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from lanes.clock import SystemClock
from lanes.controller.metrics import ControllerMetrics
from lanes.controller.service import ControllerService, add_to_server
from lanes.runtime.data_directory import DataDirectory
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.server import (
    ServiceBinding,
    advertised_host,
    run_service,
    serve_until_signalled,
    service_argument_parser,
    start_server,
)
from lanes.v1 import common_pb2, controller_pb2

CONTROLLER_SERVICE = controller_pb2.DESCRIPTOR.services_by_name["Controller"].full_name


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = service_argument_parser(
        "python -m lanes.controller", "Run the Lanes controller.", default_port=9093, default_metrics_port=9401
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="where the metadata log and snapshots live")
    parser.add_argument("--node-id", type=int, default=0, help="the controller's node id (default 0)")
    parser.add_argument("--session-timeout-ms", type=int, default=6000, help="fence brokers silent this long")
    parser.add_argument("--heartbeat-interval-ms", type=int, default=1000, help="how often brokers heartbeat")
    parser.add_argument("--default-partitions", type=int, default=1, help="num.partitions for new topics")
    parser.add_argument("--default-replication-factor", type=int, default=1, help="default.replication.factor")
    parser.add_argument(
        "--leader-imbalance-check-interval-ms",
        type=int,
        default=300_000,
        help="how often leadership goes back to preferred replicas (leader.imbalance.check.interval; 0: never)",
    )
    parser.add_argument(
        "--leader-imbalance-per-broker-percentage",
        type=int,
        default=10,
        help="rebalance a broker whose preferred partitions are led elsewhere above this percentage",
    )
    parser.add_argument(
        "--offsets-topic-partitions",
        type=int,
        default=50,
        help="shards of __consumer_offsets, created when the first group coordinator registers",
    )
    return parser.parse_args(argv)


async def serve(options: argparse.Namespace) -> None:
    DataDirectory(options.data_dir)  # locked until the process ends: two controllers never share one
    clock = SystemClock()
    metrics = ServiceMetrics("controller")
    service = ControllerService(
        options.data_dir,
        endpoint=common_pb2.Node(node_id=options.node_id, host=advertised_host(options), port=options.port),
        clock=clock,
        rng=random.Random(),
        session_timeout_ms=options.session_timeout_ms,
        heartbeat_interval_ms=options.heartbeat_interval_ms,
        default_partitions=options.default_partitions,
        default_replication_factor=options.default_replication_factor,
        leader_imbalance_check_interval_ms=options.leader_imbalance_check_interval_ms,
        leader_imbalance_per_broker_percentage=options.leader_imbalance_per_broker_percentage,
        offsets_topic_partitions=options.offsets_topic_partitions,
        metrics=ControllerMetrics(metrics),
    )
    await service.start()
    running = await start_server(
        [ServiceBinding(CONTROLLER_SERVICE, lambda server: add_to_server(service, server))],
        host=options.host,
        port=options.port,
        metrics=metrics,
    )
    service.endpoint.port = running.port
    await serve_until_signalled(
        running,
        {"service": "controller", "address": running.address, "cluster_id": service.image.cluster_id},
        service.stop,
        metrics=metrics,
        metrics_port=options.metrics_port,
    )


def main(argv: list[str] | None = None) -> int:
    return run_service(parse_args, serve, argv)


if __name__ == "__main__":
    sys.exit(main())
