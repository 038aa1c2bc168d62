"""The state the Raft core keeps for one role only (KRaft's ``LeaderState``, ``CandidateState``
and ``FollowerState``): created when the role is taken, dropped when it ends, so nothing of a
leadership outlives it. Pure; owned by the Raft core (``lanes.controller.raft``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from lanes.controller.raft_log import RaftLog
from lanes.controller.raft_messages import (
    OBSERVER_FORGOTTEN_TIMEOUTS,
    FetchRequest,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    RaftConfig,
    SnapshotId,
)


@dataclass
class Tracking:
    """The leader's view of one follower (a voter or an observer)."""

    end_offset: int = 0
    last_fetch_ms: int = -1
    #: when BeginEpoch was last sent to it (again while it does not fetch: it may have missed it)
    announced_ms: int = -1
    #: the snapshot it is fetching (until it fetches entries again)
    fetching_snapshot: SnapshotId | None = None


@dataclass
class LeaderState:
    """A leadership: where its epoch starts in the log and what it knows of its followers.
    Invariant: ``tracking`` holds every voter but the leader, ``observers`` no voter."""

    #: the log end when the leadership began (its leader-change entry is there)
    epoch_start_offset: int
    tracking: dict[int, Tracking]
    #: non-voters that fetch (observers: a controller about to be added)
    observers: dict[int, Tracking] = field(default_factory=dict)

    @classmethod
    def begin(cls, followers: Iterable[int], now_ms: int, epoch_start_offset: int) -> LeaderState:
        """Every voter gets a fresh election timeout to fetch before check-quorum counts it out."""
        return cls(epoch_start_offset, {voter: Tracking(last_fetch_ms=now_ms) for voter in followers})

    def tick(self, voters: frozenset[int], leader: int, now_ms: int, config: RaftConfig) -> tuple[bool, list[int]]:
        """Time passed: (whether a majority of ``voters`` fetched within an election timeout, the
        check-quorum rule; the voters to send BeginEpoch again: KRaft resends it to a voter silent
        for a fetch timeout, which may have missed it or come back). Silent observers are forgotten."""
        timeout_ms = config.election_timeout_ms
        majority = self.fetched_within(voters, leader, now_ms, timeout_ms) >= len(voters) // 2 + 1
        announce = self.to_announce(now_ms, config.fetch_timeout_ms)
        self.forget_observers_before(now_ms - OBSERVER_FORGOTTEN_TIMEOUTS * timeout_ms)
        return majority, announce

    def fetched_within(self, voters: Iterable[int], leader: int, now_ms: int, window_ms: int) -> int:
        """How many of ``voters`` (the leader among them counts) fetched within ``window_ms``."""
        return sum(1 for voter in voters if voter == leader or now_ms - self.tracking[voter].last_fetch_ms < window_ms)

    def to_announce(self, now_ms: int, quiet_ms: int) -> list[int]:
        """Voters silent for ``quiet_ms`` since they fetched or were told of the leadership (they
        are told again now)."""
        silent = []
        for voter, tracking in sorted(self.tracking.items()):
            if now_ms - max(tracking.last_fetch_ms, tracking.announced_ms) >= quiet_ms:
                tracking.announced_ms = now_ms
                silent.append(voter)
        return silent

    def forget_observers_before(self, fetched_ms: int) -> None:
        self.observers = {n: t for n, t in self.observers.items() if t.last_fetch_ms >= fetched_ms}

    def follower(self, node: int) -> Tracking:
        """The tracking of ``node``; a node that is no voter becomes an observer."""
        if node in self.tracking:
            return self.tracking[node]
        return self.observers.setdefault(node, Tracking())

    def serve_snapshot(
        self, node: int, snapshot: SnapshotId, position: int, log: RaftLog, *, now_ms: int, max_bytes: int
    ) -> tuple[bytes, int]:
        """A chunk of ``snapshot`` from ``position`` for follower ``node``, and the snapshot's
        size (-1: the log no longer holds it); the follower counts as fetching it."""
        tracking = self.follower(node)
        tracking.last_fetch_ms = now_ms
        found = log.read_snapshot(snapshot, position, max_bytes)
        tracking.fetching_snapshot = snapshot if found is not None else None
        return found if found is not None else (b"", -1)

    def majority_end(self, own_end: int | None, quorum: int) -> int:
        """The largest offset ``quorum`` logs reach (``own_end``: the leader's, while a voter)."""
        ends = [t.end_offset for t in self.tracking.values()]
        if own_end is not None:
            ends.append(own_end)
        ends.sort(reverse=True)
        return ends[quorum - 1] if len(ends) >= quorum else 0

    def regroup(self, voters: frozenset[int], leader: int, now_ms: int) -> None:
        """The voters changed: sort the followers into voters and observers again."""
        followers = {**self.observers, **self.tracking}
        self.tracking = {
            node: followers.get(node) or Tracking(last_fetch_ms=now_ms) for node in voters if node != leader
        }
        self.observers = {node: t for node, t in followers.items() if node not in voters}

    @staticmethod
    def progress(followers: dict[int, Tracking]) -> dict[int, tuple[int, int]]:
        """Follower -> (log end, monotonic ms of its last fetch)."""
        return {node: (t.end_offset, t.last_fetch_ms) for node, t in followers.items()}

    def snapshots_in_transfer(self, now_ms: int, window_ms: int) -> set[SnapshotId]:
        """The snapshots followers fetched within ``window_ms``."""
        return {
            t.fetching_snapshot
            for t in [*self.tracking.values(), *self.observers.values()]
            if t.fetching_snapshot is not None and now_ms - t.last_fetch_ms < window_ms
        }


@dataclass
class CandidateState:
    """A pre-vote or an election under way: who granted it (the candidate itself first)."""

    votes: set[int]

    def won(self, voters: frozenset[int], quorum: int) -> bool:
        """Whether a majority of ``voters`` granted it."""
        return len(self.votes & voters) >= quorum


@dataclass
class SnapshotFetch:
    """A follower's transfer of the leader's snapshot: the bytes below ``position`` are stored."""

    snapshot: SnapshotId
    position: int = 0


@dataclass
class FollowerState:
    """A node's fetching from the leader. Kept across role changes (a fetch in flight stays in
    flight); a snapshot transfer ends with the epoch or leader it was with."""

    #: no new fetch before this (one is in flight)
    fetch_in_flight_until_ms: int = -1
    snapshot_fetch: SnapshotFetch | None = None

    def next_fetch(
        self, node_id: int, to: int, epoch: int, log: RaftLog, until_ms: int, *, from_leader: bool = True
    ) -> FetchRequest | FetchSnapshotRequest:
        """This node's next fetch from ``to``, in flight until ``until_ms``: the snapshot being
        transferred (from the leader), else the log from its end."""
        self.fetch_in_flight_until_ms = until_ms
        fetch = self.snapshot_fetch
        if fetch is not None and from_leader:
            return FetchSnapshotRequest(node_id, to, epoch, fetch.snapshot, fetch.position)
        return FetchRequest(node_id, to, epoch, log.end_offset, log.last_epoch)

    def take_snapshot_chunk(self, response: FetchSnapshotResponse, log: RaftLog) -> SnapshotId | None:
        """Store a chunk of the snapshot being fetched; the snapshot once it is whole (then the
        transfer is over). A chunk of another transfer, late or duplicated, is dropped; a leader
        that no longer holds the snapshot ends the transfer (the next fetch learns its newer one)."""
        fetch = self.snapshot_fetch
        if fetch is None or response.snapshot != fetch.snapshot or response.position != fetch.position:
            return None
        if response.size < 0 or (not response.data and fetch.position < response.size):
            self.snapshot_fetch = None
            return None
        log.write_snapshot_chunk(fetch.snapshot, fetch.position, response.data)
        fetch.position += len(response.data)
        if fetch.position < response.size:
            return None
        self.snapshot_fetch = None
        return fetch.snapshot
