"""The controller's pure core: metadata state machine, placement and decisions, driven without
any I/O. Property tests run random event sequences and check the invariants after every step."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from lanes.controller.core import ConfigOp, ControllerCore, ControllerDecision, NewTopic
from lanes.controller.placement import BrokerSlot, assign_replicas
from lanes.errors import ErrorCode
from lanes.metadata.image import NO_LEADER, MetadataImage
from lanes.security import scram
from lanes.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from lanes.v1 import common_pb2


class Cluster:
    """A core and its state, with records applied as a controller service would."""

    def __init__(self, seed: int = 0) -> None:
        self.image = MetadataImage()
        ids = itertools.count()
        self.core = ControllerCore(self.image, rng=random.Random(seed), new_id=lambda: f"id-{next(ids)}")
        self.commit(self.core.create_cluster(now_ms=1))
        self.incarnations = itertools.count()

    def commit(self, decision: ControllerDecision) -> ControllerDecision:
        for record in decision.records:
            self.image.apply(self.image.last_offset + 1, record)
        self.image.check_invariants()
        return decision

    def start_broker(self, broker_id: int, rack: str = "") -> int:
        decision = self.commit(
            self.core.register(
                "broker",
                broker_id,
                f"incarnation-{next(self.incarnations)}",
                cluster_id="",
                host="127.0.0.1",
                port=9000 + broker_id,
                rack=rack,
            )
        )
        assert decision.error is ErrorCode.NONE, decision.message
        epoch = self.image.brokers[broker_id].epoch
        self.commit(self.core.heartbeat("broker", broker_id, epoch, self.image.last_offset))
        assert not self.image.brokers[broker_id].fenced
        return epoch

    def partition(self, topic: str, index: int):  # type: ignore[no-untyped-def]
        found = self.image.topic(topic)
        assert found is not None
        return found.partitions[index]


def test_brokers_register_fenced_and_are_unfenced_once_caught_up() -> None:
    cluster = Cluster()
    decision = cluster.commit(cluster.core.register("broker", 1, "a", cluster_id="", host="h", port=1))
    broker = cluster.image.brokers[1]
    assert broker.fenced
    assert broker.epoch == cluster.image.last_offset, "the epoch is the registration's metadata offset"
    assert not cluster.commit(cluster.core.heartbeat("broker", 1, broker.epoch, broker.epoch - 1)).records
    cluster.commit(cluster.core.heartbeat("broker", 1, broker.epoch, broker.epoch))
    assert not cluster.image.brokers[1].fenced
    stale = cluster.core.heartbeat("broker", 1, broker.epoch - 1, 100)
    assert stale.error is ErrorCode.STALE_BROKER_EPOCH
    assert decision.error is ErrorCode.NONE


def test_a_live_broker_id_cannot_be_taken_by_another_process() -> None:
    cluster = Cluster()
    cluster.start_broker(1)
    refused = cluster.core.register("broker", 1, "other", cluster_id="", host="h", port=2, previous_session_alive=True)
    assert refused.error is ErrorCode.DUPLICATE_BROKER_REGISTRATION
    wrong_cluster = cluster.core.register("broker", 2, "x", cluster_id="another-cluster", host="h", port=2)
    assert wrong_cluster.error is ErrorCode.INCONSISTENT_CLUSTER_ID


def test_create_topic_places_replicas_and_validates_everything() -> None:
    cluster = Cluster()
    for broker_id in (1, 2, 3):
        cluster.start_broker(broker_id)
    cluster.commit(cluster.core.create_topic(NewTopic("orders", 6, 3, configs=(("retention.ms", "1000"),))))
    topic = cluster.image.topic("orders")
    assert topic is not None
    assert [p.leader for p in topic.partitions.values()] == [p.replicas[0] for p in topic.partitions.values()]
    assert Counter(p.leader for p in topic.partitions.values()) == {1: 2, 2: 2, 3: 2}, "leaders spread evenly"
    assert all(sorted(p.isr) == [1, 2, 3] for p in topic.partitions.values())
    assert cluster.image.topic_configs("orders") == {"retention.ms": "1000"}
    cases = [
        (NewTopic("orders", 1, 1), ErrorCode.TOPIC_ALREADY_EXISTS, "already exists"),
        (NewTopic("bad/name", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION, "contains '/'"),
        (NewTopic("orders.eu", 1, 1), ErrorCode.NONE, None),
        (NewTopic("orders_eu", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION, "collides with existing topic 'orders.eu'"),
        (NewTopic("big", 1, 4), ErrorCode.INVALID_REPLICATION_FACTOR, "larger than the 3 live brokers"),
        (NewTopic("none", 0, 1), ErrorCode.INVALID_PARTITIONS, "must be positive"),
        (NewTopic("cfg", 1, 1, configs=(("retention.ms", "soon"),)), ErrorCode.INVALID_CONFIG, "not an integer"),
        (NewTopic("cfg", 1, 1, configs=(("retention.mss", "1"),)), ErrorCode.INVALID_CONFIG, "unknown topic config"),
        (NewTopic("manual", assignments=((1, 1),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "twice"),
        (NewTopic("manual", assignments=((1, 9),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "unregistered brokers"),
    ]
    for request, error, message in cases:
        decision = cluster.commit(cluster.core.create_topic(request))
        assert decision.error is error, (request, decision.message)
        if message:
            assert message in decision.message


def test_a_fenced_leader_hands_over_to_the_next_isr_member_and_the_last_one_stays_in_the_isr() -> None:
    cluster = Cluster()
    for broker_id in (1, 2, 3):
        cluster.start_broker(broker_id)
    cluster.commit(cluster.core.create_topic(NewTopic("t", assignments=((1, 2, 3),))))
    before = cluster.partition("t", 0)
    epochs = (before.leader_epoch, before.partition_epoch)
    cluster.commit(cluster.core.fence("broker", 1, "session timeout"))
    after = cluster.partition("t", 0)
    assert (after.leader, after.isr) == (2, [2, 3])
    assert after.leader_epoch == epochs[0] + 1
    assert after.partition_epoch > epochs[1]
    cluster.commit(cluster.core.fence("broker", 2, "session timeout"))
    cluster.commit(cluster.core.fence("broker", 3, "session timeout"))
    offline = cluster.partition("t", 0)
    assert offline.leader == NO_LEADER, "no unclean election by default"
    assert offline.isr == [3], "the last in-sync replica stays in the ISR"
    # Broker 1 returns: it is not in the ISR, so the partition stays offline.
    cluster.commit(cluster.core.register("broker", 1, "again", cluster_id="", host="h", port=1))
    cluster.commit(cluster.core.heartbeat("broker", 1, cluster.image.brokers[1].epoch, cluster.image.last_offset))
    assert cluster.partition("t", 0).leader == NO_LEADER
    # Broker 3 (the last ISR member, with every acknowledged record) returns and leads again.
    cluster.commit(cluster.core.register("broker", 3, "again", cluster_id="", host="h", port=3))
    cluster.commit(cluster.core.heartbeat("broker", 3, cluster.image.brokers[3].epoch, cluster.image.last_offset))
    assert cluster.partition("t", 0).leader == 3


def test_unclean_election_only_when_the_topic_allows_it() -> None:
    cluster = Cluster()
    for broker_id in (1, 2):
        cluster.start_broker(broker_id)
    cluster.commit(
        cluster.core.create_topic(
            NewTopic("t", assignments=((1, 2),), configs=(("unclean.leader.election.enable", "true"),))
        )
    )
    cluster.commit(
        cluster.core.alter_partition(
            1,
            cluster.image.brokers[1].epoch,
            cluster.partition("t", 0).topic_id,
            0,
            leader_epoch=0,
            partition_epoch=0,
            new_isr=[1],
        )
    )
    cluster.commit(cluster.core.fence("broker", 1, "session timeout"))
    partition = cluster.partition("t", 0)
    assert (partition.leader, partition.isr) == (2, [2]), "an out-of-sync replica leads, alone in the ISR"


def test_alter_partition_is_fenced_by_epochs_and_liveness() -> None:
    cluster = Cluster()
    epochs = {b: cluster.start_broker(b) for b in (1, 2, 3)}
    cluster.commit(cluster.core.create_topic(NewTopic("t", assignments=((1, 2, 3),))))
    topic_id = cluster.partition("t", 0).topic_id

    def propose(broker: int, epoch: int, leader_epoch: int, partition_epoch: int, isr: list[int]) -> ControllerDecision:
        return cluster.commit(
            cluster.core.alter_partition(
                broker, epoch, topic_id, 0, leader_epoch=leader_epoch, partition_epoch=partition_epoch, new_isr=isr
            )
        )

    assert propose(1, epochs[1], 0, 0, [1, 2]).error is ErrorCode.NONE
    assert cluster.partition("t", 0).isr == [1, 2]
    assert propose(1, epochs[1], 0, 0, [1]).error is ErrorCode.INVALID_UPDATE_VERSION
    assert propose(2, epochs[2], 0, 1, [2]).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert propose(1, epochs[1] - 1, 0, 1, [1]).error is ErrorCode.STALE_BROKER_EPOCH
    assert propose(1, epochs[1], 5, 1, [1]).error is ErrorCode.FENCED_LEADER_EPOCH
    assert propose(1, epochs[1], 0, 1, [2]).error is ErrorCode.INVALID_REQUEST, "the leader stays in its ISR"
    cluster.commit(cluster.core.fence("broker", 3, "session timeout"))
    assert (
        propose(1, epochs[1], 0, cluster.partition("t", 0).partition_epoch, [1, 2, 3]).error
        is ErrorCode.INELIGIBLE_REPLICA
    )


def test_an_isr_member_that_registered_again_since_the_leader_saw_it_fetch_cannot_join() -> None:
    """KIP-903: the leader names the broker epoch each joining member fetched with; a broker that
    restarted since (perhaps with an empty disk) is refused until it fetches again."""
    cluster = Cluster()
    epochs = {b: cluster.start_broker(b) for b in (1, 2)}
    cluster.commit(cluster.core.create_topic(NewTopic("t", assignments=((1, 2),))))
    topic_id = cluster.partition("t", 0).topic_id
    cluster.commit(
        cluster.core.alter_partition(1, epochs[1], topic_id, 0, leader_epoch=0, partition_epoch=0, new_isr=[1])
    )
    restarted = cluster.start_broker(2)
    assert restarted != epochs[2]

    def expand(seen_epoch: int) -> ControllerDecision:
        partition = cluster.partition("t", 0)
        return cluster.commit(
            cluster.core.alter_partition(
                1,
                epochs[1],
                topic_id,
                0,
                leader_epoch=partition.leader_epoch,
                partition_epoch=partition.partition_epoch,
                new_isr=[1, 2],
                new_isr_broker_epochs=[-1, seen_epoch],
            )
        )

    refused = expand(epochs[2])
    assert refused.error is ErrorCode.INELIGIBLE_REPLICA
    assert "registered again" in refused.message
    assert cluster.partition("t", 0).isr == [1]
    assert expand(restarted).error is ErrorCode.NONE
    assert cluster.partition("t", 0).isr == [1, 2]


def test_partitions_only_grow_and_configs_change_atomically() -> None:
    cluster = Cluster()
    cluster.start_broker(1)
    cluster.commit(cluster.core.create_topic(NewTopic("t", 2, 1)))
    shrink = cluster.core.create_partitions("t", 1)
    assert shrink.error is ErrorCode.INVALID_PARTITIONS
    assert "can only grow" in shrink.message
    cluster.commit(cluster.core.create_partitions("t", 5))
    assert sorted(cluster.image.topic("t").partitions) == [0, 1, 2, 3, 4]  # type: ignore[union-attr]
    set_ok = cluster.commit(
        cluster.core.alter_topic_configs(
            "t", [ConfigOp("retention.ms", "set", "5"), ConfigOp("cleanup.policy", "append", "compact")]
        )
    )
    assert set_ok.error is ErrorCode.NONE
    assert cluster.image.topic_configs("t") == {"retention.ms": "5", "cleanup.policy": "delete,compact"}
    bad = cluster.core.alter_topic_configs(
        "t", [ConfigOp("retention.ms", "delete"), ConfigOp("segment.bytes", "set", "1")]
    )
    assert bad.error is ErrorCode.INVALID_CONFIG
    assert "segment.bytes" in bad.message
    small = cluster.core.alter_topic_configs("t", [ConfigOp("segment.bytes", "set", str(1024 * 1024 - 1))])
    assert small.error is ErrorCode.INVALID_CONFIG
    assert "at least 1048576" in small.message
    assert cluster.core.alter_topic_configs("t", [ConfigOp("segment.bytes", "set", str(1024 * 1024))]).error is (
        ErrorCode.NONE
    )
    assert cluster.image.topic_configs("t")["retention.ms"] == "5", "nothing applied when one change is invalid"
    cluster.commit(cluster.core.alter_topic_configs("t", [ConfigOp("retention.ms", "delete")]))
    assert "retention.ms" not in cluster.image.topic_configs("t")


def test_preferred_election_restores_balance_when_brokers_return() -> None:
    cluster = Cluster()
    for broker_id in (1, 2, 3):
        cluster.start_broker(broker_id)
    cluster.commit(cluster.core.create_topic(NewTopic("t", 6, 3)))
    cluster.commit(cluster.core.fence("broker", 1, "session timeout"))
    assert all(p.leader != 1 for p in cluster.image.topic("t").partitions.values())  # type: ignore[union-attr]
    cluster.start_broker(1)
    topic = cluster.image.topic("t")
    assert topic is not None
    for partition in topic.partitions.values():  # the leaders bring broker 1 back into their ISRs
        if 1 not in partition.isr:
            leader_epoch = cluster.image.brokers[partition.leader].epoch
            cluster.commit(
                cluster.core.alter_partition(
                    partition.leader,
                    leader_epoch,
                    partition.topic_id,
                    partition.partition,
                    leader_epoch=partition.leader_epoch,
                    partition_epoch=partition.partition_epoch,
                    new_isr=[*partition.isr, 1],
                )
            )
    led_elsewhere = sorted(("t", p.partition) for p in topic.partitions.values() if p.leader != p.replicas[0])
    assert led_elsewhere, "broker 1's partitions are led by others after its return"
    assert cluster.core.imbalanced_partitions(per_broker_percentage=10) == led_elsewhere
    assert cluster.core.imbalanced_partitions(per_broker_percentage=100) == [], "within the tolerated imbalance"
    decision, outcomes = cluster.core.elect_preferred_leaders()
    cluster.commit(decision)
    assert all(p.leader == p.replicas[0] for p in topic.partitions.values())
    assert ErrorCode.NONE in outcomes.values()
    assert cluster.core.imbalanced_partitions(per_broker_percentage=0) == [], "balanced again"


def test_topic_deletion_and_internal_topics() -> None:
    cluster = Cluster()
    cluster.start_broker(1)
    cluster.commit(cluster.core.create_internal_topic("__consumer_offsets", 3, 3))
    assert cluster.core.delete_topic("__consumer_offsets").error is ErrorCode.INVALID_TOPIC_EXCEPTION
    assert cluster.image.topic_configs("__consumer_offsets") == {"cleanup.policy": "compact"}
    cluster.commit(cluster.core.create_topic(NewTopic("gone", 1, 1)))
    cluster.commit(cluster.core.delete_topic("gone"))
    assert cluster.image.topic("gone") is None
    assert cluster.core.delete_topic("gone").error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_producer_id_blocks_never_overlap() -> None:
    cluster = Cluster()
    epoch = cluster.start_broker(1)
    blocks = []
    for _ in range(3):
        decision = cluster.core.allocate_producer_ids(1, epoch)
        cluster.commit(decision)
        assert decision.producer_ids is not None
        blocks.append(decision.producer_ids.ids())
    assert all(a.stop <= b.start for a, b in itertools.pairwise(blocks))


@pytest.mark.parametrize("seed", range(5))
def test_placement_spreads_leaders_and_racks(seed: int) -> None:
    brokers = [BrokerSlot(i, f"rack-{i % 3}") for i in range(1, 10)]
    assignments = assign_replicas(90, 3, brokers, random.Random(seed))
    rack_of = {b.broker_id: b.rack for b in brokers}
    assert all(len(set(a)) == 3 for a in assignments)
    assert all(len({rack_of[b] for b in a}) == 3 for a in assignments), "replicas span every rack"
    assert set(Counter(a[0] for a in assignments).values()) == {10}, "each broker leads the same number"


# ---------------------------------------------------------------------------------------------
# random event sequences


class ControllerMachine(RuleBasedStateMachine):
    """Random registrations, fencings, topics, ISR changes and elections; invariants after each."""

    @initialize(seed=st.integers(0, 2**16))
    def start(self, seed: int) -> None:
        self.cluster = Cluster(seed)
        self.epochs: dict[tuple[str, int], tuple[int, int]] = {}
        self.topics = 0

    @rule(broker_id=st.integers(1, 5), rack=st.sampled_from(["", "a", "b"]))
    def start_broker(self, broker_id: int, rack: str) -> None:
        if broker_id in self.cluster.image.brokers and not self.cluster.image.brokers[broker_id].fenced:
            self.cluster.commit(self.cluster.core.fence("broker", broker_id, "restart"))
        self.cluster.start_broker(broker_id, rack)

    @rule(broker_id=st.integers(1, 5))
    def fence(self, broker_id: int) -> None:
        self.cluster.commit(self.cluster.core.fence("broker", broker_id, "session timeout"))

    @rule(partitions=st.integers(1, 6), factor=st.integers(1, 3))
    def create_topic(self, partitions: int, factor: int) -> None:
        self.topics += 1
        decision = self.cluster.commit(
            self.cluster.core.create_topic(NewTopic(f"topic-{self.topics}", partitions, factor))
        )
        live = len(self.cluster.image.live_brokers())
        assert (decision.error is ErrorCode.NONE) == (factor <= live), decision.message

    @precondition(lambda self: self.cluster.image.topics)
    @rule(data=st.data())
    def leader_changes_isr(self, data: st.DataObject) -> None:
        topic = data.draw(st.sampled_from(sorted(self.cluster.image.topics.values(), key=lambda t: t.name)))
        partition = data.draw(st.sampled_from(sorted(topic.partitions.values(), key=lambda p: p.partition)))
        if partition.leader == NO_LEADER:
            return
        others = [b for b in partition.replicas if b != partition.leader]
        followers = data.draw(st.lists(st.sampled_from(others), unique=True)) if others else []
        isr = [partition.leader, *followers]
        leader = self.cluster.image.brokers[partition.leader]
        self.cluster.commit(
            self.cluster.core.alter_partition(
                partition.leader,
                leader.epoch,
                partition.topic_id,
                partition.partition,
                leader_epoch=partition.leader_epoch,
                partition_epoch=partition.partition_epoch,
                new_isr=isr,
            )
        )

    @rule()
    def preferred_election(self) -> None:
        self.cluster.commit(self.cluster.core.elect_preferred_leaders()[0])

    @invariant()
    def epochs_only_grow(self) -> None:
        if not hasattr(self, "cluster"):
            return
        for topic in self.cluster.image.topics.values():
            for partition in topic.partitions.values():
                key = (topic.name, partition.partition)
                previous = self.epochs.get(key, (0, 0))
                assert partition.leader_epoch >= previous[0]
                assert partition.partition_epoch >= previous[1]
                self.epochs[key] = (partition.leader_epoch, partition.partition_epoch)

    @invariant()
    def a_snapshot_rebuilds_the_same_state(self) -> None:
        if not hasattr(self, "cluster"):
            return
        rebuilt = MetadataImage()
        for offset, record in enumerate(self.cluster.image.to_records()):
            rebuilt.apply(offset, record)
        assert rebuilt.to_records() == self.cluster.image.to_records()


ControllerMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=40, deadline=None)
TestControllerMachine = ControllerMachine.TestCase


# ---------------------------------------------------------------------------------------------
# Group coordinators and the shards of __consumer_offsets


def _register_coordinator(cluster: Cluster, coordinator_id: int, incarnation: str = "") -> ControllerDecision:
    decision = cluster.commit(
        cluster.core.register(
            "coordinator",
            coordinator_id,
            incarnation or f"c-{next(cluster.incarnations)}",
            cluster_id="",
            host="127.0.0.1",
            port=9500 + coordinator_id,
        )
    )
    assert decision.error is ErrorCode.NONE, decision.message
    return decision


def _owners(cluster: Cluster) -> Counter[int]:
    return Counter(shard.coordinator_id for shard in cluster.image.shards.values())


def test_offsets_topic_waits_for_a_coordinator_and_enough_brokers() -> None:
    cluster = Cluster()
    cluster.core.default_replication_factor = 2
    cluster.core.offsets_topic_partitions = 10
    cluster.start_broker(1)
    assert not cluster.commit(cluster.core.ensure_offsets_topic()).records, "no coordinator yet"
    _register_coordinator(cluster, 1)
    assert not cluster.commit(cluster.core.ensure_offsets_topic()).records, (
        "only broker 1 has registered yet: its factor is not lowered to the brokers seen so far"
    )
    cluster.commit(cluster.core.register("broker", 2, "b2", cluster_id="", host="h", port=2))
    assert not cluster.commit(cluster.core.ensure_offsets_topic()).records, "broker 2 is registered but fenced"
    cluster.commit(cluster.core.heartbeat("broker", 2, cluster.image.brokers[2].epoch, cluster.image.last_offset))
    cluster.commit(cluster.core.ensure_offsets_topic())
    topic = cluster.image.topic("__consumer_offsets")
    assert topic is not None
    assert topic.internal
    assert len(topic.partitions) == 10
    assert all(len(p.replicas) == 2 for p in topic.partitions.values())
    assert cluster.image.topic_configs("__consumer_offsets") == {"cleanup.policy": "compact"}
    assert _owners(cluster) == {1: 10}
    producer_ids = {s.producer_id for s in cluster.image.shards.values()}
    assert len(producer_ids) == 10, "each shard writes with a producer id of its own"
    assert cluster.image.next_producer_id > max(producer_ids), "shard producer ids are never handed out again"
    assert not cluster.commit(cluster.core.ensure_offsets_topic()).records


def test_shards_are_balanced_and_move_only_when_needed() -> None:
    cluster = Cluster()
    cluster.core.offsets_topic_partitions = 7
    cluster.start_broker(1)
    _register_coordinator(cluster, 1)
    cluster.commit(cluster.core.ensure_offsets_topic())
    before = dict(cluster.image.shards)
    _register_coordinator(cluster, 2)
    assert _owners(cluster) == {1: 4, 2: 3}
    moved = [s for s in before if before[s].coordinator_id != cluster.image.shards[s].coordinator_id]
    assert len(moved) == 3, "only the new coordinator's share moves"
    for shard in moved:
        assert cluster.image.shards[shard].shard_epoch == before[shard].shard_epoch + 1
        assert cluster.image.shards[shard].producer_id == before[shard].producer_id
    _register_coordinator(cluster, 3)
    assert sorted(_owners(cluster).values()) == [2, 2, 3]

    owned_by_2 = {s for s, o in cluster.image.shards.items() if o.coordinator_id == 2}
    cluster.commit(cluster.core.fence("coordinator", 2, "session timeout"))
    assert cluster.image.coordinators[2].fenced
    assert 2 not in _owners(cluster)
    assert sorted(_owners(cluster).values()) == [3, 4]
    assert all(cluster.image.shards[s].shard_epoch >= 2 for s in owned_by_2)
    assert cluster.core.heartbeat("coordinator", 2, cluster.image.coordinators[2].epoch).error is (
        ErrorCode.STALE_BROKER_EPOCH
    )


def test_a_restarted_coordinator_reloads_its_shards_under_a_new_epoch() -> None:
    cluster = Cluster()
    cluster.core.offsets_topic_partitions = 4
    cluster.start_broker(1)
    _register_coordinator(cluster, 1, "first")
    cluster.commit(cluster.core.ensure_offsets_topic())
    epochs = {s: o.shard_epoch for s, o in cluster.image.shards.items()}
    refused = cluster.core.register(
        "coordinator", 1, "second", cluster_id="", host="h", port=1, previous_session_alive=True
    )
    assert refused.error is ErrorCode.DUPLICATE_BROKER_REGISTRATION
    _register_coordinator(cluster, 1, "second")
    assert all(o.coordinator_id == 1 for o in cluster.image.shards.values())
    assert all(o.shard_epoch == epochs[s] + 1 for s, o in cluster.image.shards.items())


def test_without_live_coordinators_shards_have_no_owner_until_one_returns() -> None:
    cluster = Cluster()
    cluster.core.offsets_topic_partitions = 3
    cluster.start_broker(1)
    _register_coordinator(cluster, 1)
    cluster.commit(cluster.core.ensure_offsets_topic())
    cluster.commit(cluster.core.shut_down("coordinator", 1, cluster.image.coordinators[1].epoch))
    assert _owners(cluster) == {-1: 3}
    _register_coordinator(cluster, 5)
    assert _owners(cluster) == {5: 3}
    restored = MetadataImage.from_snapshot(cluster.image.to_records(), cluster.image.last_offset)
    assert restored.shards == cluster.image.shards


def test_partition_counts_are_bounded_per_request_and_per_cluster() -> None:
    """Issue #23: CreateTopics(num_partitions=2**31-1) looped in placement on the controller's
    loop; now it is refused at once, as are requests that would pass the cluster's limit."""
    cluster = Cluster()
    cluster.start_broker(1)
    huge = cluster.core.create_topic(NewTopic("huge", 2**31 - 1, 1))
    assert huge.error is ErrorCode.INVALID_PARTITIONS
    assert "at most 10000" in huge.message
    cluster.core.max_partitions = 12
    cluster.commit(cluster.core.create_topic(NewTopic("ten", 10, 1)))
    over = cluster.core.create_topic(NewTopic("three", 3, 1))
    assert over.error is ErrorCode.POLICY_VIOLATION
    assert "limit of 12" in over.message
    assert cluster.core.create_partitions("ten", 13).error is ErrorCode.POLICY_VIOLATION
    assert cluster.core.create_partitions("ten", 10 + 2**20).error is ErrorCode.INVALID_PARTITIONS
    assert cluster.commit(cluster.core.create_partitions("ten", 12)).error is ErrorCode.NONE


def test_the_cluster_manages_the_configs_that_keep_internal_topics_working() -> None:
    cluster = Cluster()
    cluster.start_broker(1)
    cluster.commit(cluster.core.create_internal_topic("__consumer_offsets", 1, 1))
    refused = cluster.core.alter_topic_configs("__consumer_offsets", [ConfigOp("max.message.bytes", "set", "0")])
    assert refused.error is ErrorCode.POLICY_VIOLATION
    assert "manages its max.message.bytes" in refused.message
    assert cluster.core.alter_topic_configs("__consumer_offsets", [ConfigOp("retention.ms", "set", "0")]).error is (
        ErrorCode.POLICY_VIOLATION
    )
    allowed = cluster.core.alter_topic_configs("__consumer_offsets", [ConfigOp("segment.ms", "set", "3600000")])
    assert allowed.error is ErrorCode.NONE


def test_users_and_acls_are_metadata_records_kept_in_snapshots() -> None:
    cluster = Cluster()
    core = cluster.core
    salt = b"s" * 32
    salted = scram.salted_password("SCRAM-SHA-256", "pencil", salt, 4096)
    assert (
        cluster.commit(core.set_user_credential("alice", "SCRAM-SHA-256", 4096, salt, salted)).error is ErrorCode.NONE
    )
    assert scram.verify(cluster.image.scram_credentials["alice"]["SCRAM-SHA-256"], "pencil")
    refusals = {
        "unknown mechanism": core.set_user_credential("bob", "PLAIN", 4096, salt, salted),
        "few iterations": core.set_user_credential("bob", "SCRAM-SHA-256", 10, salt, salted),
        "short salted password": core.set_user_credential("bob", "SCRAM-SHA-256", 4096, salt, b"x"),
        "a node's name": core.set_user_credential("broker-1", "SCRAM-SHA-256", 4096, salt, salted),
        "nothing to remove": core.remove_user_credential("bob", "SCRAM-SHA-256"),
    }
    assert {why: d.error for why, d in refusals.items()} == {
        "unknown mechanism": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        "few iterations": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "short salted password": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "a node's name": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "nothing to remove": ErrorCode.RESOURCE_NOT_FOUND,
    }
    read_a = AclBinding.of("alice", "read", topic="a")
    deny = AclBinding.of("alice", "write", topic="a-", prefixed=True, deny=True)
    malformed = AclBinding(ResourceType.TOPIC, "a", PatternType.LITERAL, "alice", "*", Operation.READ, Permission.ALLOW)
    decisions = core.create_acls([read_a, deny, malformed, read_a])
    assert [d.error for d in decisions] == [ErrorCode.NONE, ErrorCode.NONE, ErrorCode.INVALID_REQUEST, ErrorCode.NONE]
    assert [len(d.records) for d in decisions] == [1, 1, 0, 0], "an ACL named twice is added once"
    for decision in decisions:
        cluster.commit(decision)
    assert cluster.image.acls == {read_a, deny}
    cluster.commit(core.register_controller(common_pb2.Node(node_id=0, host="c0", port=9093, internal_port=9193)))
    assert core.register_controller(common_pb2.Node(node_id=0, host="c0", port=9093, internal_port=9193)).records == []
    snapshot = MetadataImage.from_snapshot(cluster.image.to_records(), cluster.image.last_offset)
    assert snapshot.acls == cluster.image.acls
    assert snapshot.scram_credentials == cluster.image.scram_credentials
    assert snapshot.controller_at("c0:9193") == cluster.image.controller_at("c0:9193") is not None
    removed = cluster.commit(
        core.delete_acls(
            AclBinding(ResourceType.ANY, "", PatternType.ANY, "User:alice", "", Operation.ANY, Permission.DENY)
        )
    )
    assert len(removed.records) == 1
    assert cluster.image.acls == {read_a}
    cluster.commit(core.remove_user_credential("alice", "SCRAM-SHA-256"))
    assert "alice" not in cluster.image.scram_credentials
