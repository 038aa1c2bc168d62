"""The Helm chart as the tests see it: rendered offline by the real ``helm`` (``helm template``,
the same binary test_helm.py installs with), into the objects it would create. Renders are
cached per values: templates are pure functions of them, but for the generated CA and passwords."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.k8s.control_plane import binary, run_command

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "lanes"
SCENARIOS = sorted((CHART / "scenarios").glob("*.yaml"))
WORKLOAD_KINDS = {"StatefulSet", "Deployment"}


def scenario(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text()))


#: Every optional part of the chart on.
EVERYTHING_ON = {
    "monitoring": {
        "podMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True},
        "dashboards": {"enabled": True},
    },
    "networkPolicy": {"enabled": True},
    "operator": {"watchAllNamespaces": True, "namespaceGrants": {"team-a": ["team-a."]}},
    "console": {
        "readOnly": True,
        "ingress": {"enabled": True, "host": "console.example.com", "tls": {"secretName": "console-tls"}},
    },
}
CERT_MANAGER = {
    "security": {
        "certManager": {
            "enabled": True,
            "issuerRef": {"name": "lanes-ca"},
            "caCertificate": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        }
    }
}
#: Values the chart is tested with: its defaults, everything enabled, cert-manager, each scenario.
CASES = {
    "defaults": {},
    "everything-on": EVERYTHING_ON,
    "cert-manager": CERT_MANAGER,
    **{path.stem: scenario(path) for path in SCENARIOS},
}


def helm(*args: str, values: dict[str, Any] | None = None) -> str:
    """``helm ARGS -f -`` offline, with ``values`` on stdin; stdout, or CommandFailedError."""
    return run_command([str(binary("helm")), *args, "-f", "-"], json.dumps(values or {}), check=True)


@cache
def _rendered(values_json: str, name: str, namespace: str) -> str:
    return helm("template", name, str(CHART), "--namespace", namespace, values=json.loads(values_json))


def render(
    values: dict[str, Any] | None = None, *, name: str = "lanes", namespace: str = "lanes"
) -> list[dict[str, Any]]:
    """Every object the chart renders for ``values`` (hooks, such as the ``helm test`` pod, included)."""
    text = _rendered(json.dumps(values or {}, sort_keys=True), name, namespace)
    return [document for document in yaml.safe_load_all(text) if document]


def lint(values: dict[str, Any] | None = None) -> str:
    """``helm lint --strict``'s report; CommandFailedError when it fails."""
    return helm("lint", "--strict", str(CHART), values=values)


def one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, (
        f"{kind} {name}: {len(found)} found among {[(o['kind'], o['metadata']['name']) for o in objects]}"
    )
    return found[0]


def pod_specs(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, pod spec) of every workload and bare pod."""
    for obj in objects:
        if obj["kind"] in WORKLOAD_KINDS:
            yield obj["metadata"]["name"], obj["spec"]["template"]["spec"]
        elif obj["kind"] == "Pod":
            yield obj["metadata"]["name"], obj["spec"]


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]
