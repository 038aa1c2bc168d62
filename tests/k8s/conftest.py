"""Fixtures of the Kubernetes tests.

- ``kubernetes_api`` (tests/conftest.py): one real control plane (etcd + kube-apiserver, RBAC
  on) for the whole session, with the chart's CRDs created by the server.
- ``namespace``: a namespace of the test module's own on it.
- ``release``: the chart installed into that namespace with the real ``helm`` (``--skip-crds``;
  no pod runs, there is no node), so the operator's ServiceAccount, Role and peering object are
  exactly the chart's.
- ``operator``: the real operator (``kopf run``) started with the chart's own arguments, acting
  with a token of the chart's ServiceAccount and nothing more, against a real, secure Lanes cluster
  (``lanes_cluster`` / ``bootstrap`` from tests/conftest.py).
- ``kube`` (what a test does as ``kubectl``, as the administrator) and ``admin`` (as ``lanes``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from lanes.client import Admin
from lanes.local.cluster import LocalCluster
from tests.k8s.chart import CHART
from tests.k8s.control_plane import ControlPlane
from tests.k8s.operator_process import OPERATOR_VALUES, Kube, OperatorProcess, from_release


@pytest.fixture(scope="module")
def namespace(kubernetes_api: ControlPlane, request: pytest.FixtureRequest) -> str:
    """A namespace named after the test module (``test_operator_topics`` -> ``operator-topics``)."""
    name = re.sub(r"[^a-z0-9-]", "-", request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_").lower())[:50]
    kubernetes_api.kubectl("create", "namespace", name)
    return name


@pytest.fixture(scope="module")
def release_values() -> dict[str, Any]:
    """Chart values of the module's ``release`` (a module overrides this fixture for others)."""
    return OPERATOR_VALUES


@pytest.fixture(scope="module")
def release(
    kubernetes_api: ControlPlane,
    namespace: str,
    release_values: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> list[dict[str, Any]]:
    """``helm install lanes charts/lanes`` into the module's namespace; the objects it made."""
    values = tmp_path_factory.mktemp("values") / "values.yaml"
    values.write_text(yaml.safe_dump(release_values))
    kubernetes_api.helm("install", "lanes", str(CHART), "-n", namespace, "--skip-crds", "-f", str(values))
    manifest = kubernetes_api.helm("get", "manifest", "lanes", "-n", namespace)
    return [document for document in yaml.safe_load_all(manifest) if document]


@pytest.fixture(scope="module")
def admin(bootstrap: str) -> Iterator[Admin]:
    with Admin(bootstrap) as client:
        yield client


@pytest.fixture(scope="module")
def operator(  # noqa: PLR0917 (fixtures are named arguments)
    kubernetes_api: ControlPlane,
    namespace: str,
    release: list[dict[str, Any]],
    bootstrap: str,
    lanes_cluster: LocalCluster,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OperatorProcess]:
    clients_ca = lanes_cluster.clients_authority()  # as the chart mounts its clients' CA
    process = from_release(
        kubernetes_api,
        namespace,
        release,
        bootstrap,
        tmp_path_factory.mktemp("operator"),
        LANES_OPERATOR_CLIENTS_CA_CERT=str(clients_ca.cert_file),
        LANES_OPERATOR_CLIENTS_CA_KEY=str(clients_ca.key_file),
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def kube(kubernetes_api: ControlPlane, namespace: str) -> Kube:
    return Kube(kubernetes_api.admin_kubeconfig, namespace)
