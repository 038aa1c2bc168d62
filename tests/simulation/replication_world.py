"""A deterministic simulation of one partition's replication, on the broker's and the controller's
own code.

What runs is Lanes' code, not a model of it:

- each replica is a broker's engine for one partition: a real ``Partition`` over a real
  ``PartitionLog`` (files in a temporary directory, in memory where ``/dev/shm`` exists; a crash
  drops the objects without closing anything, a restart recovers the log from its files), with
  its producer state; ``ReplicaManager`` decides who leads and whether the broker can still vouch
  for it (its controller lease, or its followers still fetching); ``ReplicaFetches`` answers
  followers within their fetch sessions (KIP-227, KIP-903 broker epochs); the
  ``FollowerFetcher``'s own steps build each fetch and apply each answer; consumers read through
  ``ConsumerFetch``;
- the controller is ``ControllerCore`` deciding over a ``MetadataImage``: registration (a new
  broker epoch per incarnation), heartbeats that unfence a broker once it applied its
  registration, fencing a broker silent for a session, elections, AlterPartition fenced by
  broker, leader and partition epochs. Each replica applies the committed records to an image of
  its own as they reach it (a stream that may lose, delay or reorder updates; a heartbeat answer
  fills the gaps), and takes its role from there as the broker's ``MetadataPublisher`` does.

Around it the simulation plays the network, the clock and the processes, as messages on a
simulated clock: a producer sends a record every 10 ms with acks=all to the replica it believes
leads (metadata from the controller, delayed); a consumer reads below the high-water mark of
whoever believes it leads, every 100 ms. Faults, all from the seed: message loss, duplication, delay (so
reordering); links cut one way or both ways; replicas paused and crashed, then restarted. After
the faults everything heals and the cluster settles; then the checkers run:

- every acknowledged record is in the leader's log at the offset it was acknowledged with;
- every replica's log agrees with the leader's below the high-water mark, and every replica is
  back in the ISR;
- every record a consumer read is still at its offset;
- while it runs: no replica's high-water mark moves back within one incarnation, one leader per
  epoch among the replicas, and every invariant the code checks itself (``lanes.invariants``).

``run(seed)`` returns the violations (empty when the run is clean).
"""

from __future__ import annotations

import functools
import itertools
import random
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lanes.broker.batched_reads import SharedReads
from lanes.broker.consumer_fetch import ConsumerFetch
from lanes.broker.fetch_session import FetchPosition, FetchSessionBuilder
from lanes.broker.follower import Followed, FollowerFetcher
from lanes.broker.metrics import BrokerMetrics
from lanes.broker.partition import Following, IsrProposal, Partition
from lanes.broker.producer_state import Verdict
from lanes.broker.purgatory import Purgatory
from lanes.broker.replica_fetch import ReplicaFetchAsk, ReplicaFetches
from lanes.broker.replica_manager import ReplicaManager
from lanes.controller.core import ControllerCore, ControllerDecision, NewTopic
from lanes.errors import ErrorCode, LanesError, error_code
from lanes.metadata.image import NO_LEADER, MetadataImage, PartitionImage
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.runtime.metrics import ServiceMetrics
from lanes.storage.checkpoint import LogOffsets
from lanes.storage.log import LogConfig, PartitionLog
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, metadata_pb2
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
CHECKPOINT_MS = 200
FAULT_PHASE_MS = 4_000
SETTLE_MS = 2_500
TOPIC = "simulated"
PARTITION = TopicPartition(TOPIC, 0)
LOG_CONFIG = LogConfig.from_topic_configs({"min.insync.replicas": str(MIN_INSYNC)})
#: where the replicas' logs live: memory when the machine has a tmpfs
TEMP_ROOT = "/dev/shm" if Path("/dev/shm").is_dir() else None
_METRICS = BrokerMetrics(ServiceMetrics("broker"))


class WorldClock:
    """The simulated time as a ``Clock`` (wall time starts at an arbitrary epoch)."""

    def __init__(self, loop: EventLoop) -> None:
        self._loop = loop

    def now_ms(self) -> int:
        return 1_700_000_000_000 + self._loop.now

    def monotonic_ms(self) -> int:
        return self._loop.now


class Checkpoints:
    """A data directory's checkpoint files (``OffsetStore``): what was saved survives a crash."""

    def __init__(self) -> None:
        self._saved: dict[Path, LogOffsets] = {}

    def load(self, directory: Path) -> LogOffsets:
        return self._saved.get(directory, LogOffsets())

    def save(self, directory: Path, offsets: LogOffsets, *, urgent: bool = False) -> None:
        self._saved[directory] = offsets


class Controller:
    """The controller: ``ControllerCore`` over its image, the records it committed, sessions."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.image = MetadataImage()
        ids = itertools.count()
        self.core = ControllerCore(
            self.image, rng=random.Random(0), new_id=lambda: f"id-{next(ids)}", default_replication_factor=3
        )
        self.records: list[metadata_pb2.MetadataRecord] = []
        self.last_heartbeat: dict[int, int] = {}

    def commit(self, decision: ControllerDecision) -> ControllerDecision:
        """Apply the decision's records and stream them to every replica."""
        base = self.image.last_offset + 1
        for record in decision.records:
            self.image.apply(self.image.last_offset + 1, record)
            self.records.append(record)
        if decision.records:
            self.image.check_invariants()
            for node in REPLICAS:
                self.world.send(CONTROLLER, node, functools.partial(self.world.deliver_metadata, node, base))
        return decision

    def state(self) -> PartitionImage:
        return self.image.topics[self.topic_id].partitions[0]

    @property
    def topic_id(self) -> str:
        return self.image.topic_ids[TOPIC]

    def alive(self, node: int) -> bool:
        last = self.last_heartbeat.get(node)
        return last is not None and self.world.now - last <= SESSION_MS

    def setup(self) -> None:
        """A cluster of three live brokers and the topic, as a controller made them."""
        self.commit(self.core.create_cluster(now_ms=0))
        for node in REPLICAS:
            self.register(node, 0)
            epoch = self.image.brokers[node].epoch
            self.commit(self.core.heartbeat("broker", node, epoch, self.image.last_offset))
        created = self.commit(
            self.core.create_topic(
                NewTopic(TOPIC, assignments=(REPLICAS,), configs=(("min.insync.replicas", str(MIN_INSYNC)),))
            )
        )
        assert created.error is ErrorCode.NONE, created.message

    def register(self, node: int, life: int) -> int | None:
        """A broker incarnation registers: its epoch, or None when refused (the old one's session lasts)."""
        decision = self.commit(
            self.core.register(
                "broker",
                node,
                f"broker-{node}-{life}",
                cluster_id="",
                host="simulated",
                port=node,
                previous_session_alive=self.alive(node),
            )
        )
        if decision.error is not ErrorCode.NONE:
            return None
        self.last_heartbeat[node] = self.world.now
        return self.image.brokers[node].epoch

    def heartbeat(self, node: int, epoch: int, applied_offset: int) -> ErrorCode:
        decision = self.commit(self.core.heartbeat("broker", node, epoch, applied_offset))
        if decision.error is ErrorCode.NONE:
            self.last_heartbeat[node] = self.world.now
        return decision.error

    def fence_silent(self) -> None:
        for broker in self.image.live_brokers():
            node = broker.broker_id
            if self.world.now - self.last_heartbeat.get(node, 0) > SESSION_MS:
                self.commit(self.core.fence("broker", node, "session timeout"))

    def alter_partition(self, node: int, epoch: int, proposal: IsrProposal) -> tuple[ErrorCode, list[int], int]:
        decision = self.commit(
            self.core.alter_partition(
                node,
                epoch,
                self.topic_id,
                0,
                leader_epoch=proposal.leader_epoch,
                partition_epoch=proposal.partition_epoch,
                new_isr=proposal.isr,
                new_isr_broker_epochs=proposal.broker_epochs,
            )
        )
        state = self.state()
        return decision.error, list(state.isr), state.partition_epoch


@dataclass
class Pending:
    """An acks=all append waiting for its answer."""

    leader_epoch: int
    required_offset: int
    deadline_ms: int
    record_id: int
    offset: int


@dataclass(frozen=True)
class FetchCall:
    """One ReplicaFetch of a follower: who sent it, which call it is, what it fetched for."""

    node: int
    life: int
    request_id: int
    leader: int
    followed: Followed
    positions: dict[TopicPartition, FetchPosition]


@dataclass
class Replica:
    """One incarnation of a broker, holding a replica of the partition."""

    world: World
    node: int
    life: int
    image: MetadataImage = field(default_factory=MetadataImage)
    broker_epoch: int = -1
    alive: bool = True
    paused_until: int = 0
    #: when the last heartbeat the controller accepted (unfenced) was sent: the lease's start
    lease_from_ms: int = -(10**9)
    pending: deque[Pending] = field(default_factory=deque)
    alter_in_flight: bool = False
    alter_request: int = 0
    fetch_in_flight_until: int = 0
    fetch_request: int = 0
    fetch_answered: bool = True
    sessions: dict[int, FetchSessionBuilder] = field(default_factory=dict)
    #: the lowest high-water mark this incarnation may show from now on
    high_watermark_seen: int = 0

    def __post_init__(self) -> None:
        world = self.world
        self.log = PartitionLog.open(
            world.directory / f"broker-{self.node}" / f"{TOPIC}-0",
            LOG_CONFIG,
            clock=world.clock,
            clean_shutdown=False,
            offsets=world.checkpoints[self.node],
        )
        self.high_watermark_seen = self.log.high_watermark
        world.logs.append(self.log)
        self.manager = ReplicaManager(self.node, self, world.clock, Purgatory(), _METRICS)
        self.fetches = ReplicaFetches(
            self.manager, world.clock, expand_isr_now=lambda: None, new_session_id=lambda: world.rng.randint(1, 2**31)
        )
        self.fetcher = FollowerFetcher(
            broker_id=self.node, broker_epoch=lambda: self.broker_epoch, leader_address="simulated", partitions=dict
        )
        self.partition: Partition | None = None

    # the engine's view of the controllers (``ControllerView``)

    @property
    def session_timeout_s(self) -> float | None:
        return SESSION_MS / 1000

    def lease_held(self) -> bool:
        return self.world.now - self.lease_from_ms <= SESSION_MS


class World(EventLoop):
    """One seeded run (see the module docstring)."""

    def __init__(self, seed: int, directory: Path) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.network = Network(self.rng)
        self.cuts = self.network.cuts
        self.directory = directory
        self.clock = WorldClock(self)
        self.checkpoints = {node: Checkpoints() for node in REPLICAS}
        #: every log a replica opened, a crashed incarnation's too: their files are closed at the end
        self.logs: list[PartitionLog] = []
        self.replicas: dict[int, Replica] = {}
        self.controller = Controller(self)
        self.controller.setup()
        for node in REPLICAS:
            replica = self.replicas[node] = Replica(self, node, 0)
            replica.broker_epoch = self.controller.image.brokers[node].epoch
            replica.lease_from_ms = 0
            self.deliver_metadata(node, 0)
        self.leaders_by_epoch: dict[int, int] = {}
        self.producer_view = (1, 0)  # (leader, epoch) the producer believes
        self.next_record = 0
        self.acked: dict[int, int] = {}  # record id -> offset
        self.read: dict[int, int] = {}  # offset -> record id a consumer saw
        self.violations: list[str] = []

    # -----------------------------------------------------------------------------------------
    # the event loop and the network

    @property
    def faults_on(self) -> bool:
        return self.network.faults_on

    @faults_on.setter
    def faults_on(self, value: bool) -> None:
        self.network.faults_on = value

    def run_until(self, end_ms: int) -> None:
        """As ``EventLoop.run_until``, watching the replicas after every event."""
        queue = self._queue
        while queue and queue[0][0] <= end_ms:
            super().run_until(queue[0][0])
            self._watch()
        self.now = end_ms

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
            self.every(HEARTBEAT_MS, node, functools.partial(self._heartbeat, node))
            self.every(TICK_MS, node, functools.partial(self._replica_tick, node))
            self.every(CHECKPOINT_MS, node, functools.partial(self._checkpoint, node))
        self.every(HEARTBEAT_MS, CONTROLLER, self.controller.fence_silent)
        self.every(10, PRODUCER, self._produce)
        self.every(100, CONSUMER, self._consume)
        self.every(200, PRODUCER, self._producer_metadata)

    # -----------------------------------------------------------------------------------------
    # metadata: the controller's records reach each replica's image

    def deliver_metadata(self, node: int, base: int) -> None:
        """Records from ``base`` on reach replica ``node`` (a stream update, or a heartbeat's
        answer): applied if they follow what it holds, then its role follows the image."""
        replica = self.replicas[node]
        image = replica.image
        if base > image.last_offset + 1:
            return  # a gap: an update was lost; the next heartbeat answer fills it
        for offset in range(image.last_offset + 1, len(self.controller.records)):
            image.apply(offset, self.controller.records[offset])
        self._take_role(replica)

    def _take_role(self, replica: Replica) -> None:
        """The partition's role from the replica's image (the broker's ``MetadataPublisher``)."""
        topic_id = replica.image.topic_ids.get(TOPIC)
        if topic_id is None:
            return
        state = replica.image.topics[topic_id].partitions[0]
        if replica.partition is None:
            replica.partition = Partition(PARTITION, topic_id, replica.log)
            replica.manager.partitions[PARTITION] = replica.partition
        partition = replica.partition
        if replica.node not in state.replicas or state.leader == NO_LEADER:
            partition.make_offline()
        elif state.leader != replica.node:
            partition.make_follower(state.leader, state.leader_epoch)
        else:
            partition.make_leader(
                leader_epoch=state.leader_epoch,
                partition_epoch=state.partition_epoch,
                replicas=state.replicas,
                isr=state.isr,
                min_insync_replicas=MIN_INSYNC,
                leader_id=replica.node,
                now_ms=self.now,
                replica_lag_time_max_ms=LAG_MS,
            )
        self._settle(replica)

    def _heartbeat(self, node: int) -> None:
        replica = self.replicas[node]
        life, sent_ms = replica.life, self.now
        if replica.broker_epoch < 0:
            self.send(node, CONTROLLER, lambda: self._register(node, life))
            return
        epoch, applied = replica.broker_epoch, replica.image.last_offset
        self.send(node, CONTROLLER, lambda: self._heard(node, life, epoch, applied, sent_ms))

    def _register(self, node: int, life: int) -> None:
        epoch = self.controller.register(node, life)
        if epoch is not None:
            self.send(CONTROLLER, node, lambda: self._registered(self.replicas[node], life, epoch))

    def _registered(self, replica: Replica, life: int, epoch: int) -> None:
        if replica.life == life and replica.broker_epoch < 0:
            replica.broker_epoch = epoch

    def _heard(self, node: int, life: int, epoch: int, applied: int, sent_ms: int) -> None:
        code = self.controller.heartbeat(node, epoch, applied)
        fenced = self.controller.image.brokers[node].fenced
        answer_from = applied + 1

        def answered() -> None:
            replica = self.replicas[node]
            if replica.life != life:
                return
            if code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED):
                if replica.broker_epoch == epoch:
                    replica.broker_epoch = -1  # registered again meanwhile (a duplicated request): register
                return
            if code is ErrorCode.NONE and not fenced:
                replica.lease_from_ms = max(replica.lease_from_ms, sent_ms)
            self.deliver_metadata(node, answer_from)

        self.send(CONTROLLER, node, answered)

    # -----------------------------------------------------------------------------------------
    # a replica's periodic work

    def _checkpoint(self, node: int) -> None:
        self.replicas[node].log.checkpoint()

    def _replica_tick(self, node: int) -> None:
        replica = self.replicas[node]
        partition = replica.partition
        if partition is None:
            return
        self._settle(replica)
        if partition.leader_epoch is not None:
            self._propose_isr(replica, partition)
        elif isinstance(role := partition.role, Following) and replica.fetch_in_flight_until <= self.now:
            self._fetch(replica, partition, role)

    def _propose_isr(self, replica: Replica, partition: Partition) -> None:
        """As the broker's ``AlterPartitionManager``: one proposal at a time."""
        if replica.alter_in_flight or replica.broker_epoch < 0:
            return
        proposal = partition.isr_proposal(self.now)
        if proposal is None:
            return
        replica.alter_in_flight = True
        replica.alter_request += 1
        request_id, node, epoch, life = replica.alter_request, replica.node, replica.broker_epoch, replica.life

        def at_controller() -> None:
            answer = self.controller.alter_partition(node, epoch, proposal)
            self.send(CONTROLLER, node, lambda: self._isr_answered(node, life, request_id, proposal, answer))

        self.send(node, CONTROLLER, at_controller)

        def no_answer() -> None:  # the call timed out: applied or not, it is sent again as it was
            self._isr_answered(node, life, request_id, proposal, None)

        self.at(FETCH_TIMEOUT_MS, no_answer)

    def _isr_answered(
        self,
        node: int,
        life: int,
        request_id: int,
        proposal: IsrProposal,
        answer: tuple[ErrorCode, list[int], int] | None,
    ) -> None:
        replica = self.replicas[node]
        if replica.life != life or not replica.alter_in_flight or replica.alter_request != request_id:
            return
        replica.alter_in_flight = False
        if replica.partition is None:
            return
        if answer is None:
            replica.partition.on_isr_answer(proposal, None)
        else:
            replica.partition.on_isr_answer(proposal, *answer)
        self._settle(replica)

    def _fetch(self, replica: Replica, partition: Partition, role: Following) -> None:
        """One ReplicaFetch, built as the broker's ``FollowerFetcher`` builds it."""
        leader = role.leader_id
        followed: Followed = {PARTITION: (partition, role.leader_epoch)}
        session = replica.sessions.setdefault(leader, FetchSessionBuilder())
        if not replica.fetch_answered:
            session.reset()  # the call failed (timed out): the fetcher starts a new session
        positions = replica.fetcher.positions(followed)
        named, forgotten = session.request(positions)
        request = replica.fetcher.request(named, forgotten, session)
        replica.fetch_in_flight_until = self.now + FETCH_TIMEOUT_MS
        replica.fetch_request += 1
        replica.fetch_answered = False
        call = FetchCall(replica.node, replica.life, replica.fetch_request, leader, followed, positions)

        def at_leader() -> None:
            serving = self.replicas[leader]
            ask = ReplicaFetchAsk.of(request, 16 * 1024 * 1024)
            response = serving.fetches.answer_now(ask, lambda key: None)
            self._settle(serving)
            self.send(leader, call.node, lambda: self._fetched(call, response))

        self.send(call.node, leader, at_leader)

    def _fetched(self, call: FetchCall, response: broker_pb2.ReplicaFetchResponse) -> None:
        node, leader, followed, positions = call.node, call.leader, call.followed, call.positions
        replica = self.replicas[node]
        if replica.life != call.life or call.request_id != replica.fetch_request or replica.fetch_answered:
            return  # an answer to an older call, or a duplicate: each call has one answer
        replica.fetch_answered = True
        replica.fetch_in_flight_until = 0
        session = replica.sessions.setdefault(leader, FetchSessionBuilder())
        if response.error.code:
            session.reset()
            return
        session.answered(response.session_id, positions)
        fetched_from = {key: position.fetch_offset for key, position in positions.items()}
        try:
            replica.fetcher.apply(followed, fetched_from, response)
        except LanesError as exc:
            self.violations.append(f"replica {node}: applying a fetch failed: {exc}")

    # -----------------------------------------------------------------------------------------
    # clients

    def _producer_metadata(self) -> None:
        state = self.controller.state()
        leader, epoch = state.leader, state.leader_epoch
        self.send(CONTROLLER, PRODUCER, lambda: self._producer_learned(leader, epoch))

    def _producer_learned(self, leader: int, epoch: int) -> None:
        if epoch >= self.producer_view[1]:
            self.producer_view = (leader, epoch)

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
        """An acks=all Produce as ``ReplicaManager.append`` handles it (without the threads): a
        light append tried as the event loop does (``wait=False``: not made when the epoch
        checkpoint cannot be written in place at once), else, or then, as in a worker thread."""
        led = replica.manager.leading(TOPIC, 0)
        if not isinstance(led, Partition) or led.leader_epoch is None:
            self._answer(replica.node, record_id, -1, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            return
        leader_epoch = led.leader_epoch
        records = encode_batch([Record(0, self.clock.now_ms(), None, str(record_id).encode())])
        try:
            headers = led.log.validate_produce(records)
            append = functools.partial(led.append_as_leader, records, headers, leader_epoch=leader_epoch, acks_all=True)
            appended = append(wait=False) if led.log.append_is_light(len(records), headers) else None
            if appended is None:
                appended = append()
        except LanesError as exc:
            self._answer(replica.node, record_id, -1, exc.code)
            return
        if isinstance(appended, Verdict):  # a producer-state refusal (no producer ids here)
            self._answer(replica.node, record_id, -1, appended.error)
            return
        offset = appended.first_offset
        replica.pending.append(Pending(leader_epoch, offset + 1, self.now + PRODUCE_TIMEOUT_MS, record_id, offset))
        self._settle(replica)

    def _settle(self, replica: Replica) -> None:
        """Answer the acks=all appends whose outcome is known (in append order)."""
        partition = replica.partition
        pending = replica.pending
        while pending and partition is not None:
            waiting = pending[0]
            outcome = partition.acks_all_outcome(waiting.leader_epoch, waiting.required_offset)
            if outcome is None and not replica.manager.vouched(partition):
                outcome = ErrorCode.NOT_LEADER_OR_FOLLOWER
            if outcome is None and self.now >= waiting.deadline_ms:
                outcome = ErrorCode.REQUEST_TIMED_OUT
            if outcome is None:
                return  # the later ones wait too
            pending.popleft()
            self._answer(replica.node, waiting.record_id, waiting.offset, outcome)

    def _answer(self, node: int, record_id: int, offset: int, error: ErrorCode) -> None:
        def arrive() -> None:
            if error is ErrorCode.NONE:
                self.acked[record_id] = offset

        self.send(node, PRODUCER, arrive)

    def _consume(self) -> None:
        """Read the last records below the high-water mark of whoever leads, as a Fetch reads them."""
        for replica in self.replicas.values():
            partition = replica.partition
            if not replica.alive or partition is None or partition.leader_epoch is None:
                continue
            start = max(partition.log.log_start_offset, partition.log.high_watermark - 5)
            for offset, record_id in read_records(replica.manager, start).items():
                seen = self.read.setdefault(offset, record_id)
                if seen != record_id:
                    self.violations.append(f"offset {offset} was read as {seen}, then {record_id}")

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
        leader = self.controller.state().leader
        node = leader if at_leader and leader > 0 else self.rng.choice(REPLICAS)
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
            self.crash(replica)
            self.at(duration, lambda: self.restart(replica))

    def crash(self, replica: Replica) -> None:
        """The process dies: its memory is gone (nothing is closed or checkpointed); what it
        wrote is in the page cache, and its last checkpoints on disk."""
        replica.alive = False
        replica.pending.clear()  # its clients' connections break: nobody is answered

    def restart(self, replica: Replica) -> None:
        if replica.alive or self.replicas[replica.node] is not replica:
            return  # restarted already
        self.replicas[replica.node] = Replica(self, replica.node, replica.life + 1)

    # -----------------------------------------------------------------------------------------
    # the checkers

    def _watch(self) -> None:
        """After every event: no high-water mark moved back within an incarnation, one leader
        per epoch."""
        for replica in self.replicas.values():
            if not replica.alive:
                continue
            mark = replica.log.high_watermark
            if mark < replica.high_watermark_seen:
                self.violations.append(
                    f"replica {replica.node}: high-water mark moved back {replica.high_watermark_seen} -> {mark}"
                )
            replica.high_watermark_seen = mark
            epoch = replica.partition.leader_epoch if replica.partition is not None else None
            if epoch is not None:
                previous = self.leaders_by_epoch.setdefault(epoch, replica.node)
                if previous != replica.node:
                    self.violations.append(f"epoch {epoch} had leaders {previous} and {replica.node}")

    def check(self) -> list[str]:
        violations = list(self.violations)
        epoch = self.controller.state().leader_epoch
        leaders = [r for r in self.replicas.values() if r.partition is not None and r.partition.leader_epoch == epoch]
        if len(leaders) != 1:
            return [*violations, f"after settling, {len(leaders)} replicas lead epoch {epoch}"]
        leader = leaders[0]
        records = read_log(leader.log)
        for record_id, offset in sorted(self.acked.items()):
            if records.get(offset, (None, None))[0] != record_id:
                violations.append(
                    f"acknowledged record {record_id} at offset {offset} is gone (now {records.get(offset)})"
                )
                break
        for offset, record_id in sorted(self.read.items()):
            if records.get(offset, (None, None))[0] != record_id:
                violations.append(f"record {record_id} was read at offset {offset} and is gone")
                break
        mark = leader.log.high_watermark
        for replica in self.replicas.values():
            theirs = read_log(replica.log)
            common = min(mark, replica.log.log_end_offset)
            if any(theirs.get(offset) != records.get(offset) for offset in range(common)):
                violations.append(f"replica {replica.node} differs from leader {leader.node} below {common}")
        isr = sorted(self.controller.state().isr)
        if isr != list(REPLICAS):
            violations.append(f"after settling with every replica up, the ISR is {isr}")
        return violations


def read_records(manager: ReplicaManager, offset: int) -> dict[int, int]:
    """What a consumer's Fetch from ``offset`` returns now: offset -> record id."""
    request = broker_pb2.FetchRequest(
        topics=[
            broker_pb2.FetchTopic(
                topic=TOPIC,
                partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=offset, current_leader_epoch=-1)],
            )
        ]
    )
    fetch = ConsumerFetch(request, 1 << 20)
    fetch.read(manager.fetchable, 1 << 20, SharedReads())
    response = fetch.answer()[0].message()
    answered = response.topics[0].partitions[0]
    if error_code(answered.error.code) is not ErrorCode.NONE:
        return {}
    return {
        record.offset: int(record.value or b"-1")
        for batch in decode_batches(answered.records)
        for record in batch.records
        if record.offset >= offset
    }


def read_log(log: PartitionLog) -> dict[int, tuple[int, int]]:
    """The whole log: offset -> (record id, leader epoch)."""
    found: dict[int, tuple[int, int]] = {}
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        read = log.read(offset, 1 << 20)
        if not read.records:
            break
        for batch in decode_batches(read.records):
            for record in batch.records:
                found[record.offset] = (int(record.value or b"-1"), batch.header.partition_leader_epoch)
        offset = read.next_offset
    return found


@contextmanager
def world_of(seed: int) -> Iterator[World]:
    with tempfile.TemporaryDirectory(prefix="lanes-sim-", dir=TEMP_ROOT) as directory:
        world = World(seed, Path(directory))
        try:
            yield world
        finally:
            for log in world.logs:  # a crash left its incarnation's files open: thousands of seeds run
                log.close()


def run(seed: int) -> list[str]:
    """One seeded run: faults for FAULT_PHASE_MS, then heal, restart and settle; the violations."""
    with world_of(seed) as world:
        world.start()
        world.schedule_faults()
        world.run_until(FAULT_PHASE_MS)
        world.faults_on = False
        world.cuts.clear()
        for replica in list(world.replicas.values()):
            replica.paused_until = 0
            if not replica.alive:
                world.restart(replica)
        world.run_until(FAULT_PHASE_MS + SETTLE_MS)
        return world.check()
