"""The operator's pure decisions about User resources (``lanes_operator.users``) and which names a
namespace may claim (``lanes_operator.tenancy``, read from the settings)."""

from __future__ import annotations

import pytest

from lanes.security.acls import Operation
from lanes_operator.settings import OperatorSettings
from lanes_operator.tenancy import Grants
from lanes_operator.user_handlers import binding, entry
from lanes_operator.users import AclEntry, UserSpec, plan

SPEC = {
    "authentication": {"type": "scram-sha-256"},
    "authorization": {
        "acls": [
            {"resource": {"type": "topic", "name": "orders"}, "operations": ["Read", "Describe"]},
            {"resource": {"type": "group", "name": "app-", "patternType": "prefix"}, "operations": ["Read"]},
            {"resource": {"type": "cluster"}, "operations": ["DescribeConfigs"], "type": "deny", "host": "10.0.0.1"},
        ]
    },
    "quotas": {"producerByteRate": 1024, "controllerMutationRate": 0.5},
}


def test_a_spec_becomes_a_user_with_its_acls_and_quotas() -> None:
    user = UserSpec.of("app", SPEC)
    assert user.user_name == "app"
    assert user.mechanism == "SCRAM-SHA-256"
    assert user.password_ref is None
    assert user.acls == {
        AclEntry("topic", "orders", "literal", "Read", "*", "allow"),
        AclEntry("topic", "orders", "literal", "Describe", "*", "allow"),
        AclEntry("group", "app-", "prefix", "Read", "*", "allow"),
        AclEntry("cluster", "kafka-cluster", "literal", "DescribeConfigs", "10.0.0.1", "deny"),
    }
    assert user.quotas == {"producer_byte_rate": 1024.0, "controller_mutation_rate": 0.5}
    named = UserSpec.of(
        "res",
        {"userName": "svc", "authentication": {"password": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}}},
    )
    assert (named.user_name, named.mechanism, named.password_ref) == ("svc", "SCRAM-SHA-512", ("s", "k"))


def test_the_plan_makes_the_cluster_exactly_the_spec() -> None:
    user = UserSpec.of("app", SPEC)
    stray = AclEntry("topic", "payroll", "literal", "Write", "*", "allow")
    kept = AclEntry("topic", "orders", "literal", "Read", "*", "allow")
    todo = plan(
        user,
        credentials_version="uid/2",
        applied_version="uid/1",
        mechanisms=("SCRAM-SHA-256",),
        acls=[kept, stray],
        quotas={"producer_byte_rate": 1024.0, "consumer_byte_rate": 5.0},
    )
    assert todo.set_password, "the Secret changed"
    assert stray in todo.delete_acls
    assert kept not in todo.create_acls
    assert len(todo.create_acls) == 3
    assert todo.set_quotas == {"controller_mutation_rate": 0.5, "consumer_byte_rate": None}
    settled = plan(
        user,
        credentials_version="uid/2",
        applied_version="uid/2",
        mechanisms=("SCRAM-SHA-256",),
        acls=user.acls,
        quotas=user.quotas,
    )
    assert not settled.changes
    for other in (("SCRAM-SHA-512",), ("SCRAM-SHA-256", "SCRAM-SHA-512")):
        switched = plan(
            user,
            credentials_version="uid/2",
            applied_version="uid/2",
            mechanisms=other,
            acls=user.acls,
            quotas=user.quotas,
        )
        assert switched.set_password, f"the spec's mechanism only, not {other}"
    gone = plan(
        user,
        credentials_version="uid/2",
        applied_version="uid/2",
        mechanisms=None,
        acls=user.acls,
        quotas=user.quotas,
    )
    assert gone.set_password, "a user deleted behind the operator's back is made again"


def test_grants_bound_other_namespaces_to_their_prefixes() -> None:
    grants = Grants("lanes", {"team-a": ("team-a.", "shared-a.")})
    assert grants.refusal("lanes", "topic", "anything") is None
    assert grants.refusal("team-a", "topic", "team-a.orders") is None
    assert grants.refusal("team-a", "group", "shared-a.g") is None
    assert "starting with 'team-a.' or 'shared-a.'" in (grants.refusal("team-a", "topic", "orders") or "")
    assert "granted no names" in (grants.refusal("team-b", "topic", "team-a.orders") or "")
    assert grants.acl_refusal("team-a", "topic", "team-a.") is None
    assert grants.acl_refusal("team-a", "topic", "*") is not None, "'*' reaches every team's topics"
    assert "cluster" in (grants.acl_refusal("team-a", "cluster", "kafka-cluster") or "")
    assert grants.acl_refusal("lanes", "cluster", "kafka-cluster") is None
    assert Grants().refusal("anywhere", "topic", "x") is None, "no home namespace: the operator run by hand"


def test_grants_come_from_the_environment() -> None:
    settings = OperatorSettings.from_env(
        {"POD_NAMESPACE": "lanes", "LANES_OPERATOR_NAMESPACE_GRANTS": '{"team-a": ["team-a."]}'}
    )
    assert settings.grants == Grants("lanes", {"team-a": ("team-a.",)})
    with pytest.raises(ValueError, match="not JSON"):
        OperatorSettings.from_env({"LANES_OPERATOR_NAMESPACE_GRANTS": "{team-a"})
    with pytest.raises(ValueError, match="list of non-empty prefixes"):
        OperatorSettings.from_env(
            {"POD_NAMESPACE": "lanes", "LANES_OPERATOR_NAMESPACE_GRANTS": '{"team-a": "team-a."}'}
        )
    with pytest.raises(ValueError, match="also covers namespace 'team-ab'"):
        OperatorSettings.from_env(
            {
                "POD_NAMESPACE": "lanes",
                "LANES_OPERATOR_NAMESPACE_GRANTS": '{"team-a": ["team-a"], "team-ab": ["team-ab."]}',
            }
        )
    with pytest.raises(ValueError, match="need the operator's own namespace"):
        OperatorSettings.from_env({"LANES_OPERATOR_NAMESPACE_GRANTS": '{"team-a": ["team-a."]}'})


@pytest.mark.parametrize("resource_type", ["topic", "group", "cluster", "transactionalId"])
@pytest.mark.parametrize("operation", [o.name for o in Operation if o is not Operation.ANY])
def test_acl_entries_and_bindings_round_trip(resource_type: str, operation: str) -> None:
    name = "kafka-cluster" if resource_type == "cluster" else "orders"
    spelled = "".join(part.capitalize() for part in operation.split("_"))
    for pattern in ("literal", "prefix"):
        for permission in ("allow", "deny"):
            acl = AclEntry(resource_type, name, pattern, spelled, "10.0.0.1", permission)
            assert entry(binding("User:app", acl)) == acl
