"""Group administration through lanes.Admin against real processes: list, describe with lag in
records and in milliseconds, delete, reset and delete offsets — and static membership keeping an
assignment across a quick restart."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import lanes
from lanes.errors import ErrorCode, LanesError
from lanes.local.cluster import LocalCluster
from tests.integration.processes import running_cluster
from tests.integration.test_consumer_groups import produce, wait_until

TP = lanes.TopicPartition


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    settings = {"group_session_timeout_ms": 3000, "group_heartbeat_interval_ms": 300, "offsets_topic_partitions": 6}
    with running_cluster(tmp_path_factory.mktemp("groups-admin"), 3, **settings) as running:
        yield running


def test_describe_shows_members_assignment_and_lag_and_delete_needs_an_empty_group(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    admin = lanes.Admin(bootstrap)
    admin.create_topic("ledger", partitions=2, replication_factor=3)
    produce(bootstrap, "ledger", 100)
    consumer = lanes.Consumer(bootstrap, group_id="auditors", auto_offset_reset="earliest", enable_auto_commit=False)
    consumer.subscribe(["ledger"])
    read: list[lanes.ConsumerRecord] = []
    wait_until(lambda: (read.extend(consumer.poll(100)), len(read))[1] == 100, 30, "all 100 read")
    consumer.commit({TP("ledger", 0): 10, TP("ledger", 1): 20})
    time.sleep(0.2)
    description = admin.describe_group("auditors")
    assert description.state in ("stable", "reconciling")
    assert len(description.members) == 1
    member = description.members[0]
    assert member.assignment == {TP("ledger", 0), TP("ledger", 1)}
    assert member.client_host in ("127.0.0.1", "::1", "localhost")
    ends = {p.partition: p.log_end_offset for p in description.offsets}
    assert sum(ends.values()) == 100
    lags = {p.partition: p.lag for p in description.offsets}
    assert lags == {0: ends[0] - 10, 1: ends[1] - 20}
    assert description.total_lag == 100 - 30
    assert all(p.lag_ms >= 0 for p in description.offsets), "age of the oldest unconsumed record"
    assert {p.member_id for p in description.offsets} == {member.member_id}
    assert [g.group_id for g in admin.list_groups() if g.group_id == "auditors"] == ["auditors"]

    with pytest.raises(LanesError) as refused:
        admin.delete_group("auditors")
    assert refused.value.code is ErrorCode.NON_EMPTY_GROUP
    with pytest.raises(LanesError) as refused_reset:
        admin.reset_offsets("auditors", "earliest", dry_run=False)
    assert refused_reset.value.code is ErrorCode.NON_EMPTY_GROUP
    consumer.close()
    assert admin.describe_group("auditors").state == "empty"
    admin.delete_group("auditors")
    with pytest.raises(LanesError) as gone:
        admin.describe_group("auditors")
    assert gone.value.code is ErrorCode.GROUP_ID_NOT_FOUND


def test_reset_offsets_dry_run_then_execute_every_way(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    admin = lanes.Admin(bootstrap)
    admin.create_topic("history", partitions=1, replication_factor=3)
    produce(bootstrap, "history", 40)
    partition = [TP("history", 0)]
    with lanes.Consumer(bootstrap, group_id="replayers") as free:  # a free consumer may commit: no members
        free.commit({partition[0]: 30})
        middle = free.offsets_for_times({partition[0]: 0})[partition[0]]
    assert middle is not None

    dry = admin.reset_offsets("replayers", "earliest")
    assert [(r.previous_offset, r.new_offset) for r in dry] == [(30, 0)]
    assert admin.describe_group("replayers").offsets[0].committed_offset == 30, "a dry run writes nothing"

    def reset(to: str) -> int:
        (result,) = admin.reset_offsets("replayers", to, partitions=partition, dry_run=False)
        assert result.error == ""
        assert admin.describe_group("replayers").offsets[0].committed_offset == result.new_offset
        return result.new_offset

    assert reset("earliest") == 0
    assert reset("latest") == 40
    assert reset("offset:12") == 12
    assert reset("shift:-5") == 7
    assert reset("shift:1000") == 40, "clamped to the end of the log"
    assert reset("offset:-3") == 0, "clamped to the start"
    assert reset(f"timestamp:{int(time.time() * 1000) + 3_600_000}") == 40, "after every record: the end"
    assert reset("timestamp:0") == 0
    with pytest.raises(LanesError, match="earliest, latest, offset:N"):
        admin.reset_offsets("replayers", "yesterday")
    (missing,) = admin.reset_offsets("replayers", "earliest", partitions=[TP("history", 7)], dry_run=False)
    assert "does not exist" in missing.error

    assert admin.delete_offsets("replayers", partition) == {partition[0]: ""}
    assert admin.describe_group("replayers").offsets == ()


def test_delete_offsets_refuses_topics_the_group_reads(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    admin = lanes.Admin(bootstrap)
    admin.create_topic("quotes", partitions=1, replication_factor=3)
    with lanes.Consumer(bootstrap, group_id="quoters") as consumer:
        consumer.subscribe(["quotes"])
        wait_until(lambda: (consumer.poll(100), len(consumer.assignment()))[1] == 1, 20, "assignment")
        consumer.commit({TP("quotes", 0): 0})
        results = admin.delete_offsets("quoters", [TP("quotes", 0)])
        assert "subscribes" in results[TP("quotes", 0)]


def test_a_static_member_gets_its_partitions_back_after_a_quick_restart(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("statics", partitions=4, replication_factor=3)

    def member(instance: str) -> lanes.Consumer:
        consumer = lanes.Consumer(bootstrap, group_id="pods", group_instance_id=instance)
        consumer.subscribe(["statics"])
        return consumer

    first, second = member("pod-0"), member("pod-1")
    wait_until(
        lambda: (first.poll(50), second.poll(50), len(first.assignment()) == len(second.assignment()) == 2)[2],
        20,
        "both members share",
    )
    before = first.assignment()
    epoch = lanes.Admin(bootstrap).describe_group("pods").group_epoch
    first.close()  # a static member leaves temporarily: its partitions wait for it
    time.sleep(1)
    second.poll(50)
    assert len(second.assignment()) == 2, "nothing moved while pod-0 restarts"
    restarted = member("pod-0")
    wait_until(lambda: (restarted.poll(50), restarted.assignment() == before)[1], 10, "pod-0 back on its partitions")
    assert lanes.Admin(bootstrap).describe_group("pods").group_epoch == epoch, "no rebalance"
    restarted.close()
    second.close()
