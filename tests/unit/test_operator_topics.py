"""The operator's Topic decisions (pure): create, adopt only when asked, grow, repair configs,
refuse what can never be done while applying the rest."""

from __future__ import annotations

from lanes_operator.topics import (
    NOT_ADOPTED,
    ObservedTopic,
    Refusal,
    TopicPlan,
    TopicSpec,
    plan,
    ready_condition,
    status,
)

MANAGED = "id-1"  # the topic id in the resource's status: it created or adopted the topic


def observed(partitions: int = 3, rf: int = 3, **configs: str) -> ObservedTopic:
    return ObservedTopic("id-1", partitions, rf, {k.replace("_", "."): v for k, v in configs.items()})


def test_the_spec_defaults_to_the_resource_name_and_retain() -> None:
    spec = TopicSpec.of("prices", {"partitions": 6, "config": {"retention.ms": 86400000}})
    assert spec == TopicSpec("prices", 6, None, {"retention.ms": "86400000"}, "Retain")
    assert TopicSpec.of("scratch", {"deletionPolicy": "Delete"}).deletion_policy == "Delete"
    assert TopicSpec.of("trade-audit", {"topicName": "Trade_Audit"}).topic_name == "Trade_Audit"


def test_a_missing_topic_is_created_with_the_spec() -> None:
    spec = TopicSpec("prices", 6, 3, {"retention.ms": "1000"})
    assert plan(spec, None, managed_id=None, adopt=False) == TopicPlan(
        create=True, set_configs={"retention.ms": "1000"}
    )
    assert ready_condition((), None) == ("False", "Creating", "the topic is being created")


def test_an_existing_topic_is_adopted_and_brought_to_the_spec() -> None:
    spec = TopicSpec("prices", 6, 3, {"retention.ms": "1000", "cleanup.policy": "compact"})
    found = observed(partitions=3, retention_ms="1000", segment_bytes="1024")
    done = plan(spec, found, managed_id=None, adopt=True)
    assert done == TopicPlan(
        grow_partitions_to=6, set_configs={"cleanup.policy": "compact"}, delete_configs=("segment.bytes",)
    )
    assert done.changes


def test_a_topic_the_resource_did_not_create_is_left_alone_unless_it_asks_to_adopt_it() -> None:
    """Someone else's topic, or one deleted and made again behind the resource's back (another
    id), is not changed by a Topic in another namespace that happens to name it."""
    spec = TopicSpec("prices", 6, 3, {"retention.ms": "1000"})
    for managed_id in (None, "an-older-topic"):
        done = plan(spec, observed(partitions=3), managed_id=managed_id, adopt=False)
        assert not done.changes
        (refusal,) = done.refusals
        assert refusal.reason == NOT_ADOPTED
        assert 'lanes.dev/adopt: "true"' in refusal.message
        assert ready_condition(done.refusals, observed())[:2] == ("False", NOT_ADOPTED)
        assert plan(spec, observed(partitions=3), managed_id=managed_id, adopt=True).grow_partitions_to == 6
    assert plan(spec, observed(partitions=3), managed_id=MANAGED, adopt=False).refusals == ()
    assert isinstance(refusal, Refusal)


def test_a_topic_that_matches_needs_nothing() -> None:
    spec = TopicSpec("prices", 3, 3, {"retention.ms": "1000"})
    done = plan(spec, observed(retention_ms="1000"), managed_id=MANAGED, adopt=False)
    assert not done.changes
    assert done.refusals == ()
    assert ready_condition(done.refusals, observed()) == ("True", "Ready", "the topic matches the spec")


def test_cluster_defaults_are_not_changes() -> None:
    assert not plan(
        TopicSpec("prices", None, None), observed(partitions=9, rf=1), managed_id=MANAGED, adopt=False
    ).changes


def test_shrinking_and_replication_changes_are_refused_and_the_rest_applied() -> None:
    spec = TopicSpec("prices", 2, 1, {"retention.ms": "5"})
    done = plan(spec, observed(partitions=3, rf=3), managed_id=MANAGED, adopt=False)
    assert done.grow_partitions_to is None
    assert done.set_configs == {"retention.ms": "5"}
    assert [r.reason for r in done.refusals] == ["PartitionsCannotShrink", "ReplicationFactorChangeUnsupported"]
    condition = ready_condition(done.refusals, observed())
    assert condition[:2] == ("False", "PartitionsCannotShrink")
    assert "Set it to 3 or more" in condition[2]
    assert "Lanes cannot reassign replicas yet" in condition[2]


def test_offline_partitions_make_the_topic_not_ready() -> None:
    broken = ObservedTopic("id-1", 3, 3, {}, under_replicated_partitions=3, offline_partitions=1)
    assert ready_condition((), broken)[:2] == ("False", "OfflinePartitions")
    assert status(TopicSpec("prices", 3, 3), broken) == {
        "topicName": "prices",
        "topicId": "id-1",
        "partitions": 3,
        "replicationFactor": 3,
        "underReplicatedPartitions": 3,
        "offlinePartitions": 1,
    }
    assert status(TopicSpec("prices", 3, 3), None) == {"topicName": "prices"}
