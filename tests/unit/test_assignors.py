"""The server-side assignors' contract (lanes.coordinator.assignors), by properties and examples."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanes.coordinator.assignors import (
    ASSIGNORS,
    GroupAssignment,
    MemberSubscription,
    assignor_named,
    range_assignor,
    roundrobin_assignor,
    uniform_assignor,
)
from lanes.errors import ErrorCode, LanesError

TOPICS = ["a", "b", "c", "d"]


@st.composite
def groups(draw: st.DrawFn) -> tuple[list[MemberSubscription], dict[str, int]]:
    counts = {t: draw(st.integers(0, 12)) for t in TOPICS}
    member_count = draw(st.integers(1, 7))
    members = []
    for index in range(member_count):
        topics = frozenset(draw(st.sets(st.sampled_from([*TOPICS, "missing"]), max_size=5)))
        previous = {
            t: frozenset(draw(st.sets(st.integers(0, 14), max_size=6))) for t in draw(st.sets(st.sampled_from(TOPICS)))
        }
        members.append(MemberSubscription(f"member-{index:02d}", topics, previous))
    return members, counts


def owners(assignment: GroupAssignment) -> dict[tuple[str, int], list[str]]:
    found: dict[tuple[str, int], list[str]] = {}
    for member_id, topics in assignment.items():
        for topic, partitions in topics.items():
            for partition in partitions:
                found.setdefault((topic, partition), []).append(member_id)
    return found


def loads(assignment: GroupAssignment) -> dict[str, int]:
    return {m: sum(len(ps) for ps in topics.values()) for m, topics in assignment.items()}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@settings(max_examples=200, deadline=None)
@given(group=groups())
def test_every_subscribed_partition_has_exactly_one_subscribed_owner(
    name: str, group: tuple[list[MemberSubscription], dict[str, int]]
) -> None:
    members, counts = group
    assignment = ASSIGNORS[name](members, counts)
    assert set(assignment) == {m.member_id for m in members}
    subscribed = {m.member_id: m.topics for m in members}
    expected = {(t, p) for t in TOPICS if any(t in m.topics for m in members) for p in range(counts[t])}
    found = owners(assignment)
    assert set(found) == expected
    for (topic, _), member_ids in found.items():
        assert len(member_ids) == 1, "one owner per partition"
        assert topic in subscribed[member_ids[0]], "only to a member subscribed to the topic"


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@settings(max_examples=100, deadline=None)
@given(group=groups(), seed=st.integers(0, 1000))
def test_the_result_does_not_depend_on_input_order(
    name: str, group: tuple[list[MemberSubscription], dict[str, int]], seed: int
) -> None:
    members, counts = group
    shuffled = list(members)
    random.Random(seed).shuffle(shuffled)
    reordered_counts = dict(sorted(counts.items(), reverse=True))
    assert ASSIGNORS[name](members, counts) == ASSIGNORS[name](shuffled, reordered_counts)


@settings(max_examples=300, deadline=None)
@given(group=groups())
def test_uniform_is_balanced_no_partition_could_narrow_a_gap_of_two(
    group: tuple[list[MemberSubscription], dict[str, int]],
) -> None:
    members, counts = group
    assignment = uniform_assignor(members, counts)
    load = loads(assignment)
    subscribed = {m.member_id: m.topics for m in members}
    for (topic, _), (holder,) in owners(assignment).items():
        for other, topics in subscribed.items():
            if topic in topics:
                assert load[holder] - load[other] <= 1, f"{holder} could give {topic} to {other}"


@settings(max_examples=200, deadline=None)
@given(partitions=st.integers(1, 40), before=st.integers(1, 8), after=st.integers(1, 8))
def test_uniform_moves_only_what_balance_requires(partitions: int, before: int, after: int) -> None:
    """Same subscriptions; members come or go: counts differ by at most one, and each member
    only sheds partitions or only gains them (so nothing moves that balance did not require)."""
    counts = {"orders": partitions}
    first = uniform_assignor([MemberSubscription(f"m{i}", frozenset({"orders"})) for i in range(before)], counts)
    members = [MemberSubscription(f"m{i}", frozenset({"orders"}), first.get(f"m{i}", {})) for i in range(after)]
    second = uniform_assignor(members, counts)
    assert max(loads(second).values()) - min(loads(second).values()) <= 1
    for member in members:
        had = member.previous.get("orders", frozenset())
        has = second[member.member_id].get("orders", frozenset())
        assert had <= has or has <= had, f"{member.member_id} gave up partitions and received others"


def test_uniform_keeps_a_balanced_assignment_as_it_is() -> None:
    counts = {"orders": 6, "payments": 3}
    members = [
        MemberSubscription("x", frozenset(counts), {"orders": frozenset({0, 4, 5})}),
        MemberSubscription("y", frozenset(counts), {"orders": frozenset({1}), "payments": frozenset({0, 2})}),
        MemberSubscription("z", frozenset(counts), {"orders": frozenset({2, 3}), "payments": frozenset({1})}),
    ]
    assert uniform_assignor(members, counts) == {m.member_id: dict(m.previous) for m in members}


def test_range_co_partitions_topics_with_the_same_partition_count() -> None:
    counts = {"clicks": 5, "views": 5}
    members = [MemberSubscription(m, frozenset(counts)) for m in ("b", "a")]
    assignment = range_assignor(members, counts)
    assert assignment == {
        "a": {"clicks": frozenset({0, 1, 2}), "views": frozenset({0, 1, 2})},
        "b": {"clicks": frozenset({3, 4}), "views": frozenset({3, 4})},
    }


def test_roundrobin_deals_partitions_in_turn() -> None:
    counts = {"t": 5}
    members = [MemberSubscription(m, frozenset({"t"})) for m in ("m2", "m1")]
    assert roundrobin_assignor(members, counts) == {"m1": {"t": frozenset({0, 2, 4})}, "m2": {"t": frozenset({1, 3})}}


def test_assignors_are_chosen_by_name() -> None:
    assert assignor_named("") is uniform_assignor
    assert assignor_named("range") is range_assignor
    with pytest.raises(LanesError, match="use one of range, roundrobin, uniform") as unknown:
        assignor_named("sticky-ish")
    assert unknown.value.code is ErrorCode.UNSUPPORTED_ASSIGNOR
