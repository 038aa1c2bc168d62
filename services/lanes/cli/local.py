"""``lanes up`` and ``lanes down``: the local cluster of real processes.

``lanes up`` runs in the foreground until Ctrl-C (``make up``); ``lanes up --detach`` starts the
same supervisor in the background (its output in ``<data-dir>/logs/up.log``) and returns once the
cluster is ready. ``lanes down`` stops the cluster started from a data directory: SIGTERM to the
supervisor (which stops coordinators, brokers and the controller cleanly), waiting for every
process of ``cluster.json`` to exit; processes left by a supervisor that was killed are stopped
directly.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from lanes.cli.common import EXIT_REFUSED, add_command, emit, progress
from lanes.cli.values import UsageError, positive_int
from lanes.deadline import Deadline, attempts_blocking
from lanes.local.cluster import CLUSTER_FILE, LocalCluster
from lanes.runtime.access.tokens import TokenSettings


def read_cluster_file(data_dir: Path) -> dict[str, Any] | None:
    try:
        document: dict[str, Any] = json.loads((data_dir / CLUSTER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return document


def is_lanes_process(pid: int) -> bool:
    """Whether ``pid`` is alive and a Lanes process (not an unrelated one that reused the pid)."""
    try:
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"lanes" in command_line


def _service_pids(description: dict[str, Any]) -> list[int]:
    nodes = description.get("coordinators", []) + description.get("brokers", []) + description.get("controllers", [])
    return [int(node["pid"]) for node in nodes] + (
        [int(description["console"]["pid"])] if "console" in description else []
    )


def _render_up(d: dict[str, Any]) -> str:
    metrics = [  # in port order: brokers, controllers, coordinators
        *(b.get("metrics") for b in d["brokers"]),
        *(c.get("metrics") for c in d.get("controllers", [])),
        *(c.get("metrics") for c in d["coordinators"]),
    ]
    user = d.get("user")
    security = (
        f"security: TLS (CA {d['tls']['ca']}); user {user['name']}, password in {user['password_file']}"
        + (f"; metrics token in {d['metrics_token_file']}" if d.get("metrics_token_file") else "")
        if user
        else f"security: mutual TLS (CA {d['tls']['ca']}), no users"
        if d.get("tls")
        else "security: none (--insecure)"
    )
    if d.get("certificate_bootstrap"):
        security += f"\ncertificate listeners: {d['certificate_bootstrap']} (lanes users issue-certificate USER)"
    if d.get("kafka_bootstrap"):
        security += f"\nKafka clients: {d['kafka_bootstrap']}" + (
            " (SASL_SSL, SCRAM-SHA-512, the same users; docs/kafka-compatibility.md)"
            if user
            else " (SSL with a client certificate of the cluster's CA)"
            if d.get("tls")
            else " (PLAINTEXT)"
        )
    return (
        f"bootstrap: {d['bootstrap']}\ncontroller: {d['controller']}\n"
        f"coordinators: {','.join(c['address'] for c in d['coordinators'])}\n"
        f"metrics (Prometheus): {','.join(m for m in metrics if m)}  (lanes status --watch)\n{security}"
        + (
            f"\nconsole: {d['console']['url']}" + ("  (log in as a Lanes user)" if user else "")
            if d.get("console")
            else ""
        )
    )


def up(options: argparse.Namespace) -> int:
    """Run a controller, N brokers and M group coordinators (until Ctrl-C, or detached)."""
    running = read_cluster_file(options.data_dir)
    if running and is_lanes_process(int(running["pid"])):
        print(
            f"lanes: a cluster is already running from {options.data_dir} (pid {running['pid']}, "
            f"bootstrap {running['bootstrap']}); stop it with: lanes down --data-dir {options.data_dir}",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    if options.detach:
        return _up_detached(options)
    cluster = LocalCluster(
        options.data_dir,
        brokers=options.brokers,
        coordinators=options.coordinators,
        controllers=options.controllers,
        port_base=options.port_base,
        tls=not options.insecure,
        auth=not options.insecure and not options.no_auth,
        oauth=_oauth(options),
        certificate_listeners=_certificate_listeners(options),
        console=not options.no_console,
        console_port=options.console_port,
        kafka=not options.no_kafka,
    )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGHUP: the terminal closed
        signal.signal(signum, lambda *_: stop.set())
    try:
        description = cluster.start()
    except RuntimeError as exc:
        print(f"lanes: the cluster did not start: {exc}", file=sys.stderr)
        cluster.stop()
        return EXIT_REFUSED
    emit(options, description, _render_up)
    if options.output == "table":
        print(f"{cluster.health()}  (cluster.json in {options.data_dir}; Ctrl-C to stop)", flush=True)
    sys.stdout.flush()
    try:
        while not stop.wait(1.0):
            for name in cluster.dead_processes():
                print(f"warning: {name} exited; see {options.data_dir}/logs/{name}.log", file=sys.stderr, flush=True)
    finally:
        cluster.stop()
    if options.output == "table":
        print("stopped", flush=True)
    return 0


_OAUTH_FLAGS = ("--oauth-issuer", "--oauth-audience", "--oauth-jwks")


def _certificate_listeners(options: argparse.Namespace) -> bool:
    if options.certificate_listeners and (options.insecure or options.no_auth):
        raise UsageError("certificate listeners authenticate users: not with --insecure or --no-auth")
    return bool(options.certificate_listeners)


def _oauth(options: argparse.Namespace) -> TokenSettings | None:
    """The bearer tokens the processes accept besides passwords (``--oauth-*``), or None."""
    given = (options.oauth_issuer, options.oauth_audience, options.oauth_jwks)
    if not any(given):
        return None
    if not all(given) or options.insecure or options.no_auth:
        raise UsageError(f"bearer tokens need users (not --insecure or --no-auth) and all of {', '.join(_OAUTH_FLAGS)}")
    jwks = str(options.oauth_jwks)
    if not jwks.startswith(("http://", "https://")):
        jwks = str(Path(jwks).absolute())  # the processes run elsewhere
    return TokenSettings(options.oauth_issuer, options.oauth_audience, jwks)


def _up_detached(options: argparse.Namespace) -> int:
    logs = options.data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "lanes.cli", "up", "--data-dir", str(options.data_dir), "--output", "json"]
    command += ["--brokers", str(options.brokers), "--coordinators", str(options.coordinators)]
    command += ["--controllers", str(options.controllers)]
    command += ["--port-base", str(options.port_base)]
    command += [*(["--insecure"] if options.insecure else []), *(["--no-auth"] if options.no_auth else [])]
    command += ["--certificate-listeners"] if options.certificate_listeners else []
    command += ["--no-console"] if options.no_console else []
    command += ["--no-kafka"] if options.no_kafka else []
    command += ["--console-port", str(options.console_port)] if options.console_port is not None else []
    for flag in _OAUTH_FLAGS:
        value = getattr(options, flag.removeprefix("--").replace("-", "_"))
        command += [flag, value] if value else []
    with open(logs / "up.log", "ab") as log:
        supervisor = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    description = None
    for _ in attempts_blocking(Deadline(options.timeout), 0.1):
        description = read_cluster_file(options.data_dir)
        if (description and description.get("pid") == supervisor.pid) or supervisor.poll() is not None:
            break
    if not description or description.get("pid") != supervisor.pid:
        if supervisor.poll() is None:
            supervisor.terminate()
        tail = (logs / "up.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        print(f"lanes: the cluster did not start: {tail[0]} (see {logs / 'up.log'})", file=sys.stderr)
        return EXIT_REFUSED
    emit(options, description, _render_up)
    if options.output == "table":
        print(
            f"running in the background (pid {supervisor.pid}); stop it with: lanes down --data-dir {options.data_dir}"
        )
    return 0


def down(options: argparse.Namespace) -> int:
    """Stop the cluster started from ``--data-dir`` and wait until every process exited."""
    description = read_cluster_file(options.data_dir)
    if description is None:
        emit(options, {"stopped": False}, lambda _: f"no cluster is running from {options.data_dir}")
        return 0
    supervisor = int(description["pid"])
    services = [pid for pid in _service_pids(description) if is_lanes_process(pid)]
    if is_lanes_process(supervisor):
        os.kill(supervisor, signal.SIGTERM)
    else:  # the supervisor died without cleaning up: stop what it left behind
        for pid in services:
            os.kill(pid, signal.SIGTERM)
    waiting = [supervisor, *services]
    reported = 0
    for _ in attempts_blocking(Deadline(options.timeout), 0.2):
        waiting = [pid for pid in waiting if is_lanes_process(pid)]
        if not waiting:
            break
        if len(waiting) != reported:
            progress(f"stopping the cluster in {options.data_dir}: {len(waiting)} processes left")
            reported = len(waiting)
    else:
        for pid in waiting:
            os.kill(pid, signal.SIGKILL)
        progress(f"killed {len(waiting)} processes that did not stop within {options.timeout:g} s", final=True)
    (options.data_dir / CLUSTER_FILE).unlink(missing_ok=True)
    emit(options, {"stopped": True}, lambda _: f"stopped the cluster in {options.data_dir}")
    return 0


def register(commands: Any) -> None:
    """Add ``up`` and ``down`` to the ``lanes`` parser."""
    parser = add_command(
        commands,
        "up",
        summary="run a local cluster of real processes (controller quorum, brokers, coordinators)",
        examples="""
lanes up                      # foreground, Ctrl-C stops it
lanes up --detach             # background; then: lanes down
lanes up --brokers 1 --controllers 1 --data-dir /tmp/lanes --port-base 19092""",
        run=up,
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(".lanes"), help="where everything lives (default ./.lanes)"
    )
    parser.add_argument("--brokers", type=positive_int, default=3, help="number of brokers (default 3)")
    parser.add_argument("--coordinators", type=positive_int, default=1, help="number of group coordinators (default 1)")
    parser.add_argument(
        "--controllers",
        type=positive_int,
        default=3,
        help="voters of the controller quorum (default 3: one may fail; 1: no failover)",
    )
    parser.add_argument(
        "--port-base", type=int, default=9092, help="first broker's port; the rest follow (default 9092)"
    )
    parser.add_argument("--detach", "-d", action="store_true", help="run in the background; stop with lanes down")
    parser.add_argument("--timeout", type=float, default=90, help="seconds --detach waits for the cluster (default 90)")
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="plaintext, and no authentication: anyone who reaches a port may do anything (by default a local CA "
        "under DATA_DIR/tls issues every process a certificate, clients give a username and password over TLS, "
        "ACLs decide, and lanes commands use the admin user named in cluster.json)",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="TLS without users and ACLs: listeners require client certificates, and lanes commands use the admin "
        "certificate named in cluster.json",
    )
    parser.add_argument(
        "--certificate-listeners",
        action="store_true",
        help="every process also serves a certificate listener for users with client certificates from a clients' "
        "CA under DATA_DIR/tls/clients (lanes users issue-certificate USER); cluster.json names them",
    )
    parser.add_argument("--no-console", action="store_true", help="do not run the web console")
    parser.add_argument(
        "--no-kafka",
        action="store_true",
        help="brokers do not serve Kafka's wire protocol (by default each does, for Kafka's own clients and tools, on "
        "the ports after the cluster's others: cluster.json's kafka_bootstrap)",
    )
    parser.add_argument(
        "--console-port", type=int, metavar="PORT", help="the console's port (default: the port after the cluster's)"
    )
    parser.add_argument("--oauth-issuer", metavar="ISS", help="also accept OAuth bearer tokens this issuer signs")
    parser.add_argument("--oauth-audience", metavar="AUD", help="the audience such a token must name")
    parser.add_argument("--oauth-jwks", metavar="FILE|URL", help="the issuer's key set: a JWKS file or its jwks_uri")
    parser = add_command(
        commands,
        "down",
        summary="stop the local cluster started from a data directory",
        examples="lanes down\nlanes down --data-dir /tmp/lanes",
        run=down,
    )
    parser.add_argument("--data-dir", type=Path, default=Path(".lanes"), help="the data directory of lanes up")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait before killing (default 60)")
