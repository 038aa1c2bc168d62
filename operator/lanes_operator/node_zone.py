"""``python -m lanes_operator.node_zone --node NODE --label KEY --output FILE``: write the value of
a node's label (the broker's rack: its zone) to a file, for the broker container to read.

The broker pods' init container runs it (Kubernetes gives a pod its node's name, not the node's
labels). A node without the label gives an empty rack: placement then ignores racks for it. Any
failure to read the node is an error that names the missing permission or node, so the pod does
not start with a wrong rack."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import kubernetes
from kubernetes.client.exceptions import ApiException


def zone_of(labels: dict[str, str] | None, label: str) -> str:
    """The label's value, or '' when the node does not have it."""
    return (labels or {}).get(label, "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lanes_operator.node_zone", description=__doc__.splitlines()[0])
    parser.add_argument("--node", required=True, help="the node's name (downward API: spec.nodeName)")
    parser.add_argument("--label", default="topology.kubernetes.io/zone", help="the label holding the rack")
    parser.add_argument("--output", required=True, type=Path, help="the file to write the rack to")
    options = parser.parse_args(argv)
    try:
        kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()  # type: ignore[no-untyped-call]
    try:
        node = kubernetes.client.CoreV1Api().read_node(options.node)
    except ApiException as exc:
        print(
            f"cannot read node {options.node!r} ({exc.status} {exc.reason}): the pod's service account needs "
            "'get' on nodes (the chart grants it with broker.rack.enabled)",
            file=sys.stderr,
        )
        return 1
    rack = zone_of(node.metadata.labels if node.metadata is not None else None, options.label)
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(rack)
    print(f"node {options.node}: rack {rack!r} (label {options.label})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
