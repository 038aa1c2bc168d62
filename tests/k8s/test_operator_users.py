"""The real operator (``kopf run``) against a real kube-apiserver (with the chart's ServiceAccount)
and a real, secure Lanes cluster: a User resource becomes a Lanes user whose password is in a
Secret, with exactly its ACLs and quotas; the password rotates with the Secret; deleting the
resource removes the user (issue #23, Kubernetes tenancy; Strimzi's KafkaUser is the anchor)."""

from __future__ import annotations

from typing import Any

import pytest

import lanes
from lanes.client import Admin
from lanes.errors import AuthenticationError, ErrorCode, LanesError
from lanes.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from tests.e2e.cli import wait_for
from tests.k8s.operator_process import Kube, OperatorProcess

pytestmark = pytest.mark.slow


def ready(kube: Kube, name: str) -> dict[str, Any] | None:
    found = kube.get("users", name)
    conditions = (found or {}).get("status", {}).get("conditions", [])
    if any(c["type"] == "Ready" and c.get("status") == "True" for c in conditions):
        return found
    return None


def acls_of(admin: Admin, user: str) -> set[tuple[str, str, str, str]]:
    every = AclBinding(ResourceType.ANY, "", PatternType.ANY, f"User:{user}", "", Operation.ANY, Permission.ANY)
    return {
        (a.resource_type.name, a.resource_name, a.pattern_type.name, a.operation.name)
        for a in admin.describe_acls(every)
    }


def topics_seen(bootstrap: str, user: str, password: str) -> list[str]:
    with lanes.Admin(bootstrap, credentials=lanes.UserPassword(user, password), request_timeout_ms=10_000) as client:
        return sorted(client.list_topics())


SPEC = {
    "authorization": {
        "acls": [
            {"resource": {"type": "topic", "name": "ledger"}, "operations": ["Read", "Describe"]},
            {"resource": {"type": "group", "name": "ledger-", "patternType": "prefix"}, "operations": ["Read"]},
        ]
    },
    "quotas": {"producerByteRate": 1048576, "requestPercentage": 50},
}


def accountant(kube: Kube, admin: Admin, operator: OperatorProcess) -> dict[str, Any]:
    """The User ``accountant``, Ready (made by the first test that needs it)."""
    for topic in ("ledger", "payroll"):
        if topic not in admin.list_topics():
            admin.create_topic(topic, partitions=1, replication_factor=1)
    if kube.get("users", "accountant") is None:
        kube.create("users", "accountant", SPEC)
    return wait_for(lambda: ready(kube, "accountant"), f"User accountant Ready (log: {operator.log()})")


def test_a_user_resource_makes_a_user_with_its_password_acls_and_quotas(
    kube: Kube, admin: Admin, bootstrap: str, operator: OperatorProcess
) -> None:
    found = accountant(kube, admin, operator)
    assert found["status"]["userName"] == "accountant"
    assert found["status"]["secret"] == "accountant"
    secret = kube.secret("accountant")
    assert secret is not None
    assert secret["username"] == "accountant"
    assert len(secret["password"]) >= 24
    assert [u.mechanisms for u in admin.describe_users(["accountant"])] == [("SCRAM-SHA-512",)]
    assert acls_of(admin, "accountant") == {
        ("TOPIC", "ledger", "LITERAL", "READ"),
        ("TOPIC", "ledger", "LITERAL", "DESCRIBE"),
        ("GROUP", "ledger-", "PREFIXED", "READ"),
    }
    assert {(q.key, q.rate) for q in admin.describe_quotas(user="accountant")} == {
        ("producer_byte_rate", 1048576.0),
        ("request_percentage", 50.0),
    }
    assert topics_seen(bootstrap, "accountant", secret["password"]) == ["ledger"], "its ACLs apply"


def test_acls_and_quotas_added_behind_the_operators_back_are_removed(
    kube: Kube, admin: Admin, operator: OperatorProcess
) -> None:
    accountant(kube, admin, operator)
    admin.create_acls([lanes.AclBinding.of("accountant", "write", topic="payroll")])
    admin.set_quota("consumer_byte_rate", 1.0, user="accountant")
    wait_for(lambda: ("TOPIC", "payroll", "LITERAL", "WRITE") not in acls_of(admin, "accountant"), "the ACL removed")
    wait_for(
        lambda: "consumer_byte_rate" not in {q.key for q in admin.describe_quotas(user="accountant")},
        "the quota removed",
    )
    kube.patch("users", "accountant", {"spec": {"quotas": {"producerByteRate": 2048, "requestPercentage": None}}})
    wait_for(
        lambda: {(q.key, q.rate) for q in admin.describe_quotas(user="accountant")} == {("producer_byte_rate", 2048.0)},
        "the quotas follow the spec",
    )


def test_the_password_rotates_with_its_secret(
    kube: Kube, admin: Admin, bootstrap: str, operator: OperatorProcess
) -> None:
    accountant(kube, admin, operator)
    old = (kube.secret("accountant") or {})["password"]
    version = (kube.get("users", "accountant") or {})["status"]["credentialsVersion"]
    kube.put_secret("accountant", {"username": "accountant", "password": "a-new-password-42"})
    wait_for(
        lambda: (kube.get("users", "accountant") or {}).get("status", {}).get("credentialsVersion") != version,
        "the new password applied",
    )
    assert topics_seen(bootstrap, "accountant", "a-new-password-42") == ["ledger"]
    with pytest.raises(AuthenticationError):
        topics_seen(bootstrap, "accountant", old)


def test_a_password_from_the_users_own_secret_and_a_secret_that_is_not_the_operators(
    kube: Kube, admin: Admin, bootstrap: str, operator: OperatorProcess
) -> None:
    kube.put_secret("auditor-password", {"pw": "auditor-password-7"})
    reference = {"valueFrom": {"secretKeyRef": {"name": "auditor-password", "key": "pw"}}}
    kube.create(
        "users",
        "auditor",
        {
            "authentication": {"type": "scram-sha-256", "password": reference},
            "authorization": {"acls": [{"resource": {"type": "topic", "name": "payroll"}, "operations": ["Read"]}]},
        },
    )
    wait_for(lambda: ready(kube, "auditor"), f"User auditor Ready (log: {operator.log()})")
    assert topics_seen(bootstrap, "auditor", "auditor-password-7") == ["payroll"]
    assert [u.mechanisms for u in admin.describe_users(["auditor"])] == [("SCRAM-SHA-256",)]
    assert kube.secret("auditor") is None, "no Secret generated"

    kube.put_secret("intruder", {"password": "not-the-operators"})
    kube.create("users", "intruder", {})
    wait_for(lambda: kube.condition("users", "intruder").get("reason") == "SecretConflict", "SecretConflict")
    with pytest.raises(LanesError) as unknown:
        admin.describe_users(["intruder"])
    assert unknown.value.code == ErrorCode.RESOURCE_NOT_FOUND


def test_deleting_a_user_removes_it_its_acls_quotas_and_generated_secret(
    kube: Kube, admin: Admin, operator: OperatorProcess
) -> None:
    accountant(kube, admin, operator)
    kube.delete("users", "accountant")
    wait_for(lambda: kube.get("users", "accountant") is None, f"the resource gone (log: {operator.log()})")

    def gone() -> bool:
        try:
            admin.describe_users(["accountant"])
        except LanesError as exc:
            return exc.code == ErrorCode.RESOURCE_NOT_FOUND
        return False

    wait_for(gone, "the user gone")
    assert acls_of(admin, "accountant") == set()
    assert admin.describe_quotas(user="accountant") == []
    assert kube.secret("accountant") is None


def test_an_existing_user_is_taken_over_only_when_adopted_and_its_mechanism_follows_the_spec(
    kube: Kube, admin: Admin, bootstrap: str, operator: OperatorProcess
) -> None:
    admin.set_user_password("legacy", "made-by-hand-1", mechanism="SCRAM-SHA-256")
    admin.create_acls([lanes.AclBinding.of("legacy", "read", topic="ledger")])
    kube.create("users", "legacy", {})
    wait_for(lambda: kube.condition("users", "legacy").get("reason") == "NotAdopted", "NotAdopted")
    assert acls_of(admin, "legacy") == {("TOPIC", "ledger", "LITERAL", "READ")}, "nothing changed"
    assert kube.secret("legacy") is None
    assert topics_seen(bootstrap, "legacy", "made-by-hand-1") == ["ledger"]

    kube.patch("users", "legacy", {"metadata": {"annotations": {"lanes.dev/adopt": "true"}}})
    wait_for(lambda: ready(kube, "legacy"), f"User legacy adopted (log: {operator.log()})")
    assert [u.mechanisms for u in admin.describe_users(["legacy"])] == [("SCRAM-SHA-512",)], "the spec's only"
    assert acls_of(admin, "legacy") == set(), "the spec gives it none"
    assert "lanes.dev/adopt" not in ((kube.get("users", "legacy") or {})["metadata"].get("annotations") or {})
    password = (kube.secret("legacy") or {})["password"]
    with pytest.raises(AuthenticationError):
        topics_seen(bootstrap, "legacy", "made-by-hand-1")

    kube.patch("users", "legacy", {"spec": {"authentication": {"type": "scram-sha-256"}}})
    wait_for(
        lambda: [u.mechanisms for u in admin.describe_users(["legacy"])] == [("SCRAM-SHA-256",)],
        "the credential under the new mechanism only",
    )
    admin.create_acls([lanes.AclBinding.of("legacy", "describe", topic="ledger")])
    wait_for(lambda: acls_of(admin, "legacy") == set(), "the hand-made ACL removed")
    assert topics_seen(bootstrap, "legacy", password) == []
