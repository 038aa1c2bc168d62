"""skaffold.yaml (no skaffold binary or cluster here): a current v4 schema, artifacts built from
Dockerfiles that exist, the image wired into the chart's values, profiles whose patches apply,
and port-forwards to Services the release creates. The chart is rendered with what skaffold
would pass to Helm."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.k8s.chart import CHART, render

ROOT = Path(__file__).resolve().parents[2]
SKAFFOLD = yaml.safe_load((ROOT / "skaffold.yaml").read_text())


def configuration(profile: str | None) -> dict[str, Any]:
    """skaffold.yaml with ``profile``'s patches applied, as skaffold does."""
    config = copy.deepcopy(SKAFFOLD)
    if profile is not None:
        (found,) = [p for p in SKAFFOLD["profiles"] if p["name"] == profile]
        config = jsonpatch.apply_patch(config, found.get("patches", []))
    return dict(config)


def helm_values(release: dict[str, Any]) -> dict[str, Any]:
    """What skaffold passes to Helm: the values files, then setValueTemplates (with a built
    image's repository, tag and digest) and setValues."""
    values: dict[str, Any] = {}
    for path in release.get("valuesFiles", []):
        values.update(yaml.safe_load((ROOT / path).read_text()))
    built = {"IMAGE_REPO_lanes": "registry.local/lanes", "IMAGE_TAG_lanes": "abc123", "IMAGE_DIGEST_lanes": "sha256:00"}
    settings = {**release.get("setValueTemplates", {}), **release.get("setValues", {})}
    for dotted, template in settings.items():
        value = template
        if isinstance(value, str):
            for name, replacement in built.items():
                value = value.replace("{{." + name + "}}", replacement)
        *parents, leaf = dotted.split(".")
        node = values
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = value
    return values


def test_the_schema_is_current_and_the_artifacts_exist() -> None:
    assert SKAFFOLD["apiVersion"] == "skaffold/v4beta13"
    assert SKAFFOLD["kind"] == "Config"
    artifacts = {a["image"]: a["docker"]["dockerfile"] for a in SKAFFOLD["build"]["artifacts"]}
    assert artifacts == {
        "lanes": "deploy/docker/lanes.Dockerfile",
        "lanes-spark": "deploy/docker/lanes-spark.Dockerfile",
    }
    for dockerfile in artifacts.values():
        assert (ROOT / dockerfile).is_file()


@pytest.mark.parametrize("profile", [None, *(p["name"] for p in SKAFFOLD["profiles"])])
def test_every_profile_installs_the_built_image_into_a_valid_release(profile: str | None) -> None:
    config = configuration(profile)
    (release,) = config["deploy"]["helm"]["releases"]
    assert (ROOT / release["chartPath"]) == CHART
    objects = render(helm_values(release), name=release["name"], namespace=release["namespace"])
    images = {
        c["image"]
        for o in objects
        if o["kind"] in ("StatefulSet", "Deployment")
        for c in o["spec"]["template"]["spec"]["containers"]
    }
    assert images == {"registry.local/lanes:abc123@sha256:00"}
    services = {
        (o["metadata"]["name"], port["port"]) for o in objects if o["kind"] == "Service" for port in o["spec"]["ports"]
    }
    for forward in config.get("portForward", []):
        if forward["namespace"] == release["namespace"]:
            assert (forward["resourceName"], forward["port"]) in services, forward


def test_the_ci_profile_runs_the_charts_helm_test() -> None:
    config = configuration("ci")
    assert "portForward" not in config
    (hook,) = config["deploy"]["helm"]["hooks"]["after"]
    assert hook["host"]["command"][:3] == ["helm", "test", "lanes"]
