"""A deterministic simulation of one partition's replication (issue #21).

What runs is Lanes' own replication logic: ``LeaderReplica`` (high-water mark, ISR proposals,
acks=all), ``divergence`` (the leader's check of a follower fetch), ``follower_truncation``, the
fetch sessions (``FetchSessionBuilder`` on the follower, ``FetchSessionCache`` on the leader: an
incremental fetch names the partition only when its position moved, and the leader then goes by
the session's last position) and the real ``LeaderEpochCache`` (kept in memory). Around it the
simulation plays what the broker, the controller and the network do, as messages on a simulated
clock:

- three replicas; a controller that fences a replica a session timeout after its last heartbeat,
  elects the first live ISR member when the leader is fenced (leader epoch + 1), removes fenced
  replicas from the ISR, and accepts AlterPartition only at the current leader and partition
  epochs; every heartbeat answer and every change carries the whole partition state, which a
  replica applies only when its epochs are newer;
- followers fetch from the leader they know (offset, last fetched epoch, leader epoch), truncate
  on a diverging epoch, append in order and take the leader's high-water mark;
- a producer sends a record every few milliseconds with acks=all to the replica it believes
  leads (metadata from the controller, delayed); a leader answers once ``acks_all_outcome`` says
  so, or REQUEST_TIMED_OUT; a consumer reads below the high-water mark of whoever says it leads.

Faults, all from the seed: message loss, duplication, delay (and so reordering); links cut one
way or both ways; replicas paused (their messages and timers wait) and crashed (in-memory state
lost; the log and an older high-water-mark checkpoint survive, as on a process crash) and
restarted. After the faults everything heals and the cluster settles; then the checkers run:

- every acknowledged record is in the leader's log at the offset it was acknowledged with;
- every replica's log agrees with the leader's below the high-water mark, and every replica is
  back in the ISR (a follower that cannot converge never rejoins);
- every record a consumer read is still at its offset (nothing readable was later gone);
- a leader's high-water mark never moved backwards (checked at every change);
- one leader per epoch.

``run(seed)`` returns the violations (empty when the run is clean).
"""

from __future__ import annotations

import functools
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from lanes.broker.fetch_session import FetchPosition, FetchSessionBuilder, FetchSessionCache
from lanes.broker.replication import LeaderReplica, divergence, follower_truncation
from lanes.errors import ErrorCode
from lanes.storage.epochs import LeaderEpochCache
from lanes.topic_partition import TopicPartition
from tests.simulation.harness import EventLoop, Network

REPLICAS = (1, 2, 3)
CONTROLLER = 0
PRODUCER = 10
CONSUMER = 11
MIN_INSYNC = 2
SESSION_MS = 600
HEARTBEAT_MS = 100
LAG_MS = 400
TICK_MS = 40
FETCH_TIMEOUT_MS = 300
PRODUCE_TIMEOUT_MS = 1_000
FAULT_PHASE_MS = 4_000
SETTLE_MS = 2_500
PARTITION = TopicPartition("simulated", 0)


class MemoryEpochCache(LeaderEpochCache):
    """The real epoch cache without its file."""

    def __init__(self) -> None:
        super().__init__(Path("/nonexistent/leader-epoch-checkpoint"))

    def _persist(self) -> None:
        pass


@dataclass
class Log:
    """A replica's log: (leader epoch, record id) per offset, its epochs and high-water mark."""

    entries: list[tuple[int, int]] = field(default_factory=list)
    epochs: MemoryEpochCache = field(default_factory=MemoryEpochCache)
    high_watermark: int = 0
    checkpointed_high_watermark: int = 0  # what survives a crash

    @property
    def end(self) -> int:
        return len(self.entries)

    def append(self, epoch: int, record_id: int) -> None:
        if self.epochs.latest_epoch < epoch:
            self.epochs.assign(epoch, self.end)
        self.entries.append((epoch, record_id))

    def truncate_to(self, offset: int) -> None:
        """As ``PartitionLog.truncate_to``: at or past the log end no record goes, but an epoch
        starting at the log end (led without a write) does."""
        offset = min(offset, self.end)
        del self.entries[offset:]
        self.epochs.truncate_from_end(offset)
        self.high_watermark = min(self.high_watermark, self.end)


@dataclass
class Replica:
    node: int
    log: Log = field(default_factory=Log)
    life: int = 0  # incarnation: a restart is a new one
    alive: bool = True
    paused_until: int = 0
    leader: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    isr: list[int] = field(default_factory=list)
    core: LeaderReplica | None = None  # set while this replica leads
    alter_in_flight: bool = False
    alter_unanswered: bool = False
    alter_request: int = 0  # the id of the newest AlterPartition sent
    fetch_in_flight_until: int = 0
    fetch_request: int = 0  # the id of the newest fetch sent; answers to older ones are dropped
    fetch_answered: bool = True
    fetch_positions: dict[TopicPartition, FetchPosition] = field(default_factory=dict)
    #: follower side: one session per leader it fetches from; leader side: its followers' sessions
    fetch_sessions: dict[int, FetchSessionBuilder] = field(default_factory=dict)
    served_sessions: FetchSessionCache | None = None
    pending: deque[tuple[int, int, int, int]] = field(default_factory=deque)  # (required, deadline, id, offset)


class FetchCall(NamedTuple):
    """One ReplicaFetch call of a follower, within its fetch session."""

    follower: int
    request_id: int
    session_id: int
    session_epoch: int
    named: dict[TopicPartition, FetchPosition]
    forgotten: list[TopicPartition]


@dataclass
class PartitionState:
    leader: int
    leader_epoch: int
    isr: list[int]
    partition_epoch: int


class World(EventLoop):
    """One seeded run (see the module docstring)."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.network = Network(self.rng)
        self.cuts = self.network.cuts  # (from, to) links that drop messages
        self.replicas = {n: Replica(n) for n in REPLICAS}
        self.state = PartitionState(leader=1, leader_epoch=0, isr=list(REPLICAS), partition_epoch=0)
        self.last_heartbeat = dict.fromkeys(REPLICAS, 0)
        self.fenced: set[int] = set()
        self.lives = dict.fromkeys(REPLICAS, 0)  # each replica's registered incarnation
        self.leaders_by_epoch: dict[int, int] = {0: 1}
        self.producer_view = (1, 0)  # (leader, epoch) the producer believes
        self.next_record = 0
        self.acked: dict[int, int] = {}  # record id -> offset
        self.read: dict[int, int] = {}  # offset -> record id a consumer saw
        self.violations: list[str] = []
        for replica in self.replicas.values():
            self._apply_state(replica, self.state)

    # -----------------------------------------------------------------------------------------
    # the event loop and the network

    @property
    def faults_on(self) -> bool:
        return self.network.faults_on

    @faults_on.setter
    def faults_on(self, value: bool) -> None:
        self.network.faults_on = value

    def send(self, source: int, target: int, deliver: Callable[[], None]) -> None:
        """A message: lost, duplicated, delayed at random; dropped on a cut link or at a dead node."""
        addressee = self.replicas.get(target)
        life = addressee.life if addressee is not None else 0
        for delay in self.network.transit_ms(source, target):

            def arrive(deliver: Callable[[], None] = deliver) -> None:
                replica = self.replicas.get(target)
                if replica is not None and (not replica.alive or replica.life != life):
                    return  # sent to a process that is gone
                if replica is not None and replica.paused_until > self.now:
                    self.at(replica.paused_until - self.now, arrive)  # waits in the socket
                    return
                if (source, target) in self.cuts:
                    return
                deliver()

            self.at(delay, arrive)

    # -----------------------------------------------------------------------------------------
    # timers

    def every(self, period_ms: int, node: int, action: Callable[[], None]) -> None:
        def tick() -> None:
            replica = self.replicas.get(node)
            if replica is None or (replica.alive and replica.paused_until <= self.now):
                action()
            elif replica.paused_until > self.now:
                self.at(replica.paused_until - self.now, tick)
                return
            self.at(period_ms, tick)

        self.at(self.rng.randint(0, period_ms), tick)

    def start(self) -> None:
        for node in REPLICAS:
            self.every(HEARTBEAT_MS, node, lambda node=node: self._heartbeat(node))  # type: ignore[misc]
            self.every(TICK_MS, node, lambda node=node: self._replica_tick(node))  # type: ignore[misc]
        self.every(HEARTBEAT_MS, CONTROLLER, self._controller_tick)
        self.every(10, PRODUCER, self._produce)
        self.every(40, CONSUMER, self._consume)
        self.every(200, PRODUCER, self._producer_metadata)

    # -----------------------------------------------------------------------------------------
    # controller

    def _heartbeat(self, node: int) -> None:
        life = self.replicas[node].life
        self.send(node, CONTROLLER, lambda: self._controller_heard(node, life))

    def _register(self, node: int, life: int) -> None:
        """A restarted replica registers: the old incarnation is fenced first (its leadership
        moves away), then heartbeats of the new one unfence it."""
        if life <= self.lives[node]:
            return
        self.lives[node] = life
        if node not in self.fenced:
            self.fenced.add(node)
            self._fence(node)

    def _controller_heard(self, node: int, life: int) -> None:
        if life < self.lives[node]:
            return  # a heartbeat of an earlier incarnation
        if life > self.lives[node]:
            self._register(node, life)
        self.last_heartbeat[node] = self.now
        if node in self.fenced:
            self.fenced.discard(node)  # registers again
            if self.state.leader < 0 and node in self.state.isr:
                self._elect()
        snapshot = self._snapshot()
        self.send(CONTROLLER, node, lambda: self._apply_state(self.replicas[node], snapshot))

    def _controller_tick(self) -> None:
        for node in REPLICAS:
            if node not in self.fenced and self.now - self.last_heartbeat[node] > SESSION_MS:
                self.fenced.add(node)
                self._fence(node)

    def _fence(self, node: int) -> None:
        state = self.state
        if state.leader == node:
            self._elect()
        elif node in state.isr and len(state.isr) > 1:
            self._change(state.leader, state.leader_epoch, [b for b in state.isr if b != node])

    def _elect(self) -> None:
        """A new leader when the current one is fenced or there is none: the first live ISR
        member (the fenced leaves the ISR); none left: offline, the ISR kept for a clean return."""
        state = self.state
        if state.leader >= 0 and state.leader not in self.fenced:
            return
        candidates = [b for b in state.isr if b not in self.fenced]
        leader, isr = (candidates[0], candidates) if candidates else (-1, state.isr)
        epoch = state.leader_epoch + 1
        if leader >= 0:
            previous = self.leaders_by_epoch.setdefault(epoch, leader)
            if previous != leader:
                self.violations.append(f"epoch {epoch} had leaders {previous} and {leader}")
        self._change(leader, epoch, isr)

    def _change(self, leader: int, leader_epoch: int, isr: list[int]) -> None:
        self.state = PartitionState(leader, leader_epoch, list(isr), self.state.partition_epoch + 1)
        snapshot = self._snapshot()
        for node in REPLICAS:
            self.send(CONTROLLER, node, lambda node=node: self._apply_state(self.replicas[node], snapshot))  # type: ignore[misc]

    def _snapshot(self) -> PartitionState:
        return PartitionState(
            self.state.leader, self.state.leader_epoch, list(self.state.isr), self.state.partition_epoch
        )

    def _alter_partition(
        self, node: int, request_id: int, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> None:
        state = self.state
        if state.leader != node or state.leader_epoch != leader_epoch or state.partition_epoch != partition_epoch:
            outcome = "stale"  # checked first, as the controller does
        elif any(b in self.fenced for b in isr if b not in state.isr):
            outcome = "never-applied"  # INELIGIBLE_REPLICA
        else:
            outcome = "accepted"
            self._change(node, leader_epoch, isr)
        answer = self._snapshot()
        self.send(CONTROLLER, node, lambda: self._altered(self.replicas[node], request_id, outcome, answer))

    # -----------------------------------------------------------------------------------------
    # a replica

    def _apply_state(self, replica: Replica, state: PartitionState) -> None:
        """A replica applies the controller's partition state (as the broker's reconcile)."""
        if state.leader_epoch > replica.leader_epoch:
            self._resign(replica)
            replica.leader, replica.leader_epoch = state.leader, state.leader_epoch
            replica.partition_epoch, replica.isr = state.partition_epoch, list(state.isr)
            if state.leader == replica.node:
                log = replica.log
                log.epochs.assign(state.leader_epoch, log.end)
                replica.core = LeaderReplica(
                    leader_id=replica.node,
                    replicas=REPLICAS,
                    isr=state.isr,
                    leader_epoch_start_offset=log.end,
                    log_end_offset=log.end,
                    high_watermark=log.high_watermark,
                    now_ms=self.now,
                    replica_lag_time_max_ms=LAG_MS,
                    min_insync_replicas=MIN_INSYNC,
                )
                self._sync_high_watermark(replica)
        elif state.leader_epoch == replica.leader_epoch and state.partition_epoch > replica.partition_epoch:
            replica.partition_epoch, replica.isr = state.partition_epoch, list(state.isr)
            replica.alter_unanswered = False
            if replica.core is not None:
                replica.core.on_isr_changed(state.isr)
                self._sync_high_watermark(replica)

    def _resign(self, replica: Replica) -> None:
        replica.core = None
        replica.alter_in_flight = False
        for _, _, record_id, _ in replica.pending:
            self._answer(replica.node, record_id, -1, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        replica.pending.clear()

    def _sync_high_watermark(self, replica: Replica) -> None:
        core, log = replica.core, replica.log
        assert core is not None
        before = log.high_watermark
        log.high_watermark = max(log.high_watermark, min(core.high_watermark, log.end))
        if log.high_watermark < before:
            self.violations.append(
                f"replica {replica.node}: high-water mark moved back {before} -> {log.high_watermark}"
            )
        self._settle_acks(replica)

    def _settle_acks(self, replica: Replica) -> None:
        core = replica.core
        if core is None:
            return
        pending = replica.pending  # in append order: required offsets and deadlines ascend
        while pending:
            required, deadline, record_id, offset = pending[0]
            outcome = core.acks_all_outcome(required)
            if outcome is None and self.now >= deadline:
                outcome = ErrorCode.REQUEST_TIMED_OUT
            if outcome is None:
                return  # the later ones wait too
            pending.popleft()
            self._answer(replica.node, record_id, offset, outcome)

    def _replica_tick(self, node: int) -> None:
        replica = self.replicas[node]
        replica.log.checkpointed_high_watermark = replica.log.high_watermark
        core = replica.core
        if core is not None:
            self._settle_acks(replica)
            if replica.alter_in_flight:
                return
            if replica.alter_unanswered and core.pending_isr is not None:
                proposal: list[int] | None = core.pending_isr  # sent again as it was
            else:
                proposal = core.proposed_isr(self.now)
                if proposal is not None:
                    core.on_isr_proposed(proposal)
            if proposal is None:
                return
            replica.alter_in_flight = True
            replica.alter_unanswered = False
            replica.alter_request += 1
            request = (replica.alter_request, replica.leader_epoch, replica.partition_epoch)
            self.send(node, CONTROLLER, lambda: self._alter_partition(node, *request, proposal))

            def give_up(request_id: int = replica.alter_request) -> None:  # no answer: applied or not
                if replica.core is core and replica.alter_in_flight and replica.alter_request == request_id:
                    replica.alter_in_flight = False
                    replica.alter_unanswered = True

            self.at(FETCH_TIMEOUT_MS, give_up)
        elif replica.leader >= 0 and replica.leader != node and replica.fetch_in_flight_until <= self.now:
            leader = replica.leader
            session = replica.fetch_sessions.setdefault(leader, FetchSessionBuilder())
            if not replica.fetch_answered:
                session.reset()  # the call failed (timed out): the fetcher starts a new session
            replica.fetch_in_flight_until = self.now + FETCH_TIMEOUT_MS
            replica.fetch_request += 1
            replica.fetch_answered = False
            position = FetchPosition("id", replica.leader_epoch, replica.log.end, replica.log.epochs.latest_epoch, 0, 0)
            replica.fetch_positions = {PARTITION: position}
            named, forgotten = session.request(replica.fetch_positions)
            call = FetchCall(node, replica.fetch_request, session.session_id, session.epoch, named, forgotten)
            self.send(node, leader, lambda: self._serve_fetch(leader, call))

    def _altered(self, replica: Replica, request_id: int, outcome: str, state: PartitionState) -> None:
        """The controller's answer: accepted; ``never-applied`` (reverted); or a stale-epoch
        refusal, after which the proposal stays pending until the metadata settles it. Answers
        are matched to their request, as an RPC's are."""
        if replica.core is None or not replica.alter_in_flight or request_id != replica.alter_request:
            return
        replica.alter_in_flight = False
        if outcome == "accepted" and state.leader_epoch == replica.leader_epoch:
            replica.partition_epoch = max(replica.partition_epoch, state.partition_epoch)
            replica.isr = list(state.isr)
            replica.core.on_isr_changed(state.isr)
        elif outcome == "never-applied":
            replica.core.on_isr_proposal_failed()
        self._sync_high_watermark(replica)

    def _serve_fetch(self, leader_node: int, call: FetchCall) -> None:
        follower, request_id, session_id, session_epoch, named, forgotten = call
        leader = self.replicas[leader_node]
        if leader.served_sessions is None:  # one cache per process: a restart forgets them
            leader.served_sessions = FetchSessionCache(lambda: self.rng.randint(1, 2**31 - 1))
        resolved = leader.served_sessions.resolve(follower, session_id, session_epoch, named, forgotten)
        answer: dict[str, Any] = {"request": request_id, "leader": leader_node}
        if isinstance(resolved, ErrorCode):
            answer["session_error"] = True
            self.send(leader_node, follower, lambda: self._fetched(self.replicas[follower], answer))
            return
        session, full = resolved
        position = session.partitions[PARTITION].position  # named now, or as last named
        epoch, fetch_offset, last_epoch = (
            position.current_leader_epoch,
            position.fetch_offset,
            position.last_fetched_epoch,
        )
        log = leader.log
        if leader.core is None or epoch != leader.leader_epoch:
            answer["error"] = True
        else:
            diverging = divergence(last_epoch, fetch_offset, log.epochs.end_offset_for(last_epoch, log.end))
            if diverging is not None:
                answer["diverging"] = diverging
            elif fetch_offset > log.end:
                answer["error"] = True
            else:
                leader.core.on_follower_fetch(follower, fetch_offset, self.now)
                self._sync_high_watermark(leader)
                entries = log.entries[fetch_offset : fetch_offset + 20]
                hwm = log.high_watermark
                if full or entries or PARTITION in named or session.must_answer(PARTITION, hwm, 0):
                    answer.update(entries=entries, hwm=hwm)
                    session.answered(PARTITION, hwm, 0)
                else:
                    answer["omitted"] = True  # an idle partition of an incremental fetch
        answer.update(session_id=session.session_id, epoch=epoch, offset=fetch_offset)
        self.send(leader_node, follower, lambda: self._fetched(self.replicas[follower], answer))

    def _fetched(self, replica: Replica, answer: dict[str, Any]) -> None:
        if answer["request"] != replica.fetch_request or replica.fetch_answered:
            return  # an answer to an older call, or a duplicate: each call has one answer
        replica.fetch_answered = True
        replica.fetch_in_flight_until = 0
        session = replica.fetch_sessions.setdefault(answer["leader"], FetchSessionBuilder())
        if "session_error" in answer:
            session.reset()
            return
        session.answered(answer["session_id"], replica.fetch_positions)
        if replica.core is not None or answer["epoch"] != replica.leader_epoch or "error" in answer:
            return  # no longer following that leader at that epoch
        if "omitted" in answer:
            return
        log = replica.log
        if answer["offset"] != log.end:
            return  # an answer about a log that moved since (late or duplicated): dropped, as the fetcher does
        if "diverging" in answer:
            log.truncate_to(follower_truncation(log.epochs.entries, log.end, log.high_watermark, answer["diverging"]))
            return
        for epoch, record_id in answer["entries"]:
            log.append(epoch, record_id)
        log.high_watermark = max(log.high_watermark, min(answer["hwm"], log.end))

    # -----------------------------------------------------------------------------------------
    # clients

    def _producer_metadata(self) -> None:
        state = self._snapshot()
        self.send(CONTROLLER, PRODUCER, lambda: self._producer_learned(state))

    def _producer_learned(self, state: PartitionState) -> None:
        if state.leader_epoch >= self.producer_view[1]:
            self.producer_view = (state.leader, state.leader_epoch)

    def _produce(self) -> None:
        if not self.faults_on:
            return
        leader = self.producer_view[0]
        if leader < 0:
            return
        record_id = self.next_record
        self.next_record += 1
        self.send(PRODUCER, leader, lambda: self._append(self.replicas[leader], record_id))

    def _append(self, replica: Replica, record_id: int) -> None:
        core = replica.core
        if core is None:
            self._answer(replica.node, record_id, -1, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            return
        refusal = core.check_acks_all()
        if refusal is not ErrorCode.NONE:
            self._answer(replica.node, record_id, -1, refusal)
            return
        offset = replica.log.end
        replica.log.append(replica.leader_epoch, record_id)
        core.on_append(replica.log.end)
        replica.pending.append((offset + 1, self.now + PRODUCE_TIMEOUT_MS, record_id, offset))
        self._sync_high_watermark(replica)

    def _answer(self, node: int, record_id: int, offset: int, error: ErrorCode) -> None:
        def arrive() -> None:
            if error is ErrorCode.NONE:
                self.acked[record_id] = offset

        self.send(node, PRODUCER, arrive)

    def _consume(self) -> None:
        for replica in self.replicas.values():
            if replica.alive and replica.core is not None:
                log = replica.log
                for offset in range(max(0, log.high_watermark - 5), log.high_watermark):
                    seen = self.read.setdefault(offset, log.entries[offset][1])
                    if seen != log.entries[offset][1]:
                        self.violations.append(f"offset {offset} was read as {seen}, then {log.entries[offset][1]}")

    # -----------------------------------------------------------------------------------------
    # faults

    def schedule_faults(self) -> None:
        """2-8 faults at random times; most hit whoever leads at that moment."""
        for _ in range(self.rng.randint(2, 8)):
            when = self.rng.randint(100, FAULT_PHASE_MS - 200)
            duration = self.rng.randint(50, 1_500)
            kind = self.rng.choice(["cut", "cut-one-way", "pause", "crash", "isolate"])
            at_leader = self.rng.random() < 0.6
            self.at(when, functools.partial(self._fault, kind, duration, at_leader))

    def _fault(self, kind: str, duration: int, at_leader: bool) -> None:
        if not self.faults_on:
            return
        node = self.state.leader if at_leader and self.state.leader > 0 else self.rng.choice(REPLICAS)
        replica = self.replicas[node]
        if kind in ("cut", "cut-one-way", "isolate"):
            peers = [p for p in (*REPLICAS, CONTROLLER) if p != node]
            if kind != "isolate":
                peers = [self.rng.choice(peers)]
            links = {(node, p) for p in peers}
            if kind != "cut-one-way":
                links |= {(p, node) for p in peers}
            self.cuts |= links
            self.at(duration, lambda: self.cuts.difference_update(links))
        elif kind == "pause":
            replica.paused_until = max(replica.paused_until, self.now + duration)
        elif kind == "crash" and replica.alive:
            replica.alive = False
            self._resign(replica)
            self.at(duration, lambda: self._restart(replica))

    def _restart(self, replica: Replica) -> None:
        if replica.alive or self.replicas[replica.node] is not replica:
            return  # restarted already
        log = replica.log
        log.high_watermark = min(log.checkpointed_high_watermark, log.end)
        fresh = Replica(replica.node, log=log, life=replica.life + 1)
        self.replicas[replica.node] = fresh
        self.send(replica.node, CONTROLLER, lambda: self._register(fresh.node, fresh.life))

    # -----------------------------------------------------------------------------------------
    # the checkers

    def check(self) -> list[str]:
        violations = list(self.violations)
        leaders = [
            r for r in self.replicas.values() if r.core is not None and r.leader_epoch == self.state.leader_epoch
        ]
        if len(leaders) != 1:
            return [*violations, f"after settling, {len(leaders)} replicas lead epoch {self.state.leader_epoch}"]
        leader = leaders[0]
        entries = leader.log.entries
        for record_id, offset in sorted(self.acked.items()):
            if offset >= len(entries) or entries[offset][1] != record_id:
                found = entries[offset][1] if offset < len(entries) else None
                violations.append(f"acknowledged record {record_id} at offset {offset} is gone (now {found})")
                break
        for offset, record_id in sorted(self.read.items()):
            if offset >= len(entries) or entries[offset][1] != record_id:
                violations.append(f"record {record_id} was read at offset {offset} and is gone")
                break
        hwm = leader.log.high_watermark
        for replica in self.replicas.values():
            common = min(hwm, replica.log.end)
            if replica.log.entries[:common] != entries[:common]:
                violations.append(f"replica {replica.node} differs from leader {leader.node} below {common}")
        if sorted(self.state.isr) != list(REPLICAS):
            violations.append(f"after settling with every replica up, the ISR is {self.state.isr}")
        return violations


def run(seed: int) -> list[str]:
    """One seeded run: faults for FAULT_PHASE_MS, then heal, restart and settle; the violations."""
    world = World(seed)
    world.start()
    world.schedule_faults()
    world.run_until(FAULT_PHASE_MS)
    world.faults_on = False
    world.cuts.clear()
    for replica in list(world.replicas.values()):
        replica.paused_until = 0
        if not replica.alive:
            world._restart(replica)
    world.run_until(FAULT_PHASE_MS + SETTLE_MS)
    return world.check()
