"""``python -m lanes_operator.node_certificate --pod-name NAME --kind KIND --first-id N --source DIR
--target DIR``: keep a copy of one node's own certificate, key and CA in a directory only its
node's container mounts.

Why: a StatefulSet's pods share one template, so the volume of node certificates (the chart's
Secret of a kind, or every node's cert-manager Secret projected together) holds every node of
that kind. Mounted in the node's container, a compromised broker could present another broker's
certificate. This runs in a sidecar of each pod (a native sidecar: an init container that keeps
running), the only container that mounts the whole kind; the node's container mounts the
in-memory ``--target`` it fills: ``<kind>-<id>.crt``, ``<kind>-<id>.key`` and ``ca.crt``,
where id is the pod's ordinal plus ``--first-id``.

Files are copied when their content differs, each written beside itself and renamed over the old
one (a reader sees the old file or the new, whole). ``ca.crt`` is written last in every pass: the
sidecar's startup probe waits for it, so the node starts with all three. A renewed certificate
and key land within ``--every-s``; between the two renames the node sees a key that is not its
certificate's and keeps serving the old pair until both match (``lanes.rpc.tls``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

_log = logging.getLogger("lanes_operator.node_certificate")


def node_id_of(pod_name: str, first_id: int) -> int:
    """The node id of a StatefulSet pod: its ordinal (the name's last ``-`` part) + ``first_id``."""
    _, _, ordinal = pod_name.rpartition("-")
    if not ordinal.isdigit():
        raise ValueError(f"{pod_name!r} is not a StatefulSet pod's name (<set>-<ordinal>)")
    return int(ordinal) + first_id


def own_files(kind: str, node_id: int) -> tuple[str, str, str]:
    """The files one node reads, in the order they are written (the CA last)."""
    return f"{kind}-{node_id}.crt", f"{kind}-{node_id}.key", "ca.crt"


def copy_changed(source: Path, target: Path, names: tuple[str, ...]) -> list[str]:
    """Copy each of ``names`` from ``source`` to ``target`` where the content differs, replacing
    the old file in one rename, readable by the owner and the pod's group only; the names copied.
    A file missing from ``source`` is an error (FileNotFoundError names it)."""
    copied = []
    for name in names:
        content = (source / name).read_bytes()
        destination = target / name
        try:
            if destination.read_bytes() == content:
                continue
        except FileNotFoundError:
            pass
        fresh = target / f".{name}.new"
        fresh.unlink(missing_ok=True)  # left by a pass that stopped before its rename (read-only)
        fresh.write_bytes(content)
        fresh.chmod(0o440)
        os.replace(fresh, destination)
        copied.append(name)
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lanes_operator.node_certificate", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--pod-name", required=True, help="the pod's name (downward API: metadata.name)")
    parser.add_argument("--kind", required=True, choices=["broker", "controller", "coordinator"])
    parser.add_argument("--first-id", type=int, required=True, help="the node id of the pod of ordinal 0")
    parser.add_argument("--source", required=True, type=Path, help="the directory of the kind's certificates")
    parser.add_argument("--target", required=True, type=Path, help="the directory the node reads")
    parser.add_argument("--every-s", type=float, default=10.0, help="how often the source is compared")
    parser.add_argument("--once", action="store_true", help="copy once and exit")
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    names = own_files(options.kind, node_id_of(options.pod_name, options.first_id))
    while True:
        try:
            copied = copy_changed(options.source, options.target, names)
            if copied:
                _log.info("copied %s from %s", ", ".join(copied), options.source)
        except OSError as exc:  # a Secret being updated, or this node's certificate not issued yet
            _log.warning("cannot copy the node's certificate yet: %s", exc)
            if options.once:
                return 1
        if options.once:
            return 0
        time.sleep(options.every_s)


if __name__ == "__main__":
    sys.exit(main())
