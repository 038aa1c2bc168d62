"""``python -m lanes.console``: serve the console (``lanes console`` and ``lanes up`` run this).

Prints one JSON line when it listens (``{"address": "host:port", "url": "https://..."}``), as the
services do, then serves until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import socket
import sys
from pathlib import Path

import uvicorn

import lanes
from lanes.console.app import Console, ConsoleSettings


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="lanes console", description=__doc__)
    parser.add_argument("--bootstrap", required=True, help="the cluster's brokers, host:port[,host:port...]")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9080, help="port to listen on (default 9080; 0: any free one)")
    parser.add_argument("--login", choices=["required", "none"], default="required",
                        help="users log in with their Lanes credentials (default), or none: a cluster "
                        "without authentication, everyone acting as this console's client")  # fmt: skip
    parser.add_argument("--read-only", action="store_true", help="refuse every change (create, produce, reset, ...)")
    parser.add_argument("--tls-ca", help="the CA the cluster's certificates are checked against")
    parser.add_argument("--tls-client-cert", help="this console's client certificate (a cluster that requires one)")
    parser.add_argument("--tls-client-key", help="its key")
    parser.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--tls-key", help="and this key")
    parser.add_argument(
        "--secure-cookies",
        action="store_true",
        help="mark the session cookie Secure although this process serves HTTP (behind an HTTPS Ingress)",
    )
    parser.add_argument(
        "--kubernetes-namespaces",
        default="",
        metavar="NS[,NS...]",
        help="show the Topic and ConsumerGroup resources of these namespaces (in a cluster: the pod's service account)",
    )
    parser.add_argument(
        "--kubeconfig", help="read them with this kubeconfig (default: in-cluster, else ~/.kube/config)"
    )
    parser.add_argument("--session-idle-minutes", type=float, default=30, help="idle time that ends a login (30)")
    return parser.parse_args(argv)


async def serve(options: argparse.Namespace) -> None:
    tls: lanes.TlsFiles | None = None
    if options.tls_ca:
        tls = lanes.TlsFiles(
            Path(options.tls_ca),
            Path(options.tls_client_cert) if options.tls_client_cert else None,
            Path(options.tls_client_key) if options.tls_client_key else None,
        )
    https = bool(options.tls_cert and options.tls_key)
    console = Console(
        ConsoleSettings(
            options.bootstrap,
            login=options.login == "required",
            read_only=options.read_only,
            secure_cookies=https or options.secure_cookies,
            session_idle_s=options.session_idle_minutes * 60,
            tls=tls,
            kubernetes_namespaces=tuple(n for n in options.kubernetes_namespaces.split(",") if n),
            kubeconfig=options.kubeconfig,
        )
    )
    listener = socket.create_server((options.host, options.port), reuse_port=False)
    host, port = listener.getsockname()[:2]
    config = uvicorn.Config(
        console.app,
        log_level="warning",
        access_log=False,  # (query strings may hold filters: no record of them in logs)
        ssl_certfile=options.tls_cert if https else None,
        ssl_keyfile=options.tls_key if https else None,
        timeout_graceful_shutdown=2,
        limit_concurrency=512,
        h11_max_incomplete_event_size=64 * 1024,
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started and not serving.done():
        await asyncio.sleep(0.02)
    if server.started:
        scheme = "https" if https else "http"
        print(json.dumps({"address": f"{host}:{port}", "url": f"{scheme}://{host}:{port}/"}), flush=True)
    await serving


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve(parse_args(argv)))


if __name__ == "__main__":
    main()
