"""A controller apart from its faces (Kafka's ``QuorumController``): the pure core on a Raft quorum.

Every controller is a voter of the quorum (``lanes.controller.quorum``) that replicates the
metadata log; the Raft leader is the **active controller**. Every change follows one path on the
active controller only (``write``): decide (``ControllerCore``, over the applied image), propose
the records to the quorum as one write, and complete once they are committed and applied to the
image (``MetadataImage``, applied on every controller in commit order, ``_apply_committed``).
Writes are serialised: each decides on the image every earlier write left, so uniqueness checks,
epochs and caps hold (a write that decided on a stale image could name a deleted topic, and its
record would stop every controller applying it). Reads answer from the applied image.

Around it: node sessions (``HeartbeatManager``), the active controller's duties
(``ActiveDuties``: creating the cluster, fencing silent nodes, preferred leaders), snapshots
(``SnapshotScheduler``), the metadata streams (``MetadataStream``) and the mutation quotas
(``MutationQuotas``). Owned by one asyncio event loop.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from prometheus_client.metrics_core import Metric

from lanes.clock import Clock
from lanes.controller.core import MAX_PARTITIONS, ControllerCore, ControllerDecision
from lanes.controller.duties import ActiveDuties
from lanes.controller.heartbeats import HeartbeatManager
from lanes.controller.metadata_log import MetadataLog
from lanes.controller.metadata_stream import MetadataStream
from lanes.controller.metrics import ControllerMetrics, QuorumView
from lanes.controller.mutation_quotas import MutationQuotas
from lanes.controller.quorum import Quorum
from lanes.controller.raft import Entry, SnapshotId
from lanes.controller.snapshots import SnapshotScheduler
from lanes.errors import ErrorCode, LanesError
from lanes.metadata.image import MetadataImage, NodeKind
from lanes.metadata.liveness import METADATA_KEEPALIVE_MS
from lanes.runtime.metrics import ServiceMetrics
from lanes.security.scram import ScramCredential
from lanes.topic_configs import MIN_SEGMENT_BYTES
from lanes.v1 import common_pb2, metadata_pb2

_log = logging.getLogger(__name__)
T = TypeVar("T")


class QuorumController:
    """One controller's engine; see the module docstring. ``start`` before serving, ``stop`` after."""

    def __init__(
        self,
        data_dir: Path,
        *,
        endpoint: common_pb2.Node,
        clock: Clock,
        rng: random.Random,
        voters: dict[int, str] | None = None,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 1000,
        default_partitions: int = 1,
        default_replication_factor: int = 1,
        keepalive_ms: int = METADATA_KEEPALIVE_MS,
        snapshot_every_records: int = 10_000,
        leader_imbalance_check_interval_ms: int = 300_000,
        leader_imbalance_per_broker_percentage: int = 10,
        offsets_topic_partitions: int = 50,
        max_partitions: int = MAX_PARTITIONS,
        min_segment_bytes: int = MIN_SEGMENT_BYTES,
        metrics: ControllerMetrics | None = None,
        bootstrap_users: Sequence[tuple[str, ScramCredential]] = (),
    ) -> None:
        self.endpoint = endpoint
        self.metrics = metrics or ControllerMetrics(ServiceMetrics("controller"))
        self.clock = clock
        self._metadata = MetadataLog(data_dir, clock)
        self.core = ControllerCore(
            self._metadata.load_snapshot(),
            rng=rng,
            new_id=lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            default_partitions=default_partitions,
            default_replication_factor=default_replication_factor,
            offsets_topic_partitions=offsets_topic_partitions,
            max_partitions=max_partitions,
            min_segment_bytes=min_segment_bytes,
        )
        self.heartbeats = HeartbeatManager(session_timeout_ms, heartbeat_interval_ms)
        self.mutation_quotas = MutationQuotas(lambda: clock.monotonic_ms() / 1000, self.metrics.mutations_throttled.inc)
        self._lock = asyncio.Lock()  # one write decides and commits at a time (module docstring)
        quorum_address = f"{endpoint.host}:{endpoint.internal_port or endpoint.port}"  # where nodes dial it
        self.quorum = Quorum(
            endpoint.node_id,
            voters or {endpoint.node_id: quorum_address},
            self._metadata,
            address=quorum_address,
            state_dir=data_dir,
            clock=clock,
            rng=rng,
            applied=self.image.last_offset + 1,
            on_committed=self._apply_committed,
            on_leadership=self._on_leadership,
            on_snapshot_installed=self._load_installed_snapshot,
        )
        self.stream = MetadataStream(
            self._metadata,
            lambda: self.image,
            lambda: self.active,
            self.quorum.not_leader_message,
            keepalive_s=keepalive_ms / 1000,
        )
        self.snapshots = SnapshotScheduler(
            self._metadata, self.quorum, lambda: self.image, every_records=snapshot_every_records
        )
        self.duties = ActiveDuties(
            self,
            leader_imbalance_check_interval_ms=leader_imbalance_check_interval_ms,
            leader_imbalance_per_broker_percentage=leader_imbalance_per_broker_percentage,
            bootstrap_users=bootstrap_users,
        )

    @property
    def image(self) -> MetadataImage:
        """The committed metadata as this controller applied it (the core's: one owner)."""
        return self.core.image

    @property
    def active(self) -> bool:
        """Whether this controller is the active one (leads the quorum, its state current)."""
        return self.quorum.leader_ready

    async def start(self) -> None:
        """Join the quorum; the active controller's duties start when this one wins."""
        self.metrics.service.add_snapshot(self._metrics_snapshot)
        await self.quorum.start()

    async def stop(self) -> None:
        """Stop acting as the active controller (resigning, so the others elect at once), leave
        the quorum, close the metadata log."""
        self.duties.stop()
        await self.quorum.resign()
        await self.quorum.stop()
        await self.snapshots.wait()
        self._metadata.close()

    def _on_leadership(self, leading: bool) -> None:
        """The quorum made this controller active (its state is current), or stopped it."""
        if not leading:
            _log.info("controller %d is no longer the active controller", self.endpoint.node_id)
            self.duties.stop()
            self.stream.notify()  # metadata streams end, their nodes follow the new one
            return
        _log.info("controller %d is the active controller (epoch %d)", self.endpoint.node_id, self.quorum.core.epoch)
        self.heartbeats.reset(self.live_nodes(), self.clock.monotonic_ms())  # fresh sessions
        self.duties.start()

    def live_nodes(self) -> list[tuple[NodeKind, int]]:
        """Every registered node that is not fenced, as (kind, id)."""
        brokers: list[tuple[NodeKind, int]] = [("broker", b.broker_id) for b in self.image.live_brokers()]
        return brokers + [("coordinator", c.coordinator_id) for c in self.image.live_coordinators()]

    def _apply_committed(self, entries: list[tuple[int, Entry]]) -> None:
        """Apply committed entries to the image, in order (every controller, active or not)."""
        applied: list[metadata_pb2.MetadataRecord] = []
        for offset, entry in entries:
            if offset <= self.image.last_offset:
                continue  # already in the snapshot the image was loaded from
            if offset != self.image.last_offset + 1:
                raise LanesError(f"committed entry {offset} does not follow the image's {self.image.last_offset}")
            record = metadata_pb2.MetadataRecord.FromString(entry.data)
            self.image.apply(offset, record)
            applied.append(record)
        self.metrics.committed(applied)
        self.snapshots.applied(len(applied))
        if applied:
            self.stream.notify()

    def _load_installed_snapshot(self, snapshot: SnapshotId) -> None:
        """The leader's snapshot replaced this follower's log: its state replaces the image. A
        failure raises (the driver stops the process: applying later entries to the old image
        would lose every record in between)."""
        image = self._metadata.load_snapshot()
        if image.last_offset + 1 != snapshot.end_offset:
            raise LanesError(f"the installed snapshot {snapshot} loaded as of offset {image.last_offset}")
        self.core.image = image
        self.snapshots.reset()
        self.stream.notify()

    async def write(self, decide: Callable[..., ControllerDecision]) -> ControllerDecision:
        """Decide (``decide()``, on the image every earlier write left) and have the quorum commit
        the decision's records as one write; the decision once they are applied.
        NotControllerError when this controller is not (or no longer) active. (``decide`` may
        bind loop variables as defaults: it is called with no arguments.)"""
        decision, _ = await self.write_with(lambda: (decide(), None))
        return decision

    async def write_with(self, decide: Callable[[], tuple[ControllerDecision, T]]) -> tuple[ControllerDecision, T]:
        """``write`` for a decision that comes with more to answer (an election's outcomes)."""
        async with self._lock:
            decision, more = decide()
            if decision.records:
                await self.quorum.propose([record.SerializeToString() for record in decision.records])
            return decision, more

    # -----------------------------------------------------------------------------------------
    # brokers and coordinators: registration and heartbeats

    async def register_node(
        self, kind: NodeKind, node_id: int, incarnation_id: str, cluster_id: str, endpoint: common_pb2.Node
    ) -> ControllerDecision:
        """Register a node (its new epoch is then in the image); a registered node's session starts."""
        node = (kind, node_id)
        decision = await self.write(
            lambda: self.core.register(
                kind,
                node_id,
                incarnation_id,
                cluster_id=cluster_id,
                host=endpoint.host,
                port=endpoint.port,
                rack=endpoint.rack,
                internal_port=endpoint.internal_port,
                certificate_port=endpoint.certificate_port,
                kafka_port=endpoint.kafka_port,
                previous_session_alive=self.heartbeats.alive(node, self.clock.monotonic_ms()),
            )
        )
        if decision.error is ErrorCode.NONE:
            self.heartbeats.touch(node, self.clock.monotonic_ms())
        return decision

    async def node_heartbeat(
        self, kind: NodeKind, node_id: int, epoch: int, applied_offset: int, want_shut_down: bool
    ) -> ControllerDecision:
        """A heartbeat, or a request to shut down; a live node's session is renewed."""
        decision = await self.write(
            lambda: (
                self.core.shut_down(kind, node_id, epoch)
                if want_shut_down
                else self.core.heartbeat(kind, node_id, epoch, applied_offset)
            )
        )
        if decision.error is ErrorCode.NONE and (kind == "broker" or not want_shut_down):
            self.heartbeats.touch((kind, node_id), self.clock.monotonic_ms())
        return decision

    async def _metrics_snapshot(self) -> list[Metric]:
        view = QuorumView(self.active, self.quorum.describe(), self.quorum.leader_changes, self.quorum.last_election_ms)
        return self.metrics.quorum_gauges(view) + (self.metrics.gauges(self.image) if self.active else [])
