"""The consumer-group core (lanes.coordinator.core): KIP-848 reconciliation, fencing, static
membership, offsets, retention, and replay of its records — driven with an explicit clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from lanes.coordinator import patterns
from lanes.coordinator.core import (
    MAX_ID_CHARS,
    MAX_MEMBER_ID_CHARS,
    MAX_SUBSCRIPTION_BYTES,
    OFFSETS_RETENTION_CHECK_MS,
    CommitEntry,
    GroupConfig,
    GroupCoordinatorCore,
    HeartbeatInput,
    HeartbeatResult,
    Instant,
    Subscription,
)
from lanes.coordinator.group import GroupRecord, GroupState, GroupStore, Partitions
from lanes.coordinator.patterns import TopicPatterns, resolve_patterns
from lanes.coordinator.shard_log import MAX_BATCH_BYTES
from lanes.errors import ErrorCode
from lanes.v1 import coordinator_pb2

COUNTS = {"orders": 6, "payments": 2}
CONFIG = GroupConfig(session_timeout_ms=10_000, heartbeat_interval_ms=1_000, offsets_retention_ms=60_000)


@dataclass
class Client:
    """A member as a well-behaved client runs it: it uses what it was assigned, and releases
    revoked partitions at once (or later, when ``slow``)."""

    member_id: str
    topics: tuple[str, ...] = ("orders",)
    instance_id: str = ""
    epoch: int = 0
    owned: Partitions = frozenset()
    log: list[HeartbeatResult] = field(default_factory=list)


class Harness:
    def __init__(self, config: GroupConfig = CONFIG) -> None:
        self.core = GroupCoordinatorCore(config)
        self.now_ms = 1_000_000
        #: the monotonic clock reads something else: mixing the two up fails the tests
        self.monotonic_offset_ms = -990_000
        self.counts = dict(COUNTS)
        self.records: list[GroupRecord] = []

    @property
    def now(self) -> Instant:
        return Instant(self.now_ms, self.now_ms + self.monotonic_offset_ms)

    def beat(self, client: Client, *, release: bool = True, epoch: int | None = None) -> HeartbeatResult:
        joining = client.epoch == 0
        result, decision = self.core.heartbeat(
            HeartbeatInput(
                group_id="g",
                member_id=client.member_id,
                member_epoch=client.epoch if epoch is None else epoch,
                instance_id=client.instance_id,
                subscription=Subscription(client.topics) if joining else None,
                owned=client.owned,
            ),
            self.now,
            self.counts,
        )
        self.records.extend(decision.records)
        client.log.append(result)
        if result.error is ErrorCode.NONE and result.member_epoch >= 0:
            client.epoch = result.member_epoch
            assert result.assignment is not None
            kept = client.owned & result.assignment if release else client.owned
            client.owned = kept | (result.assignment - client.owned)
        self.check()
        return result

    def check(self) -> None:
        group = self.core.store.get("g")
        if group is not None:
            group.check_invariants()

    def group(self):  # type: ignore[no-untyped-def]
        group = self.core.store.get("g")
        assert group is not None
        return group


def settle(harness: Harness, clients: list[Client], rounds: int = 6) -> None:
    for _ in range(rounds):
        for client in clients:
            harness.beat(client)


def test_first_member_gets_everything_then_shares_after_revoking() -> None:
    h = Harness()
    a, b = Client("a"), Client("b")
    h.beat(a)
    assert a.owned == {("orders", p) for p in range(6)}
    assert h.group().state() == GroupState.STABLE

    h.beat(b)  # b joins: nothing free yet
    assert b.owned == frozenset()
    assert h.group().state() == GroupState.RECONCILING
    h.beat(a, release=False)  # a is told to revoke three but has not yet
    assert len(h.group().current["a"].pending_revocation) == 3
    h.beat(b)
    assert b.owned == frozenset(), "b got partitions a still holds"
    h.beat(a)  # a releases them ...
    assert h.group().current["a"].pending_revocation, "released but not reported yet"
    h.beat(a)  # ... and reports it
    h.beat(b)
    assert len(a.owned) == 3
    assert len(b.owned) == 3
    assert not a.owned & b.owned
    assert h.group().state() == GroupState.STABLE
    assert a.epoch == b.epoch == h.group().assignment_epoch == h.group().group_epoch == 2


def test_leave_frees_partitions_for_the_others() -> None:
    h = Harness()
    a, b = Client("a"), Client("b")
    settle(h, [a, b])
    h.beat(b, epoch=-1)
    h.beat(a)
    assert len(a.owned) == 6
    assert "b" not in h.group().members


def test_silent_member_is_fenced_after_the_session_timeout() -> None:
    h = Harness()
    a, b = Client("a"), Client("b")
    settle(h, [a, b])
    h.now_ms += CONFIG.session_timeout_ms - 1
    h.beat(a)
    fenced, _ = h.core.expire(h.now)
    assert fenced == []
    h.now_ms += 2
    fenced, _ = h.core.expire(h.now)
    assert [(g, m) for g, m, _ in fenced] == [("g", "b")]
    h.beat(a)
    assert len(a.owned) == 6
    assert h.beat(b).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_sessions_run_on_the_monotonic_clock_so_a_wall_clock_step_fences_nobody() -> None:
    h = Harness()
    a, b = Client("a"), Client("b")
    settle(h, [a, b])
    h.now_ms += 3_600_000  # NTP steps the wall clock an hour ahead ...
    h.monotonic_offset_ms -= 3_600_000  # ... while the monotonic clock did not move
    fenced, _ = h.core.expire(h.now)
    assert fenced == [], "the wall clock moved, the sessions did not"
    h.monotonic_offset_ms += CONFIG.session_timeout_ms + 1  # now the sessions did expire
    fenced, _ = h.core.expire(h.now)
    assert sorted(m for _, m, _ in fenced) == ["a", "b"]


def test_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced() -> None:
    h = Harness()
    a = Client("a")
    h.beat(a)
    b = Client("b")
    h.beat(b)
    h.beat(a, release=False)
    h.now_ms += CONFIG.session_timeout_ms // 2
    h.beat(a, release=False)  # still heartbeating, never releasing
    h.beat(b)
    h.now_ms += CONFIG.session_timeout_ms // 2 + 1
    h.beat(b)
    fenced, _ = h.core.expire(h.now)
    assert [m for _, m, _ in fenced] == ["a"]
    h.beat(b)
    assert len(b.owned) == 6


def test_stale_epoch_is_fenced_and_rejoin_owns_nothing() -> None:
    h = Harness()
    a, b = Client("a"), Client("b")
    settle(h, [a, b])
    assert h.beat(a, epoch=a.epoch + 7).error is ErrorCode.FENCED_MEMBER_EPOCH
    a.epoch, a.owned = 0, frozenset()
    h.beat(a)
    settle(h, [a, b])
    assert len(a.owned) == 3
    assert len(b.owned) == 3


def test_static_member_keeps_its_partitions_across_a_quick_restart() -> None:
    h = Harness()
    a, b = Client("a", instance_id="pod-0"), Client("b", instance_id="pod-1")
    settle(h, [a, b])
    before_epoch = h.group().group_epoch
    partitions = a.owned
    h.beat(a, epoch=-2)
    h.beat(b)
    assert len(b.owned) == 3, "a temporarily departed static member's partitions must not move"
    a2 = Client("a-restarted", instance_id="pod-0")
    h.beat(a2)
    assert a2.owned == partitions
    assert h.group().group_epoch == before_epoch
    assert "a" not in h.group().members


def test_static_instance_in_use_is_refused_until_released() -> None:
    h = Harness()
    a = Client("a", instance_id="pod-0")
    h.beat(a)
    result = h.beat(Client("a2", instance_id="pod-0"))
    assert result.error is ErrorCode.UNRELEASED_INSTANCE_ID


def test_temporarily_departed_static_member_expires_after_the_session_timeout() -> None:
    h = Harness()
    a, b = Client("a", instance_id="pod-0"), Client("b")
    settle(h, [a, b])
    h.beat(a, epoch=-2)
    h.now_ms += CONFIG.session_timeout_ms + 1
    h.beat(b)
    h.core.expire(h.now)
    h.beat(b)
    assert len(b.owned) == 6


def test_new_partitions_trigger_a_rebalance() -> None:
    h = Harness()
    a = Client("a")
    h.beat(a)
    h.counts = {**h.counts, "orders": 8}  # a new topic set is a new mapping (TopicPatterns)
    h.beat(a)
    assert len(a.owned) == 8


def test_regex_subscription_follows_topics_and_never_internal_ones() -> None:
    h = Harness()
    h.counts = {**h.counts, "__consumer_offsets": 50}
    a = Client("a")
    result, _ = h.core.heartbeat(
        HeartbeatInput("g", "a", 0, subscription=Subscription(topic_regex=".*")), h.now, h.counts
    )
    assert result.assignment is not None
    assert {t for t, _ in result.assignment} == {"orders", "payments"}
    h.counts = {**h.counts, "refunds": 1}
    a.epoch = result.member_epoch
    a.owned = result.assignment
    h.beat(a)
    assert ("refunds", 0) in a.owned


def test_bad_requests_get_clear_errors() -> None:
    h = Harness()
    bad_regex, _ = h.core.heartbeat(
        HeartbeatInput("g", "a", 0, subscription=Subscription(topic_regex="(")), h.now, h.counts
    )
    assert bad_regex.error is ErrorCode.INVALID_REGULAR_EXPRESSION
    bad_assignor, _ = h.core.heartbeat(
        HeartbeatInput("g", "a", 0, subscription=Subscription(("orders",)), server_assignor="sticky"),
        h.now,
        h.counts,
    )
    assert bad_assignor.error is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert "uniform" in bad_assignor.message
    unknown, _ = h.core.heartbeat(HeartbeatInput("g", "nobody", 3), h.now, h.counts)
    assert unknown.error is ErrorCode.UNKNOWN_MEMBER_ID
    full = Harness(GroupConfig(max_group_size=1))
    full.beat(Client("a"))
    assert full.beat(Client("b")).error is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert h.core.store.get("g") is None, "refused requests must leave no state behind"


def test_group_chooses_the_assignor_its_members_ask_for() -> None:
    h = Harness()
    for member_id in ("a", "b"):
        h.core.heartbeat(
            HeartbeatInput("g", member_id, 0, subscription=Subscription(("orders",)), server_assignor="range"),
            h.now,
            h.counts,
        )
    assert h.group().assignor == "range"


def test_commits_are_fenced_by_member_epoch() -> None:
    h = Harness()
    a, b = Client("a"), Client("b")
    settle(h, [a, b])
    entry = CommitEntry("orders", sorted(a.owned)[0][1], 42, metadata="m")
    outcomes, _ = h.core.commit_offsets("g", "a", a.epoch, [entry], now_ms=h.now_ms, partition_counts=h.counts)
    assert outcomes[0][1] is ErrorCode.NONE
    stale, _ = h.core.commit_offsets("g", "a", a.epoch + 5, [entry], now_ms=h.now_ms, partition_counts=h.counts)
    assert stale[0][1] is ErrorCode.FENCED_MEMBER_EPOCH
    unknown, _ = h.core.commit_offsets("g", "zombie", 1, [entry], now_ms=h.now_ms, partition_counts=h.counts)
    assert unknown[0][1] is ErrorCode.UNKNOWN_MEMBER_ID
    free, _ = h.core.commit_offsets("g", "", -1, [entry], now_ms=h.now_ms, partition_counts=h.counts)
    assert free[0][1] is ErrorCode.UNKNOWN_MEMBER_ID
    assert "empty" in free[0][2]
    committed = h.core.fetch_offsets("g", [("orders", entry.partition), ("orders", 5)])
    assert committed[("orders", entry.partition)] is not None
    assert committed[("orders", entry.partition)].offset == 42  # type: ignore[union-attr]
    assert committed[("orders", 5)] is None or committed[("orders", 5)].offset != 42  # type: ignore[union-attr]


def test_free_commits_and_bad_entries() -> None:
    h = Harness()
    entries = [
        CommitEntry("orders", 0, 10),
        CommitEntry("orders", 9, 10),
        CommitEntry("nope", 0, 1),
        CommitEntry("orders", 1, -3),
        CommitEntry("orders", 2, 1, metadata="x" * 5000),
    ]
    outcomes, decision = h.core.commit_offsets("free", "", -1, entries, now_ms=h.now_ms, partition_counts=h.counts)
    assert [code for _, code, _ in outcomes] == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
        ErrorCode.OFFSET_METADATA_TOO_LARGE,
    ]
    assert list(h.core.fetch_offsets("free", None)) == [("orders", 0)]
    assert h.core.store.get("free") is not None
    assert h.core.store.get("free").state() == GroupState.EMPTY  # type: ignore[union-attr]
    assert len([r for r in decision.records if r[0].HasField("offset_commit")]) == 1
    refused, nothing = h.core.commit_offsets(
        "free", "m" * 65, -1, entries[:1], now_ms=h.now_ms, partition_counts=h.counts
    )  # group ids are checked by the service (lanes.protocol.names.validate_group_id)
    assert [c for _, c, _ in refused] == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert not nothing.records


def test_offsets_of_an_empty_group_expire_after_the_retention() -> None:
    h = Harness()
    a = Client("a")
    h.beat(a)
    h.core.commit_offsets("g", "a", a.epoch, [CommitEntry("orders", 0, 5)], now_ms=h.now_ms, partition_counts=h.counts)
    h.beat(a, epoch=-1)
    h.now_ms += CONFIG.offsets_retention_ms - 1
    h.core.expire(h.now)
    assert h.core.fetch_offsets("g", None)
    h.now_ms += 1
    h.core.expire(h.now)
    assert h.core.fetch_offsets("g", None), "offsets are swept at most once a minute (Kafka: every 10)"
    h.now_ms += OFFSETS_RETENTION_CHECK_MS - 1
    h.core.expire(h.now)
    assert h.core.store.get("g") is None


def test_delete_and_reset_need_an_empty_group() -> None:
    h = Harness()
    a = Client("a")
    h.beat(a)
    assert h.core.delete_group("g")[0] is ErrorCode.NON_EMPTY_GROUP
    assert h.core.reset_offsets("g", {("orders", 0): 3}, h.now_ms)[0] is ErrorCode.NON_EMPTY_GROUP
    code, results, _ = h.core.delete_offsets("g", [("orders", 0), ("payments", 1)])
    assert code is ErrorCode.NONE
    assert [c for _, c in results] == [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.NONE]
    h.beat(a, epoch=-1)
    assert h.core.reset_offsets("g", {("orders", 0): 3}, h.now_ms)[0] is ErrorCode.NONE
    assert h.core.fetch_offsets("g", None)[("orders", 0)].offset == 3  # type: ignore[union-attr]
    assert h.core.delete_group("g")[0] is ErrorCode.NONE
    assert h.core.store.get("g") is None
    assert h.core.delete_group("g")[0] is ErrorCode.GROUP_ID_NOT_FOUND


# ---------------------------------------------------------------------------------------------
# Replay and a randomized protocol simulation


def compacted(records: list[GroupRecord]) -> list[GroupRecord]:
    """What log compaction leaves: the last record of each key, in log order, tombstones removed."""
    last: dict[bytes, int] = {}
    for index, (key, _) in enumerate(records):
        last[key.SerializeToString(deterministic=True)] = index
    return [
        r for i, r in enumerate(records) if last[r[0].SerializeToString(deterministic=True)] == i and r[1] is not None
    ]


def durable_view(store: GroupStore) -> dict[str, object]:
    return {
        g.group_id: (
            g.group_epoch,
            g.assignor,
            g.empty_since_ms,
            g.assignment_epoch,
            g.members,
            g.targets,
            g.current,
            g.offsets,
        )
        for g in store
    }


operations = st.lists(
    st.tuples(
        st.sampled_from(["beat", "beat", "slow-beat", "slow-beat", "leave", "crash", "tick", "grow", "commit"]),
        st.integers(0, 2),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(ops=operations)
def test_random_membership_never_gives_a_partition_two_owners_and_replays_exactly(ops: list[tuple[str, int]]) -> None:
    h = Harness()
    clients = [Client(f"m{i}", topics=("orders", "payments") if i % 2 else ("orders",)) for i in range(3)]
    active: set[int] = set()
    for op, index in ops:
        client = clients[index]
        if op in ("beat", "slow-beat"):
            result = h.beat(client, release=op == "beat")
            if result.error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH):
                client.epoch, client.owned = 0, frozenset()  # the client drops everything and rejoins
            else:
                active.add(index)
        elif op == "leave" and index in active:
            h.beat(client, epoch=-1)
            client.epoch, client.owned = 0, frozenset()
            active.discard(index)
        elif op == "crash":
            client.owned = frozenset()  # it stops using partitions; the coordinator will fence it
            active.discard(index)
        elif op == "tick":
            h.now_ms += 4_000
            _, decision = h.core.expire(h.now)
            h.records.extend(decision.records)
            for c in clients:  # a client whose session lapsed without a heartbeat drops its partitions
                group = h.core.store.get("g")
                if group is None or c.member_id not in group.members:
                    c.owned = frozenset()
        elif op == "grow":
            h.counts["orders"] += 1
        elif op == "commit" and client.owned:
            topic, partition = sorted(client.owned)[0]
            _, decision = h.core.commit_offsets(
                "g",
                client.member_id,
                client.epoch,
                [CommitEntry(topic, partition, 7)],
                now_ms=h.now_ms,
                partition_counts=h.counts,
            )
            h.records.extend(decision.records)
        owners: dict[tuple[str, int], str] = {}
        for c in clients:
            for partition in c.owned:
                assert owners.setdefault(partition, c.member_id) == c.member_id, f"{partition} used by two clients"
        h.check()

    replayed = GroupStore()
    replayed.apply_all(h.records)
    assert durable_view(replayed) == durable_view(h.core.store)
    from_compacted = GroupStore()
    from_compacted.apply_all(compacted(h.records))
    assert durable_view(from_compacted) == durable_view(h.core.store)

    # Liveness: once everyone heartbeats and releases promptly, the group converges.
    live = [c for c in clients if (g := h.core.store.get("g")) is not None and c.member_id in g.members]
    settle(h, live, rounds=4)
    group = h.core.store.get("g")
    if group is not None and live:
        assert group.state() == GroupState.STABLE
        assert {p for c in live for p in c.owned} == {p for t in group.targets.values() for p in t}


def test_group_states_carry_the_wire_enum_numbers() -> None:
    """The pure core's GroupState goes on the wire as it is: its numbers are lanes.v1.GroupState's."""
    for state in GroupState:
        assert coordinator_pb2.GroupState.Value(f"GROUP_STATE_{state.name}") == state


def test_heartbeats_with_oversized_fields_are_refused_and_write_nothing() -> None:
    """Issue #23: a 2 MB client id became a member record too large to write, and stopped the
    shard; every string and list a heartbeat carries is bounded, and the group is untouched."""
    h = Harness()
    a = Client("a")
    h.beat(a)
    before = len(h.records)
    for oversized in (
        {"client_id": "c" * 2_000_000},
        {"rack_id": "r" * 256},
        {"instance_id": "i" * 256},
        {"member_id": "m" * 65},
        {"subscription": Subscription(("orders",), "(a+)+$" * 200)},
        {"subscription": Subscription(tuple(f"t{n}" for n in range(10_001)))},
    ):
        fields = {"group_id": "g", "member_id": "b", "member_epoch": 0, "subscription": Subscription(("orders",))}
        result, decision = h.core.heartbeat(HeartbeatInput(**{**fields, **oversized}), h.now, h.counts)  # type: ignore[arg-type]
        assert result.error is ErrorCode.INVALID_REQUEST, oversized.keys()
        assert "at most" in result.message
        assert not decision.records
    assert len(h.records) == before
    assert set(h.group().members) == {"a"}


def test_subscription_patterns_are_re2_linear_time_and_refuse_backreferences() -> None:
    """Issue #23: ``(a+)+$`` backtracked for 15.6 s per group in Python's ``re``; RE2 matches in
    linear time, and refuses what it cannot do (backreferences, lookaround)."""
    h = Harness()
    h.counts = {**COUNTS, **{"a" * 40 + f"!{n}": 1 for n in range(50)}, "aaaa": 1}
    evil = HeartbeatInput(group_id="g", member_id="a", member_epoch=0, subscription=Subscription((), "(a+)+$"))
    result, _ = h.core.heartbeat(evil, h.now, h.counts)
    assert result.error is ErrorCode.NONE
    assert result.assignment == {("aaaa", 0)}, "only the topic the pattern fully matches"
    backreference = HeartbeatInput(group_id="g", member_id="b", member_epoch=0, subscription=Subscription((), r"(a)\1"))
    refused, _ = h.core.heartbeat(backreference, h.now, h.counts)
    assert refused.error is ErrorCode.INVALID_REGULAR_EXPRESSION


def test_a_heartbeat_matches_each_pattern_once_per_topic_set_whatever_the_group_size(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue #23: every heartbeat matched every member's pattern against every topic (members x
    topics of work per heartbeat). Patterns are remembered per topic set: 200 members sharing two
    patterns cost two resolutions; a new topic set resolves them again, and its topics are
    assigned."""
    resolved: list[str] = []
    real = patterns.resolve_patterns

    def counting(regexes, topics):  # type: ignore[no-untyped-def]
        resolved.extend(regexes)
        return real(regexes, topics)

    monkeypatch.setattr(patterns, "resolve_patterns", counting)
    h = Harness()
    h.counts = {**COUNTS, "orders-eu": 3, "__consumer_offsets": 50}
    for n in range(200):
        regex = "orders.*" if n % 2 else "pay.*"
        beat = HeartbeatInput(group_id="g", member_id=f"m{n}", member_epoch=0, subscription=Subscription((), regex))
        result, _ = h.core.heartbeat(beat, h.now, h.counts)
        assert result.error is ErrorCode.NONE
    assert sorted(resolved) == ["orders.*", "pay.*"]
    group = h.core.store.get("g")
    assert group is not None
    group.check_invariants()
    assert set(group.assigned_for_counts or {}) == {"orders", "orders-eu", "payments"}, "internal topics never match"

    h.counts = {**h.counts, "orders-us": 1}  # a new topic set (a new mapping object)
    beat = HeartbeatInput(group_id="g", member_id="m1", member_epoch=group.current["m1"].member_epoch)
    h.core.heartbeat(beat, h.now, h.counts)
    assert sorted(resolved) == ["orders.*", "orders.*", "pay.*", "pay.*"]
    assert "orders-us" in (group.assigned_for_counts or {}), "the new topic is assigned"


def test_the_service_resolves_patterns_before_deciding_and_the_cache_is_bounded() -> None:
    """``unresolved_patterns`` names what a heartbeat needs (the group's patterns and its own);
    once remembered for the topic set, nothing; ``TopicPatterns`` keeps its most recent
    ``max_patterns``."""
    h = Harness()
    h.counts = {**COUNTS, "aaaa": 1, f"{'a' * 40}-1": 1}
    join = HeartbeatInput(group_id="g", member_id="a", member_epoch=0, subscription=Subscription((), "(a+)+$"))
    h.core.heartbeat(join, h.now, h.counts)
    assert h.core.unresolved_patterns("g", "pay.*", h.counts) == ["pay.*"]
    assert h.core.unresolved_patterns("g", "", {**h.counts}) == ["(a+)+$"], "another topic set"
    assert h.core.unresolved_patterns("g", "x" * 1_025, h.counts) == [], "an oversized pattern is refused, not matched"
    h.core.patterns.remember(h.counts, resolve_patterns(["pay.*"], h.counts))
    assert h.core.unresolved_patterns("g", "pay.*", h.counts) == []
    assert resolve_patterns(["(a+)+$", r"(a)\1"], h.counts) == {"(a+)+$": frozenset({"aaaa"}), r"(a)\1": frozenset()}

    bounded = TopicPatterns(max_patterns=2)
    bounded.remember(h.counts, resolve_patterns(["a.*", "b.*", "o.*"], h.counts))
    assert bounded.missing(["a.*", "b.*", "o.*"], h.counts) == ["a.*"], "the least recently used is forgotten"


def test_the_largest_member_record_a_heartbeat_may_make_fits_one_batch_of_the_shard() -> None:
    """Issue #23: 4,100 subscribed names of 249 characters made a 1 MB member record, which
    ``__consumer_offsets`` refused (max.message.bytes), and the shard stopped for every group.
    Every string and list is bounded, and so are the subscription's bytes: the largest record a
    heartbeat may make fits one batch of the shard's log, and one byte more is refused."""
    longest = "x" * MAX_ID_CHARS
    per_name = MAX_ID_CHARS
    names = tuple(f"{n:06d}" + "t" * (per_name - 6) for n in range(MAX_SUBSCRIPTION_BYTES // per_name))
    fields = {"group_id": "g" * MAX_ID_CHARS, "member_id": "m" * MAX_MEMBER_ID_CHARS, "member_epoch": 0}
    ids = {"instance_id": longest, "rack_id": longest, "client_id": longest, "server_assignor": "uniform"}
    h = Harness()
    largest = HeartbeatInput(**fields, **ids, client_host=longest, subscription=Subscription(names, "a" * 1_024))  # type: ignore[arg-type]
    result, decision = h.core.heartbeat(largest, h.now, h.counts)
    assert result.error is ErrorCode.NONE, result.message
    member = next(value for key, value in decision.records if key.WhichOneof("key") == "member")
    assert member is not None
    assert member.ByteSize() + 1_024 < MAX_BATCH_BYTES
    over = HeartbeatInput(**fields, subscription=Subscription((*names, "y" * per_name)))  # type: ignore[arg-type]
    refused, nothing = h.core.heartbeat(over, h.now, h.counts)
    assert refused.error is ErrorCode.INVALID_REQUEST
    assert f"at most {MAX_SUBSCRIPTION_BYTES}" in refused.message
    assert not nothing.records
