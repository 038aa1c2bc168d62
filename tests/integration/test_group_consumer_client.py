"""The group consumer's client-side contract against real processes: auto-commit commits only
what poll returned, asynchronous commits call back, ``auto_offset_reset="none"`` says clearly
that the group has no offset, and bad subscriptions are refused before anything is sent."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import lanes
from lanes.errors import ErrorCode, LanesError, OffsetOutOfRangeError
from lanes.local.cluster import LocalCluster
from tests.integration.processes import running_cluster
from tests.integration.test_consumer_groups import produce, wait_until

TP = lanes.TopicPartition


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    settings = {"group_session_timeout_ms": 3000, "group_heartbeat_interval_ms": 300, "offsets_topic_partitions": 6}
    with running_cluster(tmp_path_factory.mktemp("group-client"), 1, **settings) as running:
        yield running


def poll_for(consumer: lanes.Consumer, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        consumer.poll(100)


def test_auto_commit_commits_only_what_poll_returned(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("events", partitions=1, replication_factor=1)
    produce(bootstrap, "events", 100)
    with lanes.Consumer(
        bootstrap,
        group_id="sampler",
        auto_offset_reset="earliest",
        auto_commit_interval_ms=100,
        max_poll_records=7,
    ) as consumer:
        consumer.subscribe(["events"])
        returned: list[lanes.ConsumerRecord] = []
        wait_until(lambda: (returned.extend(consumer.poll(100)), len(returned))[1] > 0, 20, "a first batch")
        assert len(returned) == 7, "max_poll_records"
        time.sleep(0.3)  # the prefetch has long buffered more than 7 records
        assert consumer.poll(0) != []  # poll commits (the interval passed) what it had returned before
        assert consumer.committed([TP("events", 0)]) == {TP("events", 0): 7}


def test_asynchronous_commit_calls_back(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("clicks", partitions=2, replication_factor=1)
    done = threading.Event()
    outcome: list[tuple[dict[lanes.TopicPartition, int], BaseException | None]] = []

    def callback(offsets: dict[lanes.TopicPartition, int], error: BaseException | None) -> None:
        outcome.append((offsets, error))
        done.set()

    with lanes.Consumer(bootstrap, group_id="clickers") as consumer:
        consumer.commit({TP("clicks", 1): 5}, asynchronous=True, callback=callback)
        assert done.wait(20)
        assert outcome == [({TP("clicks", 1): 5}, None)]
        assert consumer.committed([TP("clicks", 0), TP("clicks", 1)]) == {TP("clicks", 0): None, TP("clicks", 1): 5}
        consumer.commit({TP("clicks", 0): (3, "batch-17")})
    described = {p.partition: p for p in lanes.Admin(bootstrap).describe_group("clickers").offsets}
    assert (described[0].committed_offset, described[0].metadata) == (3, "batch-17"), "metadata kept with the offset"


def test_an_asynchronous_commit_right_before_close_is_made_by_the_member_and_kept(cluster: LocalCluster) -> None:
    """close() waits for the commits made before it, as Kafka's does, while the member is still
    in the group (a commit sent after it left would be refused while others are members)."""
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("closing", partitions=2, replication_factor=1)
    produce(bootstrap, "closing", 40)
    stayer = lanes.Consumer(bootstrap, group_id="closers", auto_offset_reset="earliest", enable_auto_commit=False)
    stayer.subscribe(["closing"])
    try:
        with lanes.Consumer(
            bootstrap, group_id="closers", auto_offset_reset="earliest", enable_auto_commit=False
        ) as leaver:
            leaver.subscribe(["closing"])
            wait_until(lambda: (poll_for(stayer, 0.1), len(leaver.poll(100)))[1] > 0, 30, "records for the leaver")
            owned = sorted(leaver.assignment())
            positions = {tp: leaver.position(tp) for tp in owned}
            leaver.commit(asynchronous=True)
        assert stayer.committed(owned) == positions
    finally:
        stayer.close()


def test_bad_offsets_are_refused_to_their_own_committer_at_once(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    with lanes.Consumer(bootstrap, group_id="careless") as consumer:
        for bad in ({TP("clicks", 0): "5"}, {TP("clicks", 0): (1, 2)}, {("clicks", 0): 5}):
            with pytest.raises(LanesError, match="not an offset") as refused:
                consumer.commit(bad, asynchronous=True)  # type: ignore[arg-type]
            assert refused.value.code is ErrorCode.INVALID_REQUEST


def test_reset_none_raises_a_clear_error_without_a_committed_offset(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("strict", partitions=1, replication_factor=1)
    produce(bootstrap, "strict", 5)
    with lanes.Consumer(bootstrap, group_id="strict-readers", auto_offset_reset="none") as consumer:
        consumer.subscribe(["strict"])
        with pytest.raises(OffsetOutOfRangeError, match="group 'strict-readers' has no committed offset for strict-0"):
            poll_for(consumer, 20)
    lanes.Admin(bootstrap).reset_offsets("strict-readers", "offset:2", partitions=[TP("strict", 0)], dry_run=False)
    with lanes.Consumer(bootstrap, group_id="strict-readers", auto_offset_reset="none") as consumer:
        consumer.subscribe(["strict"])
        read: list[lanes.ConsumerRecord] = []
        wait_until(lambda: (read.extend(consumer.poll(100)), len(read))[1] == 3, 20, "records from the reset offset")
        assert [r.offset for r in read] == [2, 3, 4]


def test_bad_subscriptions_are_refused_up_front(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    with lanes.Consumer(bootstrap, group_id="picky") as consumer:
        with pytest.raises(LanesError) as bad_pattern:
            consumer.subscribe(pattern="orders-(")
        assert bad_pattern.value.code is ErrorCode.INVALID_REGULAR_EXPRESSION
        with pytest.raises(LanesError, match="at least one topic"):
            consumer.subscribe([])
        with pytest.raises(LanesError, match="topics or to a pattern"):
            consumer.subscribe(["a"], pattern="b.*")
    with lanes.Consumer(bootstrap) as free, pytest.raises(LanesError, match="needs a group_id"):
        free.subscribe(["a"])
    with pytest.raises(LanesError) as bad_assignor:
        lanes.Consumer(bootstrap, group_id="g", assignor="sticky")
    assert bad_assignor.value.code is ErrorCode.UNSUPPORTED_ASSIGNOR


def test_a_pattern_subscription_picks_up_topics_created_later(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    admin = lanes.Admin(bootstrap)
    admin.create_topic("metrics-cpu", partitions=1, replication_factor=1)
    admin.create_topic("logs-app", partitions=1, replication_factor=1)
    with lanes.Consumer(bootstrap, group_id="dashboards", auto_offset_reset="earliest") as consumer:
        consumer.subscribe(pattern="metrics-.*")
        wait_until(lambda: (consumer.poll(100), consumer.assignment())[1] == {TP("metrics-cpu", 0)}, 20, "match")
        admin.create_topic("metrics-disk", partitions=2, replication_factor=1)
        produce(bootstrap, "metrics-disk", 10)
        read: list[lanes.ConsumerRecord] = []
        wait_until(lambda: (read.extend(consumer.poll(100)), len(read))[1] == 10, 30, "the new topic's records")
        assert consumer.assignment() == {TP("metrics-cpu", 0), TP("metrics-disk", 0), TP("metrics-disk", 1)}
        assert {r.topic for r in read} == {"metrics-disk"}


def test_a_revoked_partition_read_from_offset_0_is_committed_before_it_moves(cluster: LocalCluster) -> None:
    """Commit-before-revoke commits position 0 too: with ``auto_offset_reset="latest"`` the next
    owner would otherwise start at the end and skip what was produced during the rebalance."""
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("handover", partitions=2, replication_factor=1)
    both = {TP("handover", 0), TP("handover", 1)}

    def member() -> lanes.Consumer:
        return lanes.Consumer(
            bootstrap, group_id="handover", auto_offset_reset="latest", auto_commit_interval_ms=600_000
        )

    with member() as first:
        first.subscribe(["handover"])
        wait_until(lambda: (first.poll(50), first.assignment() == both)[1], 20, "the first member owning both")
        assert {first.position(tp) for tp in both} == {0}
        with member() as second:
            second.subscribe(["handover"])

            def split() -> bool:
                first.poll(50)
                second.poll(50)
                return len(first.assignment()) == len(second.assignment()) == 1

            wait_until(split, 30, "the partitions split between the two members")
            moved = second.assignment()
            assert first.committed(moved) == dict.fromkeys(moved, 0)
