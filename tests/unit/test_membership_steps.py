"""A consumer's group membership (lanes.client._membership): which steps ``poll`` takes when."""

from __future__ import annotations

from typing import cast

from lanes.client._cluster import ClusterView
from lanes.client._membership import GroupMembership
from lanes.clock import ManualClock
from lanes.topic_partition import TopicPartition

SESSION_S = 2.0


def membership(clock: ManualClock) -> GroupMembership:
    member = GroupMembership(
        cast(ClusterView, object()), "g", rebalance_timeout_ms=60_000, request_timeout_s=30, clock=clock
    )
    member.session_timeout_s = SESSION_S
    return member


def test_an_assignment_read_after_a_freeze_longer_than_the_session_is_not_taken() -> None:
    """The churn test's failure: a member sent a heartbeat, was frozen (SIGSTOP) for 3 s with a
    2 s session, and on waking read the answer, which gave it a partition: it called its
    listener's assigned callback for a partition the coordinator had meanwhile given to another
    member (it had fenced this one), then lost it on the next poll. Now it takes nothing until a
    heartbeat gets through again."""
    clock = ManualClock()
    member = membership(clock)
    partition = TopicPartition("t", 5)
    member._last_success_sent = clock.monotonic_ms() / 1000  # the heartbeat sent before the freeze
    member.assigned = frozenset({partition})  # its answer, read after the freeze
    clock.advance(3_000)
    assert member.next_step() is None, "no partition taken on a lapsed session"
    assert not member.vouches_for_ownership()
    member._last_success_sent = clock.monotonic_ms() / 1000  # a heartbeat got through: not fenced
    step = member.next_step()
    assert step is not None
    assert (step.kind, step.partitions) == ("assign", frozenset({partition}))


def test_a_member_that_owns_partitions_on_a_lapsed_session_loses_them_first() -> None:
    clock = ManualClock()
    member = membership(clock)
    owned = TopicPartition("t", 1)
    member.owned = frozenset({owned})
    member.assigned = frozenset({owned, TopicPartition("t", 2)})
    clock.advance(int(SESSION_S * 1000) + 1)
    step = member.next_step()
    assert step is not None
    assert (step.kind, step.partitions) == ("lost", frozenset({owned}))
