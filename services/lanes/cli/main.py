"""The ``lanes`` command. So far: ``lanes up`` (the local cluster), ``lanes controller`` and
``lanes broker`` (one service each); the rest of the CLI arrives with issue #6."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from lanes.runtime.local_cluster import LocalCluster


def up(options: argparse.Namespace) -> int:
    """Run a controller, N brokers and M group coordinators until Ctrl-C or SIGTERM."""
    cluster = LocalCluster(
        options.data_dir, brokers=options.brokers, coordinators=options.coordinators, port_base=options.port_base
    )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        description = cluster.start()
    except RuntimeError as exc:
        print(f"lanes up failed: {exc}", file=sys.stderr)
        return 1
    print(f"bootstrap: {description['bootstrap']}")
    print(f"controller: {description['controller']}")
    print(f"coordinators: {','.join(c['address'] for c in description['coordinators'])}")
    print(f"{cluster.health()}  (cluster.json in {options.data_dir}; Ctrl-C to stop)", flush=True)
    try:
        while not stop.wait(1.0):
            for name in cluster.dead_processes():
                print(f"warning: {name} exited; see {options.data_dir}/logs/{name}.log", file=sys.stderr, flush=True)
    finally:
        cluster.stop()
    print("stopped", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lanes", description="Lanes: partitioned, replicated event logs.")
    commands = parser.add_subparsers(dest="command", required=True)
    up_parser = commands.add_parser("up", help="run a local cluster of real processes until Ctrl-C")
    up_parser.add_argument(
        "--data-dir", type=Path, default=Path(".lanes"), help="where everything lives (default ./.lanes)"
    )
    up_parser.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    up_parser.add_argument("--coordinators", type=int, default=1, help="number of group coordinators (default 1)")
    up_parser.add_argument("--port-base", type=int, default=9092, help="first broker's port (default 9092)")
    up_parser.set_defaults(run=up)
    commands.add_parser("controller", help="run the controller (see python -m lanes.controller --help)", add_help=False)
    commands.add_parser("broker", help="run a broker (see python -m lanes.broker --help)", add_help=False)
    commands.add_parser(
        "coordinator", help="run a group coordinator (see python -m lanes.coordinator --help)", add_help=False
    )
    arguments = sys.argv[1:] if argv is None else argv
    if arguments and arguments[0] in {"controller", "broker", "coordinator"}:
        if arguments[0] == "controller":
            from lanes.controller.__main__ import main as service_main  # noqa: PLC0415 - one service per process
        elif arguments[0] == "broker":
            from lanes.broker.__main__ import main as service_main  # noqa: PLC0415
        else:
            from lanes.coordinator.__main__ import main as service_main  # noqa: PLC0415
        return service_main(arguments[1:])
    options = parser.parse_args(arguments)
    return int(options.run(options))


if __name__ == "__main__":
    sys.exit(main())
