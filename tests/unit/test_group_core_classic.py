"""Classic-protocol members (Kafka's JoinGroup, SyncGroup and Heartbeat through a broker's Kafka
listener) on the consumer-group core: only a join reconciles, a stale generation is
ILLEGAL_GENERATION, a static member replaces its predecessor, and whatever classic and KIP-848
members do, a partition never has two owners (a hypothesis walk over their interleavings)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from lanes.coordinator.core import CommitEntry, GroupCoordinatorCore, HeartbeatInput, HeartbeatResult, Subscription
from lanes.coordinator.group import Partitions
from lanes.errors import ErrorCode
from tests.unit.test_group_core import CONFIG, Harness


@dataclass
class ClassicClient:
    """A classic member as Kafka's clients run it: JoinGroup (epoch 0, its subscription naming what
    it owns), then SyncGroup and Heartbeat at its generation; eager: it gives up everything before
    rejoining, cooperative: only what it was not assigned."""

    member_id: str
    eager: bool = True
    instance_id: str = ""
    generation: int = -1
    owned: Partitions = frozenset()
    log: list[HeartbeatResult] = field(default_factory=list)


def _classic(h: Harness, client: ClassicClient, epoch: int, owned: Partitions | None) -> HeartbeatResult:
    result, decision = h.core.heartbeat(
        HeartbeatInput(
            group_id="g",
            member_id=client.member_id,
            member_epoch=epoch,
            instance_id=client.instance_id,
            subscription=Subscription(("orders",)) if epoch == 0 else None,
            owned=owned,
            classic=True,
        ),
        h.now,
        h.counts,
    )
    h.records.extend(decision.records)
    client.log.append(result)
    h.check()
    return result


def join(h: Harness, client: ClassicClient) -> HeartbeatResult:
    """A JoinGroup as the Kafka face answers it: the same join up to three times, until settled."""
    if client.eager:
        client.owned = frozenset()  # (revoked before rejoining)
    for _ in range(3):
        result = _classic(h, client, 0, client.owned)
        if result.error is not ErrorCode.NONE:
            return result
        client.generation = result.member_epoch
        if result.settled:
            break
    return result


def sync(h: Harness, client: ClassicClient) -> HeartbeatResult:
    result = _classic(h, client, client.generation, None)
    if result.error is ErrorCode.NONE and result.member_epoch == client.generation:
        assert result.assignment is not None
        client.owned = result.assignment if client.eager else (client.owned & result.assignment) | result.assignment
    return result


def heartbeat(h: Harness, client: ClassicClient) -> HeartbeatResult:
    return _classic(h, client, client.generation, None)


def test_only_a_join_reconciles_a_classic_member() -> None:
    h = Harness()
    a = ClassicClient("a")
    join(h, a)
    sync(h, a)
    assert len(a.owned) == 6
    b = ClassicClient("b")
    join(h, b)
    before = h.group().current["a"]
    beat = heartbeat(h, a)
    assert h.group().current["a"] == before, "a classic heartbeat changed the member's assignment"
    assert beat.member_epoch == a.generation
    assert not beat.settled, "a must rejoin to give up half"
    join(h, a)  # eager: owns nothing now
    sync(h, a)
    join(h, b)
    sync(h, b)
    assert len(a.owned) == 3
    assert len(b.owned) == 3
    assert not a.owned & b.owned
    assert heartbeat(h, a).settled
    assert heartbeat(h, b).settled


def test_a_classic_members_stale_commit_is_an_illegal_generation() -> None:
    h = Harness()
    a, b = ClassicClient("a"), ClassicClient("b")
    join(h, a)
    sync(h, a)
    stale = a.generation
    join(h, b)
    join(h, a)  # a moves on, giving up half; a commit of its old generation for one of those is refused
    held = h.group().current["a"].held()
    given_up = min(p for p in range(6) if ("orders", p) not in held)
    assert a.generation != stale
    outcomes, _ = h.core.commit_offsets(
        "g", "a", stale, [CommitEntry("orders", given_up, 10)], now_ms=h.now_ms, partition_counts=h.counts
    )
    assert [code for _, code, _ in outcomes] == [ErrorCode.ILLEGAL_GENERATION]


def test_a_static_classic_member_replaces_its_predecessor_at_once() -> None:
    h = Harness()
    old = ClassicClient("old", instance_id="consumer-1")
    join(h, old)
    sync(h, old)
    new = ClassicClient("new", instance_id="consumer-1")
    assert join(h, new).error is ErrorCode.NONE, "a restarted classic static member was refused"
    sync(h, new)
    assert len(new.owned) == 6
    assert "old" not in h.group().members


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["join", "sync", "beat", "leave"])), max_size=60))
def test_classic_members_never_share_a_partition(steps: list[tuple[int, str]]) -> None:
    h = Harness()
    clients = [ClassicClient(f"m{n}", eager=n % 2 == 0) for n in range(4)]
    for index, action in steps:
        client = clients[index]
        if action == "join" or client.generation < 0:
            join(h, client)
        elif action == "sync":
            sync(h, client)
        elif action == "beat":
            heartbeat(h, client)
        else:
            h.core.leave("g", client.member_id, "", h.now_ms)
            client.generation, client.owned = -1, frozenset()
        h.now_ms += 100
        owners: dict[tuple[str, int], str] = {}
        for other in clients:
            for partition in other.owned:
                assert partition not in owners, f"{partition} owned by {owners[partition]} and {other.member_id}"
                owners[partition] = other.member_id


def test_core_is_importable_without_classic_use() -> None:
    assert GroupCoordinatorCore(CONFIG).store.groups == {}
