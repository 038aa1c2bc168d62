"""Consumer-group decisions of one coordinator shard, as a pure core (docs/consumer-groups.md).

Modelled on Kafka's KIP-848. Every call takes the time (an ``Instant`` on both of the caller's
clocks for membership, wall-clock ``now_ms`` for offsets) and
the partition counts of the cluster's topics, decides, and returns its answer together with the
``__consumer_offsets`` records that carry the change; the records are already applied to the
``GroupStore`` (the same ``apply`` a replay uses). The caller appends them to the shard and
answers the client only once they are durable; if that fails it throws the shard's state away
and replays the log, so a decision never outlives its records.

Protocol, per heartbeat:

1. Join (member epoch 0), validate (an unknown member: UNKNOWN_MEMBER_ID; a stale epoch:
   FENCED_MEMBER_EPOCH), leave (-1), or leave temporarily (-2, static members: the member keeps
   its partitions for ``session_timeout_ms`` so a restart with the same ``group.instance.id``
   takes them back without a rebalance). A classic-protocol member (Kafka's JoinGroup through a
   broker's Kafka listener) joins with epoch 0 every time it rejoins: a member the group knows
   keeps its place then, reconciled with what it says it owns (``classic``), and a static one
   replaces its predecessor at once, as Kafka's classic protocol has it. Its other heartbeats
   (Kafka's SyncGroup and Heartbeat) change nothing of its assignment: only a join does, so the
   generation it was told stays its member epoch until it rejoins.
2. A new member, a changed subscription or assignor, or a changed partition count of a subscribed
   topic bumps the *group epoch*; when it is ahead of the *assignment epoch* the assignor computes
   a new target assignment (sticky: from the previous targets).
3. The member is reconciled towards its target, revoke before assign: partitions it must give up
   go to ``pending_revocation`` and it stays at its epoch until it reports (``owned``) that it has
   released them (or ``rebalance_timeout_ms`` passes and it is fenced); then it moves to the
   assignment epoch and receives the new partitions that no other member still holds. The rest
   follow on later heartbeats as their previous owners release them. The answer says whether the
   member's assignment is ``settled`` (a join: unchanged by it and nothing left to revoke; another
   classic heartbeat: at the assignment epoch, nothing to revoke, nothing free to receive): a
   classic member that is not rejoins to learn it, as Kafka's classic members of a consumer
   group are told REBALANCE_IN_PROGRESS.

Invariant (checked by ``Group.check_invariants``): a partition is held (assigned or pending
revocation) by at most one member of a group at any time.

Offsets: commits carry the member epoch; a member may commit with its current epoch, or its
previous one while it still holds the partition; free consumers and tools (member epoch -1)
commit only while the group has no members, as in Kafka. Offsets of a group that has been empty
for ``offsets_retention_ms`` expire, and so do offsets of topics an active group no longer
subscribes to, counted from their commit time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import re2

from lanes.coordinator.assignors import ASSIGNORS, DEFAULT_ASSIGNOR, MemberSubscription, assignor_named
from lanes.coordinator.group import (
    NO_PARTITIONS,
    NOT_EMPTY,
    CurrentAssignment,
    Group,
    GroupRecord,
    GroupStore,
    MemberIdentity,
    OffsetCommit,
    Partitions,
    PatternSubscription,
    assignment_metadata_record,
    by_topic,
    current_record,
    flatten,
    group_metadata_record,
    group_tombstones,
    member_record,
    offset_record,
    target_record,
)
from lanes.coordinator.patterns import TopicPatterns, subscription_pattern
from lanes.errors import ErrorCode
from lanes.topic_partition import TopicPartition

JOIN_EPOCH = 0
#: how often (wall clock) committed offsets are checked for expiry, at most
OFFSETS_RETENTION_CHECK_MS = 60_000
LEAVE_EPOCH = -1
TEMPORARY_LEAVE_EPOCH = -2
FREE_CONSUMER_EPOCH = -1


@dataclass(frozen=True)
class GroupConfig:
    """Coordinator-wide group settings (flags of ``lanes coordinator``)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_group_size: int = 10_000
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offset_metadata_max_bytes: int = 4096


@dataclass(frozen=True)
class Subscription:
    """Topic names, or a regular expression (full match, internal topics excluded)."""

    topic_names: tuple[str, ...] = ()
    topic_regex: str = ""


@dataclass(frozen=True)
class HeartbeatInput:
    """One heartbeat. ``None`` fields are unchanged since the member's previous heartbeat."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str = ""
    rack_id: str = ""
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 0
    subscription: Subscription | None = None
    server_assignor: str | None = None
    owned: Partitions | None = None
    principal: str = ""  # who calls, when ACLs apply to it ("": none do)
    #: a classic-protocol member (JoinGroup/SyncGroup/Heartbeat): its join keeps a known member's place
    classic: bool = False


#: bounds on what one heartbeat may carry (a 2 MB client id would make a member record too large
#: to write, and stop the whole shard): characters per string, entries per list
MAX_ID_CHARS = 255
MAX_MEMBER_ID_CHARS = 64
MAX_REGEX_CHARS = 1_024
MAX_SUBSCRIBED_TOPICS = 10_000
#: bytes of topic names one subscription may hold: its member record (with the other fields, a few
#: KiB at most) must fit one batch of the shard's log (``shard_log.MAX_BATCH_BYTES``), well under
#: ``__consumer_offsets``' max.message.bytes; a record the log refuses would stop the whole shard
MAX_SUBSCRIPTION_BYTES = 480 * 1024
MAX_OWNED_PARTITIONS = 100_000


def heartbeat_size_problem(request: HeartbeatInput) -> str | None:
    """What in ``request`` passes the bounds above (None: nothing)."""
    for name, value, limit in (
        ("group id", request.group_id, MAX_ID_CHARS),
        ("member id", request.member_id, MAX_MEMBER_ID_CHARS),
        ("instance id", request.instance_id, MAX_ID_CHARS),
        ("rack id", request.rack_id, MAX_ID_CHARS),
        ("client id", request.client_id, MAX_ID_CHARS),
        ("server assignor", request.server_assignor or "", MAX_ID_CHARS),
    ):
        if len(value) > limit:
            return f"the {name} has {len(value)} characters; at most {limit}"
    subscription = request.subscription
    if subscription is not None:
        if len(subscription.topic_names) > MAX_SUBSCRIBED_TOPICS:
            return f"the subscription names {len(subscription.topic_names)} topics; at most {MAX_SUBSCRIBED_TOPICS}"
        if any(len(name) > MAX_ID_CHARS for name in subscription.topic_names):
            return f"a subscribed topic name has more than {MAX_ID_CHARS} characters"
        names_bytes = sum(len(name.encode()) for name in subscription.topic_names)
        if names_bytes > MAX_SUBSCRIPTION_BYTES:
            return f"the subscription's topic names take {names_bytes} bytes; at most {MAX_SUBSCRIPTION_BYTES}"
        if len(subscription.topic_regex) > MAX_REGEX_CHARS:
            return f"the subscription pattern has {len(subscription.topic_regex)} characters; at most {MAX_REGEX_CHARS}"
    if request.owned is not None and len(request.owned) > MAX_OWNED_PARTITIONS:
        return f"the heartbeat lists {len(request.owned)} owned partitions; at most {MAX_OWNED_PARTITIONS}"
    return None


@dataclass(frozen=True)
class HeartbeatResult:
    """The answer to a heartbeat."""

    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None
    #: the heartbeat changed nothing of the member's assignment and it has nothing left to revoke
    settled: bool = False


@dataclass(frozen=True)
class CommitEntry:
    """One partition's commit."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str = ""


@dataclass
class GroupDecision:
    """Records to append (already applied to the store)."""

    records: list[GroupRecord] = field(default_factory=list)


class Instant(NamedTuple):
    """A moment on both clocks: member sessions and revocation deadlines are measured on the
    monotonic one (never fooled by a wall-clock step), stored times (commits, when a group
    emptied) on the wall one."""

    wall_ms: int
    monotonic_ms: int


#: ``(principal, host, topics)`` -> those of ``topics`` the principal, calling from host, may
#: DESCRIBE: how the service's ACLs reach the core (a pure function of the ACLs in force).
VisibleTopics = Callable[[str, str, frozenset[str]], frozenset[str]]


class GroupCoordinatorCore:
    """The groups of one shard and every decision about them."""

    def __init__(self, config: GroupConfig | None = None, visible_topics: VisibleTopics | None = None) -> None:
        self.config = config or GroupConfig()
        self.visible_topics = visible_topics or _every_topic
        self.store = GroupStore()
        self.patterns = TopicPatterns()
        self._offsets_checked_ms: int | None = None  # wall clock of the last sweep of expired offsets

    def unresolved_patterns(self, group_id: str, regex: str, partition_counts: Mapping[str, int]) -> list[str]:
        """The subscription patterns a heartbeat of ``group_id`` naming ``regex`` would need that
        are not resolved for ``partition_counts`` yet (the service resolves them off the loop and
        hands them to ``patterns.remember`` before deciding)."""
        group = self.store.get(group_id)
        regexes = [regex] if len(regex) <= MAX_REGEX_CHARS else []
        if group is not None:
            regexes.extend(pattern.regex for pattern in group.subscribed_patterns)
        return self.patterns.missing(regexes, partition_counts)

    # -----------------------------------------------------------------------------------------
    # Loading

    def loaded(self, now: Instant) -> None:
        """Start every member's session and revocation timers at ``now`` (after a replay)."""
        for group in self.store:
            for member_id in group.members:
                group.last_heartbeat_ms[member_id] = now.monotonic_ms
                if group.assignment(member_id).pending_revocation:
                    deadline = now.monotonic_ms + self._rebalance_timeout_ms(group, member_id)
                    group.revocation_deadline_ms[member_id] = deadline

    # -----------------------------------------------------------------------------------------
    # Heartbeat

    def heartbeat(
        self, request: HeartbeatInput, now: Instant, partition_counts: Mapping[str, int]
    ) -> tuple[HeartbeatResult, GroupDecision]:
        """Decide one heartbeat (see the module docstring)."""
        decision = GroupDecision()
        too_large = heartbeat_size_problem(request)
        if too_large is not None:
            return HeartbeatResult(error=ErrorCode.INVALID_REQUEST, message=too_large, member_id=""), decision
        group = self.store.get(request.group_id)
        if request.member_epoch in (LEAVE_EPOCH, TEMPORARY_LEAVE_EPOCH):
            return self._leave(group, request, now, decision), decision
        refusal = self._check_heartbeat(group, request)
        if refusal is not None:
            return refusal, decision
        if group is None:
            group = self.store.groups[request.group_id] = _new_group(request.group_id)
        member_id = request.member_id
        previous = group.members.get(member_id)
        bump = False
        if request.member_epoch == JOIN_EPOCH:
            replaced = self._static_predecessor(group, request)
            if replaced is not None:
                previous = self._replace_static_member(group, replaced, member_id, decision)
            elif previous is not None:
                if not request.classic:  # (a classic member rejoins at every rebalance, keeping its place)
                    # A rejoin after the member was fenced on its side: it owns nothing any more.
                    self._set_current(group, member_id, CurrentAssignment(), decision)
            else:
                bump = True
        identity = self._updated_identity(previous, request)
        if previous is not None and _subscription_key(identity) != _subscription_key(previous):
            bump = True
        if identity != group.members.get(member_id):
            self._emit(decision, member_record(group.group_id, member_id, identity))
        group.last_heartbeat_ms[member_id] = now.monotonic_ms

        assignor = _preferred_assignor(group)
        counts = self._subscribed_counts(group, partition_counts)
        rebalance = bump or assignor != group.assignor or counts != group.assigned_for_counts
        if rebalance or group.empty_since_ms != NOT_EMPTY:
            if rebalance:
                group.group_epoch += 1
            group.assignor = assignor
            group.empty_since_ms = NOT_EMPTY
            self._emit(decision, group_metadata_record(group))
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, partition_counts, counts, decision)

        before = group.current.get(member_id)
        if request.classic and request.member_epoch != JOIN_EPOCH:  # (only a classic join reconciles)
            current = group.assignment(member_id)
            settled = (
                current.member_epoch == group.assignment_epoch
                and not current.pending_revocation
                and not self._grantable(group, member_id)
            )
        else:
            self._reconcile(group, member_id, request.owned, now.monotonic_ms, decision)
            current = group.assignment(member_id)
            settled = group.current.get(member_id) == before and not current.pending_revocation
        return (
            HeartbeatResult(
                member_id=member_id,
                member_epoch=current.member_epoch,
                heartbeat_interval_ms=self.config.heartbeat_interval_ms,
                assignment=current.assigned,
                settled=settled,
            ),
            decision,
        )

    def _check_heartbeat(self, group: Group | None, request: HeartbeatInput) -> HeartbeatResult | None:
        def refuse(code: ErrorCode, message: str) -> HeartbeatResult:
            return HeartbeatResult(error=code, message=message, member_id=request.member_id)

        if not request.member_id:
            return refuse(ErrorCode.INVALID_REQUEST, "a heartbeat needs a member id (a UUID the client generates)")
        if request.server_assignor and request.server_assignor not in ASSIGNORS:
            return refuse(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"unknown assignor {request.server_assignor!r}; use one of {', '.join(sorted(ASSIGNORS))}",
            )
        if request.subscription is not None and request.subscription.topic_regex:
            try:
                subscription_pattern(request.subscription.topic_regex)
            except re2.error as exc:
                return refuse(
                    ErrorCode.INVALID_REGULAR_EXPRESSION,
                    f"subscription pattern {request.subscription.topic_regex!r} is invalid: {exc}",
                )
        members = group.members if group is not None else {}
        if request.member_epoch == JOIN_EPOCH:
            if request.subscription is None:
                return refuse(ErrorCode.INVALID_REQUEST, "a joining member must send its subscription")
            predecessor = self._static_predecessor(group, request) if group is not None else None
            if predecessor is not None and group is not None and not request.classic:
                if group.assignment(predecessor).member_epoch != TEMPORARY_LEAVE_EPOCH:
                    return refuse(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"instance id {request.instance_id!r} is still used by member {predecessor}; "
                        "it must leave first (or its session expire)",
                    )
            elif request.member_id not in members and len(members) >= self.config.max_group_size:
                return refuse(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"group {request.group_id!r} has {len(members)} members, the most allowed",
                )
            return None
        if request.member_id not in members or group is None:
            return refuse(
                ErrorCode.UNKNOWN_MEMBER_ID, f"member {request.member_id} is not in group {request.group_id!r}"
            )
        identity = members[request.member_id]
        if identity.instance_id != request.instance_id:
            return refuse(
                ErrorCode.FENCED_INSTANCE_ID,
                f"member {request.member_id} has instance id {identity.instance_id!r}, not {request.instance_id!r}",
            )
        current = group.assignment(request.member_id)
        if request.member_epoch == current.member_epoch:
            return None
        owned = request.owned if request.owned is not None else NO_PARTITIONS
        if request.member_epoch == current.previous_member_epoch and owned <= current.held():
            return None  # the member missed our last answer; it is re-sent
        return refuse(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"member epoch {request.member_epoch} is stale (current {current.member_epoch}); rejoin with epoch 0",
        )

    @staticmethod
    def _static_predecessor(group: Group | None, request: HeartbeatInput) -> str | None:
        """The other member holding the joining member's instance id, if any."""
        if group is None or not request.instance_id:
            return None
        for member_id, identity in group.members.items():
            if identity.instance_id == request.instance_id and member_id != request.member_id:
                return member_id
        return None

    def _replace_static_member(self, group: Group, old_id: str, new_id: str, decision: GroupDecision) -> MemberIdentity:
        """A restarted static member takes over its predecessor's assignment, without a rebalance;
        returns the predecessor's identity."""
        identity = group.members[old_id]
        current = group.assignment(old_id)
        target = group.targets.get(old_id, NO_PARTITIONS)
        epoch = current.previous_member_epoch if current.member_epoch == TEMPORARY_LEAVE_EPOCH else current.member_epoch
        self._remove_records(group, old_id, decision)
        group.last_heartbeat_ms.pop(old_id, None)
        self._emit(decision, target_record(group.group_id, new_id, target))
        self._set_current(
            group,
            new_id,
            CurrentAssignment(
                member_epoch=epoch,
                previous_member_epoch=current.previous_member_epoch,
                assigned=current.assigned,
                pending_revocation=current.pending_revocation,
            ),
            decision,
        )
        return identity

    @staticmethod
    def _updated_identity(previous: MemberIdentity | None, request: HeartbeatInput) -> MemberIdentity:
        base = previous or MemberIdentity()
        subscription = request.subscription
        return MemberIdentity(
            instance_id=request.instance_id,
            rack_id=request.rack_id or base.rack_id,
            client_id=request.client_id or base.client_id,
            client_host=request.client_host or base.client_host,
            topic_names=tuple(sorted(set(subscription.topic_names))) if subscription is not None else base.topic_names,
            topic_regex=subscription.topic_regex if subscription is not None else base.topic_regex,
            server_assignor=request.server_assignor if request.server_assignor is not None else base.server_assignor,
            rebalance_timeout_ms=request.rebalance_timeout_ms or base.rebalance_timeout_ms,
            principal=request.principal,
            classic=request.classic if previous is None or request.member_epoch == JOIN_EPOCH else base.classic,
        )

    def _leave(
        self, group: Group | None, request: HeartbeatInput, now: Instant, decision: GroupDecision
    ) -> HeartbeatResult:
        if group is None or request.member_id not in group.members:
            return HeartbeatResult(
                error=ErrorCode.UNKNOWN_MEMBER_ID,
                message=f"member {request.member_id} is not in group {request.group_id!r}",
                member_id=request.member_id,
                member_epoch=request.member_epoch,
            )
        if request.member_epoch == TEMPORARY_LEAVE_EPOCH and group.members[request.member_id].instance_id:
            current = group.assignment(request.member_id)
            self._set_current(
                group,
                request.member_id,
                CurrentAssignment(
                    member_epoch=TEMPORARY_LEAVE_EPOCH,
                    previous_member_epoch=current.member_epoch,
                    assigned=current.assigned,
                    pending_revocation=current.pending_revocation,
                ),
                decision,
            )
            group.last_heartbeat_ms[request.member_id] = now.monotonic_ms
        else:
            self._remove_member(group, request.member_id, now.wall_ms, decision)
        return HeartbeatResult(member_id=request.member_id, member_epoch=request.member_epoch)

    def leave(
        self, group_id: str, member_id: str, instance_id: str, now_ms: int
    ) -> tuple[ErrorCode, str, GroupDecision]:
        """LeaveGroup: remove a member at once (a static one too, releasing its partitions);
        ``now_ms`` is wall-clock time (an emptied group stores since when)."""
        decision = GroupDecision()
        group = self.store.get(group_id)
        if group is not None and not member_id and instance_id:
            member_id = next((m for m, i in group.members.items() if i.instance_id == instance_id), "")
        if group is None or member_id not in group.members:
            message = f"member {member_id or instance_id} is not in group {group_id!r}"
            return ErrorCode.UNKNOWN_MEMBER_ID, message, decision
        if instance_id and group.members[member_id].instance_id != instance_id:
            message = f"member {member_id} does not have instance id {instance_id!r}"
            return ErrorCode.FENCED_INSTANCE_ID, message, decision
        self._remove_member(group, member_id, now_ms, decision)
        return ErrorCode.NONE, "", decision

    # -----------------------------------------------------------------------------------------
    # Timers

    def expire(self, now: Instant) -> tuple[list[tuple[str, str, str]], GroupDecision]:
        """Fence members whose session expired or who did not revoke in time (on the monotonic
        clock: a wall-clock step fences nobody), and drop expired offsets and groups (on the wall
        clock: commit times are stored). Returns (group id, member id, reason) of each fenced member."""
        decision = GroupDecision()
        fenced: list[tuple[str, str, str]] = []
        at_ms = now.monotonic_ms
        for group in list(self.store):
            for member_id in list(group.members):
                last = group.last_heartbeat_ms.get(member_id, at_ms)
                deadline = group.revocation_deadline_ms.get(member_id)
                if at_ms - last > self.config.session_timeout_ms:
                    timeout_ms = self.config.session_timeout_ms
                    reason = f"no heartbeat for {at_ms - last} ms (session timeout {timeout_ms} ms)"
                elif deadline is not None and at_ms > deadline and group.assignment(member_id).pending_revocation:
                    reason = "did not revoke its partitions within its rebalance timeout"
                else:
                    continue
                fenced.append((group.group_id, member_id, reason))
                self._remove_member(group, member_id, now.wall_ms, decision)
        # Offsets are swept at most once a minute (Kafka: offsets.retention.check.interval.ms, 10
        # minutes): a sweep looks at every committed offset of the shard.
        interval_ms = min(OFFSETS_RETENTION_CHECK_MS, self.config.offsets_retention_ms)
        if self._offsets_checked_ms is None or now.wall_ms - self._offsets_checked_ms >= interval_ms:
            self._offsets_checked_ms = now.wall_ms
            for group in list(self.store):
                self._expire_offsets(group, now.wall_ms, decision)
        return fenced, decision

    def _expire_offsets(self, group: Group, now_ms: int, decision: GroupDecision) -> None:
        retention = self.config.offsets_retention_ms
        if not group.members:
            if group.empty_since_ms != NOT_EMPTY and now_ms - group.empty_since_ms >= retention:
                for record in group_tombstones(group):
                    self._emit(decision, record)
            return
        if group.assigned_for_counts is None:
            return
        subscribed = group.assigned_for_counts
        expired = [
            partition
            for partition, commit in group.offsets.items()
            if partition[0] not in subscribed and now_ms - commit.commit_timestamp_ms >= retention
        ]
        for partition in sorted(expired):
            self._emit(decision, offset_record(group.group_id, partition, None))

    # -----------------------------------------------------------------------------------------
    # Offsets

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        entries: Sequence[CommitEntry],
        *,
        now_ms: int,
        partition_counts: Mapping[str, int],
    ) -> tuple[list[tuple[CommitEntry, ErrorCode, str]], GroupDecision]:
        """Commit positions; per entry its outcome."""
        decision = GroupDecision()
        group = self.store.get(group_id)
        refusal = self._check_committer(group, group_id, member_id, member_epoch, entries)
        outcomes: list[tuple[CommitEntry, ErrorCode, str]] = []
        for entry in entries:
            code, message = refusal or _check_entry(entry, partition_counts, self.config.offset_metadata_max_bytes)
            outcomes.append((entry, code, message))
        if not any(code is ErrorCode.NONE for _, code, _ in outcomes):
            return outcomes, decision
        if group is None:
            group = self.store.groups[group_id] = _new_group(group_id)
            group.empty_since_ms = now_ms
            self._emit(decision, group_metadata_record(group))
        for entry, code, _ in outcomes:
            if code is ErrorCode.NONE:
                commit = OffsetCommit(entry.offset, entry.leader_epoch, entry.metadata, now_ms)
                self._emit(decision, offset_record(group_id, TopicPartition(entry.topic, entry.partition), commit))
        return outcomes, decision

    def _check_committer(
        self, group: Group | None, group_id: str, member_id: str, member_epoch: int, entries: Sequence[CommitEntry]
    ) -> tuple[ErrorCode, str] | None:
        if len(member_id) > MAX_MEMBER_ID_CHARS:
            return ErrorCode.UNKNOWN_MEMBER_ID, f"a member id has at most {MAX_MEMBER_ID_CHARS} characters"
        if len(entries) > MAX_OWNED_PARTITIONS:
            return ErrorCode.INVALID_REQUEST, f"a commit names at most {MAX_OWNED_PARTITIONS} partitions"
        if not member_id or member_epoch == FREE_CONSUMER_EPOCH:
            if group is not None and group.members:
                return (
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"group {group_id!r} has {len(group.members)} members; only its members may commit "
                    "(a free consumer or tool may commit only while the group is empty)",
                )
            return None
        if group is None or member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in group {group_id!r}; rejoin the group"
        current = group.assignment(member_id)
        if member_epoch == current.member_epoch:
            return None
        committed = {(e.topic, e.partition) for e in entries}
        if member_epoch == current.previous_member_epoch and committed <= current.held():
            return None
        return (
            ErrorCode.ILLEGAL_GENERATION if group.members[member_id].classic else ErrorCode.FENCED_MEMBER_EPOCH,
            f"member epoch {member_epoch} is stale (current {current.member_epoch}); the commit is refused",
        )

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetCommit | None]:
        """Committed offsets of ``partitions`` (None: every partition with one)."""
        group = self.store.get(group_id)
        offsets = group.offsets if group is not None else {}
        if partitions is None:
            return dict(sorted(offsets.items()))
        return {partition: offsets.get(partition) for partition in partitions}

    def reset_offsets(
        self, group_id: str, new_offsets: Mapping[TopicPartition, int], now_ms: int
    ) -> tuple[ErrorCode, str, GroupDecision]:
        """Set an empty group's committed offsets (the caller computed them from the logs)."""
        decision = GroupDecision()
        group = self.store.get(group_id)
        if group is not None and group.members:
            return (
                ErrorCode.NON_EMPTY_GROUP,
                f"group {group_id!r} has {len(group.members)} active members; stop them before resetting offsets",
                decision,
            )
        if group is None:
            group = self.store.groups[group_id] = _new_group(group_id)
            group.empty_since_ms = now_ms
            self._emit(decision, group_metadata_record(group))
        for partition, offset in sorted(new_offsets.items()):
            previous = group.offsets.get(partition)
            commit = OffsetCommit(offset, -1, previous.metadata if previous else "", now_ms)
            self._emit(decision, offset_record(group_id, partition, commit))
        return ErrorCode.NONE, "", decision

    def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> tuple[ErrorCode, list[tuple[TopicPartition, ErrorCode]], GroupDecision]:
        """Delete committed offsets of topics the group does not subscribe to."""
        decision = GroupDecision()
        group = self.store.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, [], decision
        subscribed = {t for member_id in group.members for t in self._member_topics(group, member_id, None)}
        results: list[tuple[TopicPartition, ErrorCode]] = []
        for partition in partitions:
            if partition[0] in subscribed:
                results.append((partition, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
                continue
            if partition in group.offsets:
                self._emit(decision, offset_record(group_id, partition, None))
            results.append((partition, ErrorCode.NONE))
        return ErrorCode.NONE, results, decision

    def delete_group(self, group_id: str) -> tuple[ErrorCode, str, GroupDecision]:
        """Delete an empty group with its offsets."""
        decision = GroupDecision()
        group = self.store.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist", decision
        if group.members:
            return (
                ErrorCode.NON_EMPTY_GROUP,
                f"group {group_id!r} has {len(group.members)} active members; stop them first",
                decision,
            )
        for record in group_tombstones(group):
            self._emit(decision, record)
        return ErrorCode.NONE, "", decision

    # -----------------------------------------------------------------------------------------
    # Assignment and reconciliation

    def _compute_target(
        self, group: Group, partition_counts: Mapping[str, int], counts: dict[str, int], decision: GroupDecision
    ) -> None:
        members = [
            MemberSubscription(
                member_id=member_id,
                topics=frozenset(self._member_topics(group, member_id, partition_counts)),
                previous=by_topic(group.targets.get(member_id, NO_PARTITIONS)),
            )
            for member_id in sorted(group.members)
        ]
        assignment = assignor_named(group.assignor)(members, counts)
        for member_id in sorted(group.members):
            target = flatten(assignment.get(member_id, {}))
            if group.targets.get(member_id) != target:
                self._emit(decision, target_record(group.group_id, member_id, target))
        self._emit(decision, assignment_metadata_record(group.group_id, group.group_epoch))
        group.assigned_for_counts = counts

    def _reconcile(
        self, group: Group, member_id: str, owned: Partitions | None, monotonic_ms: int, decision: GroupDecision
    ) -> None:
        current = group.assignment(member_id)
        target = group.targets.get(member_id, NO_PARTITIONS)
        if current.pending_revocation:
            if owned is None or owned & current.pending_revocation:
                return  # still revoking
            current = CurrentAssignment(current.member_epoch, current.previous_member_epoch, current.assigned)
            group.revocation_deadline_ms.pop(member_id, None)
        revoke = current.assigned - target
        if revoke:
            self._set_current(
                group,
                member_id,
                CurrentAssignment(
                    current.member_epoch, current.previous_member_epoch, current.assigned & target, revoke
                ),
                decision,
            )
            group.revocation_deadline_ms[member_id] = monotonic_ms + self._rebalance_timeout_ms(group, member_id)
            return
        wanted = target - current.assigned
        held_by_others: set[TopicPartition] = set()
        if wanted:  # a steady member (nothing to gain) costs nothing more here, whatever the group's size
            for other_id, other in group.current.items():
                if other_id != member_id:
                    held_by_others |= other.held() & wanted
        grant = wanted - held_by_others
        updated = CurrentAssignment(
            member_epoch=group.assignment_epoch,
            previous_member_epoch=current.member_epoch
            if current.member_epoch != group.assignment_epoch
            else current.previous_member_epoch,
            assigned=current.assigned | grant,
        )
        if updated != group.current.get(member_id):
            self._set_current(group, member_id, updated, decision)

    @staticmethod
    def _grantable(group: Group, member_id: str) -> bool:
        """Whether partitions of the member's target are free for it now (no member holds them)."""
        wanted = group.targets.get(member_id, NO_PARTITIONS) - group.assignment(member_id).assigned
        if not wanted:
            return False
        held = set().union(*(other.held() for other_id, other in group.current.items() if other_id != member_id))
        return bool(wanted - held)

    def _rebalance_timeout_ms(self, group: Group, member_id: str) -> int:
        identity = group.members.get(member_id)
        timeout = identity.rebalance_timeout_ms if identity is not None else 0
        return timeout or self.config.session_timeout_ms

    # -----------------------------------------------------------------------------------------
    # Record helpers

    def _emit(self, decision: GroupDecision, record: GroupRecord) -> None:
        self.store.apply(*record)
        decision.records.append(record)

    def _set_current(self, group: Group, member_id: str, current: CurrentAssignment, decision: GroupDecision) -> None:
        self._emit(decision, current_record(group.group_id, member_id, current))

    def _member_topics(self, group: Group, member_id: str, partition_counts: Mapping[str, int] | None) -> set[str]:
        """Topics a member subscribes to that exist (by name, or matching its pattern)."""
        identity = group.members[member_id]
        if identity.pattern:
            if partition_counts is None:
                return set(group.assigned_for_counts or {})
            return set(self._pattern_topics(identity.pattern, partition_counts))
        if partition_counts is None:
            return set(identity.topic_names)
        return {t for t in identity.topic_names if t in partition_counts}

    def _subscribed_counts(self, group: Group, partition_counts: Mapping[str, int]) -> dict[str, int]:
        """``{topic: partitions}`` of every existing topic some member subscribes to: from the
        group's subscription counts, so a heartbeat's cost grows with the distinct names and
        patterns of the group, not with its members times their subscriptions."""
        topics = {name for name in group.subscribed_names if name in partition_counts}
        for pattern in group.subscribed_patterns:
            topics |= self._pattern_topics(pattern, partition_counts)
        return {topic: partition_counts[topic] for topic in sorted(topics)}

    def _pattern_topics(self, pattern: PatternSubscription, partition_counts: Mapping[str, int]) -> frozenset[str]:
        """The topics ``pattern`` matches that its subscriber may DESCRIBE (Kafka 4.x resolves
        a pattern over those only: a pattern never hands a member a topic it could not name)."""
        matched = self.patterns.matching(pattern.regex, partition_counts)
        return self.visible_topics(pattern.principal, pattern.host, matched) if pattern.principal else matched

    def _remove_records(self, group: Group, member_id: str, decision: GroupDecision) -> None:
        self._emit(decision, member_record(group.group_id, member_id, None))
        self._emit(decision, target_record(group.group_id, member_id, None))
        self._emit(decision, current_record(group.group_id, member_id, None))

    def _remove_member(self, group: Group, member_id: str, wall_ms: int, decision: GroupDecision) -> None:
        """A member leaves or is fenced: its partitions are free at once; the group rebalances."""
        self._remove_records(group, member_id, decision)
        group.group_epoch += 1
        if not group.members:
            group.empty_since_ms = wall_ms
        self._emit(decision, group_metadata_record(group))


def _new_group(group_id: str) -> Group:
    return Group(group_id)


def _subscription_key(identity: MemberIdentity) -> tuple[tuple[str, ...], PatternSubscription | None, str]:
    return identity.topic_names, identity.pattern, identity.server_assignor


def _every_topic(principal: str, host: str, topics: frozenset[str]) -> frozenset[str]:
    return topics


def _preferred_assignor(group: Group) -> str:
    """The assignor most members ask for (ties: by name); the default when none asks."""
    votes = group.assignor_votes
    if not votes:
        return DEFAULT_ASSIGNOR
    return min(votes, key=lambda name: (-votes[name], name))


def _check_entry(
    entry: CommitEntry, partition_counts: Mapping[str, int], metadata_max_bytes: int
) -> tuple[ErrorCode, str]:
    if not 0 <= entry.partition < partition_counts.get(entry.topic, 0):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{entry.topic}-{entry.partition} does not exist"
    if entry.offset < 0:
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE, f"offset {entry.offset} is negative"
    if len(entry.metadata.encode()) > metadata_max_bytes:
        return (
            ErrorCode.OFFSET_METADATA_TOO_LARGE,
            f"commit metadata of {len(entry.metadata.encode())} bytes exceeds {metadata_max_bytes}",
        )
    return ErrorCode.NONE, ""
