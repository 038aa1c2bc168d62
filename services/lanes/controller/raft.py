"""The controllers' Raft core (KRaft's model, KIP-595), pure: messages and ticks in, messages,
log writes and durable state out. No clock reading, no I/O, no threads: the driver (a controller
process, or the simulation) feeds it.

Roles and rules, as in the Raft paper with KRaft's pull model:

- **Epochs** (Raft's terms) and the vote are durable state (``hard_state``); the driver persists
  them, and flushes the log, *before* sending any message the step produced (etcd's ``Ready``),
  so a vote or an acknowledged offset is never forgotten by a crash.
- **Pre-vote** (Raft thesis 9.6): a follower whose leader went silent for an election timeout
  first asks whether it could win (``pre_vote``), without changing any durable state; only with
  a majority of pre-votes does it start an election (epoch + 1, a vote for itself). A node that
  heard from a leader within its election timeout refuses pre-votes and votes (leader
  stickiness), so a partitioned node that comes back cannot depose a working leader.
- **Votes**: at most one per epoch (``voted_for``); only for a candidate whose log is at least
  as up to date ((last epoch, end offset) compared as a pair).
- **Leader**: on election it appends an entry of its own epoch (KRaft's leader-change record:
  entries of earlier epochs commit only under it, Raft's section 5.4.2) and announces itself
  (``BeginEpoch``). **Check-quorum**: a leader that has not been fetched from by a majority
  (itself included) within an election timeout resigns, so a leader cut off from the others
  stops acting as one.
- **Replication is pulled**: followers send ``FetchRequest`` (fetch offset = their log end, the
  epoch of their last entry); the leader answers entries from there, or the *diverging* (epoch,
  end offset) when the follower's log holds entries the leader's does not (the follower
  truncates and fetches again), with its high-water mark.
- **Snapshots** (KIP-630): the driver snapshots its committed state and may then drop the log
  below a snapshot (``start_offset``). A follower whose fetch falls below the leader's log start
  (or whose last epoch the leader's log no longer holds) is answered with the leader's latest
  snapshot id; it fetches that snapshot in chunks (``FetchSnapshotRequest``), installs it
  (its log then starts empty at the snapshot's end) and fetches entries from there. The driver
  loads an installed snapshot into its state machine (``take_installed_snapshot``) before it
  applies what ``committed()`` hands out next.
- **Commit**: the high-water mark is the largest offset a majority's logs reach, counted only
  once it covers an entry of the leader's own epoch; it never moves backwards. Followers take
  ``min(leader's mark, own log end)``. Entries below the mark are committed: ``committed()``
  hands them to the state machine once, in order.

Offsets: entry ``i`` of the log is at offset ``i``; ``end_offset`` is the next free offset;
entries below ``start_offset`` exist only in snapshots.
Epochs start at 1 (0: nothing yet). Not thread-safe: one owner (the driver's event loop).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Protocol

NO_LEADER = -1
#: a leader forgets an observer silent for this many election timeouts
OBSERVER_FORGOTTEN_TIMEOUTS = 10


@dataclass(frozen=True)
class Voter:
    """A member of the quorum: its node id and where its peers reach it (the driver's concern)."""

    node_id: int
    address: str = ""


@dataclass(frozen=True)
class Entry:
    """One log entry: the epoch of the leader that appended it, and the state machine's payload.

    ``ends_write``: the last entry of one ``propose`` (a decision written as one batch). A log
    that stores writes as units (the metadata log's batches) keeps the leader's boundaries on
    followers with it, so a truncation at a write boundary never takes more than asked.

    ``voters``: a configuration entry (KIP-853's VotersRecord, alone in its write, no payload):
    from this offset on, the quorum is these voters."""

    epoch: int
    data: bytes
    ends_write: bool = True
    voters: tuple[Voter, ...] | None = None


@dataclass(frozen=True)
class SnapshotId:
    """A snapshot of the committed state: every entry below ``end_offset``, the last of which is
    of ``epoch`` (KRaft's snapshot id)."""

    end_offset: int
    epoch: int


class RaftLog(Protocol):
    """The log the core replicates (the driver's; an in-memory one for tests and the simulation),
    with the snapshots that replace its prefix.

    Invariants: ``start_offset`` is 0 or the end of a snapshot the log holds, and no later than
    ``latest_snapshot``'s end; ``epoch_at(start_offset - 1)`` answers from that snapshot, and
    ``last_epoch`` of a log empty from its start is that epoch."""

    @property
    def start_offset(self) -> int: ...

    @property
    def end_offset(self) -> int: ...

    @property
    def last_epoch(self) -> int: ...

    def epoch_at(self, offset: int) -> int: ...

    def entries(self, start: int, max_count: int) -> list[Entry]: ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]: ...

    def append(self, entries: Sequence[Entry]) -> None: ...

    def truncate_to(self, offset: int) -> None: ...

    @property
    def latest_snapshot(self) -> SnapshotId | None: ...

    @property
    def snapshot_voters(self) -> tuple[Voter, ...] | None:
        """The voters as of the latest snapshot's end (None: it records none, the quorum is the
        one the nodes were started with)."""

    def read_snapshot(self, snapshot: SnapshotId, position: int, max_bytes: int) -> tuple[bytes, int] | None:
        """Up to ``max_bytes`` of the snapshot's bytes from ``position``, and its whole size;
        None when this log does not hold that snapshot (any more)."""

    def write_snapshot_chunk(self, snapshot: SnapshotId, position: int, data: bytes) -> None:
        """Store a chunk of a snapshot being received (position 0 starts it afresh)."""

    def install_snapshot(self, snapshot: SnapshotId) -> bool:
        """Make the snapshot received whole the latest one and empty the log to start at its end
        (durably, snapshot first); False when what was received is damaged (it is dropped)."""


class MemoryRaftLog:
    """A ``RaftLog`` in a list (tests, the simulation): ``items[i]`` is the entry at offset
    ``start_offset + i``; snapshots are kept as bytes the state machine wrote (``add_snapshot``)."""

    def __init__(self, entries: Sequence[Entry] = ()) -> None:
        self.items: list[Entry] = list(entries)
        self.start_offset = 0
        #: snapshot -> its bytes: a first line naming the voters ("voters:1@a,2@b" or "voters:-"),
        #: then the state machine's bytes
        self.snapshots: dict[SnapshotId, bytes] = {}
        self.receiving: tuple[SnapshotId, bytearray] | None = None

    def copy(self) -> MemoryRaftLog:
        """What a crash keeps (every write here is durable when it returns)."""
        kept = MemoryRaftLog(self.items)
        kept.start_offset, kept.snapshots = self.start_offset, dict(self.snapshots)
        return kept

    @property
    def end_offset(self) -> int:
        return self.start_offset + len(self.items)

    @property
    def last_epoch(self) -> int:
        if self.items:
            return self.items[-1].epoch
        return self.epoch_at(self.start_offset - 1) if self.start_offset else 0

    def epoch_at(self, offset: int) -> int:
        if offset < self.start_offset:
            return next(s.epoch for s in self.snapshots if s.end_offset == offset + 1)
        return self.items[offset - self.start_offset].epoch

    def entries(self, start: int, max_count: int) -> list[Entry]:
        first = max(start - self.start_offset, 0)
        return self.items[first : first + max_count]

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """The largest epoch at or below ``epoch`` this log holds and where it ends; (0, 0) if none."""
        for index in range(len(self.items) - 1, -1, -1):
            if self.items[index].epoch <= epoch:
                return self.items[index].epoch, self.start_offset + index + 1
        if self.start_offset and self.epoch_at(self.start_offset - 1) <= epoch:
            return self.epoch_at(self.start_offset - 1), self.start_offset
        return 0, 0

    def append(self, entries: Sequence[Entry]) -> None:
        self.items.extend(entries)

    def truncate_to(self, offset: int) -> None:
        assert offset >= self.start_offset, f"truncating to {offset}, below the log start {self.start_offset}"
        del self.items[offset - self.start_offset :]

    @property
    def latest_snapshot(self) -> SnapshotId | None:
        return max(self.snapshots, key=lambda s: s.end_offset, default=None)

    @property
    def snapshot_voters(self) -> tuple[Voter, ...] | None:
        latest = self.latest_snapshot
        return None if latest is None else _split_snapshot(self.snapshots[latest])[0]

    def snapshot_state(self, snapshot: SnapshotId) -> bytes:
        """The state machine's bytes of a held snapshot."""
        return _split_snapshot(self.snapshots[snapshot])[1]

    def add_snapshot(self, data: bytes, end_offset: int, voters: tuple[Voter, ...] | None = None) -> SnapshotId:
        """The state machine's snapshot of everything below ``end_offset`` (committed, held),
        with the voters as of that offset."""
        snapshot = SnapshotId(end_offset, self.epoch_at(end_offset - 1))
        named = "-" if voters is None else ",".join(f"{v.node_id}@{v.address}" for v in voters)
        self.snapshots[snapshot] = f"voters:{named}\n".encode() + data
        return snapshot

    def trim_to(self, snapshot: SnapshotId, keep: Collection[SnapshotId] = ()) -> None:
        """Drop the entries below ``snapshot`` and the snapshots older than it, except the
        snapshots in ``keep`` (being transferred) and the entries from the oldest of them on."""
        kept = [s for s in keep if s in self.snapshots]
        floor = min([snapshot, *kept], key=lambda s: s.end_offset)
        if floor.end_offset > self.start_offset:
            del self.items[: floor.end_offset - self.start_offset]
            self.start_offset = floor.end_offset
        self.snapshots = {s: d for s, d in self.snapshots.items() if s.end_offset >= snapshot.end_offset or s in kept}

    def read_snapshot(self, snapshot: SnapshotId, position: int, max_bytes: int) -> tuple[bytes, int] | None:
        data = self.snapshots.get(snapshot)
        return None if data is None else (data[position : position + max_bytes], len(data))

    def write_snapshot_chunk(self, snapshot: SnapshotId, position: int, data: bytes) -> None:
        if position == 0 or self.receiving is None or self.receiving[0] != snapshot:
            self.receiving = (snapshot, bytearray())
        self.receiving[1].extend(data)

    def install_snapshot(self, snapshot: SnapshotId) -> bool:
        if self.receiving is None or self.receiving[0] != snapshot:
            return False
        self.snapshots = {snapshot: bytes(self.receiving[1])}
        self.receiving = None
        self.items, self.start_offset = [], snapshot.end_offset
        return True


def _split_snapshot(data: bytes) -> tuple[tuple[Voter, ...] | None, bytes]:
    line, _, state = data.partition(b"\n")
    named = line.decode().removeprefix("voters:")
    if named == "-":
        return None, state
    voters = []
    for item in named.split(","):
        node, _, address = item.partition("@")
        voters.append(Voter(int(node), address))
    return tuple(voters), state


class DivergedHistoryError(Exception):
    """The leader's log differs from this node's below what this node holds as committed: this
    node's history is another quorum's (a controller that started a cluster of its own). Going on
    would mix the two; the driver stops the process."""


class Role(Enum):
    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre-candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"


@dataclass(frozen=True)
class VoteRequest:
    sender: int
    to: int
    epoch: int  # the epoch the candidate stands in (for a pre-vote: the one it would start)
    last_epoch: int
    end_offset: int
    pre_vote: bool


@dataclass(frozen=True)
class VoteResponse:
    sender: int
    to: int
    epoch: int  # the voter's epoch (a candidate behind it steps down)
    granted: bool
    pre_vote: bool
    #: the leader the voter follows and heard from recently (a refused candidate follows it)
    leader: int = NO_LEADER


@dataclass(frozen=True)
class BeginEpoch:
    sender: int
    to: int
    epoch: int


@dataclass(frozen=True)
class EndEpoch:
    """A leader resigns (it is stopping): followers elect at once instead of after an election
    timeout (KRaft's EndQuorumEpoch). Changes no durable state."""

    sender: int
    to: int
    epoch: int


@dataclass(frozen=True)
class FetchRequest:
    sender: int
    to: int
    epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True)
class FetchResponse:
    sender: int
    to: int
    epoch: int
    leader: int  # NO_LEADER: the sender does not lead this epoch
    fetch_offset: int  # the request's, so the follower can tell an answer about a log that moved
    entries: tuple[Entry, ...] = ()
    diverging: tuple[int, int] | None = None
    high_watermark: int = 0
    #: the follower's fetch is below what the leader's log holds: fetch this snapshot first
    snapshot: SnapshotId | None = None
    #: the request's, with ``fetch_offset``: a late answer about a log that was truncated and
    #: grew back to the same length is told apart by the epoch of its last entry
    last_fetched_epoch: int = -1


@dataclass(frozen=True)
class FetchSnapshotRequest:
    """A follower asks for the snapshot's bytes from ``position`` (KIP-630's FetchSnapshot)."""

    sender: int
    to: int
    epoch: int
    snapshot: SnapshotId
    position: int


@dataclass(frozen=True)
class FetchSnapshotResponse:
    sender: int
    to: int
    epoch: int
    leader: int  # NO_LEADER: the sender does not lead this epoch
    snapshot: SnapshotId
    position: int
    data: bytes = b""
    #: the snapshot's whole size; -1: the leader does not hold it (any more): fetch again
    size: int = -1
    high_watermark: int = 0


Message = (
    VoteRequest
    | VoteResponse
    | BeginEpoch
    | EndEpoch
    | FetchRequest
    | FetchResponse
    | FetchSnapshotRequest
    | FetchSnapshotResponse
)


@dataclass(frozen=True)
class RaftConfig:
    election_timeout_ms: int = 1_000
    #: how long a follower waits between fetches when nothing came back (a lost answer)
    fetch_timeout_ms: int = 250
    max_fetch_entries: int = 64
    #: the most snapshot bytes one FetchSnapshot answer carries
    max_snapshot_chunk_bytes: int = 1024 * 1024
    #: an election skips up to this many epochs at random (Raft allows any increase): a
    #: directory restored from an old copy then does not hand out the epochs of the history it
    #: lost again, so nodes that applied that history can tell (0: epochs go up by one)
    max_epoch_skip: int = 0


@dataclass
class _Tracking:
    """The leader's view of one voter."""

    end_offset: int = 0
    last_fetch_ms: int = -1
    #: when BeginEpoch was last sent to it (again while it does not fetch: it may have missed it)
    announced_ms: int = -1
    #: the snapshot it is fetching (until it fetches entries again)
    fetching_snapshot: SnapshotId | None = None


@dataclass
class _SnapshotFetch:
    """A follower's transfer of the leader's snapshot: the bytes below ``position`` are stored."""

    snapshot: SnapshotId
    position: int = 0


@dataclass
class RaftCore:
    """One voter's Raft state machine (see the module docstring)."""

    node_id: int
    voters: frozenset[int]
    log: RaftLog
    rng: random.Random
    config: RaftConfig = field(default_factory=RaftConfig)
    #: durable: the current epoch and the vote given in it
    epoch: int = 0
    voted_for: int | None = None
    role: Role = Role.FOLLOWER
    leader: int = NO_LEADER
    high_watermark: int = 0
    #: on a follower, the leader's mark as last heard (its own is capped at its log end)
    leader_high_watermark: int = 0
    applied: int = 0
    outbox: list[Message] = field(default_factory=list)
    #: False for a voter that lost its durable state (an emptied data directory): it neither
    #: campaigns nor votes (it may have voted in this epoch before) until the driver has seen it
    #: follow a leader again; it still fetches, and its fetches count for commits.
    can_vote: bool = True
    _now_ms: int = 0
    _election_deadline_ms: int = 0
    _last_leader_contact_ms: int = -(10**12)
    _votes: set[int] = field(default_factory=set)
    _tracking: dict[int, _Tracking] = field(default_factory=dict)
    _epoch_start_offset: int = 0
    _fetch_in_flight_until_ms: int = -1
    _snapshot_fetch: _SnapshotFetch | None = None
    _installed: SnapshotId | None = None
    #: the voters as the newest configuration entry of the log says (or, without one, as of the
    #: log start: the snapshot's, or the ones the node was started with); ``voters`` their ids
    voter_set: tuple[Voter, ...] = ()
    _base_voters: tuple[Voter, ...] = ()
    #: the base voters come from the node's start-up configuration, not from the log or a snapshot
    _base_is_bootstrap: bool = True
    #: (offset, voters) of every configuration entry in the log, oldest first
    _configs: list[tuple[int, tuple[Voter, ...]]] = field(default_factory=list)
    #: on the leader: non-voters that fetch (observers: a controller about to be added)
    _observers: dict[int, _Tracking] = field(default_factory=dict)

    @classmethod
    def restart(
        cls,
        node_id: int,
        voters: frozenset[int] | tuple[Voter, ...],
        log: RaftLog,
        rng: random.Random,
        *,
        hard_state: tuple[int, int | None] = (0, None),
        config: RaftConfig | None = None,
        now_ms: int = 0,
        applied: int = 0,
    ) -> RaftCore:
        """A node from its durable state (the epoch and vote persisted, the log flushed), as a
        follower that knows no leader yet. ``voters``: the quorum it was started with, in force
        until the log or a snapshot says otherwise (KIP-853's bootstrap voters); a node that is
        not among the voters is an observer: it fetches, never votes. ``applied``: where the
        state machine's own state ends (the end of the snapshot it loaded; committed, so the
        high-water mark starts there)."""
        bootstrap = (
            tuple(sorted(voters, key=lambda v: v.node_id))
            if isinstance(voters, tuple)
            else tuple(Voter(node) for node in sorted(voters))
        )
        core = cls(node_id, frozenset(), log, rng, config or RaftConfig(), epoch=hard_state[0], voted_for=hard_state[1])
        core._base_voters = log.snapshot_voters or bootstrap
        core._base_is_bootstrap = log.snapshot_voters is None
        core._scan_configs(log.start_offset)
        core._refresh_voters()
        core.applied = core.high_watermark = applied
        core._now_ms = now_ms
        core._reset_election_timer()
        return core

    # -----------------------------------------------------------------------------------------
    # outputs

    @property
    def hard_state(self) -> tuple[int, int | None]:
        """What must be durable before this step's messages go out."""
        return self.epoch, self.voted_for

    def take_messages(self) -> list[Message]:
        messages, self.outbox = self.outbox, []
        return messages

    def take_installed_snapshot(self) -> SnapshotId | None:
        """The leader's snapshot this follower installed since the last call: the driver loads it
        into the state machine (which then holds everything below its end) before it applies
        what ``committed()`` hands out next."""
        installed, self._installed = self._installed, None
        return installed

    def committed(self) -> list[tuple[int, Entry]]:
        """Entries newly committed, in order, each once (offset, entry). May return only a
        first part (a log hands out whole batches): call again until it returns nothing."""
        wanted = self.high_watermark - self.applied
        if wanted <= 0:
            return []
        found = self.log.entries(self.applied, wanted)[:wanted]
        start, self.applied = self.applied, self.applied + len(found)
        return list(enumerate(found, start))

    @property
    def quorum(self) -> int:
        return len(self.voters) // 2 + 1

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.voters

    def voters_at(self, offset: int) -> tuple[Voter, ...] | None:
        """The voters the log records as in force at ``offset`` (for a snapshot ending there);
        None when it records none yet (the nodes' start-up configuration decides)."""
        found = None if self._base_is_bootstrap else self._base_voters
        for config_offset, voters in self._configs:
            if config_offset < offset:
                found = voters
        return found

    def snapshots_in_transfer(self) -> set[SnapshotId]:
        """On the leader: the snapshots followers are fetching (asked within an election
        timeout). The driver keeps them, and the log from the oldest of them on, when it trims:
        a transfer slower than the snapshot interval would otherwise restart for ever."""
        followers = [*self._tracking.values(), *self._observers.values()]
        return {
            t.fetching_snapshot
            for t in followers
            if t.fetching_snapshot is not None and self._now_ms - t.last_fetch_ms < self.config.election_timeout_ms
        }

    def observer_progress(self) -> dict[int, tuple[int, int]]:
        """As the leader sees them: observer -> (log end, monotonic ms of its last fetch)."""
        return {node: (t.end_offset, t.last_fetch_ms) for node, t in self._observers.items()}

    @property
    def leader_ready(self) -> bool:
        """Whether this node leads and everything before its epoch is committed and handed out
        by ``committed()`` (its leader-change entry committed): its state is then the newest."""
        return self.role is Role.LEADER and self.applied > self._epoch_start_offset

    def voter_progress(self) -> dict[int, tuple[int, int]]:
        """As the leader sees them: voter -> (log end, monotonic ms of its last fetch); empty
        on a node that does not lead."""
        return {voter: (t.end_offset, t.last_fetch_ms) for voter, t in self._tracking.items()}

    # -----------------------------------------------------------------------------------------
    # inputs

    def propose(self, *data: bytes) -> int | None:
        """Append ``data`` as the leader, as one write (a crash keeps all of it or none): the
        offset of the first, or None when this node does not lead."""
        if self.role is not Role.LEADER or not data:
            return None
        offset = self.log.end_offset
        last = len(data) - 1
        self.log.append([Entry(self.epoch, item, index == last) for index, item in enumerate(data)])
        self._leader_progress()
        return offset

    def voters_change_refusal(self, voters: tuple[Voter, ...]) -> str | None:
        """Why the leader cannot make ``voters`` the quorum now (None: it can). Raft's
        single-server changes (the thesis, section 4.1): one voter added or removed at a time,
        never while an earlier change is uncommitted, and only once the leader committed an
        entry of its own epoch (so no change of an earlier leader is still pending)."""
        if not self.leader_ready:
            return "this controller is not the active one (or not yet ready)"
        if self._configs and self._configs[-1][0] >= self.high_watermark:
            return "an earlier change of the quorum is not committed yet"
        wanted = {v.node_id for v in voters}
        if len(wanted) != len(voters) or not wanted:
            return "the voters must be distinct, and at least one"
        if len(wanted ^ self.voters) != 1:
            return "a change adds or removes exactly one voter"
        return None

    def record_voters(self) -> int | None:
        """As the ready leader of a quorum whose log and snapshot record no voters yet (they come
        from the nodes' start-up configuration), append the voters as a configuration entry (as
        KRaft's bootstrap writes its VotersRecord): from then on a node started with another
        ``--voters`` list learns the real quorum from the log. Its offset, or None."""
        if not self.leader_ready or self._configs or not self._base_is_bootstrap:
            return None
        return self._append_configuration(self.voter_set)

    def propose_voters(self, voters: tuple[Voter, ...]) -> int | None:
        """Append a configuration entry as the leader (see ``voters_change_refusal``): its
        offset, or None when refused. The new voters count from this entry on (also before it
        commits); a leader that removed itself resigns once the entry is committed."""
        if self.voters_change_refusal(voters) is not None:
            return None
        return self._append_configuration(tuple(sorted(voters, key=lambda v: v.node_id)))

    def _append_configuration(self, voters: tuple[Voter, ...]) -> int:
        """Append a configuration entry as the leader (in force at once); its offset."""
        offset = self.log.end_offset
        entry = Entry(self.epoch, b"", True, voters)
        self.log.append([entry])
        self._note_configs(offset, [entry])
        self._leader_progress()
        return offset

    def resign(self) -> None:
        """Stop leading (the process is stopping): tell the voters, so they elect at once."""
        if self.role is not Role.LEADER:
            return
        for voter in sorted(self.voters - {self.node_id}):
            self.outbox.append(EndEpoch(self.node_id, voter, self.epoch))
        self._become_follower(self.epoch, NO_LEADER)

    def tick(self, now_ms: int) -> None:
        """Time passed: elections, check-quorum, fetches."""
        self._now_ms = now_ms
        if self.role is Role.LEADER:
            alive = sum(
                1
                for voter in self.voters
                if voter == self.node_id
                or now_ms - self._tracking[voter].last_fetch_ms < self.config.election_timeout_ms
            )
            if alive < self.quorum and now_ms >= self._election_deadline_ms:
                self._become_follower(self.epoch, NO_LEADER)  # check-quorum: cut off, resign
            elif alive >= self.quorum:
                self._election_deadline_ms = now_ms + self.config.election_timeout_ms
            self._announce_to_silent_voters()
            forgotten = now_ms - OBSERVER_FORGOTTEN_TIMEOUTS * self.config.election_timeout_ms
            self._observers = {n: t for n, t in self._observers.items() if t.last_fetch_ms >= forgotten}
            return
        if not self.is_voter or not self.can_vote:
            self._observe()  # fetch without campaigning; find the leader by asking the voters
            return
        if now_ms >= self._election_deadline_ms:
            self._start_pre_vote()
        elif self.role is Role.FOLLOWER and self.leader != NO_LEADER and now_ms >= self._fetch_in_flight_until_ms:
            self._fetch()

    def step(self, message: Message, now_ms: int) -> None:
        """A message arrived."""
        self._now_ms = now_ms
        if isinstance(message, VoteRequest):
            self._on_vote_request(message)
        elif isinstance(message, VoteResponse):
            self._on_vote_response(message)
        elif isinstance(message, BeginEpoch):
            if message.epoch >= self.epoch and message.sender != self.node_id:
                self._become_follower(message.epoch, message.sender)
                self._fetch()
            elif message.epoch < self.epoch:
                # This node's epoch ran ahead (an election it could not win) and its pre-votes
                # are refused while the leader works: tell the leader the newer epoch, so it
                # steps down and an election at that epoch lets this node rejoin (etcd does the
                # same for a lower-term append).
                self.outbox.append(FetchResponse(self.node_id, message.sender, self.epoch, NO_LEADER, -1))
        elif isinstance(message, EndEpoch):
            if message.epoch == self.epoch and message.sender == self.leader and self.role is Role.FOLLOWER:
                self.leader = NO_LEADER
                self._last_leader_contact_ms = -(10**12)  # nobody leads: grant pre-votes at once
                # start soon, at a random moment so the voters do not all stand at once
                self._election_deadline_ms = self._now_ms + self.rng.randrange(self.config.fetch_timeout_ms + 1)
        elif isinstance(message, FetchRequest):
            self._on_fetch_request(message)
        elif isinstance(message, FetchResponse):
            self._on_fetch_response(message)
        elif isinstance(message, FetchSnapshotRequest):
            self._on_fetch_snapshot_request(message)
        else:
            self._on_fetch_snapshot_response(message)

    # -----------------------------------------------------------------------------------------
    # elections

    def _reset_election_timer(self) -> None:
        if self.voters == {self.node_id}:  # a quorum of one has nobody to wait for
            self._election_deadline_ms = self._now_ms
            return
        timeout = self.config.election_timeout_ms
        self._election_deadline_ms = self._now_ms + timeout + self.rng.randrange(timeout)

    def _leader_heard_recently(self) -> bool:
        return self.role is Role.LEADER or (
            self.leader != NO_LEADER and self._now_ms - self._last_leader_contact_ms < self.config.election_timeout_ms
        )

    def _log_at_least(self, last_epoch: int, end_offset: int) -> bool:
        return (last_epoch, end_offset) >= (self.log.last_epoch, self.log.end_offset)

    def _start_pre_vote(self) -> None:
        self.role = Role.PRE_CANDIDATE
        self.leader = NO_LEADER
        self._votes = {self.node_id}
        self._reset_election_timer()
        self._ask_votes(pre_vote=True)
        self._maybe_win()

    def _start_election(self) -> None:
        self.role = Role.CANDIDATE
        self.epoch += 1 + (self.rng.randrange(self.config.max_epoch_skip + 1) if self.config.max_epoch_skip else 0)
        self.voted_for = self.node_id
        self.leader = NO_LEADER
        self._votes = {self.node_id}
        self._reset_election_timer()
        self._ask_votes(pre_vote=False)
        self._maybe_win()

    def _ask_votes(self, *, pre_vote: bool) -> None:
        epoch = self.epoch + 1 if pre_vote else self.epoch
        for voter in sorted(self.voters - {self.node_id}):
            self.outbox.append(
                VoteRequest(self.node_id, voter, epoch, self.log.last_epoch, self.log.end_offset, pre_vote)
            )

    def _on_vote_request(self, request: VoteRequest) -> None:
        if request.pre_vote:
            granted = (
                self.can_vote
                and request.epoch > self.epoch
                and not self._leader_heard_recently()
                and self._log_at_least(request.last_epoch, request.end_offset)
            )
            self.outbox.append(
                VoteResponse(self.node_id, request.sender, self.epoch, granted, True, self._known_leader())
            )
            return
        if request.epoch > self.epoch and self._leader_heard_recently():
            return  # leader stickiness: a working leader is not deposed by a node that lost touch
        if request.epoch > self.epoch:
            self._become_follower(request.epoch, NO_LEADER)
        granted = (
            self.can_vote
            and request.epoch == self.epoch
            and self.voted_for in (None, request.sender)
            and self._log_at_least(request.last_epoch, request.end_offset)
        )
        if granted:
            self.voted_for = request.sender  # durable before the answer leaves (hard_state)
            self._reset_election_timer()
        self.outbox.append(VoteResponse(self.node_id, request.sender, self.epoch, granted, False, self._known_leader()))

    def _known_leader(self) -> int:
        return self.leader if self._leader_heard_recently() else NO_LEADER

    def _on_vote_response(self, response: VoteResponse) -> None:
        if not response.granted and response.leader != NO_LEADER and response.epoch >= self.epoch:
            if self.role is not Role.LEADER:
                # A working leader exists, by hearsay: follow it (fetching tells), but this is no
                # contact with it: were it dead, counting it so would make this node refuse the
                # next candidate in turn, and the two would keep each other from electing anyone.
                self._become_follower(response.epoch, response.leader, heard_directly=False)
            return
        if response.epoch > self.epoch and not response.granted:
            self._become_follower(response.epoch, NO_LEADER)
            return
        wanted = Role.PRE_CANDIDATE if response.pre_vote else Role.CANDIDATE
        if self.role is not wanted or (not response.pre_vote and response.epoch != self.epoch):
            return  # an answer to an earlier round
        if response.granted:
            self._votes.add(response.sender)
            self._maybe_win()

    def _maybe_win(self) -> None:
        if len(self._votes & self.voters) < self.quorum or not self.is_voter:
            return
        if self.role is Role.PRE_CANDIDATE:
            self._start_election()
        elif self.role is Role.CANDIDATE:
            self._become_leader()

    def _become_leader(self) -> None:
        self.role = Role.LEADER
        self.leader = self.node_id
        # every voter gets a fresh election timeout to fetch before check-quorum counts it out
        self._tracking = {
            voter: _Tracking(last_fetch_ms=self._now_ms) for voter in self.voters if voter != self.node_id
        }
        self._observers = {}
        self._epoch_start_offset = self.log.end_offset
        self.log.append([Entry(self.epoch, b"")])  # the leader-change entry: commits earlier epochs
        self._election_deadline_ms = self._now_ms + self.config.election_timeout_ms
        for voter in sorted(self.voters - {self.node_id}):
            self.outbox.append(BeginEpoch(self.node_id, voter, self.epoch))
        self._leader_progress()

    def _announce_to_silent_voters(self) -> None:
        """BeginEpoch again to voters that have not fetched lately (KRaft resends it until they
        do): a voter that missed the announcement, or came back, learns the leader."""
        for voter, tracking in sorted(self._tracking.items()):
            quiet = self._now_ms - max(tracking.last_fetch_ms, tracking.announced_ms)
            if quiet >= self.config.fetch_timeout_ms:
                tracking.announced_ms = self._now_ms
                self.outbox.append(BeginEpoch(self.node_id, voter, self.epoch))

    def _become_follower(self, epoch: int, leader: int, *, heard_directly: bool = True) -> None:
        """Follow ``leader`` (NO_LEADER: none known) in ``epoch``; ``heard_directly``: the leader
        itself said so (its contact and a fresh election timeout count), not a voter."""
        if leader == self.node_id:  # others still name this node, which lost its leadership (restart)
            leader = NO_LEADER
        if epoch != self.epoch or leader != self.leader:
            self._snapshot_fetch = None  # a snapshot transfer is with one leader in one epoch
        if epoch > self.epoch:
            self.epoch = epoch
            self.voted_for = None
        self.role = Role.FOLLOWER
        self.leader = leader
        self._tracking = {}
        self._observers = {}
        if not heard_directly:
            return
        if leader != NO_LEADER:
            self._last_leader_contact_ms = self._now_ms
        self._reset_election_timer()

    # -----------------------------------------------------------------------------------------
    # replication

    def _fetch(self) -> None:
        self._fetch_in_flight_until_ms = self._now_ms + self.config.fetch_timeout_ms
        if self._snapshot_fetch is not None:
            fetch = self._snapshot_fetch
            self.outbox.append(
                FetchSnapshotRequest(self.node_id, self.leader, self.epoch, fetch.snapshot, fetch.position)
            )
            return
        self.outbox.append(
            FetchRequest(self.node_id, self.leader, self.epoch, self.log.end_offset, self.log.last_epoch)
        )

    def _leads_for(self, sender: int, epoch: int) -> bool:
        """Whether this node leads ``epoch`` and ``sender`` follows it (a fetch to answer)."""
        if epoch > self.epoch:
            self._become_follower(epoch, NO_LEADER)  # a newer epoch exists: this node is stale
        if self.role is not Role.LEADER or epoch != self.epoch or sender == self.node_id:
            return False
        if sender not in self._tracking and sender not in self._observers:
            self._observers[sender] = _Tracking()  # a non-voter fetching: an observer
        return True

    def _follower_tracking(self, node: int) -> _Tracking:
        return self._tracking[node] if node in self._tracking else self._observers[node]

    def _needs_snapshot(self, fetch_offset: int, last_fetched_epoch: int) -> bool:
        """Whether a follower at (``fetch_offset``, ``last_fetched_epoch``) must load a snapshot:
        its log ends below this log's start, or where this log holds only a snapshot (KRaft's
        ``validateOffsetAndEpoch``)."""
        start = self.log.start_offset
        if start == 0:
            return False
        start_epoch = self.log.epoch_at(start - 1)
        return (
            fetch_offset < start
            or (fetch_offset == start and last_fetched_epoch != start_epoch)
            or last_fetched_epoch < start_epoch
        )

    def _on_fetch_request(self, request: FetchRequest) -> None:
        if not self._leads_for(request.sender, request.epoch):
            leader = self.leader if self.role is not Role.CANDIDATE else NO_LEADER
            self.outbox.append(
                FetchResponse(
                    self.node_id, request.sender, self.epoch, leader, request.fetch_offset,
                    last_fetched_epoch=request.last_fetched_epoch,
                )
            )  # fmt: skip
            return
        tracking = self._follower_tracking(request.sender)
        tracking.last_fetch_ms = self._now_ms  # it follows this leader (check-quorum counts it)
        answer = FetchResponse(
            self.node_id, request.sender, self.epoch, self.node_id, request.fetch_offset,
            high_watermark=self.high_watermark, last_fetched_epoch=request.last_fetched_epoch,
        )  # fmt: skip
        if self._needs_snapshot(request.fetch_offset, request.last_fetched_epoch):
            self.outbox.append(replace(answer, snapshot=self.log.latest_snapshot))
            return
        epoch, end = self.log.end_offset_for_epoch(request.last_fetched_epoch)
        if request.last_fetched_epoch > 0 and (end < request.fetch_offset or epoch < request.last_fetched_epoch):
            self.outbox.append(replace(answer, diverging=(epoch, end)))
            return
        tracking.end_offset = min(request.fetch_offset, self.log.end_offset)
        tracking.fetching_snapshot = None
        self._leader_progress()
        if self.role is not Role.LEADER:  # that fetch committed its own removal: it resigned
            self.outbox.append(replace(answer, leader=NO_LEADER))
            return
        entries = tuple(self.log.entries(request.fetch_offset, self.config.max_fetch_entries))
        self.outbox.append(replace(answer, entries=entries, high_watermark=self.high_watermark))

    def _on_fetch_snapshot_request(self, request: FetchSnapshotRequest) -> None:
        answer = FetchSnapshotResponse(
            self.node_id, request.sender, self.epoch, NO_LEADER, request.snapshot, request.position
        )
        if not self._leads_for(request.sender, request.epoch):
            leader = self.leader if self.role is not Role.CANDIDATE else NO_LEADER
            self.outbox.append(replace(answer, leader=leader))
            return
        tracking = self._follower_tracking(request.sender)
        tracking.last_fetch_ms = self._now_ms
        found = self.log.read_snapshot(request.snapshot, request.position, self.config.max_snapshot_chunk_bytes)
        tracking.fetching_snapshot = request.snapshot if found is not None else None
        data, size = found if found is not None else (b"", -1)
        self.outbox.append(
            replace(answer, leader=self.node_id, data=data, size=size, high_watermark=self.high_watermark)
        )

    def _leader_progress(self) -> None:
        """Advance the high-water mark to what a majority of the voters holds (never backwards,
        and only once it covers an entry of this epoch); the leader counts itself only while it
        is a voter. A leader that removed itself resigns once that change is committed."""
        ends = [t.end_offset for t in self._tracking.values()]
        if self.is_voter:
            ends.append(self.log.end_offset)
        ends.sort(reverse=True)
        candidate = ends[self.quorum - 1] if len(ends) >= self.quorum else 0
        if candidate > self._epoch_start_offset:
            self.high_watermark = max(self.high_watermark, candidate)
        if not self.is_voter and self._configs and self._configs[-1][0] < self.high_watermark:
            self.resign()

    def _heard_from_leader(self, response: FetchResponse | FetchSnapshotResponse) -> bool:
        """Take what an answer to a fetch says about epochs and leaders; whether it comes from
        the leader this follower fetches from (then its content is for this node to use)."""
        if response.epoch < self.epoch:
            return False  # from an older epoch
        if response.epoch > self.epoch or (
            response.leader != NO_LEADER
            and self.role is not Role.LEADER
            and (self.role is not Role.FOLLOWER or self.leader != response.leader)
        ):
            self._become_follower(response.epoch, response.leader)  # told of a newer epoch or its leader
        if self.role is not Role.FOLLOWER or response.sender != self.leader:
            return False
        if response.leader == NO_LEADER:  # the leader resigned (check-quorum): wait for the next one
            self.leader = NO_LEADER
            return False
        self._last_leader_contact_ms = self._now_ms
        self._reset_election_timer()
        self._fetch_in_flight_until_ms = -1  # the next tick fetches again
        self.leader_high_watermark = max(self.leader_high_watermark, response.high_watermark)
        return True

    def _on_fetch_response(self, response: FetchResponse) -> None:
        if not self._heard_from_leader(response) or self._snapshot_fetch is not None:
            return
        if (response.fetch_offset, response.last_fetched_epoch) != (self.log.end_offset, self.log.last_epoch):
            return  # an answer about a log that has moved since (late, duplicated)
        if response.snapshot is not None:
            if response.snapshot.end_offset > self.applied:
                self._snapshot_fetch = _SnapshotFetch(response.snapshot)
            return
        if response.diverging is not None:
            offset = self._truncation_offset(*response.diverging)
            if offset < self.high_watermark:
                raise DivergedHistoryError(
                    f"node {self.node_id}: leader {response.sender} of epoch {response.epoch} diverges from this "
                    f"log at offset {offset}, below its committed offset {self.high_watermark}"
                )
            self.log.truncate_to(offset)
            self._configs = [c for c in self._configs if c[0] < self.log.end_offset]
            self._refresh_voters()
            return
        if response.entries:
            first = self.log.end_offset
            self.log.append(response.entries)
            self._note_configs(first, response.entries)
        self.high_watermark = max(self.high_watermark, min(response.high_watermark, self.log.end_offset))

    def _on_fetch_snapshot_response(self, response: FetchSnapshotResponse) -> None:
        if not self._heard_from_leader(response):
            return
        fetch = self._snapshot_fetch
        if fetch is None or response.snapshot != fetch.snapshot or response.position != fetch.position:
            return  # late, duplicated, or about another transfer
        if response.size < 0 or (not response.data and fetch.position < response.size):
            self._snapshot_fetch = None  # the leader has a newer one by now: fetch again to learn it
            return
        self.log.write_snapshot_chunk(fetch.snapshot, fetch.position, response.data)
        fetch.position += len(response.data)
        if fetch.position < response.size:
            return
        self._snapshot_fetch = None
        if fetch.snapshot.end_offset <= self.applied or not self.log.install_snapshot(fetch.snapshot):
            return  # nothing new after all, or received damaged: fetching again says what to do
        if self.log.snapshot_voters is not None:
            self._base_voters, self._base_is_bootstrap = self.log.snapshot_voters, False
        self._configs = []
        self._refresh_voters()
        self.applied = fetch.snapshot.end_offset
        self.high_watermark = max(self.high_watermark, self.applied)
        self._installed = fetch.snapshot

    # -----------------------------------------------------------------------------------------
    # membership (KIP-853)

    def _observe(self) -> None:
        """The tick of a non-voter (or of a voter that may not vote yet): fetch from the leader,
        or ask a voter who leads (a voter's answer to a fetch names its leader); forget a leader
        silent for an election timeout."""
        if self._now_ms >= self._election_deadline_ms:
            self.leader = NO_LEADER
            self._reset_election_timer()
        if self._now_ms < self._fetch_in_flight_until_ms:
            return
        if self.leader != NO_LEADER:
            self._fetch()
            return
        voters = sorted(self.voters - {self.node_id})
        if voters:
            self._fetch_in_flight_until_ms = self._now_ms + self.config.fetch_timeout_ms
            self.outbox.append(
                FetchRequest(
                    self.node_id, self.rng.choice(voters), self.epoch, self.log.end_offset, self.log.last_epoch
                )
            )

    def _scan_configs(self, start: int) -> None:
        """Find the configuration entries of the log from ``start`` (at a restart)."""
        offset = start
        while offset < self.log.end_offset:
            entries = self.log.entries(offset, 10_000)
            if not entries:
                break
            self._note_configs(offset, entries, refresh=False)
            offset += len(entries)

    def _note_configs(self, first_offset: int, entries: Sequence[Entry], *, refresh: bool = True) -> None:
        for index, entry in enumerate(entries):
            if entry.voters is not None:
                self._configs.append((first_offset + index, entry.voters))
        if refresh:
            self._refresh_voters()

    def _refresh_voters(self) -> None:
        """The newest configuration in the log is the quorum (Raft uses a configuration as soon
        as it is in the log, committed or not). A leader re-sorts its followers into voters and
        observers; a candidate that is no longer a voter stops campaigning."""
        self.voter_set = self._configs[-1][1] if self._configs else self._base_voters
        voters = frozenset(v.node_id for v in self.voter_set)
        if voters == self.voters:
            return
        self.voters = voters
        if self.role is Role.LEADER:
            followers = {**self._observers, **self._tracking}
            self._tracking = {
                node: followers.get(node) or _Tracking(last_fetch_ms=self._now_ms)
                for node in voters
                if node != self.node_id
            }
            self._observers = {node: t for node, t in followers.items() if node not in voters}
            self._leader_progress()
        elif self.role is not Role.FOLLOWER and not self.is_voter:
            self._become_follower(self.epoch, NO_LEADER)

    def _truncation_offset(self, leader_epoch: int, leader_end: int) -> int:
        """Where this log stops agreeing with the leader's: the end of ``leader_epoch`` there, or
        the start of this log's first later epoch, whichever is lower."""
        _, local_end = self.log.end_offset_for_epoch(leader_epoch)
        return min(leader_end, local_end)
