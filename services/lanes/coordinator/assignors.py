"""Server-side partition assignors for consumer groups (docs/consumer-groups.md), as pure functions.

The coordinator computes a group's *target assignment* with one of these when the group epoch
moves (a member joined or left, a subscription or a partition count changed). Each takes the
members (with their subscribed topics and their previous target partitions, for stickiness) and
the partition counts of the subscribed topics, and returns ``{member_id: {topic: partitions}}``.

Contract (property-tested in tests/unit/test_assignors.py):

- every partition of a topic that has at least one subscriber goes to exactly one member, and
  only to a member subscribed to its topic; topics nobody subscribes to are not assigned;
- deterministic: the result depends on the inputs' contents, never on their order;
- ``uniform`` (the default, as Kafka's): balanced — no partition could move from a member to
  another member subscribed to its topic that holds two fewer — and sticky: a member keeps the
  partitions it had as long as that does not break the balance, so a rebalance moves as few
  partitions as it can;
- ``range``: per topic, members sorted by id take contiguous ranges (the first ``partitions %
  members`` one more); topics with the same partition count and the same subscribers are
  co-partitioned (a member gets the same partition numbers of each), which joins rely on;
- ``roundrobin``: all partitions, sorted by topic then number, dealt to the subscribed members in
  member-id order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from lanes.errors import ErrorCode, LanesError

TopicAssignment = dict[str, frozenset[int]]
GroupAssignment = dict[str, TopicAssignment]


@dataclass(frozen=True)
class MemberSubscription:
    """What the assignor knows of one member."""

    member_id: str
    topics: frozenset[str]
    previous: Mapping[str, frozenset[int]] = field(default_factory=dict)  # its last target assignment


Assignor = Callable[[Sequence[MemberSubscription], Mapping[str, int]], GroupAssignment]


def _subscribers(members: Sequence[MemberSubscription], partition_counts: Mapping[str, int]) -> dict[str, list[str]]:
    """Topic -> sorted ids of the members subscribed to it (topics that exist only)."""
    by_topic: dict[str, list[str]] = {}
    for member in sorted(members, key=lambda m: m.member_id):
        for topic in member.topics:
            if partition_counts.get(topic, 0) > 0:
                by_topic.setdefault(topic, []).append(member.member_id)
    return by_topic


def _freeze(members: Sequence[MemberSubscription], owned: Mapping[str, Mapping[str, set[int]]]) -> GroupAssignment:
    return {
        m.member_id: {topic: frozenset(ps) for topic, ps in sorted(owned.get(m.member_id, {}).items()) if ps}
        for m in members
    }


def range_assignor(members: Sequence[MemberSubscription], partition_counts: Mapping[str, int]) -> GroupAssignment:
    """Contiguous ranges per topic; see the module docstring."""
    owned: dict[str, dict[str, set[int]]] = {}
    for topic, subscribers in _subscribers(members, partition_counts).items():
        count = partition_counts[topic]
        per_member, extra = divmod(count, len(subscribers))
        start = 0
        for index, member_id in enumerate(subscribers):
            size = per_member + (1 if index < extra else 0)
            owned.setdefault(member_id, {})[topic] = set(range(start, start + size))
            start += size
    return _freeze(members, owned)


def roundrobin_assignor(members: Sequence[MemberSubscription], partition_counts: Mapping[str, int]) -> GroupAssignment:
    """Partitions dealt in turn to subscribed members; see the module docstring."""
    ordered = sorted(m.member_id for m in members)
    subscribed = {m.member_id: m.topics for m in members}
    owned: dict[str, dict[str, set[int]]] = {}
    turn = 0
    for topic in sorted(_subscribers(members, partition_counts)):
        for partition in range(partition_counts[topic]):
            while topic not in subscribed[ordered[turn % len(ordered)]]:
                turn += 1
            owned.setdefault(ordered[turn % len(ordered)], {}).setdefault(topic, set()).add(partition)
            turn += 1
    return _freeze(members, owned)


def uniform_assignor(members: Sequence[MemberSubscription], partition_counts: Mapping[str, int]) -> GroupAssignment:
    """Balanced and sticky; see the module docstring.

    1. Every member keeps its previous partitions that still exist and that it still subscribes
       to (a partition claimed by two members, after a coordinator failover, goes to the
       smaller member id), up to the most any member may hold in a balanced assignment.
    2. Each unassigned partition goes to the subscribed member holding the fewest (ties: id).
    3. While some partition could go from a member to a subscribed member holding two fewer,
       move one (from the most loaded member, its highest topic/partition first).
    """
    subscribers = _subscribers(members, partition_counts)
    by_id = {m.member_id: m for m in members}
    loads: dict[str, int] = dict.fromkeys(by_id, 0)
    owner: dict[tuple[str, int], str] = {}
    subscribed = {m for members_of_topic in subscribers.values() for m in members_of_topic}
    eligible = [m for m in by_id if m in subscribed]  # O(M·T): a search per member was O(M²·T)
    total = sum(partition_counts[t] for t in subscribers)
    ceiling = -(-total // len(eligible)) if eligible else 0

    for member_id in sorted(by_id):
        member = by_id[member_id]
        for topic, partitions in sorted(member.previous.items()):
            if topic not in member.topics or topic not in subscribers:
                continue
            for partition in sorted(partitions):
                key = (topic, partition)
                if partition < partition_counts[topic] and key not in owner and loads[member_id] < ceiling:
                    owner[key] = member_id
                    loads[member_id] += 1

    _place_unowned(owner, loads, subscribers, partition_counts)
    _balance(owner, loads, subscribers)
    owned: dict[str, dict[str, set[int]]] = {}
    for (topic, partition), member_id in owner.items():
        owned.setdefault(member_id, {}).setdefault(topic, set()).add(partition)
    return _freeze(members, owned)


def _place_unowned(
    owner: dict[tuple[str, int], str],
    loads: dict[str, int],
    subscribers: Mapping[str, list[str]],
    partition_counts: Mapping[str, int],
) -> None:
    """Give each unowned partition to the least loaded subscriber of its topic (ties: id).

    One heap of (load, member) per distinct subscriber list, refreshed lazily: an entry whose load
    is stale is dropped when it surfaces, and every load change pushes a fresh entry into each heap
    holding that member. O(P log M) instead of scanning every subscriber for every partition.
    """
    heaps: dict[tuple[str, ...], list[tuple[int, str]]] = {}
    heaps_of: dict[str, list[list[tuple[int, str]]]] = {}
    for members in subscribers.values():
        key = tuple(members)
        if key not in heaps:
            heap = [(loads[m], m) for m in members]
            heapq.heapify(heap)
            heaps[key] = heap
            for member in members:
                heaps_of.setdefault(member, []).append(heap)
    for topic in sorted(subscribers):
        heap = heaps[tuple(subscribers[topic])]
        for partition in range(partition_counts[topic]):
            if (topic, partition) in owner:
                continue
            while heap[0][0] != loads[heap[0][1]]:
                heapq.heappop(heap)
            chosen = heap[0][1]
            owner[(topic, partition)] = chosen
            loads[chosen] += 1
            for holder in heaps_of[chosen]:
                heapq.heappush(holder, (loads[chosen], chosen))


def _balance(owner: dict[tuple[str, int], str], loads: dict[str, int], subscribers: Mapping[str, list[str]]) -> None:
    """Move partitions from heavy to light members until no move would narrow a gap of two."""
    eligible = {m for members in subscribers.values() for m in members}
    if not eligible or max(loads[m] for m in eligible) - min(loads[m] for m in eligible) <= 1:
        return  # no gap of two anywhere: nothing can move
    owned: dict[str, list[tuple[str, int]]] = {}
    for key, member in owner.items():
        owned.setdefault(member, []).append(key)
    while True:
        lightest = {topic: min(members, key=lambda m: (loads[m], m)) for topic, members in subscribers.items()}
        move = None
        for donor in sorted(loads, key=lambda m: (-loads[m], m)):
            for key in sorted(owned.get(donor, ()), reverse=True):
                receiver = lightest[key[0]]
                if loads[donor] - loads[receiver] > 1:
                    move = (key, donor, receiver)
                    break
            if move is not None:
                break
        if move is None:
            return
        key, donor, receiver = move
        owner[key] = receiver
        owned[donor].remove(key)
        owned.setdefault(receiver, []).append(key)
        loads[donor] -= 1
        loads[receiver] += 1


ASSIGNORS: dict[str, Assignor] = {
    "uniform": uniform_assignor,
    "range": range_assignor,
    "roundrobin": roundrobin_assignor,
}
DEFAULT_ASSIGNOR = "uniform"


def assignor_named(name: str) -> Assignor:
    """The assignor called ``name`` ('' for the default); an unknown name is a clear error."""
    found = ASSIGNORS.get(name or DEFAULT_ASSIGNOR)
    if found is None:
        raise LanesError(
            f"unknown assignor {name!r}; use one of {', '.join(sorted(ASSIGNORS))}",
            ErrorCode.UNSUPPORTED_ASSIGNOR,
        )
    return found
