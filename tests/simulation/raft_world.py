"""A deterministic simulation of the controllers' Raft core (issue #22), one seeded world per run.

What runs is Lanes' own ``RaftCore`` (``lanes.controller.raft``) with in-memory logs. Around it
the simulation plays the drivers and the network, as messages on a simulated clock:

- 3 or 5 voters; each tick and each message is one step of a core; after a step the driver makes
  the core's durable state (epoch, vote) and log durable, then sends the step's messages (the
  ``Ready`` contract);
- a client proposes a value every few milliseconds to a random live voter (only a leader takes
  it); every voter applies what it commits, in order;
- faults, all from the seed: message loss, duplication, delay (so reordering), links cut one way
  or both ways, voters paused (their timers and messages wait), crashed and restarted from their
  durable state, some *during* a step (that step's writes and messages are lost: a crash before
  the fsync), some stopped gracefully (a leader resigns first). Then everything heals and the
  cluster settles.

Checkers (Raft's safety properties, figure 3 of the paper):

- election safety: at most one leader per epoch;
- leader completeness: a new leader's log holds every entry committed in an earlier epoch (an
  election of an older epoch can complete late, when delayed votes arrive: such a leader is
  deposed as soon as it meets the newer epoch, and commits nothing);
- state-machine safety: no two voters apply different entries at one offset, and a snapshot a
  voter installs holds exactly the entries applied at its offsets;
- log matching (after settling): two logs with an entry of the same epoch at an offset agree on
  everything before it; and liveness: after healing, a leader commits a new value everywhere.

``run(seed)`` returns the violations (empty when the run is clean).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from lanes.controller.raft import (
    DivergedHistoryError,
    Entry,
    MemoryRaftLog,
    Message,
    RaftConfig,
    RaftCore,
    Role,
    SnapshotId,
)
from lanes.controller.raft import Voter as RaftVoter
from tests.simulation.harness import EventLoop, Network

TICK_MS = 25
CONFIG = RaftConfig(
    election_timeout_ms=150, fetch_timeout_ms=60, max_fetch_entries=16, max_epoch_skip=3, max_snapshot_chunk_bytes=64
)
FAULT_PHASE_MS = 1_500
SETTLE_MS = 1_500


@dataclass
class Voter:
    node: int
    core: RaftCore
    alive: bool = True
    paused_until: int = 0
    #: the next step is interrupted by a crash before its writes are durable
    crash_mid_step: bool = False
    durable_log: MemoryRaftLog = field(default_factory=MemoryRaftLog)
    durable_state: tuple[int, int | None] = (0, None)
    #: the state machine: every entry applied, in order
    state: list[Entry] = field(default_factory=list)


def encode_state(entries: list[Entry]) -> bytes:
    """A state machine's snapshot: its entries, one ``epoch:hex:voters`` line each (voters: the
    ids of a configuration entry, or -)."""
    return "\n".join(
        f"{e.epoch}:{e.data.hex()}:{'-' if e.voters is None else ','.join(str(v.node_id) for v in e.voters)}"
        for e in entries
    ).encode()


def decode_state(data: bytes) -> list[Entry]:
    entries = []
    for line in data.decode().split("\n") if data else []:
        epoch, value, voters = line.split(":")
        config = None if voters == "-" else tuple(RaftVoter(int(n)) for n in voters.split(","))
        entries.append(Entry(int(epoch), bytes.fromhex(value), voters=config))
    return entries


class World(EventLoop):
    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        size = self.rng.choice([3, 3, 5])
        #: the voters every node starts with; the other nodes start as observers
        self.initial = frozenset(range(1, size + 1))
        self.changes = self.rng.random() < 0.5
        self.ids = frozenset(range(1, size + 1 + (self.rng.choice([1, 2]) if self.changes else 0)))
        self.network = Network(self.rng, losses=(0.0, 0.02, 0.1), duplications=(0.0, 0.05), max_delays_ms=(2, 15, 60))
        self.cuts = self.network.cuts
        #: snapshot every this many applied entries, dropping the log below the one before (0: never)
        self.snapshot_every = self.rng.choice([0, 2, 4, 8])
        self.installs = 0
        self.membership_changes = 0
        self.voters = {n: Voter(n, self._new_core(n, MemoryRaftLog(), (0, None))) for n in self.ids}
        self.leaders: dict[int, int] = {}  # epoch -> leader
        self.applied: dict[int, Entry] = {}  # offset -> the entry applied there (by anyone)
        self.commit_epochs: dict[int, int] = {}  # offset -> the epoch it was first applied in
        self.violations: list[str] = []
        self.next_value = itertools.count()

    def _new_core(self, node: int, log: MemoryRaftLog, hard_state: tuple[int, int | None]) -> RaftCore:
        rng = random.Random(self.rng.random())
        snapshot = log.latest_snapshot
        return RaftCore.restart(
            node, self.initial, log, rng, hard_state=hard_state, config=CONFIG, now_ms=self.now,
            applied=snapshot.end_offset if snapshot else 0,
        )  # fmt: skip

    # -----------------------------------------------------------------------------------------
    # the event loop, the network and the drivers

    @property
    def faults_on(self) -> bool:
        return self.network.faults_on

    def send(self, message: Message) -> None:
        for delay in self.network.transit_ms(message.sender, message.to):
            self.at(delay, lambda message=message: self._deliver(message))  # type: ignore[misc]

    def _deliver(self, message: Message) -> None:
        voter = self.voters[message.to]
        if not voter.alive or (message.sender, message.to) in self.cuts:
            return
        if voter.paused_until > self.now:
            self.at(voter.paused_until - self.now, lambda: self._deliver(message))
            return
        self._step(voter, lambda core: core.step(message, self.now))

    def _tick(self, node: int) -> None:
        voter = self.voters[node]
        if voter.alive and voter.paused_until <= self.now:
            self._step(voter, lambda core: core.tick(self.now))
        self.at(TICK_MS, lambda: self._tick(node))

    def _step(self, voter: Voter, action: Callable[[RaftCore], None]) -> None:
        core = voter.core
        was_leader = core.role is Role.LEADER
        try:
            action(core)
        except DivergedHistoryError as exc:  # the core saw a committed entry contradicted: unsafe
            self.violations.append(str(exc))
            self._crash(voter)  # as the driver stops the process
            return
        if voter.crash_mid_step:  # the process died before the step's writes reached the disk
            voter.crash_mid_step = False
            self._crash(voter)
            return
        if core.role is Role.LEADER and not was_leader:
            self._became_leader(voter)
        installed = core.take_installed_snapshot()
        if installed is not None:
            self._load(voter, installed)
        for offset, entry in core.committed():
            self.commit_epochs.setdefault(offset, core.epoch)  # the committing leader applies first
            self._check_applied(voter, offset, entry)
            voter.state.append(entry)
        self._maybe_snapshot(voter)
        core.record_voters()  # the drivers' duty once a leader is ready (a no-op after the first)
        assert isinstance(core.log, MemoryRaftLog)
        voter.durable_log = core.log.copy()
        voter.durable_state = core.hard_state
        for message in core.take_messages():
            self.send(message)

    def _check_applied(self, voter: Voter, offset: int, entry: Entry) -> None:
        known = self.applied.setdefault(offset, entry)
        if known != entry:
            self.violations.append(f"voter {voter.node} applied {entry} at {offset}, another applied {known}")
        if offset != len(voter.state):
            self.violations.append(f"voter {voter.node} applied offset {offset} after {len(voter.state)} entries")

    def _load(self, voter: Voter, snapshot: SnapshotId) -> None:
        """The state machine loads an installed snapshot (it must be the committed prefix)."""
        self.installs += 1
        if snapshot.end_offset <= len(voter.state):
            self.violations.append(f"voter {voter.node} installed {snapshot}, holding {len(voter.state)} entries")
        log = voter.core.log
        assert isinstance(log, MemoryRaftLog)
        entries = decode_state(log.snapshot_state(snapshot))
        if len(entries) != snapshot.end_offset or (entries and entries[-1].epoch != snapshot.epoch):
            self.violations.append(f"voter {voter.node} installed {snapshot} holding {len(entries)} entries")
        voter.state = []
        for offset, entry in enumerate(entries):
            self.commit_epochs.setdefault(offset, voter.core.epoch)
            self._check_applied(voter, offset, entry)
            voter.state.append(entry)

    def _maybe_snapshot(self, voter: Voter) -> None:
        """Snapshot the state machine every ``snapshot_every`` entries; drop the log (and older
        snapshots) below the snapshot before it, which stays in case a follower needs it."""
        log = voter.core.log
        assert isinstance(log, MemoryRaftLog)
        latest = log.latest_snapshot
        if not self.snapshot_every or len(voter.state) - (latest.end_offset if latest else 0) < self.snapshot_every:
            return
        log.add_snapshot(encode_state(voter.state), len(voter.state), voter.core.voters_at(len(voter.state)))
        if latest is not None:
            log.trim_to(latest, voter.core.snapshots_in_transfer())

    def _became_leader(self, voter: Voter) -> None:
        epoch = voter.core.epoch
        other = self.leaders.setdefault(epoch, voter.node)
        if other != voter.node:
            self.violations.append(f"epoch {epoch} has two leaders: {other} and {voter.node}")
        log = voter.core.log
        for offset, entry in sorted(self.applied.items()):
            if self.commit_epochs[offset] >= epoch:
                continue  # committed in this epoch or a later one (a delayed election of an older epoch)
            if offset < log.start_offset:
                continue  # in the leader's snapshot: checked when it was made or installed
            if offset >= log.end_offset or log.entries(offset, 1)[0] != entry:
                self.violations.append(f"leader {voter.node} of epoch {epoch} lacks committed offset {offset}")
                break

    # -----------------------------------------------------------------------------------------
    # clients and faults

    def _propose(self) -> None:
        live = sorted(n for n, v in self.voters.items() if v.alive and v.paused_until <= self.now)
        if live:
            voter = self.voters[self.rng.choice(live)]
            if voter.core.propose(str(next(self.next_value)).encode()) is not None:
                self._step(voter, lambda core: None)  # the driver makes the append durable, sends
        self.at(self.rng.randint(5, 30), self._propose)

    def _change_membership(self) -> None:
        """Have a leader add a node that is not a voter, remove a voter, or (refused) replace
        two voters at once."""
        leaders = [v for v in self.voters.values() if v.alive and v.core.role is Role.LEADER]
        if leaders:
            leader = self.rng.choice(leaders)
            current = leader.core.voters
            others = sorted(self.ids - current)
            if others and self.rng.random() < 0.2:  # two voters replaced at once: always refused
                wanted = (current - set(self.rng.sample(sorted(current), min(2, len(current))))) | set(others[:2])
            elif others and (len(current) < 3 or self.rng.random() < 0.5):
                wanted = current | {self.rng.choice(others)}
            else:
                wanted = current - {self.rng.choice(sorted(current))}
            if wanted and leader.core.propose_voters(tuple(RaftVoter(n) for n in sorted(wanted))) is not None:
                self.membership_changes += 1
                self._step(leader, lambda core: None)
        if self.faults_on:  # the cluster settles without changes
            self.at(self.rng.randint(80, 300), self._change_membership)

    def _crash(self, voter: Voter) -> None:
        voter.alive = False
        self.at(self.rng.randint(50, 600), lambda: self._restart(voter))

    def _restart(self, voter: Voter) -> None:
        if voter.alive:
            return
        voter.core = self._new_core(voter.node, voter.durable_log.copy(), voter.durable_state)
        log = voter.core.log
        assert isinstance(log, MemoryRaftLog)
        snapshot = log.latest_snapshot
        voter.state = decode_state(log.snapshot_state(snapshot)) if snapshot else []
        voter.alive = True

    def _fault(self) -> None:
        if not self.faults_on:
            return
        leaders = [n for n, v in self.voters.items() if v.alive and v.core.role is Role.LEADER]
        node = self.rng.choice(leaders) if leaders and self.rng.random() < 0.6 else self.rng.choice(sorted(self.ids))
        voter = self.voters[node]
        kind = self.rng.choice(["cut", "cut-one-way", "isolate", "pause", "crash", "crash-mid-step", "stop"])
        duration = self.rng.randint(50, 800)
        others = sorted(self.ids - {node})
        if kind in ("cut", "cut-one-way", "isolate"):
            peers = others if kind == "isolate" else [self.rng.choice(others)]
            links = {(node, p) for p in peers} | ({(p, node) for p in peers} if kind != "cut-one-way" else set())
            if kind == "cut-one-way" and self.rng.random() < 0.5:
                links = {(b, a) for a, b in links}
            self.cuts |= links
            self.at(duration, lambda: self.cuts.difference_update(links))
        elif kind == "pause":
            voter.paused_until = max(voter.paused_until, self.now + duration)
        elif kind == "crash" and voter.alive:
            self._crash(voter)
        elif kind == "crash-mid-step" and voter.alive:
            voter.crash_mid_step = True
        elif kind == "stop" and voter.alive:  # a graceful stop: a leader resigns first
            self._step(voter, lambda core: core.resign())
            self._crash(voter)

    def start(self) -> None:
        for node in sorted(self.ids):
            self.at(self.rng.randint(0, TICK_MS), lambda node=node: self._tick(node))  # type: ignore[misc]
        self.at(50, self._propose)
        if self.changes:
            self.at(self.rng.randint(100, 400), self._change_membership)
        for _ in range(self.rng.randint(2, 8)):
            self.at(self.rng.randint(100, FAULT_PHASE_MS - 100), self._fault)

    def heal(self) -> None:
        self.network.faults_on = False
        self.cuts.clear()
        for voter in self.voters.values():
            voter.paused_until = 0
            voter.crash_mid_step = False
            if not voter.alive:
                self._restart(voter)

    # -----------------------------------------------------------------------------------------
    # the checkers at the end

    def check(self) -> list[str]:
        violations = list(self.violations)
        logs = {n: v.core.log for n, v in self.voters.items()}
        for a, b in itertools.combinations(sorted(logs), 2):
            start = max(logs[a].start_offset, logs[b].start_offset)
            first = logs[a].entries(start, logs[a].end_offset)
            second = logs[b].entries(start, logs[b].end_offset)
            differ = False
            for x, y in zip(first, second, strict=False):
                if x.epoch == y.epoch and differ:
                    violations.append(f"logs of {a} and {b} share an epoch-{x.epoch} entry after differing")
                    break
                differ |= x != y
        leaders = [v for v in self.voters.values() if v.core.role is Role.LEADER]
        newest = max((v.core.epoch for v in leaders), default=-1)
        current = [v for v in leaders if v.core.epoch == newest]
        if len(current) != 1:
            return [*violations, f"after settling, {len(current)} leaders in the newest epoch {newest}"]
        leader = current[0]
        if not leader.core.is_voter:
            violations.append(f"leader {leader.node} leads though its configuration removed it")
        configurations = {frozenset(v.core.voters) for v in self.voters.values()}
        if len(configurations) != 1:
            violations.append(
                f"after settling, the nodes disagree on the voters: {sorted(map(sorted, configurations))}"
            )
        offset = leader.core.propose(b"after the heal")
        if offset is None:
            return [*violations, "the leader refused a proposal"]
        self._step(leader, lambda core: None)
        self.run_until(self.now + 1_000)
        for voter in self.voters.values():
            if voter.core.high_watermark <= offset:
                violations.append(f"voter {voter.node} has not committed the value proposed after healing")
            if len(voter.state) != voter.core.high_watermark:
                violations.append(
                    f"voter {voter.node} applied {len(voter.state)} of {voter.core.high_watermark} entries"
                )
        return violations


def run(seed: int) -> list[str]:
    world = World(seed)
    world.start()
    world.run_until(FAULT_PHASE_MS)
    world.heal()
    world.run_until(FAULT_PHASE_MS + SETTLE_MS)
    return world.check()
