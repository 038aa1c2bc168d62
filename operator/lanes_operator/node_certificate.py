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

The three files change together, as the kubelet publishes a Secret volume: they are written into
a new directory, and one rename of the ``..data`` link moves every reader to it; each name in
``--target`` is a link through ``..data`` (a reader never sees a certificate with another key).
A set is published only when its key is the certificate's (the source read while the kubelet
swapped it is read again at the next pass). The sidecar's startup probe waits for ``ca.crt``,
which exists once the first set is published. A renewal is published within ``--every-s`` of the
kubelet updating the source volume.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from lanes.security.certificates import check_key_pair

_log = logging.getLogger("lanes_operator.node_certificate")

#: The link every published name goes through, as in the kubelet's Secret volumes.
DATA_LINK = "..data"


def node_id_of(pod_name: str, first_id: int) -> int:
    """The node id of a StatefulSet pod: its ordinal (the name's last ``-`` part) + ``first_id``."""
    _, _, ordinal = pod_name.rpartition("-")
    if not ordinal.isdigit():
        raise ValueError(f"{pod_name!r} is not a StatefulSet pod's name (<set>-<ordinal>)")
    return int(ordinal) + first_id


def own_files(kind: str, node_id: int) -> tuple[str, str, str]:
    """The files one node reads: its certificate, its key, the CA."""
    return f"{kind}-{node_id}.crt", f"{kind}-{node_id}.key", "ca.crt"


def read_set(source: Path, names: tuple[str, str, str]) -> dict[str, bytes]:
    """The three files from ``source``; ValueError unless the key is the certificate's (a source
    read while it was being replaced), FileNotFoundError naming a file that is missing."""
    files = {name: (source / name).read_bytes() for name in names}
    check_key_pair(files[names[1]], files[names[0]], f"{names[0]} and {names[1]}")
    return files


def publish(target: Path, files: dict[str, bytes]) -> bool:
    """Make ``files`` what ``target``'s names hold, all at once (see the module docstring); False
    when they already do. Files are readable by the owner and the pod's group only."""
    current = target / DATA_LINK
    try:
        if all((current / name).read_bytes() == content for name, content in files.items()):
            return False
    except OSError:
        pass  # nothing published yet, or another set
    fresh = target / f"..{time.time_ns()}"
    fresh.mkdir()
    for name, content in files.items():
        descriptor = os.open(fresh / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o440)
        with os.fdopen(descriptor, "wb") as file:
            file.write(content)
    link = target / f"{DATA_LINK}.new"
    link.unlink(missing_ok=True)
    link.symlink_to(fresh.name)
    previous = os.readlink(current) if current.is_symlink() else None
    os.replace(link, current)
    for name in files:
        if not (target / name).is_symlink():
            (target / name).symlink_to(f"{DATA_LINK}/{name}")
    if previous is not None and previous != fresh.name:
        shutil.rmtree(target / previous, ignore_errors=True)
    return True


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
    parser.add_argument("--once", action="store_true", help="publish once and exit")
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    names = own_files(options.kind, node_id_of(options.pod_name, options.first_id))
    last_problem = ""
    while True:
        try:
            if publish(options.target, read_set(options.source, names)):
                _log.info("published %s from %s", ", ".join(names), options.source)
            last_problem = ""
        except (OSError, ValueError) as exc:  # not issued yet, or read while the kubelet replaced it
            if str(exc) != last_problem:
                _log.warning("cannot publish the node's certificate yet: %s", exc)
            last_problem = str(exc)
            if options.once:
                return 1
        if options.once:
            return 0
        time.sleep(options.every_s)


if __name__ == "__main__":
    sys.exit(main())
