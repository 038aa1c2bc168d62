"""``python -m lanes.controller``: run one controller (a voter of the quorum) until SIGTERM or SIGINT.

Prints one JSON line on stdout once it serves: ``{"service": "controller", "address": "host:port",
"node_id": N}`` (supervisors and tests wait for it). A controller alone in its quorum is active by
then; one of several may still wait for its peers.
Logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
from pathlib import Path

from lanes.clock import SystemClock
from lanes.controller.core import MAX_PARTITIONS
from lanes.controller.gate import CONTROLLER_SERVICE, QUORUM_SERVICE, ActiveControllerGate, add_quorum_to_server
from lanes.controller.metrics import ControllerMetrics
from lanes.controller.quorum import parse_voters
from lanes.controller.quorum_controller import QuorumController
from lanes.controller.service import ControllerService, add_to_server
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.serving.data_directory import DataDirectory
from lanes.runtime.serving.server import (
    ServiceBinding,
    advertised_host,
    run_service,
    serve_until_signalled,
    server_listeners,
    service_argument_parser,
    start_server,
)
from lanes.security import scram
from lanes.security.acls import NODE_NAME
from lanes.topic_configs import MIN_SEGMENT_BYTES
from lanes.v1 import common_pb2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = service_argument_parser(
        "python -m lanes.controller", "Run the Lanes controller.", default_port=9093, default_metrics_port=9401
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="where the metadata log and snapshots live")
    parser.add_argument("--node-id", type=int, default=0, help="the controller's node id (default 0)")
    parser.add_argument(
        "--voters",
        default="",
        help="the quorum, as id@host:port,... with this controller among them "
        "(KRaft's controller.quorum.voters; default: this controller alone)",
    )
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
        "--max-partitions",
        type=int,
        default=MAX_PARTITIONS,
        help=f"the most partitions the cluster may hold, internal topics included (default {MAX_PARTITIONS:,})",
    )
    parser.add_argument(
        "--min-segment-bytes",
        type=int,
        default=MIN_SEGMENT_BYTES,
        help="the smallest segment.bytes a topic may set (default 1 MiB, as Kafka 4.0)",
    )
    parser.add_argument(
        "--snapshot-every-records",
        type=int,
        default=10_000,
        help="snapshot the metadata after this many records, dropping the log below the snapshot before "
        "(KRaft's metadata.log.max.record.bytes.between.snapshots, in records)",
    )
    parser.add_argument(
        "--bootstrap-user",
        default=os.environ.get("LANES_BOOTSTRAP_USER") or None,
        help="a user created with the cluster (with --bootstrap-password-file), when it has no credential yet: "
        "the first administrator, to be named in --super-users (Kafka's kafka-storage format --add-scram; env "
        "LANES_BOOTSTRAP_USER)",
    )
    parser.add_argument(
        "--bootstrap-password-file",
        type=Path,
        default=os.environ.get("LANES_BOOTSTRAP_PASSWORD_FILE") or None,
        help="the file holding --bootstrap-user's password (env LANES_BOOTSTRAP_PASSWORD_FILE)",
    )
    parser.add_argument(
        "--offsets-topic-partitions",
        type=int,
        default=50,
        help="shards of __consumer_offsets, created when the first group coordinator registers",
    )
    return parser.parse_args(argv)


def bootstrap_users(options: argparse.Namespace) -> list[tuple[str, scram.ScramCredential]]:
    """The credential of ``--bootstrap-user``, salted now from its password file; none without one."""
    if options.bootstrap_user is None:
        return []
    if options.bootstrap_password_file is None:
        raise SystemExit("lanes.controller: --bootstrap-user needs --bootstrap-password-file")
    password = options.bootstrap_password_file.read_text().strip()
    problem = scram.credential_problem(
        options.bootstrap_user, scram.DEFAULT_MECHANISM, scram.DEFAULT_ITERATIONS, b"s" * 32
    )
    if problem is None and NODE_NAME.fullmatch(options.bootstrap_user):
        problem = f"{options.bootstrap_user!r} is a node's name: a user may not take it"
    if problem is not None or not password:
        raise SystemExit(f"lanes.controller: --bootstrap-user: {problem or 'the password file is empty'}")
    salt = os.urandom(32)
    salted = scram.salted_password(scram.DEFAULT_MECHANISM, password, salt, scram.DEFAULT_ITERATIONS)
    return [(options.bootstrap_user, scram.credential(scram.DEFAULT_MECHANISM, salt, scram.DEFAULT_ITERATIONS, salted))]


async def serve(options: argparse.Namespace) -> None:
    DataDirectory(options.data_dir)  # locked until the process ends: two controllers never share one
    clock = SystemClock()
    metrics = ServiceMetrics("controller")
    host = advertised_host(options)
    if options.internal_port == 0:
        raise SystemExit("lanes.controller: --internal-port must be a fixed port (the quorum's voters name it)")
    internal_port = max(options.internal_port, 0)
    voters = (
        parse_voters(options.voters) if options.voters else {options.node_id: f"{host}:{internal_port or options.port}"}
    )
    controller = QuorumController(
        options.data_dir,
        endpoint=common_pb2.Node(node_id=options.node_id, host=host, port=options.port, internal_port=internal_port),
        clock=clock,
        rng=random.Random(),
        voters=voters,
        session_timeout_ms=options.session_timeout_ms,
        heartbeat_interval_ms=options.heartbeat_interval_ms,
        default_partitions=options.default_partitions,
        default_replication_factor=options.default_replication_factor,
        leader_imbalance_check_interval_ms=options.leader_imbalance_check_interval_ms,
        leader_imbalance_per_broker_percentage=options.leader_imbalance_per_broker_percentage,
        offsets_topic_partitions=options.offsets_topic_partitions,
        snapshot_every_records=options.snapshot_every_records,
        max_partitions=options.max_partitions,
        min_segment_bytes=options.min_segment_bytes,
        metrics=ControllerMetrics(metrics),
        bootstrap_users=bootstrap_users(options),
    )
    service = ControllerService(controller)
    listeners = server_listeners(
        options,
        lambda: controller.image,
        gate=lambda listener: [ActiveControllerGate(controller, listener)],
        metrics=metrics,
    )
    running = await start_server(
        [
            ServiceBinding(CONTROLLER_SERVICE, lambda server: add_to_server(service, server)),
            ServiceBinding(QUORUM_SERVICE, lambda server: add_quorum_to_server(controller.quorum, server)),
        ],
        host=options.host,
        port=options.port,
        metrics=metrics,
        metrics_port=options.metrics_port,
        **listeners,
    )
    controller.endpoint.port, controller.endpoint.certificate_port = running.port, running.certificate_port
    await controller.start()
    if len(voters) == 1:  # a quorum of one elects itself at once: ready means active then
        while not controller.active:
            await asyncio.sleep(0.01)
    await serve_until_signalled(
        running,
        {"service": "controller", "address": running.address, "node_id": options.node_id},
        controller.stop,
        metrics=metrics,
    )


def main(argv: list[str] | None = None) -> int:
    return run_service(parse_args, serve, argv)


if __name__ == "__main__":
    sys.exit(main())
