"""The controllers' Raft core (KRaft's model, KIP-595), pure: messages and ticks in, messages,
log writes and durable state out. No clock reading, no I/O, no threads: the driver (a controller
process, or the simulation) feeds it. The state of one role lives in that role's object
(``lanes.controller.raft_roles``), the voters in ``VoterConfigs``; the values and messages are in
``lanes.controller.raft_messages``, the log interface in ``lanes.controller.raft_log``.

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
from dataclasses import dataclass, field, replace

from lanes.controller.raft_log import MemoryRaftLog, RaftLog, divergence
from lanes.controller.raft_messages import (
    NO_LEADER,
    BeginEpoch,
    DivergedHistoryError,
    EndEpoch,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    RaftConfig,
    Role,
    SnapshotId,
    Voter,
    VoteRequest,
    VoteResponse,
)
from lanes.controller.raft_roles import CandidateState, FollowerState, LeaderState, SnapshotFetch
from lanes.controller.raft_voters import VoterConfigs
from lanes.invariants import InvariantError, invariant

__all__ = [
    "NO_LEADER",
    "BeginEpoch",
    "DivergedHistoryError",
    "EndEpoch",
    "Entry",
    "FetchRequest",
    "FetchResponse",
    "FetchSnapshotRequest",
    "FetchSnapshotResponse",
    "MemoryRaftLog",
    "Message",
    "RaftConfig",
    "RaftCore",
    "RaftLog",
    "Role",
    "SnapshotId",
    "VoteRequest",
    "VoteResponse",
    "Voter",
]


@dataclass
class RaftCore:
    """One voter's Raft state machine (see the module docstring)."""

    node_id: int
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
    #: the voters in force and the log's configuration entries
    members: VoterConfigs = field(default_factory=VoterConfigs)
    _now_ms: int = 0
    _election_deadline_ms: int = 0
    _last_leader_contact_ms: int = -(10**12)
    #: the role's own state: a leadership's while leading, a candidacy's while standing
    _leading: LeaderState | None = None
    _candidacy: CandidateState | None = None
    _following: FollowerState = field(default_factory=FollowerState)
    _installed: SnapshotId | None = None

    @classmethod
    def restart(
        cls,
        node_id: int,
        voters: frozenset[int] | tuple[Voter, ...],
        log: RaftLog,
        rng: random.Random,
        *,
        hard_state: tuple[int, int | None] = (0, None),
        can_vote: bool = True,
        config: RaftConfig | None = None,
        now_ms: int = 0,
        applied: int = 0,
    ) -> RaftCore:
        """A node from its durable state (the epoch and vote persisted, the log flushed), as a
        follower that knows no leader yet. ``voters``: the quorum it was started with, in force
        until the log or a snapshot says otherwise (KIP-853's bootstrap voters); a node that is
        not among the voters is an observer: it fetches, never votes. ``applied``: where the
        state machine's own state ends (the end of the snapshot it loaded; committed, so the
        high-water mark starts there). ``can_vote``: False for a node that lost its durable state
        (see ``can_vote``)."""
        core = cls(
            node_id, log, rng, config or RaftConfig(), epoch=hard_state[0], voted_for=hard_state[1], can_vote=can_vote
        )
        core.members = VoterConfigs.of_log(log, voters)
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
    def voters(self) -> frozenset[int]:
        """The ids of the voters in force."""
        return self.members.voters

    @property
    def voter_set(self) -> tuple[Voter, ...]:
        """The voters in force, as the newest configuration entry of the log says (or, without
        one, as of the log start: the snapshot's, or the ones the node was started with)."""
        return self.members.voter_set

    @property
    def quorum(self) -> int:
        return self.members.quorum

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.voters

    def voters_at(self, offset: int) -> tuple[Voter, ...] | None:
        """The voters the log records as in force at ``offset`` (for a snapshot ending there);
        None when it records none yet (the nodes' start-up configuration decides)."""
        return self.members.voters_at(offset)

    def snapshots_in_transfer(self) -> set[SnapshotId]:
        """On the leader: the snapshots followers are fetching (asked within an election
        timeout). The driver keeps them, and the log from the oldest of them on, when it trims:
        a transfer slower than the snapshot interval would otherwise restart for ever."""
        leading, window_ms = self._leading, self.config.election_timeout_ms
        return leading.snapshots_in_transfer(self._now_ms, window_ms) if leading is not None else set()

    def observer_progress(self) -> dict[int, tuple[int, int]]:
        """As the leader sees them: observer -> (log end, monotonic ms of its last fetch)."""
        return self._leading.progress(self._leading.observers) if self._leading is not None else {}

    @property
    def leader_ready(self) -> bool:
        """Whether this node leads and everything before its epoch is committed and handed out
        by ``committed()`` (its leader-change entry committed): its state is then the newest."""
        return self._leading is not None and self.applied > self._leading.epoch_start_offset

    def voter_progress(self) -> dict[int, tuple[int, int]]:
        """As the leader sees them: voter -> (log end, monotonic ms of its last fetch); empty
        on a node that does not lead."""
        return self._leading.progress(self._leading.tracking) if self._leading is not None else {}

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
        return self.members.change_refusal(voters, self.high_watermark)

    def record_voters(self) -> int | None:
        """As the ready leader of a quorum whose log and snapshot record no voters yet (they come
        from the nodes' start-up configuration), append the voters as a configuration entry (as
        KRaft's bootstrap writes its VotersRecord): from then on a node started with another
        ``--voters`` list learns the real quorum from the log. Its offset, or None."""
        recorded = self.members.entries or not self.members.base_is_bootstrap
        return None if not self.leader_ready or recorded else self._append_configuration(self.voter_set)

    def propose_voters(self, voters: tuple[Voter, ...]) -> int | None:
        """Append a configuration entry as the leader (see ``voters_change_refusal``): its
        offset, or None when refused. The new voters count from this entry on (also before it
        commits); a leader that removed itself resigns once the entry is committed."""
        refused = self.voters_change_refusal(voters) is not None
        return None if refused else self._append_configuration(tuple(sorted(voters, key=lambda v: v.node_id)))

    def _append_configuration(self, voters: tuple[Voter, ...]) -> int:
        """Append a configuration entry as the leader (in force at once); its offset."""
        offset = self.log.end_offset
        self.log.append(entries := [Entry(self.epoch, b"", True, voters)])
        self.members.note(offset, entries)
        self._refresh_voters()
        self._leader_progress()
        return offset

    def allow_voting(self, *, caught_up_with_leader: bool) -> None:
        """The driver found that this node, which lost its durable state, may vote again: it
        caught up with the leader (the one vote it may have given in this epoch is taken to be
        that leader's), or its quorum is new (nothing was given away)."""
        if caught_up_with_leader and self.voted_for is None:
            self.voted_for = self.leader
        self.can_vote = True

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
        if self._leading is not None:
            majority, announce = self._leading.tick(self.voters, self.node_id, now_ms, self.config)
            if not majority and now_ms >= self._election_deadline_ms:
                self._become_follower(self.epoch, NO_LEADER)  # check-quorum: cut off, resign
            elif majority:
                self._election_deadline_ms = now_ms + self.config.election_timeout_ms
            self.outbox.extend(BeginEpoch(self.node_id, voter, self.epoch) for voter in announce)
            return
        if not self.is_voter or not self.can_vote:
            self._observe()  # fetch without campaigning; find the leader by asking the voters
            return
        if now_ms >= self._election_deadline_ms:
            self._start_pre_vote()
        elif (
            self.role is Role.FOLLOWER
            and self.leader != NO_LEADER
            and now_ms >= self._following.fetch_in_flight_until_ms
        ):
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

    def _enter_epoch(self, epoch: int) -> None:
        """Move to a later epoch, where no vote is given yet."""
        invariant(epoch > self.epoch, f"node {self.node_id}: epoch {epoch} is not after {self.epoch}")
        self.epoch, self.voted_for = epoch, None

    def _vote_for(self, candidate: int) -> None:
        """Give this epoch's vote (one per epoch: Raft's election safety rests on it)."""
        invariant(self.voted_for in (None, candidate), f"node {self.node_id} votes twice in epoch {self.epoch}")
        self.voted_for = candidate

    def _commit_to(self, offset: int) -> None:
        """Raise the high-water mark to ``offset``; it never moves backwards."""
        self.high_watermark = max(self.high_watermark, offset)

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
        self._candidacy = CandidateState({self.node_id})
        self._reset_election_timer()
        self._ask_votes(pre_vote=True)
        self._maybe_win()

    def _start_election(self) -> None:
        self.role = Role.CANDIDATE
        self._enter_epoch(
            self.epoch + 1 + (self.rng.randrange(self.config.max_epoch_skip + 1) if self.config.max_epoch_skip else 0)
        )
        self._vote_for(self.node_id)
        self.leader = NO_LEADER
        self._candidacy = CandidateState({self.node_id})
        self._reset_election_timer()
        self._ask_votes(pre_vote=False)
        self._maybe_win()

    def _ask_votes(self, *, pre_vote: bool) -> None:
        epoch, last_epoch, end = self.epoch + 1 if pre_vote else self.epoch, self.log.last_epoch, self.log.end_offset
        others = sorted(self.voters - {self.node_id})
        self.outbox.extend(VoteRequest(self.node_id, voter, epoch, last_epoch, end, pre_vote) for voter in others)

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
            self._vote_for(request.sender)  # durable before the answer leaves (hard_state)
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
        if response.granted and self._candidacy is not None:
            self._candidacy.votes.add(response.sender)
            self._maybe_win()

    def _maybe_win(self) -> None:
        if self._candidacy is None or not self._candidacy.won(self.voters, self.quorum) or not self.is_voter:
            return
        if self.role is Role.PRE_CANDIDATE:
            self._start_election()
        elif self.role is Role.CANDIDATE:
            self._become_leader()

    def _become_leader(self) -> None:
        invariant(self.voted_for == self.node_id, "a leader was elected with its own vote in its epoch")
        self.role = Role.LEADER
        self.leader = self.node_id
        self._candidacy = None
        self._leading = LeaderState.begin(self.voters - {self.node_id}, self._now_ms, self.log.end_offset)
        self.log.append([Entry(self.epoch, b"")])  # the leader-change entry: commits earlier epochs
        self._election_deadline_ms = self._now_ms + self.config.election_timeout_ms
        for voter in sorted(self.voters - {self.node_id}):
            self.outbox.append(BeginEpoch(self.node_id, voter, self.epoch))
        self._leader_progress()

    def _become_follower(self, epoch: int, leader: int, *, heard_directly: bool = True) -> None:
        """Follow ``leader`` (NO_LEADER: none known) in ``epoch``; ``heard_directly``: the leader
        itself said so (its contact and a fresh election timeout count), not a voter."""
        if leader == self.node_id:  # others still name this node, which lost its leadership (restart)
            leader = NO_LEADER
        if epoch != self.epoch or leader != self.leader:
            self._following.snapshot_fetch = None  # a snapshot transfer is with one leader in one epoch
        if epoch > self.epoch:
            self._enter_epoch(epoch)
        self.role = Role.FOLLOWER
        self.leader = leader
        self._leading = None
        self._candidacy = None
        if not heard_directly:
            return
        if leader != NO_LEADER:
            self._last_leader_contact_ms = self._now_ms
        self._reset_election_timer()

    # -----------------------------------------------------------------------------------------
    # replication

    def _fetch(self, voter: int | None = None) -> None:
        """Fetch from the leader (or ask ``voter`` who leads: its answer names the leader)."""
        until_ms = self._now_ms + self.config.fetch_timeout_ms
        to = self.leader if voter is None else voter
        fetch = self._following.next_fetch(self.node_id, to, self.epoch, self.log, until_ms, from_leader=voter is None)
        self.outbox.append(fetch)

    def _lead(self) -> LeaderState:
        """The leadership's state (only called while leading)."""
        if self._leading is None:
            raise InvariantError(f"node {self.node_id} acts as the leader of epoch {self.epoch} without leading")
        return self._leading

    def _leads_for(self, sender: int, epoch: int) -> bool:
        """Whether this node leads ``epoch`` and ``sender`` follows it (a fetch to answer)."""
        if epoch > self.epoch:
            self._become_follower(epoch, NO_LEADER)  # a newer epoch exists: this node is stale
        return self._leading is not None and epoch == self.epoch and sender != self.node_id

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
        tracking = self._lead().follower(request.sender)  # a non-voter fetching: an observer
        tracking.last_fetch_ms = self._now_ms  # it follows this leader (check-quorum counts it)
        answer = FetchResponse(
            self.node_id, request.sender, self.epoch, self.node_id, request.fetch_offset,
            high_watermark=self.high_watermark, last_fetched_epoch=request.last_fetched_epoch,
        )  # fmt: skip
        if self._needs_snapshot(request.fetch_offset, request.last_fetched_epoch):
            self.outbox.append(replace(answer, snapshot=self.log.latest_snapshot))
            return
        if (diverging := divergence(self.log, request.fetch_offset, request.last_fetched_epoch)) is not None:
            self.outbox.append(replace(answer, diverging=diverging))
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
        data, size = self._lead().serve_snapshot(
            request.sender,
            request.snapshot,
            request.position,
            self.log,
            now_ms=self._now_ms,
            max_bytes=self.config.max_snapshot_chunk_bytes,
        )
        self.outbox.append(
            replace(answer, leader=self.node_id, data=data, size=size, high_watermark=self.high_watermark)
        )

    def _leader_progress(self) -> None:
        """Advance the high-water mark to what a majority of the voters holds (never backwards,
        and only once it covers an entry of this epoch); the leader counts itself only while it
        is a voter. A leader that removed itself resigns once that change is committed."""
        leading = self._leading
        if leading is None:
            return
        candidate = leading.majority_end(self.log.end_offset if self.is_voter else None, self.quorum)
        if candidate > leading.epoch_start_offset:
            self._commit_to(candidate)
        last_change = self.members.last_change_offset
        if not self.is_voter and last_change is not None and last_change < self.high_watermark:
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
        self._following.fetch_in_flight_until_ms = -1  # the next tick fetches again
        self.leader_high_watermark = max(self.leader_high_watermark, response.high_watermark)
        return True

    def _on_fetch_response(self, response: FetchResponse) -> None:
        if not self._heard_from_leader(response) or self._following.snapshot_fetch is not None:
            return
        if (response.fetch_offset, response.last_fetched_epoch) != (self.log.end_offset, self.log.last_epoch):
            return  # an answer about a log that has moved since (late, duplicated)
        if response.snapshot is not None:
            if response.snapshot.end_offset > self.applied:
                self._following.snapshot_fetch = SnapshotFetch(response.snapshot)
            return
        if response.diverging is not None:
            offset = self._truncation_offset(*response.diverging)
            if offset < self.high_watermark:
                raise DivergedHistoryError(
                    f"node {self.node_id}: leader {response.sender} of epoch {response.epoch} diverges from this "
                    f"log at offset {offset}, below its committed offset {self.high_watermark}"
                )
            self.log.truncate_to(offset)
            self.members.truncated(self.log.end_offset)
            self._refresh_voters()
            return
        if response.entries:
            first = self.log.end_offset
            self.log.append(response.entries)
            self.members.note(first, response.entries)
            self._refresh_voters()
        self._commit_to(min(response.high_watermark, self.log.end_offset))

    def _on_fetch_snapshot_response(self, response: FetchSnapshotResponse) -> None:
        if not self._heard_from_leader(response):
            return
        received = self._following.take_snapshot_chunk(response, self.log)
        if received is None or received.end_offset <= self.applied or not self.log.install_snapshot(received):
            return  # more to come; or nothing new after all, or received damaged: fetching again says what to do
        self.members.installed(self.log.snapshot_voters)
        self._refresh_voters()
        self.applied = received.end_offset
        self._commit_to(self.applied)
        self._installed = received

    # -----------------------------------------------------------------------------------------
    # membership (KIP-853)

    def _observe(self) -> None:
        """The tick of a non-voter (or of a voter that may not vote yet): fetch from the leader,
        or ask a voter who leads (a voter's answer to a fetch names its leader); forget a leader
        silent for an election timeout."""
        if self._now_ms >= self._election_deadline_ms:
            self.leader = NO_LEADER
            self._reset_election_timer()
        if self._now_ms < self._following.fetch_in_flight_until_ms:
            return
        if self.leader != NO_LEADER:
            self._fetch()
            return
        voters = sorted(self.voters - {self.node_id})
        if voters:
            self._fetch(self.rng.choice(voters))

    def _refresh_voters(self) -> None:
        """Put the newest configuration in force (``VoterConfigs``). A leader re-sorts its
        followers into voters and observers; a candidate that is no longer a voter stops
        campaigning."""
        if not self.members.refresh():
            return
        if self._leading is not None:
            self._leading.regroup(self.voters, self.node_id, self._now_ms)
            self._leader_progress()
        elif self.role is not Role.FOLLOWER and not self.is_voter:
            self._become_follower(self.epoch, NO_LEADER)

    def _truncation_offset(self, leader_epoch: int, leader_end: int) -> int:
        """Where this log stops agreeing with the leader's: the end of ``leader_epoch`` there, or
        the start of this log's first later epoch, whichever is lower."""
        _, local_end = self.log.end_offset_for_epoch(leader_epoch)
        return min(leader_end, local_end)
