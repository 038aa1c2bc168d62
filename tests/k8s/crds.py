"""The Lanes CRDs as the tests see them, and the real API server's verdict on custom resources:
``Refusals`` sends a resource to kube-apiserver as a server-side dry run (nothing is stored), so
its structural schema, defaults and every CEL rule (``x-kubernetes-validations``, transition rules
against the stored object included) are applied by the server itself, cost limits and all."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes
import yaml
from kubernetes.client.exceptions import ApiException

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "charts" / "lanes" / "crds"
EXAMPLES_DIR = ROOT / "deploy" / "examples"
ITEMS = "[]"


@cache
def crds() -> dict[str, dict[str, Any]]:
    """Every CRD of the chart, by kind."""
    found = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            found[crd["spec"]["names"]["kind"]] = crd
    return found


def schema_of(kind: str) -> dict[str, Any]:
    return dict(crds()[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def rules(kind: str) -> Iterator[tuple[tuple[str, ...], dict[str, str]]]:
    """(path of properties, rule) of every x-kubernetes-validations rule of the CRD; ``[]`` in a
    path stands for every item of an array."""

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], dict[str, str]]]:
        for rule in node.get("x-kubernetes-validations", []):
            yield path, rule
        for name, child in node.get("properties", {}).items():
            yield from walk(child, (*path, name))
        if "items" in node:
            yield from walk(node["items"], (*path, ITEMS))

    yield from walk(schema_of(kind), ())


def examples() -> list[dict[str, Any]]:
    """Every custom resource in deploy/examples."""
    found = []
    for path in sorted(EXAMPLES_DIR.glob("*.yaml")):
        found.extend(document for document in yaml.safe_load_all(path.read_text()) if document)
    return found


class Refusals:
    """What the API server refuses in a custom resource, as the messages of its causes.

    ``refusals(resource)`` is a dry-run create; ``refusals(resource, old)`` stores ``old`` (under a
    fresh name) and dry-runs an update of it to ``resource``, so transition rules see ``oldSelf``."""

    _names = itertools.count()

    def __init__(self, kubeconfig: Path, namespace: str) -> None:
        self.api = kubernetes.client.CustomObjectsApi(kubernetes.config.new_client_from_config(str(kubeconfig)))
        self.namespace = namespace
        #: every refusal message given so far (to check that each CEL rule refused something)
        self.seen: set[str] = set()

    def __call__(self, resource: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
        found = self._refusals(resource, old)
        self.seen.update(found)
        return found

    def _refusals(self, resource: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
        group, version = resource["apiVersion"].split("/")
        plural = crds()[resource["kind"]]["spec"]["names"]["plural"]
        namespaced = crds()[resource["kind"]]["spec"]["scope"] == "Namespaced"
        body = json.loads(json.dumps(resource))
        try:
            if old is None:
                if namespaced:
                    self.api.create_namespaced_custom_object(
                        group, version, self.namespace, plural, body, dry_run="All"
                    )
                else:
                    self.api.create_cluster_custom_object(group, version, plural, body, dry_run="All")
            else:
                stored = json.loads(json.dumps(old))
                name = f"{stored['metadata']['name']}-{next(self._names)}"
                stored["metadata"]["name"] = body["metadata"]["name"] = name
                created = self.api.create_namespaced_custom_object(group, version, self.namespace, plural, stored)
                body["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
                self.api.replace_namespaced_custom_object(
                    group, version, self.namespace, plural, name, body, dry_run="All"
                )
        except ApiException as exc:
            if exc.status != 422:
                raise
            causes = json.loads(exc.body).get("details", {}).get("causes", [])
            return [f"{cause.get('field', '')}: {cause['message']}" for cause in causes] or [
                json.loads(exc.body)["message"]
            ]
        return []
