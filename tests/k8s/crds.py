"""The Lanes CRDs as the tests see them: their schemas, and their CEL rules evaluated the way the
Kubernetes API server does (``self`` the value at the rule's place; transition rules, those using
``oldSelf``, only on updates where the old value exists), with cel-python."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "charts" / "lanes" / "crds"
EXAMPLES_DIR = ROOT / "deploy" / "examples"

_MISSING = object()


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


def schema_errors(resource: dict[str, Any]) -> list[str]:
    """What the CRD's structural schema (as JSON Schema) refuses in ``resource``."""
    validator = jsonschema.Draft202012Validator(schema_of(resource["kind"]))
    return [
        f"{'.'.join(map(str, error.path)) or '<root>'}: {error.message}" for error in validator.iter_errors(resource)
    ]


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


ITEMS = "[]"


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        if not isinstance(value, dict) or name not in value:
            return _MISSING
        value = value[name]
    return value


def _all_at(value: Any, path: tuple[str, ...]) -> list[Any]:
    """Every value at ``path`` (several through arrays; none where it is missing)."""
    if ITEMS not in path:
        found = _at(value, path)
        return [] if found is _MISSING else [found]
    index = path.index(ITEMS)
    items = _at(value, path[:index])
    if not isinstance(items, list):
        return []
    return [v for item in items for v in _all_at(item, path[index + 1 :])]


@cache
def program(expression: str) -> Any:
    environment = celpy.Environment()
    return environment.program(environment.compile(expression))


def cel_errors(resource: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """The messages of the CEL rules ``resource`` breaks (``old``: the stored object, on update)."""
    messages = []
    for path, rule in rules(resource["kind"]):
        for value in _all_at(resource, path):
            activation = {"self": celpy.json_to_cel(value)}
            if "oldSelf" in rule["rule"]:
                old_value = _MISSING if old is None or ITEMS in path else _at(old, path)
                if old_value is _MISSING:
                    continue  # a transition rule: only on updates of an existing value
                activation["oldSelf"] = celpy.json_to_cel(old_value)
            outcome = program(rule["rule"]).evaluate(activation)
            if isinstance(outcome, celpy.CELEvalError):
                messages.append(f"{rule['rule']}: evaluation error {outcome}")
            elif not outcome:
                messages.append(rule["message"])
    return messages


def examples() -> list[dict[str, Any]]:
    """Every custom resource in deploy/examples."""
    found = []
    for path in sorted(EXAMPLES_DIR.glob("*.yaml")):
        found.extend(document for document in yaml.safe_load_all(path.read_text()) if document)
    return found
