"""The Topic, ConsumerGroup and User CRDs on a real kube-apiserver: created by the server (its
structural-schema and CEL cost checks), example resources it accepts, and schemas and CEL rules
it applies to refuse what can never work, each rule exercised through a real request."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.k8s.control_plane import ControlPlane
from tests.k8s.crds import Refusals, crds, examples, rules


def topic(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "lanes.dev/v1alpha1", "kind": "Topic", "metadata": {"name": "t"}, "spec": spec}


def group(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "lanes.dev/v1alpha1", "kind": "ConsumerGroup", "metadata": {"name": "g"}, "spec": spec}


def user(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "lanes.dev/v1alpha1", "kind": "User", "metadata": {"name": "u"}, "spec": spec}


@pytest.fixture(scope="module")
def refusals(kubernetes_api: ControlPlane, namespace: str) -> Refusals:
    """The server's refusals of a resource (and of an update from ``old``), remembered in ``seen``."""
    return Refusals(kubernetes_api.admin_kubeconfig, namespace)


def messages(found: list[str]) -> list[str]:
    """The rules' own messages among the server's causes ("spec: Invalid value: ...: MESSAGE")."""
    return [m.rsplit(": ", 1)[-1] for m in found]


def test_the_server_created_every_crd_with_its_rules_compiled(kubernetes_api: ControlPlane) -> None:
    assert set(crds()) == {"Topic", "ConsumerGroup", "User", "ClusterKopfPeering", "KopfPeering"}
    for crd in crds().values():
        stored = kubernetes_api.get_json("crd", crd["metadata"]["name"])
        conditions = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
        assert conditions.get("Established") == "True", conditions
        assert conditions.get("NonStructuralSchema") is None, stored["status"]["conditions"]
    for kind in ("Topic", "ConsumerGroup", "User"):
        version = crds()[kind]["spec"]["versions"][0]
        assert version["name"] == "v1alpha1"
        assert version["subresources"] == {"status": {}}
        assert {c["name"] for c in version["additionalPrinterColumns"]} >= {"Age"}


def test_a_rule_over_its_cost_budget_is_refused_when_the_crd_is_created(kubernetes_api: ControlPlane) -> None:
    """What made ``helm install`` fail (issue #33): a rule over unbounded lists and strings. The
    server estimates each rule's worst case from maxItems and maxLength and refuses the CRD."""
    costly = copy.deepcopy(crds()["ConsumerGroup"])
    costly["metadata"]["name"] = "costlygroups.lanes.dev"
    costly["spec"]["names"] = {"kind": "CostlyGroup", "plural": "costlygroups", "singular": "costlygroup"}
    reset = costly["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for field in (reset["topics"], reset["resetOffsets"]["properties"]["topics"]):
        field.pop("maxItems", None)
        field["items"].pop("maxLength", None)
    refused = kubernetes_api.apply([costly], check=False)
    assert "exceeds budget" in refused, refused


def test_every_cel_rule_has_a_message() -> None:
    counted = 0
    for kind in crds():
        for path, rule in rules(kind):
            assert rule["message"], f"{kind} {path}: a rule without a message"
            counted += 1
    assert counted == 16


def test_the_examples_are_accepted(refusals: Refusals) -> None:
    found = examples()
    assert {r["kind"] for r in found} == {"Topic", "ConsumerGroup", "User"}
    for resource in found:
        assert resource["apiVersion"] == "lanes.dev/v1alpha1"
        assert refusals(resource) == [], resource["metadata"]["name"]


@pytest.mark.parametrize(
    ("spec", "refusal"),
    [
        ({"partitions": 0}, "spec.partitions in body should be greater than or equal to 1"),
        ({"replicationFactor": 0}, "spec.replicationFactor in body should be greater than or equal to 1"),
        ({"topicName": "has space"}, "spec.topicName in body should match"),
        ({"topicName": "x" * 250}, "Too long: may not be more than 249 bytes"),
        ({"deletionPolicy": "Orphan"}, 'Unsupported value: "Orphan": supported values: "Delete", "Retain"'),
        ({"config": {"retention.ms": 86400000}}, "spec.config.retention.ms in body must be of type string"),
        ({"topicName": ".."}, "topicName cannot be '.' or '..'"),
        ({"topicName": "__consumer_offsets"}, "reserved for Lanes' internal topics"),
    ],
)
def test_topics_that_can_never_work_are_refused(spec: dict[str, Any], refusal: str, refusals: Refusals) -> None:
    assert any(refusal in message for message in refusals(topic(**spec))), refusals(topic(**spec))


def test_topic_updates_may_grow_partitions_but_not_shrink_them_or_rename_the_topic(refusals: Refusals) -> None:
    stored = topic(partitions=6, replicationFactor=3, topicName="Orders")
    assert refusals(topic(partitions=8, replicationFactor=3, topicName="Orders"), stored) == []
    assert messages(refusals(topic(partitions=4, replicationFactor=3, topicName="Orders"), stored)) == [
        "partitions can only grow (a topic cannot lose partitions without losing their records)"
    ]
    assert "partitions can only grow" in refusals(topic(replicationFactor=3, topicName="Orders"), stored)[0]
    renamed = messages(refusals(topic(partitions=6, replicationFactor=3, topicName="Orders2"), stored))
    assert renamed == ["topicName cannot change; create a new Topic for another topic"]
    assert messages(refusals(topic(partitions=6, replicationFactor=3), stored)) == renamed  # dropping it renames too
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
        ({"requestId": "r", "to": "newest"}, 'Unsupported value: "newest"'),
        ({"to": "earliest"}, "spec.resetOffsets.requestId: Required value"),
    ],
)
def test_offset_resets_that_can_never_apply_are_refused(
    reset: dict[str, Any], refusal: str, refusals: Refusals
) -> None:
    found = refusals(group(topics=["orders"], resetOffsets=reset))
    assert any(refusal in message for message in found), found


def test_valid_offset_resets_pass(refusals: Refusals) -> None:
    for reset in (
        {"requestId": "a", "to": "earliest"},
        {"requestId": "b", "to": "offset", "value": 0},
        {"requestId": "c", "to": "shift", "value": -100},
        {"requestId": "d", "to": "timestamp", "value": "2026-11-23T17:00:00.5+01:00"},
        {"requestId": "e", "to": "latest", "topics": ["orders"]},
    ):
        assert refusals(group(topics=["orders"], resetOffsets=reset)) == [], reset
    outside = group(topics=["orders"], resetOffsets={"requestId": "f", "to": "latest", "topics": ["prices"]})
    assert messages(refusals(outside)) == ["resetOffsets.topics must be among spec.topics"]


def test_autoscaling_bounds_and_targets(refusals: Refusals) -> None:
    target = {"kind": "Deployment", "name": "worker"}
    assert refusals(group(autoscale={"targetRef": target, "lagThreshold": 100, "maxReplicas": 3})) == []
    assert messages(
        refusals(group(autoscale={"targetRef": target, "lagThreshold": 100, "minReplicas": 4, "maxReplicas": 3}))
    ) == ["minReplicas cannot be above maxReplicas"]
    daemon = {"kind": "DaemonSet", "name": "worker"}
    assert any(
        "DaemonSet" in m for m in refusals(group(autoscale={"targetRef": daemon, "lagThreshold": 1, "maxReplicas": 1}))
    )
    assert any("lagThreshold" in m for m in refusals(group(autoscale={"targetRef": target, "maxReplicas": 1})))


def test_a_group_id_cannot_change(refusals: Refusals) -> None:
    stored = group(groupId="billing", topics=["orders"])
    changed = copy.deepcopy(stored)
    changed["spec"]["groupId"] = "billing-2"
    assert messages(refusals(changed, stored)) == [
        "groupId cannot change; create a new ConsumerGroup for another group"
    ]
    assert refusals(copy.deepcopy(stored), stored) == []


@pytest.mark.parametrize(
    ("spec", "refusal"),
    [
        ({"userName": "has space"}, "spec.userName in body should match"),
        ({"authentication": {"type": "plain"}}, 'Unsupported value: "plain": supported values: "scram-sha-256"'),
        (
            {"authentication": {"type": "tls", "password": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}}},
            "a certificate user (type tls) has no password",
        ),
        ({"authentication": {"password": {}}}, "spec.authentication.password.valueFrom: Required value"),
        ({"authorization": {"acls": [{"resource": {"type": "topic"}, "operations": ["Read"]}]}}, "names its resource"),
        (
            {"authorization": {"acls": [{"resource": {"type": "topic", "name": "a"}, "operations": ["Steal"]}]}},
            'Unsupported value: "Steal"',
        ),
        (
            {"authorization": {"acls": [{"resource": {"type": "topic", "name": "a"}, "operations": []}]}},
            "should have at least 1 items",
        ),
        ({"quotas": {"producerByteRate": 0}}, "should be greater than or equal to 1"),
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
        ({"quotas": {"controllerMutationRate": 0}}, "controllerMutationRate is at least 0.001"),
    ],
)
def test_users_that_can_never_work_are_refused(spec: dict[str, Any], refusal: str, refusals: Refusals) -> None:
    assert any(refusal in message for message in refusals(user(**spec))), refusals(user(**spec))


def test_a_users_name_cannot_change(refusals: Refusals) -> None:
    stored = user(userName="app")
    assert refusals(user(userName="app"), stored) == []
    assert messages(refusals(user(userName="other"), stored)) == [
        "userName cannot change; create a new User for another user"
    ]


def test_every_cel_rule_was_exercised_through_the_server(refusals: Refusals) -> None:
    """Every rule of every CRD refused at least one request in this module (run last)."""
    wanted = {rule["message"] for kind in crds() for _, rule in rules(kind)}
    assert wanted <= set(messages(sorted(refusals.seen))), wanted - set(messages(sorted(refusals.seen)))
