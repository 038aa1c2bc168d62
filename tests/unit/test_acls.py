"""The authorizer's decisions (``lanes.security.acls``), as Kafka's StandardAuthorizer makes them."""

from __future__ import annotations

import random

import pytest

from lanes.security import acls as module
from lanes.security.acls import (
    CLUSTER_NAME,
    AclBinding,
    Authorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

TOPIC = ResourceType.TOPIC


def test_no_acl_means_no():
    assert not Authorizer([]).allows("User:alice", "10.0.0.1", Operation.READ, TOPIC, "a")


def test_super_users_may_do_everything():
    authorizer = Authorizer([AclBinding.of("admin", "read", topic="a", deny=True)], super_users=["User:admin"])
    assert authorizer.allows("User:admin", "10.0.0.1", Operation.READ, TOPIC, "a")
    assert authorizer.allows_any("User:admin", "10.0.0.1", Operation.WRITE, TOPIC)


def test_an_allow_covers_its_operation_and_what_it_implies_only():
    authorizer = Authorizer(
        [AclBinding.of("alice", "read", topic="a"), AclBinding.of("alice", "alter-configs", topic="a")]
    )
    allowed = {
        op for op in Operation if op is not Operation.ANY if authorizer.allows("User:alice", "h", op, TOPIC, "a")
    }
    assert allowed == {Operation.READ, Operation.DESCRIBE, Operation.ALTER_CONFIGS, Operation.DESCRIBE_CONFIGS}
    assert not authorizer.allows("User:alice", "h", Operation.READ, TOPIC, "b")
    assert not authorizer.allows("User:bob", "h", Operation.READ, TOPIC, "a")
    assert not authorizer.allows("User:alice", "h", Operation.READ, ResourceType.GROUP, "a")


def test_all_allows_every_operation():
    authorizer = Authorizer([AclBinding.of("alice", "all", topic="a")])
    assert all(authorizer.allows("User:alice", "h", op, TOPIC, "a") for op in Operation if op is not Operation.ANY)


def test_deny_wins_over_any_allow():
    authorizer = Authorizer(
        [
            AclBinding.of("User:*", "write", topic="*"),
            AclBinding.of("bob", "all", topic="team-", prefixed=True),
            AclBinding.of("bob", "write", topic="team-secret", deny=True),
        ]
    )
    assert authorizer.allows("User:bob", "h", Operation.WRITE, TOPIC, "team-x")
    assert not authorizer.allows("User:bob", "h", Operation.WRITE, TOPIC, "team-secret")
    assert authorizer.allows("User:bob", "h", Operation.READ, TOPIC, "team-secret"), "the deny names WRITE only"
    assert authorizer.allows("User:carol", "h", Operation.WRITE, TOPIC, "team-secret"), "the deny names bob only"
    denied_all = Authorizer(
        [AclBinding.of("bob", "read", topic="a"), AclBinding.of("bob", "all", topic="a", deny=True)]
    )
    assert not denied_all.allows("User:bob", "h", Operation.DESCRIBE, TOPIC, "a")


def test_wildcards_prefixes_and_hosts_match_as_kafka():
    authorizer = Authorizer(
        [
            AclBinding.of("User:*", "describe", topic="*"),
            AclBinding.of("alice", "read", topic="logs.", prefixed=True),
            AclBinding.of("alice", "write", topic="a", host="10.0.0.1"),
        ]
    )
    assert authorizer.allows("User:anyone", "h", Operation.DESCRIBE, TOPIC, "whatever")
    assert authorizer.allows("User:alice", "h", Operation.READ, TOPIC, "logs.app")
    assert not authorizer.allows("User:alice", "h", Operation.READ, TOPIC, "logs"), (
        "a prefix is not a match of itself minus one"
    )
    assert authorizer.allows("User:alice", "10.0.0.1", Operation.WRITE, TOPIC, "a")
    assert not authorizer.allows("User:alice", "10.0.0.2", Operation.WRITE, TOPIC, "a")
    assert not authorizer.allows("User:alice", "h", Operation.READ, TOPIC, "*"), "'*' as a name is no wildcard request"


def test_allows_any_looks_for_some_allow_of_the_type():
    authorizer = Authorizer([AclBinding.of("alice", "write", topic="x-", prefixed=True)])
    assert authorizer.allows_any("User:alice", "h", Operation.WRITE, TOPIC)
    assert not authorizer.allows_any("User:bob", "h", Operation.WRITE, TOPIC)
    assert not authorizer.allows_any("User:alice", "h", Operation.WRITE, ResourceType.GROUP)


def test_decisions_are_cached_per_authorizer_and_a_new_one_sees_new_acls():
    acls = [AclBinding.of("alice", "read", topic="a")]
    before = Authorizer(acls)
    assert before.allows("User:alice", "h", Operation.READ, TOPIC, "a")
    after = Authorizer([])
    assert not after.allows("User:alice", "h", Operation.READ, TOPIC, "a")
    assert before.allows("User:alice", "h", Operation.READ, TOPIC, "a")


def test_bindings_and_filters():
    acl = AclBinding.of("alice", "read", topic="a")
    assert acl == AclBinding.from_proto(acl.to_proto())
    assert acl.problem() is None
    assert acl.matches(AclBinding(ResourceType.ANY, "", PatternType.ANY, "", "", Operation.ANY, Permission.ANY))
    assert acl.matches(AclBinding(TOPIC, "a", PatternType.ANY, "User:alice", "", Operation.ANY, Permission.ALLOW))
    assert not acl.matches(AclBinding(TOPIC, "b", PatternType.ANY, "", "", Operation.ANY, Permission.ANY))
    assert not acl.matches(AclBinding(TOPIC, "a", PatternType.ANY, "", "", Operation.ANY, Permission.DENY))
    problems = [
        AclBinding(TOPIC, "a", PatternType.LITERAL, "alice", "*", Operation.READ, Permission.ALLOW),
        AclBinding(TOPIC, "", PatternType.LITERAL, "User:alice", "*", Operation.READ, Permission.ALLOW),
        AclBinding(TOPIC, "a", PatternType.ANY, "User:alice", "*", Operation.READ, Permission.ALLOW),
        AclBinding(TOPIC, "a", PatternType.LITERAL, "User:alice", "*", Operation.ANY, Permission.ALLOW),
        AclBinding(
            ResourceType.CLUSTER, "other", PatternType.LITERAL, "User:a", "*", Operation.ALTER, Permission.ALLOW
        ),
        AclBinding(TOPIC, "*", PatternType.PREFIXED, "User:a", "*", Operation.READ, Permission.ALLOW),
        AclBinding(TOPIC, "x" * 600, PatternType.LITERAL, "User:a", "*", Operation.READ, Permission.ALLOW),
    ]
    assert all(problem.problem() is not None for problem in problems)
    assert AclBinding.of("admin", "alter", cluster=True).resource_name == CLUSTER_NAME
    with pytest.raises(ValueError, match="one resource"):
        AclBinding.of("alice", "read", topic="a", group="g")
    with pytest.raises(ValueError, match="unknown operation"):
        AclBinding.of("alice", "fly", topic="a")


def test_prefixed_acls_are_found_by_prefix_and_decide_as_a_scan_of_every_acl_would() -> None:
    """Issue #23 (adversarial review): every uncached decision tested every prefixed ACL (one per
    tenant: thousands), and a caller naming new resources emptied the decision cache for
    everyone. Prefixes are looked up by length now; decisions equal a scan of every ACL."""
    rng = random.Random(23)
    prefixes = [f"team-{n}-" for n in range(3_000)] + ["team-", "t", "team-1"]
    acls = [
        AclBinding(
            TOPIC,
            prefix,
            PatternType.PREFIXED,
            f"User:{rng.choice(['alice', 'bob', '*'])}",
            "*",
            rng.choice([Operation.READ, Operation.WRITE, Operation.ALL]),
            rng.choice([Permission.ALLOW, Permission.ALLOW, Permission.DENY]),
        )
        for prefix in prefixes
    ]
    acls.append(AclBinding.of("alice", "read", topic="team-12-orders"))
    authorizer = Authorizer(acls)

    def scanned(principal: str, operation: Operation, name: str) -> bool:
        matching = [
            acl
            for acl in acls
            if acl.principal in (principal, "User:*")
            and (
                acl.resource_name == name
                if acl.pattern_type is PatternType.LITERAL
                else name.startswith(acl.resource_name)
            )
        ]
        if any(a.permission is Permission.DENY and a.operation in (operation, Operation.ALL) for a in matching):
            return False
        granting = {operation, Operation.ALL}  # READ and WRITE are implied by nothing else
        return any(a.permission is Permission.ALLOW and a.operation in granting for a in matching)

    for _ in range(2_000):
        name = rng.choice([f"team-{rng.randrange(3_500)}-orders", "team-12-orders", "other", "t", "team-"])
        principal = rng.choice(["User:alice", "User:bob", "User:carol"])
        operation = rng.choice([Operation.READ, Operation.WRITE])
        assert authorizer.allows(principal, "10.0.0.1", operation, TOPIC, name) == scanned(principal, operation, name)


def test_a_full_decision_cache_forgets_its_oldest_decisions_not_all_of_them() -> None:
    authorizer = Authorizer([AclBinding.of("alice", "read", topic="a")])
    assert authorizer.allows("User:alice", "h", Operation.READ, TOPIC, "a")
    for n in range(module._CACHE_ENTRIES + 10):
        authorizer.allows("User:mallory", "h", Operation.READ, TOPIC, f"random-{n}")
    assert len(authorizer._decided) == module._CACHE_ENTRIES
    assert ("User:alice", "h", Operation.READ, TOPIC, "a") not in authorizer._decided, "the oldest went first"
    assert ("User:mallory", "h", Operation.READ, TOPIC, f"random-{module._CACHE_ENTRIES + 9}") in authorizer._decided


@pytest.mark.parametrize(
    ("acls", "allowed"),
    [
        ([("write", "w-", True, False), ("write", "*", False, True)], False),  # DENY on * refuses everything
        ([("write", "a", False, False), ("write", "a", False, True)], False),  # the only ALLOW is denied by name
        ([("write", "a", False, False), ("write", "b", False, True)], True),
        ([("write", "te", True, False), ("write", "t", True, True)], False),  # a DENY prefix covers the ALLOW prefix
        ([("write", "team-", True, False), ("write", "team-x", True, True)], True),  # it does not cover it
        ([("write", "*", False, False), ("write", "secret", False, True)], True),
        ([("all", "x", True, False)], True),
        ([("write", "x", True, False), ("all", "*", False, True)], False),
        ([("write", "a", False, False), ("write", "a", True, True)], False),  # a DENY prefix covers the literal
    ],
)
def test_allows_any_weighs_denies_as_kafkas_authorize_by_resource_type(
    acls: list[tuple[str, str, bool, bool]], allowed: bool
) -> None:
    authorizer = Authorizer(
        [AclBinding.of("wendy", op, topic=name, prefixed=prefixed, deny=deny) for op, name, prefixed, deny in acls]
    )
    assert authorizer.allows_any("User:wendy", "h", Operation.WRITE, TOPIC) is allowed
