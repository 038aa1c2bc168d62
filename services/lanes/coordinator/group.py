"""The state of consumer groups, rebuilt from ``__consumer_offsets`` records (docs/consumer-groups.md).

A group is nothing but the latest value of each of its keys in its shard (see
proto/lanes/v1/group_records.proto): group metadata (group epoch, assignor, when it became
empty), per member its identity and subscription, its target assignment and its current
assignment (member epoch, partitions it owns, partitions it must still revoke), the epoch of the
target assignment, and one committed offset per partition. ``GroupStore.apply`` is the only way
state changes — both when a coordinator replays a shard and when it decides something live — so a
replayed shard is exactly the state the previous owner served. Records of one member may arrive in
any order after compaction, so the three per-member kinds are kept in separate maps keyed by
member id, and a member exists while its identity record does.

Not persisted (reset when a shard is loaded): members' last heartbeat and revocation deadlines,
and the partition counts the target assignment was computed for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple

from lanes.topic_partition import TopicPartition
from lanes.v1 import common_pb2, group_records_pb2

Partitions = frozenset[TopicPartition]
NO_PARTITIONS: Partitions = frozenset()
GroupRecord = tuple[group_records_pb2.GroupRecordKey, group_records_pb2.GroupRecordValue | None]
NOT_EMPTY = -1  # empty_since_ms of a group with members


class GroupState(IntEnum):
    """Where a group stands. The numbers are ``lanes.v1.GroupState``'s (a unit test holds them
    equal), so the service puts a state on the wire as it is."""

    EMPTY = 1
    RECONCILING = 2
    STABLE = 3


@dataclass
class MemberIdentity:
    """Who a member is and what it subscribes to (a GroupMemberValue)."""

    instance_id: str = ""
    rack_id: str = ""
    client_id: str = ""
    client_host: str = ""
    topic_names: tuple[str, ...] = ()
    topic_regex: str = ""
    server_assignor: str = ""
    rebalance_timeout_ms: int = 0
    principal: str = ""  # who it heartbeats as, when ACLs apply ("": none do)
    classic: bool = False  # a classic-protocol member (Kafka's JoinGroup)

    @property
    def pattern(self) -> PatternSubscription | None:
        """Its pattern subscription, as the group counts it (None: it subscribes by name)."""
        return PatternSubscription(self.topic_regex, self.principal, self.client_host) if self.topic_regex else None


class PatternSubscription(NamedTuple):
    """A subscription pattern and who resolves it: the topics it matches that ``principal``,
    calling from ``host``, may DESCRIBE (``principal`` "": every topic it matches)."""

    regex: str
    principal: str
    host: str


@dataclass
class CurrentAssignment:
    """What a member owns now (a CurrentAssignmentValue).

    ``assigned`` are the partitions the coordinator has told the member it may own;
    ``pending_revocation`` those it was told to give up and has not yet reported released. A
    partition is in at most one member's ``assigned | pending_revocation`` (the group invariant).
    Member epoch -2 marks a static member that left temporarily and keeps its partitions.
    """

    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: Partitions = NO_PARTITIONS
    pending_revocation: Partitions = NO_PARTITIONS

    def held(self) -> Partitions:
        """Partitions no other member may be given."""
        return self.assigned | self.pending_revocation


@dataclass
class OffsetCommit:
    """A committed position (an OffsetCommitValue)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = 0


@dataclass
class Group:
    """One consumer group."""

    group_id: str
    group_epoch: int = 0
    assignor: str = ""
    empty_since_ms: int = NOT_EMPTY
    assignment_epoch: int = 0
    members: dict[str, MemberIdentity] = field(default_factory=dict)
    targets: dict[str, Partitions] = field(default_factory=dict)
    current: dict[str, CurrentAssignment] = field(default_factory=dict)
    offsets: dict[TopicPartition, OffsetCommit] = field(default_factory=dict)
    # Derived from ``members``, changed with them: how many members subscribe to each topic name
    # and to each pattern, and ask for each assignor (a heartbeat needs the group's subscribed
    # topics and preferred assignor: counting them member by member would cost members x topics per
    # heartbeat).
    subscribed_names: Counter[str] = field(default_factory=Counter)
    subscribed_patterns: Counter[PatternSubscription] = field(default_factory=Counter)
    assignor_votes: Counter[str] = field(default_factory=Counter)  # members asking for each assignor
    # Volatile: reset when the shard is loaded.
    last_heartbeat_ms: dict[str, int] = field(default_factory=dict)
    revocation_deadline_ms: dict[str, int] = field(default_factory=dict)
    assigned_for_counts: dict[str, int] | None = None  # partition counts of the last target assignment

    def assignment(self, member_id: str) -> CurrentAssignment:
        """The member's current assignment (an empty one for a member that has none yet)."""
        return self.current.get(member_id) or CurrentAssignment()

    def state(self) -> GroupState:
        """EMPTY, RECONCILING or STABLE."""
        if not self.members:
            return GroupState.EMPTY
        for member_id in self.members:
            current = self.assignment(member_id)
            if (
                current.pending_revocation
                or current.member_epoch not in (self.assignment_epoch, -2)
                or current.assigned != self.targets.get(member_id, NO_PARTITIONS)
            ):
                return GroupState.RECONCILING
        return GroupState.STABLE

    def check_invariants(self) -> None:
        """Raise AssertionError if a partition is held by two members, or the subscription counts
        are not the members'."""
        names = Counter(name for identity in self.members.values() for name in identity.topic_names)
        patterns = Counter(identity.pattern for identity in self.members.values() if identity.pattern)
        votes = Counter(identity.server_assignor for identity in self.members.values() if identity.server_assignor)
        assert self.subscribed_names == names, f"{self.group_id}: {self.subscribed_names} counted, {names} subscribed"
        assert self.subscribed_patterns == patterns, f"{self.group_id}: {self.subscribed_patterns} != {patterns}"
        assert self.assignor_votes == votes, f"{self.group_id}: {self.assignor_votes} != {votes}"
        seen: dict[TopicPartition, str] = {}
        for member_id, current in self.current.items():
            for partition in current.held():
                other = seen.setdefault(partition, member_id)
                if other != member_id:
                    raise AssertionError(f"{self.group_id}: {partition} held by {other} and {member_id}")


class GroupStore:
    """The groups of one shard, changed only by ``apply``."""

    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}

    def __iter__(self) -> Iterator[Group]:
        return iter(self.groups.values())

    def get(self, group_id: str) -> Group | None:
        """The group, or None."""
        return self.groups.get(group_id)

    def apply_all(self, records: Iterable[GroupRecord]) -> None:
        """Apply records in log order."""
        for key, value in records:
            self.apply(key, value)

    def apply(self, key: group_records_pb2.GroupRecordKey, value: group_records_pb2.GroupRecordValue | None) -> None:
        """Apply one record; a None value is a tombstone deleting the key."""
        kind = key.WhichOneof("key")
        if kind == "offset_commit":
            self._apply_offset(key.offset_commit, value)
            return
        if kind is None:
            raise ValueError(f"unknown __consumer_offsets key {key!r}")
        group_id = getattr(key, kind).group_id
        if kind == "group_metadata" and value is None:
            self.groups.pop(group_id, None)
            return
        group = self.groups.get(group_id)
        if group is None:
            if value is None:
                return
            group = self.groups[group_id] = Group(group_id)
        if kind == "group_metadata":
            assert value is not None
            metadata = value.group_metadata
            group.group_epoch = metadata.group_epoch
            group.assignor = metadata.assignor
            group.empty_since_ms = metadata.empty_since_ms
        elif kind == "target_assignment_metadata":
            group.assignment_epoch = value.target_assignment_metadata.assignment_epoch if value else 0
        else:
            self._apply_member(group, kind, getattr(key, kind).member_id, value)

    def _apply_offset(
        self, key: group_records_pb2.OffsetCommitKey, value: group_records_pb2.GroupRecordValue | None
    ) -> None:
        group = self.groups.get(key.group_id)
        if value is None:
            if group is not None:
                group.offsets.pop(TopicPartition(key.topic, key.partition), None)
            return
        if group is None:
            group = self.groups[key.group_id] = Group(key.group_id)
        commit = value.offset_commit
        group.offsets[TopicPartition(key.topic, key.partition)] = OffsetCommit(
            commit.committed_offset, commit.committed_leader_epoch, commit.metadata, commit.commit_timestamp_ms
        )

    @staticmethod
    def _apply_member(
        group: Group, kind: str, member_id: str, value: group_records_pb2.GroupRecordValue | None
    ) -> None:
        if kind == "member":
            _forget_subscription(group, group.members.get(member_id))
            if value is None:
                group.members.pop(member_id, None)
                group.last_heartbeat_ms.pop(member_id, None)
                group.revocation_deadline_ms.pop(member_id, None)
                return
            member = value.member
            identity = group.members[member_id] = MemberIdentity(
                instance_id=member.instance_id,
                rack_id=member.rack_id,
                client_id=member.client_id,
                client_host=member.client_host,
                topic_names=tuple(member.subscription.topic_names),
                topic_regex=member.subscription.topic_regex,
                server_assignor=member.server_assignor,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                principal=member.principal,
                classic=member.classic,
            )
            group.subscribed_names.update(identity.topic_names)
            if identity.pattern:
                group.subscribed_patterns[identity.pattern] += 1
            if identity.server_assignor:
                group.assignor_votes[identity.server_assignor] += 1
        elif kind == "target_assignment":
            if value is None:
                group.targets.pop(member_id, None)
            else:
                group.targets[member_id] = partitions_of(value.target_assignment)
        elif value is None:
            group.current.pop(member_id, None)
        else:
            current = value.current_assignment
            group.current[member_id] = CurrentAssignment(
                member_epoch=current.member_epoch,
                previous_member_epoch=current.previous_member_epoch,
                assigned=partitions_of(current.assigned),
                pending_revocation=partitions_of(current.pending_revocation),
            )


def _forget_subscription(group: Group, identity: MemberIdentity | None) -> None:
    """Take a member's former subscription out of the group's counts."""
    if identity is None:
        return
    group.subscribed_names.subtract(identity.topic_names)
    for name in identity.topic_names:
        if group.subscribed_names[name] <= 0:
            group.subscribed_names.pop(name, None)
    _uncount(group.subscribed_patterns, identity.pattern)
    _uncount(group.assignor_votes, identity.server_assignor)


def _uncount(counts: Counter[Any], key: Any) -> None:
    if key:
        counts[key] -= 1
        if counts[key] <= 0:
            counts.pop(key, None)


# ---------------------------------------------------------------------------------------------
# Conversions between the records and the model


def partitions_of(assignment: group_records_pb2.StoredAssignment) -> Partitions:
    """The partitions of a stored assignment."""
    return frozenset(TopicPartition(tp.topic, p) for tp in assignment.topic_partitions for p in tp.partitions)


def assignment_of(partitions: Iterable[TopicPartition]) -> group_records_pb2.StoredAssignment:
    """A stored assignment listing ``partitions`` (topics and partitions sorted)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return group_records_pb2.StoredAssignment(
        topic_partitions=[
            common_pb2.TopicPartitions(topic=topic, partitions=numbers) for topic, numbers in by_topic.items()
        ]
    )


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, frozenset[int]]:
    """``{topic: partition numbers}`` of ``partitions``."""
    grouped: dict[str, set[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, set()).add(partition)
    return {topic: frozenset(numbers) for topic, numbers in grouped.items()}


def flatten(assignment: Mapping[str, Iterable[int]]) -> Partitions:
    """The (topic, partition) pairs of ``{topic: partition numbers}``."""
    return frozenset(TopicPartition(topic, p) for topic, numbers in assignment.items() for p in numbers)


def group_metadata_record(group: Group) -> GroupRecord:
    """The group's metadata record as it stands."""
    return (
        group_records_pb2.GroupRecordKey(group_metadata=group_records_pb2.GroupMetadataKey(group_id=group.group_id)),
        group_records_pb2.GroupRecordValue(
            group_metadata=group_records_pb2.GroupMetadataValue(
                group_epoch=group.group_epoch, assignor=group.assignor, empty_since_ms=group.empty_since_ms
            )
        ),
    )


def assignment_metadata_record(group_id: str, assignment_epoch: int) -> GroupRecord:
    """The record of a group's target assignment epoch."""
    return (
        group_records_pb2.GroupRecordKey(
            target_assignment_metadata=group_records_pb2.GroupMetadataKey(group_id=group_id)
        ),
        group_records_pb2.GroupRecordValue(
            target_assignment_metadata=group_records_pb2.TargetAssignmentMetadataValue(
                assignment_epoch=assignment_epoch
            )
        ),
    )


def member_record(group_id: str, member_id: str, identity: MemberIdentity | None) -> GroupRecord:
    """A member's identity record (a tombstone for None)."""
    key = group_records_pb2.GroupRecordKey(
        member=group_records_pb2.GroupMemberKey(group_id=group_id, member_id=member_id)
    )
    if identity is None:
        return key, None
    return key, group_records_pb2.GroupRecordValue(
        member=group_records_pb2.GroupMemberValue(
            instance_id=identity.instance_id,
            rack_id=identity.rack_id,
            client_id=identity.client_id,
            client_host=identity.client_host,
            subscription=group_records_pb2.StoredSubscription(
                topic_names=identity.topic_names, topic_regex=identity.topic_regex
            ),
            server_assignor=identity.server_assignor,
            rebalance_timeout_ms=identity.rebalance_timeout_ms,
            principal=identity.principal,
            classic=identity.classic,
        )
    )


def target_record(group_id: str, member_id: str, target: Partitions | None) -> GroupRecord:
    """A member's target assignment record (a tombstone for None)."""
    key = group_records_pb2.GroupRecordKey(
        target_assignment=group_records_pb2.GroupMemberKey(group_id=group_id, member_id=member_id)
    )
    if target is None:
        return key, None
    return key, group_records_pb2.GroupRecordValue(target_assignment=assignment_of(target))


def current_record(group_id: str, member_id: str, current: CurrentAssignment | None) -> GroupRecord:
    """A member's current assignment record (a tombstone for None)."""
    key = group_records_pb2.GroupRecordKey(
        current_assignment=group_records_pb2.GroupMemberKey(group_id=group_id, member_id=member_id)
    )
    if current is None:
        return key, None
    return key, group_records_pb2.GroupRecordValue(
        current_assignment=group_records_pb2.CurrentAssignmentValue(
            member_epoch=current.member_epoch,
            previous_member_epoch=current.previous_member_epoch,
            assigned=assignment_of(current.assigned),
            pending_revocation=assignment_of(current.pending_revocation),
        )
    )


def offset_record(group_id: str, partition: TopicPartition, commit: OffsetCommit | None) -> GroupRecord:
    """A committed offset record (a tombstone for None)."""
    key = group_records_pb2.GroupRecordKey(
        offset_commit=group_records_pb2.OffsetCommitKey(group_id=group_id, topic=partition[0], partition=partition[1])
    )
    if commit is None:
        return key, None
    return key, group_records_pb2.GroupRecordValue(
        offset_commit=group_records_pb2.OffsetCommitValue(
            committed_offset=commit.offset,
            committed_leader_epoch=commit.leader_epoch,
            metadata=commit.metadata,
            commit_timestamp_ms=commit.commit_timestamp_ms,
        )
    )


def group_tombstones(group: Group) -> list[GroupRecord]:
    """Records deleting every key of ``group`` (offsets, members, assignments, metadata)."""
    records = [offset_record(group.group_id, partition, None) for partition in sorted(group.offsets)]
    for member_id in sorted(set(group.members) | set(group.targets) | set(group.current)):
        records.append(member_record(group.group_id, member_id, None))
        records.append(target_record(group.group_id, member_id, None))
        records.append(current_record(group.group_id, member_id, None))
    records.append(
        (
            group_records_pb2.GroupRecordKey(
                target_assignment_metadata=group_records_pb2.GroupMetadataKey(group_id=group.group_id)
            ),
            None,
        )
    )
    records.append((group_metadata_record(group)[0], None))
    return records
