"""``lanes console``: serve the web console against a cluster (the one ``--bootstrap`` or
``.lanes/cluster.json`` names), in the foreground until Ctrl-C.

Users log in with their own Lanes users (the cluster's SCRAM users or OAuth tokens) when the
cluster has users; the console holds no rights of its own. With a cluster without users
(``--login none``), everyone acts as this command's client (its TLS certificate, if any).
"""

from __future__ import annotations

import argparse
from typing import Any

from lanes.cli.common import add_command, bootstrap_of, resolve_credentials, resolve_tls
from lanes.cli.values import UsageError


def console(options: argparse.Namespace) -> None:
    """Run the console (``python -m lanes.console``) in this process."""
    from lanes.console.__main__ import main  # noqa: PLC0415 - the web stack only when asked for

    host, _, port = options.listen.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--listen is HOST:PORT, not {options.listen!r}")
    login = options.login or ("required" if resolve_credentials() is not None else "none")
    args = ["--bootstrap", bootstrap_of(options), "--host", host, "--port", port, "--login", login]
    tls = resolve_tls()
    if tls is not None:
        args += ["--tls-ca", str(tls.ca_file)]
        if tls.cert_file is not None and tls.key_file is not None and login == "none":
            args += ["--tls-client-cert", str(tls.cert_file), "--tls-client-key", str(tls.key_file)]
    if (options.tls_cert is None) != (options.tls_key is None):
        raise UsageError("--tls-cert and --tls-key go together")
    if options.tls_cert:
        args += ["--tls-cert", options.tls_cert, "--tls-key", options.tls_key]
    args += ["--read-only"] if options.read_only else []
    main(args)


def register(commands: Any) -> None:
    """Add ``console`` to the ``lanes`` parser."""
    parser = add_command(
        commands,
        "console",
        summary="serve the web console for a cluster",
        examples="""
lanes console                                   # the cluster of ./.lanes, on http://127.0.0.1:9080/
lanes console --bootstrap broker-0:9092 --listen 0.0.0.0:9080 --read-only
lanes console --tls-cert console.crt --tls-key console.key""",
        run=console,
        description=__doc__.split("\n\n", 1)[0] if __doc__ else "",
    )
    parser.add_argument(
        "--listen", default="127.0.0.1:9080", metavar="HOST:PORT", help="where to serve (127.0.0.1:9080)"
    )
    parser.add_argument("--read-only", action="store_true", help="refuse every change (create, produce, reset, delete)")
    parser.add_argument(
        "--login",
        choices=["required", "none"],
        help="users log in (default when the cluster has users), or none: everyone acts as this command's client",
    )
    parser.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--tls-key", metavar="FILE", help="and this key")
