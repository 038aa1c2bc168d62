"""Fixtures of the operator's tests, one set per test module: a real Lanes cluster
(``lanes_cluster`` / ``bootstrap`` from tests/conftest.py), the Kubernetes API emulator, the
operator (``kopf run``) between them, and the clients a test uses to look (``kube`` as kubectl,
``admin`` as ``lanes``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lanes.client import Admin
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
def operator(api: ApiServer, bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    process = OperatorProcess(api.kubeconfig, bootstrap, tmp_path_factory.mktemp("operator") / "operator.log")
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def kube(api: ApiServer) -> Kube:
    return Kube(api.kubeconfig)
