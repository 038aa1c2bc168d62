"""The real operator (``kopf run``) against a real kube-apiserver (with the chart's ServiceAccount)
and a real Lanes cluster: Topic resources become topics, and stay so (issue #9's acceptance)."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from lanes.cli.watch import scrape_text
from lanes.client import Admin
from lanes.errors import UnknownTopicOrPartitionError
from tests.e2e.cli import wait_for
from tests.k8s.operator_process import Kube, OperatorProcess

pytestmark = pytest.mark.slow


def ready(kube: Kube, name: str) -> dict | None:
    """The Topic once Ready, judged on one read of it (two reads could see the condition written
    between them, and the first one's status missing)."""
    found = kube.get("topics", name)
    conditions = (found or {}).get("status", {}).get("conditions", [])
    if any(c["type"] == "Ready" and c.get("status") == "True" for c in conditions):
        return found
    return None


def test_a_topic_resource_creates_the_topic(kube: Kube, admin: Admin, operator: OperatorProcess) -> None:
    kube.create("topics", "prices", {"partitions": 3, "replicationFactor": 2, "config": {"retention.ms": "3600000"}})
    found = wait_for(lambda: ready(kube, "prices"), f"Topic prices Ready (log: {operator.log()})")
    info = admin.describe_topic("prices")
    assert len(info.partitions) == 3
    assert all(len(p.replicas) == 2 for p in info.partitions)
    assert admin.describe_configs("prices")["retention.ms"].value == "3600000"
    assert found["status"]["topicId"] == info.topic_id
    assert found["status"]["partitions"] == 3
    wait_for(  # kopf posts its events in the background: one may come after the status patch
        lambda: ("Normal", "Created") in [(t, r) for t, r, _ in kube.events("prices")], "the Created event"
    )


def partitions(admin: Admin, name: str) -> int:
    return len(admin.describe_topic(name).partitions)


def overrides(admin: Admin, name: str) -> dict[str, str | None]:
    return {n: c.value for n, c in admin.describe_configs(name).items() if not c.is_default}


def observed_generation(kube: Kube, name: str) -> int:
    return int((kube.get("topics", name) or {}).get("status", {}).get("observedGeneration", 0))


def reasons(kube: Kube, name: str) -> list[str]:
    return [reason for _, reason, _ in kube.events(name)]


def test_partitions_grow_and_never_shrink(kube: Kube, admin: Admin, operator: OperatorProcess) -> None:
    kube.create("topics", "trades", {"partitions": 2})
    wait_for(lambda: ready(kube, "trades"), "Topic trades Ready")
    kube.patch("topics", "trades", {"spec": {"partitions": 4}})
    wait_for(lambda: partitions(admin, "trades") == 4, "4 partitions")
    wait_for(lambda: (kube.get("topics", "trades") or {}).get("status", {}).get("partitions") == 4, "status: 4")
    wait_for(
        lambda: "PartitionsAdded" in reasons(kube, "trades"), "the PartitionsAdded event"
    )  # kopf posts events after the patch

    # The API server's CEL rule refuses a shrink of the spec...
    with pytest.raises(ApiException) as shrink:
        kube.patch("topics", "trades", {"spec": {"partitions": 3}})
    assert shrink.value.status == 422
    assert "partitions can only grow" in str(shrink.value.body)
    # ...and a topic grown behind the operator's back is never shrunk back to its spec.
    admin.create_partitions("trades", 5)
    refused = wait_for(lambda: (c := kube.condition("topics", "trades")).get("status") == "False" and c, "Ready=False")
    assert refused["reason"] == "PartitionsCannotShrink"
    assert "has 5 partitions" in refused["message"]
    assert partitions(admin, "trades") == 5
    wait_for(
        lambda: ("Warning", "PartitionsCannotShrink") in [(t, r) for t, r, _ in kube.events("trades")],
        "the PartitionsCannotShrink event",
    )

    kube.patch("topics", "trades", {"spec": {"partitions": 5}})
    wait_for(lambda: ready(kube, "trades"), "Ready again once the spec is possible")


def test_config_follows_the_spec_and_out_of_band_changes_are_repaired(
    kube: Kube, admin: Admin, operator: OperatorProcess
) -> None:
    kube.create("topics", "quotes", {"partitions": 1, "config": {"retention.ms": "600000"}})
    wait_for(lambda: ready(kube, "quotes"), "Topic quotes Ready")
    assert overrides(admin, "quotes") == {"retention.ms": "600000"}

    kube.patch("topics", "quotes", {"spec": {"config": {"retention.ms": "900000", "cleanup.policy": "compact"}}})
    wait_for(lambda: overrides(admin, "quotes") == {"retention.ms": "900000", "cleanup.policy": "compact"}, "configs")
    # the operator records the event once the controller has answered it, a moment after the change shows
    wait_for(lambda: "ConfigChanged" in reasons(kube, "quotes"), "a ConfigChanged event")

    kube.patch("topics", "quotes", {"spec": {"config": {"cleanup.policy": None}}})  # removed from the spec
    wait_for(lambda: overrides(admin, "quotes") == {"retention.ms": "900000"}, "the removed config back to default")

    # Someone changes the topic behind the operator's back: the periodic reconciliation repairs it.
    admin.alter_configs("quotes", set={"retention.ms": "1", "segment.bytes": "1048576"})
    wait_for(lambda: overrides(admin, "quotes") == {"retention.ms": "900000"}, "out-of-band configs repaired")


def test_a_topic_deleted_directly_is_recreated(kube: Kube, admin: Admin, operator: OperatorProcess) -> None:
    kube.create("topics", "orders", {"partitions": 2, "replicationFactor": 2})
    first = wait_for(lambda: ready(kube, "orders"), "Topic orders Ready")["status"]["topicId"]
    admin.delete_topic("orders")

    def recreated() -> bool:
        try:
            return admin.describe_topic("orders").topic_id != first
        except UnknownTopicOrPartitionError:
            return False

    wait_for(recreated, "orders recreated")
    wait_for(lambda: (ready(kube, "orders") or {}).get("status", {}).get("topicId") not in (None, first), "new id")
    assert partitions(admin, "orders") == 2
    wait_for(
        lambda: "Recreating" in reasons(kube, "orders"), "the Recreating event"
    )  # kopf posts events after the patch


def test_an_existing_topic_is_adopted_only_when_the_resource_asks(
    kube: Kube, admin: Admin, operator: OperatorProcess
) -> None:
    """A Topic naming a topic it did not create changes nothing (another team's topic must not be
    taken over from another namespace), and deleting it keeps the topic whatever its policy."""
    topic_id = admin.create_topic("legacy", partitions=2, config={"retention.ms": "1000000"})
    kube.create("topics", "legacy-claim", {"topicName": "legacy", "partitions": 3, "deletionPolicy": "Delete"})
    refused = wait_for(
        lambda: (c := kube.condition("topics", "legacy-claim")).get("reason") == "NotAdopted" and c,
        "NotAdopted reported",
    )
    assert "lanes.dev/adopt" in refused["message"]
    assert partitions(admin, "legacy") == 2
    assert overrides(admin, "legacy") == {"retention.ms": "1000000"}
    kube.delete("topics", "legacy-claim")
    wait_for(lambda: kube.get("topics", "legacy-claim") is None, "the resource that never managed the topic gone")
    wait_for(
        lambda: "Retained" in reasons(kube, "legacy-claim"), "the Retained event"
    )  # kopf posts events after the patch
    assert admin.describe_topic("legacy").topic_id == topic_id, "deleting it kept the topic despite Delete"
    kube.create("topics", "legacy", {"partitions": 3, "deletionPolicy": "Delete"})
    wait_for(lambda: kube.condition("topics", "legacy").get("reason") == "NotAdopted", "NotAdopted again")
    kube.patch("topics", "legacy", {"metadata": {"annotations": {"lanes.dev/adopt": "true"}}})
    found = wait_for(lambda: ready(kube, "legacy"), "Topic legacy Ready")
    assert found["status"]["topicId"] == topic_id  # the same topic, not a new one
    assert partitions(admin, "legacy") == 3
    assert overrides(admin, "legacy") == {}  # the spec names no config: the override goes
    wait_for(lambda: "Adopted" in reasons(kube, "legacy"), "the Adopted event")  # kopf posts events after the patch
    assert "lanes.dev/adopt" not in found["metadata"].get("annotations", {}), "leave to adopt this topic only"


def test_a_topic_replaced_behind_the_resources_back_is_not_its_own(
    kube: Kube, admin: Admin, operator: OperatorProcess
) -> None:
    """Deleted and made again by someone else (another id) while the resource was paused: the
    resource reports NotAdopted, forgets the old id, and deleting it keeps the new topic."""
    kube.create("topics", "swapped", {"partitions": 1, "deletionPolicy": "Delete"})
    first = wait_for(lambda: ready(kube, "swapped"), "Topic swapped Ready")["status"]["topicId"]
    kube.patch("topics", "swapped", {"metadata": {"annotations": {"lanes.dev/paused": "true"}}})
    wait_for(lambda: kube.condition("topics", "swapped").get("reason") == "Paused", "Paused")
    admin.delete_topic("swapped")
    wait_for(lambda: "swapped" not in admin.list_topics(), "the topic gone")
    second = admin.create_topic("swapped", partitions=2)
    assert second != first
    kube.patch("topics", "swapped", {"metadata": {"annotations": {"lanes.dev/paused": None}}})
    wait_for(lambda: kube.condition("topics", "swapped").get("reason") == "NotAdopted", "NotAdopted")
    assert "topicId" not in (kube.get("topics", "swapped") or {}).get("status", {})
    kube.delete("topics", "swapped")
    wait_for(lambda: kube.get("topics", "swapped") is None, "the resource gone")
    assert admin.describe_topic("swapped").topic_id == second, "the new topic is not the resource's to delete"


def test_deletion_honours_the_deletion_policy(kube: Kube, admin: Admin, operator: OperatorProcess) -> None:
    kube.create("topics", "scratch", {"partitions": 1, "deletionPolicy": "Delete"})
    kube.create("topics", "archive", {"partitions": 1})  # Retain, the default
    wait_for(lambda: ready(kube, "scratch") and ready(kube, "archive"), "both Ready")
    assert "lanes.dev/finalizer" in (kube.get("topics", "scratch") or {})["metadata"]["finalizers"]

    kube.delete("topics", "scratch")
    kube.delete("topics", "archive")
    wait_for(lambda: kube.get("topics", "scratch") is None and kube.get("topics", "archive") is None, "resources gone")
    assert "scratch" not in admin.list_topics()
    assert "archive" in admin.list_topics()


def test_two_resources_naming_one_topic(kube: Kube, admin: Admin, operator: OperatorProcess) -> None:
    kube.create("topics", "audit", {"topicName": "Trade_Audit", "partitions": 2})
    wait_for(lambda: ready(kube, "audit"), "Topic audit Ready")
    kube.create("topics", "audit-copy", {"topicName": "Trade_Audit", "partitions": 5})
    conflict = wait_for(
        lambda: (c := kube.condition("topics", "audit-copy")).get("reason") == "Conflict" and c, "Conflict reported"
    )
    assert f"{kube.namespace}/audit" in conflict["message"]
    assert partitions(admin, "Trade_Audit") == 2  # the younger resource changed nothing
    kube.delete("topics", "audit-copy")
    wait_for(lambda: kube.get("topics", "audit-copy") is None, "the younger resource gone")
    assert "Trade_Audit" in admin.list_topics()  # and deleting it did not delete the topic


def test_invalid_configs_are_reported_not_retried_in_a_loop(
    kube: Kube, admin: Admin, operator: OperatorProcess
) -> None:
    kube.create("topics", "bad", {"partitions": 1, "config": {"retention.ms": "forever"}})
    condition = wait_for(lambda: (c := kube.condition("topics", "bad")).get("status") == "False" and c, "Ready=False")
    assert condition["reason"] == "InvalidConfig"
    assert "retention.ms" in condition["message"]
    kube.patch("topics", "bad", {"spec": {"config": {"retention.ms": "60000"}}})
    wait_for(lambda: ready(kube, "bad"), "Ready once the config is valid")
    assert overrides(admin, "bad") == {"retention.ms": "60000"}


def test_a_paused_resource_is_left_alone(kube: Kube, admin: Admin, operator: OperatorProcess) -> None:
    kube.create("topics", "frozen", {"partitions": 1})
    wait_for(lambda: ready(kube, "frozen"), "Topic frozen Ready")
    kube.patch("topics", "frozen", {"metadata": {"annotations": {"lanes.dev/paused": "true"}}})
    wait_for(lambda: kube.condition("topics", "frozen").get("reason") == "Paused", "Paused")
    admin.alter_configs("frozen", set={"retention.ms": "1234"})
    kube.patch("topics", "frozen", {"spec": {"partitions": 2}})
    generation = (kube.get("topics", "frozen") or {})["metadata"]["generation"]
    wait_for(lambda: observed_generation(kube, "frozen") == generation, "the operator saw the paused change")
    resyncs = operator.reconciliations("Topic", "paused")
    wait_for(lambda: operator.reconciliations("Topic", "paused") >= resyncs + 2, "two more paused reconciliations")
    assert partitions(admin, "frozen") == 1
    assert overrides(admin, "frozen") == {"retention.ms": "1234"}
    kube.patch("topics", "frozen", {"metadata": {"annotations": {"lanes.dev/paused": None}}})
    wait_for(lambda: partitions(admin, "frozen") == 2 and overrides(admin, "frozen") == {}, "reconciled again")


def test_the_operator_reports_metrics(operator: OperatorProcess) -> None:
    text = scrape_text(operator.metrics_address)
    assert 'lanes_operator_reconciliations_total{kind="Topic",result="ready"}' in text
    assert 'lanes_operator_actions_total{action="Created",kind="Topic"}' in text
    assert "lanes_operator_reconcile_duration_seconds_bucket" in text


def test_an_operator_killed_and_restarted_changes_nothing_and_catches_up(
    kube: Kube, admin: Admin, operator: OperatorProcess
) -> None:
    kube.create("topics", "steady", {"partitions": 2})
    wait_for(lambda: ready(kube, "steady"), "Topic steady Ready")
    ids = {name: admin.describe_topic(name).topic_id for name in admin.list_topics()}
    created = reasons(kube, "steady").count("Created")
    operator.kill()
    kube.patch("topics", "steady", {"spec": {"partitions": 3}})  # while no operator runs
    operator.start()
    wait_for(lambda: partitions(admin, "steady") == 3, "the change made while down applied after the restart")
    wait_for(lambda: (ready(kube, "steady") or {}).get("status", {}).get("partitions") == 3, "status: 3")
    assert {name: admin.describe_topic(name).topic_id for name in ids} == ids  # nothing recreated
    assert reasons(kube, "steady").count("Created") == created
