"""The Topic and ConsumerGroup CRDs: valid Kubernetes objects, example resources that validate,
schemas and CEL rules that refuse what can never work."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest

from tests.k8s.crds import cel_errors, crds, examples, program, rules, schema_errors

KUBERNETES_VERSION = "1.31"


def topic(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "lanes.dev/v1alpha1", "kind": "Topic", "metadata": {"name": "t"}, "spec": spec}


def group(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "lanes.dev/v1alpha1", "kind": "ConsumerGroup", "metadata": {"name": "g"}, "spec": spec}


def user(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "lanes.dev/v1alpha1", "kind": "User", "metadata": {"name": "u"}, "spec": spec}


def refusals(resource: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return schema_errors(resource) + cel_errors(resource, old)


def test_the_crds_are_valid_kubernetes_objects() -> None:
    assert set(crds()) == {"Topic", "ConsumerGroup", "User", "ClusterKopfPeering", "KopfPeering"}
    for crd in crds().values():
        kubernetes_validate.validate(crd, KUBERNETES_VERSION, strict=True)
    for kind in ("Topic", "ConsumerGroup", "User"):
        crd = crds()[kind]
        version = crd["spec"]["versions"][0]
        assert version["name"] == "v1alpha1"
        assert version["subresources"] == {"status": {}}
        assert {c["name"] for c in version["additionalPrinterColumns"]} >= {"Age"}


def test_every_cel_rule_compiles_and_has_a_message() -> None:
    counted = 0
    for kind in crds():
        for path, rule in rules(kind):
            assert rule["message"], f"{kind} {path}: a rule without a message"
            program(rule["rule"])  # raises on a syntax error
            counted += 1
    assert counted == 15


def test_the_examples_validate_against_their_crds() -> None:
    found = examples()
    assert {r["kind"] for r in found} == {"Topic", "ConsumerGroup", "User"}
    for resource in found:
        assert resource["apiVersion"] == "lanes.dev/v1alpha1"
        assert refusals(resource) == [], resource["metadata"]["name"]


@pytest.mark.parametrize(
    ("spec", "refusal"),
    [
        ({"partitions": 0}, "partitions: 0 is less than the minimum of 1"),
        ({"replicationFactor": 0}, "replicationFactor: 0 is less than the minimum of 1"),
        ({"topicName": "has space"}, "does not match"),
        ({"topicName": "x" * 250}, "is too long"),
        ({"deletionPolicy": "Orphan"}, "'Orphan' is not one of ['Delete', 'Retain']"),
        ({"config": {"retention.ms": 86400000}}, "86400000 is not of type 'string'"),
        ({"topicName": ".."}, "topicName cannot be '.' or '..'"),
        ({"topicName": "__consumer_offsets"}, "reserved for Lanes' internal topics"),
    ],
)
def test_topics_that_can_never_work_are_refused(spec: dict[str, Any], refusal: str) -> None:
    assert any(refusal in message for message in refusals(topic(**spec))), refusals(topic(**spec))


def test_topic_updates_may_grow_partitions_but_not_shrink_them_or_rename_the_topic() -> None:
    stored = topic(partitions=6, replicationFactor=3, topicName="Orders")
    assert refusals(topic(partitions=8, replicationFactor=3, topicName="Orders"), stored) == []
    assert refusals(topic(partitions=4, replicationFactor=3, topicName="Orders"), stored) == [
        "partitions can only grow (a topic cannot lose partitions without losing their records)"
    ]
    assert "partitions can only grow" in refusals(topic(replicationFactor=3, topicName="Orders"), stored)[0]
    renamed = refusals(topic(partitions=6, replicationFactor=3, topicName="Orders2"), stored)
    assert renamed == ["topicName cannot change; create a new Topic for another topic"]
    assert refusals(topic(partitions=6, replicationFactor=3), stored) == renamed  # dropping it renames too
    # on create, transition rules do not apply
    assert refusals(topic(partitions=1)) == []


@pytest.mark.parametrize(
    ("reset", "refusal"),
    [
        ({"requestId": "r", "to": "offset"}, "to=offset and to=shift need an integer value"),
        ({"requestId": "r", "to": "shift", "value": "-5"}, "to=offset and to=shift need an integer value"),
        ({"requestId": "r", "to": "offset", "value": -1}, "an offset is 0 or more"),
        ({"requestId": "r", "to": "timestamp", "value": "yesterday"}, "to=timestamp needs an RFC 3339 time"),
        ({"requestId": "r", "to": "timestamp", "value": 1795449242296}, "to=timestamp needs an RFC 3339 time"),
        ({"requestId": "r", "to": "latest", "value": 3}, "to=earliest and to=latest take no value"),
        ({"requestId": "r", "to": "newest"}, "'newest' is not one of"),
        ({"to": "earliest"}, "'requestId' is a required property"),
    ],
)
def test_offset_resets_that_can_never_apply_are_refused(reset: dict[str, Any], refusal: str) -> None:
    found = refusals(group(topics=["orders"], resetOffsets=reset))
    assert any(refusal in message for message in found), found


def test_valid_offset_resets_pass() -> None:
    for reset in (
        {"requestId": "a", "to": "earliest"},
        {"requestId": "b", "to": "offset", "value": 0},
        {"requestId": "c", "to": "shift", "value": -100},
        {"requestId": "d", "to": "timestamp", "value": "2026-11-23T17:00:00.5+01:00"},
        {"requestId": "e", "to": "latest", "topics": ["orders"]},
    ):
        assert refusals(group(topics=["orders"], resetOffsets=reset)) == [], reset
    outside = group(topics=["orders"], resetOffsets={"requestId": "f", "to": "latest", "topics": ["prices"]})
    assert refusals(outside) == ["resetOffsets.topics must be among spec.topics"]


def test_autoscaling_bounds_and_targets() -> None:
    target = {"kind": "Deployment", "name": "worker"}
    assert refusals(group(autoscale={"targetRef": target, "lagThreshold": 100, "maxReplicas": 3})) == []
    assert refusals(
        group(autoscale={"targetRef": target, "lagThreshold": 100, "minReplicas": 4, "maxReplicas": 3})
    ) == ["minReplicas cannot be above maxReplicas"]
    daemon = {"kind": "DaemonSet", "name": "worker"}
    assert any(
        "DaemonSet" in m for m in refusals(group(autoscale={"targetRef": daemon, "lagThreshold": 1, "maxReplicas": 1}))
    )
    assert any("lagThreshold" in m for m in refusals(group(autoscale={"targetRef": target, "maxReplicas": 1})))


def test_a_group_id_cannot_change() -> None:
    stored = group(groupId="billing", topics=["orders"])
    changed = copy.deepcopy(stored)
    changed["spec"]["groupId"] = "billing-2"
    assert refusals(changed, stored) == ["groupId cannot change; create a new ConsumerGroup for another group"]
    assert refusals(copy.deepcopy(stored), stored) == []


@pytest.mark.parametrize(
    ("spec", "refusal"),
    [
        ({"userName": "has space"}, "does not match"),
        ({"authentication": {"type": "plain"}}, "is not one of ['scram-sha-256', 'scram-sha-512', 'tls']"),
        (
            {"authentication": {"type": "tls", "password": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}}},
            "a certificate user (type tls) has no password",
        ),
        ({"authentication": {"password": {}}}, "'valueFrom' is a required property"),
        ({"authorization": {"acls": [{"resource": {"type": "topic"}, "operations": ["Read"]}]}}, "names its resource"),
        (
            {"authorization": {"acls": [{"resource": {"type": "topic", "name": "a"}, "operations": ["Steal"]}]}},
            "'Steal'",
        ),
        (
            {"authorization": {"acls": [{"resource": {"type": "topic", "name": "a"}, "operations": []}]}},
            "should be non-empty",
        ),
        ({"quotas": {"producerByteRate": 0}}, "less than the minimum of 1"),
        (
            {
                "authorization": {
                    "acls": [
                        {"resource": {"type": "topic", "name": "*", "patternType": "prefix"}, "operations": ["Read"]}
                    ]
                }
            },
            "a prefix pattern names a prefix",
        ),
        ({"quotas": {"controllerMutationRate": 0}}, "less than the minimum of 0.001"),
    ],
)
def test_users_that_can_never_work_are_refused(spec: dict[str, Any], refusal: str) -> None:
    assert any(refusal in message for message in refusals(user(**spec))), refusals(user(**spec))


def test_a_users_name_cannot_change() -> None:
    stored = user(userName="app")
    assert refusals(user(userName="app"), stored) == []
    assert refusals(user(userName="other"), stored) == ["userName cannot change; create a new User for another user"]
