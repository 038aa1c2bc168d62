"""The ``lanes`` command: one grammar for the local cluster, topics, records and groups.

Every command takes ``--bootstrap``, ``--output table|json`` and ``--debug``; errors are one
line on stderr with a documented exit code (``lanes.cli.common``). ``lanes controller|broker|
coordinator`` run one service each (their own flags; see ``python -m lanes.broker --help``).
"""

from __future__ import annotations

import signal
import sys

from lanes.cli import bench, cluster, completion, console, consume, demo, groups, local, produce, security, topics
from lanes.cli.common import Parser, run_command

SERVICES = {"controller", "broker", "coordinator"}


def build_parser() -> Parser:
    """The whole ``lanes`` parser."""
    parser = Parser(
        prog="lanes",
        description="Lanes: partitioned, replicated event logs. Every command has --help with examples.",
        epilog="exit codes: 0 ok, 1 refused by the cluster, 2 bad usage, 3 not found, 4 cluster unreachable, "
        "70 a bug in Lanes, 130 interrupted",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    local.register(commands)
    cluster.register(commands)
    topics.register(commands)
    produce.register(commands)
    consume.register(commands)
    groups.register(commands)
    security.register(commands)
    console.register(commands)
    bench.register(commands)
    demo.register(commands)
    completion.register(commands, build_parser)
    for service in sorted(SERVICES):
        commands.add_parser(
            service, help=f"run a {service} process (see python -m lanes.{service} --help)", add_help=False
        )
    return parser


def _service_main(name: str, arguments: list[str]) -> int:
    if name == "controller":
        from lanes.controller.__main__ import main  # noqa: PLC0415 - one service per process
    elif name == "broker":
        from lanes.broker.__main__ import main  # noqa: PLC0415
    else:
        from lanes.coordinator.__main__ import main  # noqa: PLC0415
    return main(arguments)


def main(argv: list[str] | None = None) -> int:
    """Run ``lanes`` with ``argv`` (default: the process's arguments); return the exit code."""
    arguments = sys.argv[1:] if argv is None else argv
    if arguments and arguments[0] in SERVICES:
        return _service_main(arguments[0], arguments[1:])
    options = build_parser().parse_args(arguments)
    signal.signal(signal.SIGTERM, _interrupt)  # like Ctrl-C: consumers leave their group, producers flush
    return run_command(options, options.run)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
