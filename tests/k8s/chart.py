"""The Helm chart as the tests see it: rendered offline with the Helm SDK (helm-python-sdk), as
``helm template`` would, into the objects it would create."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "lanes"
SCENARIOS = sorted((CHART / "scenarios").glob("*.yaml"))
WORKLOAD_KINDS = {"StatefulSet", "Deployment"}


def render(
    values: dict[str, Any] | None = None, *, name: str = "lanes", namespace: str = "lanes"
) -> list[dict[str, Any]]:
    """Every object the chart renders for ``values`` (hooks, such as the ``helm test`` pod, included)."""
    rendered = helm_python.Chart.load(str(CHART)).render(values or {}, name=name, namespace=namespace)
    objects = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        objects.extend(document for document in yaml.safe_load_all(text) if document)
    return objects


def notes(values: dict[str, Any] | None = None) -> str:
    rendered = helm_python.Chart.load(str(CHART)).render(values or {}, name="lanes", namespace="lanes")
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def scenario(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text()))


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
