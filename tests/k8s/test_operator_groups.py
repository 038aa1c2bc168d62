"""The real operator against a real kube-apiserver (with the chart's ServiceAccount) and a real
Lanes cluster: ConsumerGroup resources report a real group's lag, reset its offsets
declaratively, and autoscale its workload (issue #9's acceptance)."""

from __future__ import annotations

import pytest

import lanes
from lanes.client import Admin
from tests.e2e.cli import wait_for
from tests.integration.test_consumer_groups import produce
from tests.k8s.operator_process import Kube, OperatorProcess

pytestmark = pytest.mark.slow


def status(kube: Kube, name: str) -> dict:
    return dict((kube.get("consumergroups", name) or {}).get("status", {}))


def committed(admin: Admin, group: str) -> dict[int, int]:
    return {p.partition: p.committed_offset for p in admin.describe_group(group).offsets}


def consume_and_commit(bootstrap: str, group: str, topic: str, records: int) -> None:
    """A real member of ``group`` reads ``records`` records, commits them and leaves."""
    with lanes.Consumer(bootstrap, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
        consumer.subscribe([topic])
        seen: list[lanes.ConsumerRecord] = []
        wait_for(lambda: (seen.extend(consumer.poll(100)), len(seen) >= records)[1], f"{records} records")
        consumer.commit()


def test_status_reports_the_groups_real_lag_and_members(
    kube: Kube, admin: Admin, bootstrap: str, operator: OperatorProcess
) -> None:
    admin.create_topic("payments", partitions=2, replication_factor=2)
    produce(bootstrap, "payments", 100)
    consume_and_commit(bootstrap, "billing", "payments", 100)
    produce(bootstrap, "payments", 30, start=100)  # 30 records the group has not read
    kube.create("consumergroups", "billing", {"topics": ["payments"], "assignor": "range"})

    found = wait_for(lambda: (s := status(kube, "billing")).get("lag") == 30 and s, "lag 30 in the status")
    assert (found["groupId"], found["state"], found["members"]) == ("billing", "empty", 0)
    truth = admin.describe_group("billing")  # described after the status was written: older records
    reported = {p["partition"]: p.pop("lagSeconds") for p in found["partitions"]}
    assert all(0 < reported[p.partition] <= p.lag_ms / 1000 for p in truth.offsets)
    assert found["partitions"] == [
        {
            "topic": "payments",
            "partition": p.partition,
            "committedOffset": p.committed_offset,
            "logEndOffset": p.log_end_offset,
            "lag": p.lag,
            "memberId": p.member_id,
        }
        for p in sorted(truth.offsets, key=lambda p: p.partition)
    ]
    assert sum(p["logEndOffset"] for p in found["partitions"]) == 130
    assert found["lagSeconds"] > 0
    assert kube.condition("consumergroups", "billing", "GroupActive")["status"] == "False"

    with lanes.Consumer(bootstrap, group_id="billing") as member:
        member.subscribe(["payments"])
        wait_for(lambda: (member.poll(100), status(kube, "billing").get("members") == 1)[1], "one member reported")
        assert kube.condition("consumergroups", "billing", "GroupActive")["status"] == "True"
        mismatch = wait_for(lambda: kube.condition("consumergroups", "billing", "AssignorMatches"), "assignor checked")
        assert (mismatch["status"], mismatch["reason"]) == ("False", "AssignorMismatch")  # the member uses uniform


def test_a_reset_waits_for_an_empty_group_and_applies_once(
    kube: Kube, admin: Admin, bootstrap: str, operator: OperatorProcess
) -> None:
    admin.create_topic("ledger", partitions=2, replication_factor=1)
    produce(bootstrap, "ledger", 40)
    consume_and_commit(bootstrap, "auditors", "ledger", 40)
    assert sum(committed(admin, "auditors").values()) == 40
    kube.create("consumergroups", "auditors", {"topics": ["ledger"]})

    with lanes.Consumer(bootstrap, group_id="auditors") as member:
        member.subscribe(["ledger"])
        wait_for(lambda: (member.poll(100), status(kube, "auditors").get("members") == 1)[1], "the member reported")
        kube.patch(
            "consumergroups", "auditors", {"spec": {"resetOffsets": {"requestId": "replay-1", "to": "earliest"}}}
        )
        waiting = wait_for(
            lambda: (
                (c := kube.condition("consumergroups", "auditors", "GroupActive")).get("reason") == "ResetWaiting" and c
            ),
            "the reset waits for the member",
        )
        assert "replay-1" in waiting["message"]
        member.poll(100)
        assert sum(committed(admin, "auditors").values()) == 40  # not reset while the member is there

    applied = wait_for(lambda: status(kube, "auditors").get("lastAppliedReset"), "the reset applied once empty")
    assert (applied["requestId"], applied["to"], applied["partitions"]) == ("replay-1", "earliest", 2)
    assert committed(admin, "auditors") == {0: 0, 1: 0}
    wait_for(lambda: status(kube, "auditors").get("lag") == 40, "lag back to the whole topic")
    wait_for(  # kopf posts its events in the background: one may come after the status patch
        lambda: "OffsetsReset" in [reason for _, reason, _ in kube.events("auditors")], "the OffsetsReset event"
    )

    # Applied once per requestId: the group reads again, and the same request does not rewind it.
    consume_and_commit(bootstrap, "auditors", "ledger", 40)
    wait_for(lambda: status(kube, "auditors").get("lag") == 0, "lag 0 after reading again")
    assert sum(committed(admin, "auditors").values()) == 40
    assert [reason for _, reason, _ in kube.events("auditors")].count("OffsetsReset") == 1

    # A new request to a point in the log.
    kube.patch(
        "consumergroups", "auditors", {"spec": {"resetOffsets": {"requestId": "replay-2", "to": "shift", "value": -5}}}
    )
    wait_for(lambda: sum(committed(admin, "auditors").values()) == 30, "shifted back 5 per partition")


def test_autoscaling_follows_the_lag_up_to_the_partition_count(
    kube: Kube, admin: Admin, bootstrap: str, operator: OperatorProcess
) -> None:
    admin.create_topic("fills", partitions=3, replication_factor=1)
    produce(bootstrap, "fills", 20)
    consume_and_commit(bootstrap, "settlement", "fills", 20)
    kube.create_deployment("settlement", replicas=1)
    kube.create(
        "consumergroups",
        "settlement",
        {
            "topics": ["fills"],
            "autoscale": {
                "targetRef": {"kind": "Deployment", "name": "settlement"},
                "lagThreshold": 100,
                "minReplicas": 1,
                "maxReplicas": 10,
                "scaleDownStabilizationSeconds": 0,
            },
        },
    )
    wait_for(lambda: status(kube, "settlement").get("desiredReplicas") == 1, "1 replica for no lag")

    produce(bootstrap, "fills", 250, start=20)  # lag 250: 3 replicas at 100 per replica
    wait_for(lambda: kube.replicas("settlement") == 3, "scaled to 3")
    produce(bootstrap, "fills", 1_000, start=270)  # lag 1,250 asks for 13: capped by 3 partitions (and max 10)
    wait_for(lambda: status(kube, "settlement").get("lag") == 1_250, "lag 1,250 seen")
    wait_for(lambda: status(kube, "settlement").get("desiredReplicas") == 3, "desired 3")
    assert kube.replicas("settlement") == 3
    wait_for(lambda: "Scaled" in [reason for _, reason, _ in kube.events("settlement")], "the Scaled event")

    consume_and_commit(bootstrap, "settlement", "fills", 1_250)
    wait_for(lambda: kube.replicas("settlement") == 1, "scaled back down to minReplicas")
    assert kube.condition("consumergroups", "settlement", "ScalingActive")["status"] == "True"
