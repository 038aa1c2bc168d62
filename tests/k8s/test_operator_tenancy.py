"""Namespaces claim only the names an administrator granted them (issue #23, Kubernetes tenancy):
the real operator, installed by the chart with ``operator.watchAllNamespaces`` (its ClusterRole,
its token) in the module's namespace (its home), with ``team-a`` granted the prefix ``team-a.``
(``operator.namespaceGrants``). Topics, ConsumerGroups and Users elsewhere, or outside the
prefix, are refused (Ready=False NotGranted) and change nothing: no topic created, no group read
or reset, no user made, no ACL given on another team's topic; an ungranted claim does not make
the rightful resource conflict."""

from __future__ import annotations

from typing import Any

import pytest

from lanes.client import Admin
from lanes.errors import ErrorCode, LanesError, UnknownTopicOrPartitionError
from tests.e2e.cli import wait_for
from tests.k8s.control_plane import ControlPlane
from tests.k8s.operator_process import OPERATOR_VALUES, Kube, OperatorProcess

pytestmark = pytest.mark.slow

GRANTS = {"team-a": ["team-a."]}


@pytest.fixture(scope="module")
def release_values() -> dict[str, Any]:
    return {
        **OPERATOR_VALUES,
        "operator": {**OPERATOR_VALUES["operator"], "watchAllNamespaces": True, "namespaceGrants": GRANTS},
    }


@pytest.fixture(scope="module")
def teams(kubernetes_api: ControlPlane) -> tuple[Kube, Kube]:
    for team in ("team-a", "team-c"):
        kubernetes_api.kubectl("create", "namespace", team)
    return Kube(kubernetes_api.admin_kubeconfig, "team-a"), Kube(kubernetes_api.admin_kubeconfig, "team-c")


def refused(kube: Kube, plural: str, name: str) -> dict[str, str]:
    condition = wait_for(
        lambda: (c := kube.condition(plural, name)).get("status") == "False" and c, f"{plural}/{name} refused"
    )
    assert condition["reason"] == "NotGranted", condition
    return condition


def ready(kube: Kube, plural: str, name: str) -> bool:
    return kube.condition(plural, name).get("status") == "True"


def absent(admin: Admin, topic: str) -> bool:
    try:
        admin.describe_topic(topic)
    except UnknownTopicOrPartitionError:
        return True
    return False


def test_a_namespace_claims_only_its_granted_prefixes(
    teams: tuple[Kube, Kube], kube: Kube, admin: Admin, operator: OperatorProcess
) -> None:
    (team_a, team_c), home = teams, kube

    # an ungranted claim made first does not make the rightful resource conflict
    team_c.create("topics", "squatter", {"topicName": "team-a.orders"})
    assert "granted no names" in refused(team_c, "topics", "squatter")["message"]
    team_a.create("topics", "orders", {"topicName": "team-a.orders", "partitions": 1})
    wait_for(lambda: ready(team_a, "topics", "orders"), f"team-a's Topic Ready (log: {operator.log()})")
    assert len(admin.describe_topic("team-a.orders").partitions) == 1

    team_a.create("topics", "elsewhere", {"topicName": "payments", "partitions": 1, "deletionPolicy": "Delete"})
    assert "starting with 'team-a.'" in refused(team_a, "topics", "elsewhere")["message"]
    assert absent(admin, "payments")

    home.create("topics", "payments", {"partitions": 1})  # the home namespace claims anything
    wait_for(lambda: ready(home, "topics", "payments"), "the home namespace's Topic Ready")
    team_c.create("topics", "grabber", {"topicName": "payments", "deletionPolicy": "Delete"})
    refused(team_c, "topics", "grabber")

    team_a.create(
        "consumergroups", "theirs", {"groupId": "payments-app", "resetOffsets": {"requestId": "1", "to": "earliest"}}
    )
    refused(team_a, "consumergroups", "theirs")

    team_a.create(
        "users",
        "reader",
        {
            "userName": "team-a.reader",
            "authorization": {"acls": [{"resource": {"type": "topic", "name": "payments"}, "operations": ["Read"]}]},
        },
    )
    assert "topic ACL" in refused(team_a, "users", "reader")["message"]
    team_a.create("users", "outsider", {"userName": "payments-reader"})
    refused(team_a, "users", "outsider")
    for user in ("team-a.reader", "payments-reader"):
        with pytest.raises(LanesError) as unknown:
            admin.describe_users([user])
        assert unknown.value.code == ErrorCode.RESOURCE_NOT_FOUND
    assert team_a.secret("reader") is None

    team_a.create(
        "users",
        "writer",
        {
            "userName": "team-a.writer",
            "authorization": {
                "acls": [
                    {"resource": {"type": "topic", "name": "team-a.", "patternType": "prefix"}, "operations": ["Write"]}
                ]
            },
        },
    )
    wait_for(lambda: ready(team_a, "users", "writer"), f"team-a's User Ready (log: {operator.log()})")
    assert [u.name for u in admin.describe_users(["team-a.writer"])] == ["team-a.writer"]

    # a spec asking for more than the namespace may have revokes the user it made
    acls = [{"resource": {"type": "topic", "name": "payments"}, "operations": ["Read"]}]
    team_a.patch("users", "writer", {"spec": {"authorization": {"acls": acls}}})
    assert "revoked" in refused(team_a, "users", "writer")["message"]
    with pytest.raises(LanesError) as revoked:
        admin.describe_users(["team-a.writer"])
    assert revoked.value.code == ErrorCode.RESOURCE_NOT_FOUND
    passes = operator.reconciliations("User", "refused")  # later ones find no user of theirs, and still say why
    wait_for(lambda: operator.reconciliations("User", "refused") >= passes + 2, "two more refused passes")
    writer = team_a.get("users", "writer") or {}
    assert writer["status"].get("revoked") is True
    assert "revoked" in team_a.condition("users", "writer")["message"]

    # granted again, the user is made again
    acls = [{"resource": {"type": "topic", "name": "team-a.", "patternType": "prefix"}, "operations": ["Write"]}]
    team_a.patch("users", "writer", {"spec": {"authorization": {"acls": acls}}})
    wait_for(lambda: ready(team_a, "users", "writer"), f"team-a's User Ready again (log: {operator.log()})")
    assert "revoked" not in (team_a.get("users", "writer") or {})["status"]
    assert [u.name for u in admin.describe_users(["team-a.writer"])] == ["team-a.writer"]

    for team, name in ((team_c, "squatter"), (team_a, "elsewhere"), (team_c, "grabber")):
        team.delete("topics", name)
        wait_for(lambda team=team, name=name: team.get("topics", name) is None, f"the refused Topic {name} gone")
    assert not absent(admin, "team-a.orders"), "deleting an ungranted claim touches nothing"
    assert not absent(admin, "payments"), "not even with deletionPolicy: Delete"
