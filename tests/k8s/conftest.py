"""Fixtures of the operator's tests, one set per test module: a real Lanes cluster
(``lanes_cluster`` / ``bootstrap`` from tests/conftest.py), the Kubernetes API emulator, the
operator (``kopf run``) between them, and the clients a test uses to look (``kube`` as kubectl,
``admin`` as ``lanes``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lanes.client import Admin
from lanes.local.cluster import LocalCluster
from tests.k8s.emulator import ApiServer, api_server
from tests.k8s.operator_process import Kube, OperatorProcess


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with api_server(tmp_path_factory.mktemp("api")) as server:
        yield server


@pytest.fixture(scope="module")
def admin(bootstrap: str) -> Iterator[Admin]:
    with Admin(bootstrap) as client:
        yield client


@pytest.fixture(scope="module")
def operator(
    api: ApiServer, bootstrap: str, lanes_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    clients_ca = lanes_cluster.clients_authority()  # as the chart mounts its clients' CA
    process = OperatorProcess(
        api.kubeconfig,
        bootstrap,
        tmp_path_factory.mktemp("operator") / "operator.log",
        extra_env={
            "LANES_OPERATOR_CLIENTS_CA_CERT": str(clients_ca.cert_file),
            "LANES_OPERATOR_CLIENTS_CA_KEY": str(clients_ca.key_file),
        },
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def kube(api: ApiServer) -> Kube:
    return Kube(api.kubeconfig)
