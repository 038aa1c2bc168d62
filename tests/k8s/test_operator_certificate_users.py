"""The real operator (``kopf run``) against a real kube-apiserver (with the chart's ServiceAccount)
and a real, secure Lanes cluster with certificate listeners: a User of type tls gets a client
certificate from the clients' CA, which reaches exactly its ACLs (issue #23; Strimzi's KafkaUser
``tls``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

import lanes
from lanes.client import Admin
from lanes.errors import ErrorCode, LanesError
from lanes.local.cluster import LocalCluster
from lanes.rpc.tls import TlsFiles
from tests.e2e.cli import wait_for
from tests.integration.processes import running_cluster
from tests.k8s.operator_process import Kube, OperatorProcess
from tests.k8s.test_operator_users import acls_of, ready

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lanes_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """This module's cluster: with certificate listeners, as the chart runs by default."""
    with running_cluster(tmp_path_factory.mktemp("lanes"), brokers=2, certificate_listeners=True) as cluster:
        yield cluster


def test_a_certificate_user_gets_a_client_certificate_its_acls_apply_to(
    kube: Kube, admin: Admin, lanes_cluster: LocalCluster, operator: OperatorProcess, tmp_path: Path
) -> None:
    """A User of type tls: the operator issues a client certificate naming it from the clients'
    CA into its Secret (Strimzi's user.crt, user.key, ca.crt), sets no password, and the
    certificate reaches exactly the spec's ACLs on the certificate listeners; deleting the User
    removes its ACLs (the certificate then reaches nothing) and its Secret."""
    if "ledger" not in admin.list_topics():
        admin.create_topic("ledger", partitions=1, replication_factor=1)
    acls = [{"resource": {"type": "topic", "name": "ledger"}, "operations": ["Read", "Describe"]}]
    kube.create("users", "reporter", {"authentication": {"type": "tls"}, "authorization": {"acls": acls}})
    found = wait_for(lambda: ready(kube, "reporter"), f"User reporter Ready (log: {operator.log()})")
    message = next(c["message"] for c in found["status"]["conditions"] if c["type"] == "Ready")
    assert "the certificate of Secret reporter (until " in message
    secret = kube.secret("reporter")
    assert secret is not None
    assert set(secret) == {"username", "user.crt", "user.key", "ca.crt"}, "no password"
    cert = x509.load_pem_x509_certificate(secret["user.crt"].encode())
    assert cert.subject.rfc4514_string() == "CN=reporter"
    with pytest.raises(LanesError) as no_password:
        admin.describe_users(["reporter"])
    assert no_password.value.code == ErrorCode.RESOURCE_NOT_FOUND

    for key in ("user.crt", "user.key", "ca.crt"):
        (tmp_path / key).write_text(secret[key])
    tls = TlsFiles(tmp_path / "ca.crt", tmp_path / "user.crt", tmp_path / "user.key")
    certificate_bootstrap = str(lanes_cluster.describe()["certificate_bootstrap"])

    def topics() -> list[str]:
        with lanes.Admin(certificate_bootstrap, tls=tls, credentials=None, request_timeout_ms=10_000) as client:
            return sorted(client.list_topics())

    wait_for(lambda: topics() == ["ledger"], "the certificate reaches the spec's topic")

    kube.delete("users", "reporter")
    wait_for(lambda: kube.get("users", "reporter") is None, f"the resource gone (log: {operator.log()})")
    assert acls_of(admin, "reporter") == set()
    assert kube.secret("reporter") is None
    wait_for(lambda: topics() == [], "the certificate reaches nothing once the User is gone")
