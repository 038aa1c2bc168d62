"""The Controller gRPC service: the shell around the pure core, on a Raft quorum.

Every controller is a voter of the quorum (``lanes.controller.quorum``) that replicates the
metadata log; the Raft leader is the **active controller**. Every mutating request follows one
path, serialised by one lock, on the active controller only: decide (``ControllerCore``), propose
the records to the quorum as one write, wait until they are committed and applied to the image
(``MetadataImage``, applied on every controller in commit order), wake the watchers, answer.
Reads answer from the applied state. A controller that is not active (or not yet caught up
after winning) refuses every Controller RPC with NOT_CONTROLLER naming the active one
(``ActiveControllerGate``), and ends the metadata streams it was serving. Owned by one asyncio
event loop.

Controller mutation quotas (KIP-599): a user's topic creations, partition additions and
deletions are counted in partitions per second (``controller_mutation_rate``) on the active
controller, in a token bucket per user (``lanes.security.quotas.MutationBuckets``): a topic of a
user whose bucket is below zero is refused with THROTTLING_QUOTA_EXCEEDED and the time until it
refills, one whose bucket is not is accepted even if it takes the bucket below zero (Kafka's
bursts). Validate-only requests count nothing; a new active controller starts with full buckets.

Liveness: brokers and coordinators heartbeat; one that is silent for ``session_timeout_ms`` is
fenced (its leaderships move). A controller that becomes active gives every known node a fresh
session (it did not see their heartbeats), as a restarted single controller did.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from prometheus_client.metrics_core import Metric

from lanes.clock import Clock
from lanes.controller.core import MAX_PARTITIONS, ConfigOp, ControllerCore, ControllerDecision, NewTopic
from lanes.controller.metadata_log import MetadataLog
from lanes.controller.metrics import ControllerMetrics, QuorumView
from lanes.controller.quorum import Quorum
from lanes.controller.raft import Entry, SnapshotId, Voter
from lanes.errors import ErrorCode, LanesError, NotControllerError
from lanes.metadata.image import (
    CONTROLLER_MUTATION_RATE,
    MetadataImage,
    NodeKind,
    PartitionImage,
    ProducerIdBlock,
    TopicImage,
)
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.rpc.controllers import ACTIVE_CONTROLLER_KEY, NOT_CONTROLLER_DETAILS
from lanes.rpc.tls import check_claim, node_identity
from lanes.rpc.wire import ServicerContext, topic_partitions_from_wire, wire_error
from lanes.runtime.broadcast import Broadcast
from lanes.runtime.guard import Listener, caller_quota, on_certificate_listener
from lanes.runtime.interceptors import CallInterceptor, Wrappers
from lanes.runtime.loop_time import service_task
from lanes.runtime.metrics import ServiceMetrics
from lanes.security.acls import AclBinding
from lanes.security.quota_entities import QuotaEntity
from lanes.security.quotas import MutationBuckets
from lanes.security.scram import ScramCredential
from lanes.topic_configs import MIN_SEGMENT_BYTES, TOPIC_CONFIGS
from lanes.v1 import common_pb2, controller_pb2, controller_pb2_grpc, metadata_pb2

_log = logging.getLogger(__name__)
#: how long AddController / RemoveController wait for the change to commit
QUORUM_CHANGE_TIMEOUT_S = 30.0
_OPS = {
    controller_pb2.ALTER_CONFIG_OP_SET: "set",
    controller_pb2.ALTER_CONFIG_OP_DELETE: "delete",
    controller_pb2.ALTER_CONFIG_OP_APPEND: "append",
    controller_pb2.ALTER_CONFIG_OP_SUBTRACT: "subtract",
}


def _new_partitions(decision: ControllerDecision) -> int:
    """Partitions a topic creation or partition addition makes."""
    return sum(1 for record in decision.records if record.WhichOneof("record") == "partition")


class ControllerService(controller_pb2_grpc.ControllerServicer):
    """Cluster metadata over gRPC. Call ``start`` before serving and ``stop`` after."""

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
        keepalive_ms: int = 5000,
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
        self._bootstrap_users = list(bootstrap_users)
        self.metrics = metrics or ControllerMetrics(ServiceMetrics("controller"))
        self._clock = clock
        self._mutations = MutationBuckets()  # partitions created, added, deleted per user (KIP-599)
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
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self._keepalive_s = keepalive_ms / 1000
        self._lock = asyncio.Lock()
        self._changed = Broadcast()  # the metadata log grew
        self._last_heartbeat_ms: dict[tuple[NodeKind, int], int] = {}  # on the monotonic clock
        self._fencing: asyncio.Task[None] | None = None
        self._rebalancing: asyncio.Task[None] | None = None
        self.leader_imbalance_check_interval_ms = leader_imbalance_check_interval_ms
        self.leader_imbalance_per_broker_percentage = leader_imbalance_per_broker_percentage
        self.snapshot_every_records = snapshot_every_records
        self._records_since_snapshot = 0
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
        self._creating: asyncio.Task[None] | None = None
        self._snapshotting: asyncio.Task[None] | None = None

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
        self._stop_duties()
        await self.quorum.resign()
        await self.quorum.stop()
        if self._snapshotting is not None:
            await self._snapshotting
        self._metadata.close()

    def _on_leadership(self, leading: bool) -> None:
        """The quorum made this controller active (its state is current), or stopped it."""
        if not leading:
            _log.info("controller %d is no longer the active controller", self.endpoint.node_id)
            self._stop_duties()
            self._changed.notify_all()  # metadata streams end, their brokers follow the new one
            return
        _log.info("controller %d is the active controller (epoch %d)", self.endpoint.node_id, self.quorum.core.epoch)
        now = self._clock.monotonic_ms()
        self._last_heartbeat_ms = {node: now for node in self._registered_nodes()}  # fresh sessions
        self._creating = service_task(self._create_cluster())
        self._fencing = service_task(self._fence_silent_nodes())
        if self.leader_imbalance_check_interval_ms > 0:
            self._rebalancing = service_task(self._rebalance_leaders())

    def _stop_duties(self) -> None:
        for task in (self._creating, self._fencing, self._rebalancing):
            if task is not None:
                task.cancel()
        self._creating = self._fencing = self._rebalancing = None

    async def _create_cluster(self) -> None:
        """The first active controller of a new quorum creates the cluster (a no-op after that)
        with its bootstrap users; every active controller records where it listens."""
        with contextlib.suppress(NotControllerError):  # leadership moved on: the next one does it
            await self._decide_and_commit(lambda: self.core.create_cluster(self._clock.now_ms()))
            await self._decide_and_commit(lambda: self.core.bootstrap_users(self._bootstrap_users))
            await self._decide_and_commit(lambda: self.core.register_controller(self.endpoint))

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
        self._records_since_snapshot += len(applied)
        if self._records_since_snapshot >= self.snapshot_every_records and self._snapshotting is None:
            self._records_since_snapshot = 0
            self._snapshotting = service_task(self._snapshot())
        if applied:
            self._changed.notify_all()

    def _load_installed_snapshot(self, snapshot: SnapshotId) -> None:
        """The leader's snapshot replaced this follower's log: its state replaces the image. A
        failure raises (the driver stops the process: applying later entries to the old image
        would lose every record in between)."""
        image = self._metadata.load_snapshot()
        if image.last_offset + 1 != snapshot.end_offset:
            raise LanesError(f"the installed snapshot {snapshot} loaded as of offset {image.last_offset}")
        self.core.image = image
        self._records_since_snapshot = 0
        self._changed.notify_all()

    async def _snapshot(self) -> None:
        """Snapshot the image as it is now (its records taken on the loop, the file written in a
        thread: the disk never stalls the quorum), then drop the log below the snapshot before.
        Best effort: without it the log just keeps more."""
        records, end_offset = self.image.to_records(), self.image.last_offset + 1
        try:
            header = self._metadata.snapshot_header(end_offset, self.quorum.core.voters_at(end_offset))
            path = await asyncio.to_thread(self._metadata.write_snapshot, header, records)
            if self._metadata.start_offset < end_offset <= self._metadata.end_offset:
                self._metadata.adopt_snapshot(header, path, self.quorum.core.snapshots_in_transfer())
            else:  # the leader's snapshot replaced the log meanwhile
                path.unlink(missing_ok=True)
        except (OSError, LanesError) as exc:
            _log.warning("metadata snapshot at offset %d not written: %s", end_offset - 1, exc)
        finally:
            self._snapshotting = None

    async def _commit(self, decision: ControllerDecision) -> int:
        """Have the quorum commit the decision's records as one write; return the first offset
        once they are applied. NotControllerError when this controller is not (or no longer) active."""
        if not decision.records:
            return self._metadata.end_offset
        return await self.quorum.propose([record.SerializeToString() for record in decision.records])

    async def _metrics_snapshot(self) -> list[Metric]:
        view = QuorumView(self.active, self.quorum.describe(), self.quorum.leader_changes, self.quorum.last_election_ms)
        return self.metrics.quorum_gauges(view) + (self.metrics.gauges(self.image) if self.active else [])

    async def _decide_and_commit(self, decide) -> ControllerDecision:  # type: ignore[no-untyped-def]
        async with self._lock:
            decision: ControllerDecision = decide()
            await self._commit(decision)
            return decision

    def _registered_nodes(self) -> list[tuple[NodeKind, int]]:
        """Every registered node that is not fenced, as (kind, id)."""
        brokers: list[tuple[NodeKind, int]] = [("broker", b.broker_id) for b in self.image.live_brokers()]
        return brokers + [("coordinator", c.coordinator_id) for c in self.image.live_coordinators()]

    async def _fence_silent_nodes(self) -> None:
        """Fence brokers and coordinators whose session expired; create ``__consumer_offsets``
        once it can be (a coordinator and enough live brokers)."""
        while True:
            await asyncio.sleep(self.heartbeat_interval_ms / 2000)
            now = self._clock.monotonic_ms()
            for kind, node_id in self._registered_nodes():
                silent_ms = now - self._last_heartbeat_ms.get((kind, node_id), now)
                if silent_ms > self.session_timeout_ms:
                    _log.info("fencing %s %d: no heartbeat for %d ms", kind, node_id, silent_ms)
                    await self._decide_and_commit(
                        lambda kind=kind, node_id=node_id: (
                            self.core.fence(kind, node_id, "session timeout")
                            if not self._session_alive(kind, node_id)  # it may have come back meanwhile
                            else ControllerDecision()
                        )
                    )
            decision = await self._decide_and_commit(self.core.ensure_offsets_topic)
            if decision.records:
                _log.info("created %s with %d shards", CONSUMER_OFFSETS_TOPIC, self.core.offsets_topic_partitions)

    async def _rebalance_leaders(self) -> None:
        """Every ``leader_imbalance_check_interval_ms``, give leadership back to preferred replicas
        where a broker leads too few of its preferred partitions (brokers that came back)."""
        while True:
            await asyncio.sleep(self.leader_imbalance_check_interval_ms / 1000)
            async with self._lock:
                wanted = self.core.imbalanced_partitions(self.leader_imbalance_per_broker_percentage)
                if wanted:
                    decision, _ = self.core.elect_preferred_leaders(wanted)
                    _log.info("preferred leader election for %d partitions", len(decision.records))
                    await self._commit(decision)

    def _session_alive(self, kind: NodeKind, node_id: int) -> bool:
        last = self._last_heartbeat_ms.get((kind, node_id))
        return last is not None and self._clock.monotonic_ms() - last <= self.session_timeout_ms

    # -----------------------------------------------------------------------------------------
    # brokers and coordinators: registration and heartbeats (the RPCs differ only in names)

    async def _register(
        self, kind: NodeKind, node_id: int, incarnation_id: str, cluster_id: str, endpoint: common_pb2.Node
    ) -> ControllerDecision:
        """Register a node (its new epoch is then in the image)."""
        decision = await self._decide_and_commit(
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
                previous_session_alive=self._session_alive(kind, node_id),
            )
        )
        if decision.error is ErrorCode.NONE:
            self._last_heartbeat_ms[(kind, node_id)] = self._clock.monotonic_ms()
        return decision

    async def _heartbeat(
        self, kind: NodeKind, node_id: int, epoch: int, applied_offset: int, want_shut_down: bool
    ) -> ControllerDecision:
        """A heartbeat, or a request to shut down; a live node's session is renewed."""
        decision = await self._decide_and_commit(
            lambda: (
                self.core.shut_down(kind, node_id, epoch)
                if want_shut_down
                else self.core.heartbeat(kind, node_id, epoch, applied_offset)
            )
        )
        if decision.error is ErrorCode.NONE and (kind == "broker" or not want_shut_down):
            self._last_heartbeat_ms[(kind, node_id)] = self._clock.monotonic_ms()
        return decision

    async def RegisterBroker(  # noqa: N802 - gRPC method names
        self, request: controller_pb2.RegisterBrokerRequest, context: ServicerContext
    ) -> controller_pb2.RegisterBrokerResponse:
        await check_claim(context, node_identity("broker", request.broker_id))
        decision = await self._register(
            "broker", request.broker_id, request.incarnation_id, request.cluster_id, request.endpoint
        )
        if decision.error is not ErrorCode.NONE:
            return controller_pb2.RegisterBrokerResponse(error=wire_error(decision.error, decision.message))
        return controller_pb2.RegisterBrokerResponse(
            error=wire_error(ErrorCode.NONE),
            broker_epoch=self.image.brokers[request.broker_id].epoch,
            cluster_id=self.image.cluster_id,
        )

    async def BrokerHeartbeat(  # noqa: N802
        self, request: controller_pb2.BrokerHeartbeatRequest, context: ServicerContext
    ) -> controller_pb2.BrokerHeartbeatResponse:
        await check_claim(context, node_identity("broker", request.broker_id))
        decision = await self._heartbeat(
            "broker",
            request.broker_id,
            request.broker_epoch,
            request.current_metadata_offset,
            request.want_shut_down,
        )
        if decision.error is not ErrorCode.NONE:
            return controller_pb2.BrokerHeartbeatResponse(error=wire_error(decision.error, decision.message))
        if decision.records and not request.want_shut_down:  # unfenced: __consumer_offsets may be due
            await self._decide_and_commit(self.core.ensure_offsets_topic)
        broker = self.image.brokers[request.broker_id]
        return controller_pb2.BrokerHeartbeatResponse(
            error=wire_error(ErrorCode.NONE),
            is_caught_up=request.current_metadata_offset >= broker.epoch,
            is_fenced=broker.fenced,
            should_shut_down=request.want_shut_down and broker.fenced,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            session_timeout_ms=self.session_timeout_ms,
        )

    async def RegisterCoordinator(  # noqa: N802
        self, request: controller_pb2.RegisterCoordinatorRequest, context: ServicerContext
    ) -> controller_pb2.RegisterCoordinatorResponse:
        await check_claim(context, node_identity("coordinator", request.coordinator_id))
        decision = await self._register(
            "coordinator", request.coordinator_id, request.incarnation_id, request.cluster_id, request.endpoint
        )
        if decision.error is not ErrorCode.NONE:
            return controller_pb2.RegisterCoordinatorResponse(error=wire_error(decision.error, decision.message))
        await self._decide_and_commit(self.core.ensure_offsets_topic)
        return controller_pb2.RegisterCoordinatorResponse(
            error=wire_error(ErrorCode.NONE),
            coordinator_epoch=self.image.coordinators[request.coordinator_id].epoch,
            cluster_id=self.image.cluster_id,
        )

    async def CoordinatorHeartbeat(  # noqa: N802
        self, request: controller_pb2.CoordinatorHeartbeatRequest, context: ServicerContext
    ) -> controller_pb2.CoordinatorHeartbeatResponse:
        await check_claim(context, node_identity("coordinator", request.coordinator_id))
        decision = await self._heartbeat(
            "coordinator", request.coordinator_id, request.coordinator_epoch, -1, request.want_shut_down
        )
        if decision.error is not ErrorCode.NONE:
            return controller_pb2.CoordinatorHeartbeatResponse(error=wire_error(decision.error, decision.message))
        coordinator = self.image.coordinators[request.coordinator_id]
        return controller_pb2.CoordinatorHeartbeatResponse(
            error=wire_error(ErrorCode.NONE),
            is_fenced=coordinator.fenced,
            should_shut_down=request.want_shut_down and coordinator.fenced,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            session_timeout_ms=self.session_timeout_ms,
        )

    async def AddController(  # noqa: N802
        self, request: controller_pb2.AddControllerRequest, context: ServicerContext
    ) -> controller_pb2.ChangeControllersResponse:
        """Make a caught-up observer a voter (KIP-853's AddRaftVoter); answers once committed."""
        node = request.controller
        if not node.host or not 0 < node.port < 65536:
            return self._quorum_change_refused("give the controller's host and port")
        return await self._change_controllers(
            add=Voter(node.node_id, f"{node.host}:{node.internal_port or node.port}")  # where voters dial it
        )

    async def RemoveController(  # noqa: N802
        self, request: controller_pb2.RemoveControllerRequest, context: ServicerContext
    ) -> controller_pb2.ChangeControllersResponse:
        """Remove a voter (KIP-853's RemoveRaftVoter); answers once committed. Removing the active
        controller makes it resign after the commit (clients then follow the next one)."""
        return await self._change_controllers(remove=request.node_id)

    async def _change_controllers(
        self, *, add: Voter | None = None, remove: int | None = None
    ) -> controller_pb2.ChangeControllersResponse:
        try:
            await asyncio.wait_for(self.quorum.change_voters(add=add, remove=remove), QUORUM_CHANGE_TIMEOUT_S)
        except ValueError as exc:
            return self._quorum_change_refused(str(exc))
        except TimeoutError:
            return controller_pb2.ChangeControllersResponse(
                error=wire_error(ErrorCode.REQUEST_TIMED_OUT, "the change was not committed in time (outcome unknown)"),
                quorum=self.quorum.describe(),
            )
        return controller_pb2.ChangeControllersResponse(quorum=self.quorum.describe())

    def _quorum_change_refused(self, why: str) -> controller_pb2.ChangeControllersResponse:
        return controller_pb2.ChangeControllersResponse(
            error=wire_error(ErrorCode.INVALID_REQUEST, why), quorum=self.quorum.describe()
        )

    async def AllocateProducerIds(  # noqa: N802
        self, request: controller_pb2.AllocateProducerIdsRequest, context: ServicerContext
    ) -> controller_pb2.AllocateProducerIdsResponse:
        await check_claim(context, node_identity("broker", request.broker_id))
        async with self._lock:
            decision = self.core.allocate_producer_ids(request.broker_id, request.broker_epoch)
            await self._commit(decision)
        block = decision.producer_ids or ProducerIdBlock(-1, 0)
        return controller_pb2.AllocateProducerIdsResponse(
            error=wire_error(decision.error, decision.message),
            producer_id_start=block.first_id,
            producer_id_len=block.size,
        )

    # -----------------------------------------------------------------------------------------
    # metadata stream

    async def WatchMetadata(  # noqa: N802
        self, request: controller_pb2.WatchMetadataRequest, context: ServicerContext
    ) -> AsyncIterator[controller_pb2.MetadataUpdate]:
        """The committed metadata log from ``from_offset`` (a snapshot first when the node has
        nothing or asks for what is gone), then every change as it commits, with keepalives.
        Each update names the epoch of its last entry; the first also says which epoch this
        log holds at the node's ``applied_offset``, so the node refuses another history."""
        next_offset = request.from_offset
        first = True
        while True:
            ticket = self._changed.ticket()
            if not self.active:
                raise NotControllerError(self.quorum.not_leader_message())
            if next_offset < 0 or next_offset < self._metadata.start_offset or next_offset > self.image.last_offset + 1:
                # the node has nothing, asks for what is gone, or fell behind a trimmed log while
                # it streamed: the whole image instead
                at = self.image.last_offset
                yield controller_pb2.MetadataUpdate(
                    snapshot=True,
                    base_offset=at,
                    records=self.image.to_records(),
                    next_offset=at + 1,
                    log_end_offset=self._metadata.end_offset,
                    last_epoch=self._epoch_at(at),
                    applied_offset_epoch=self._epoch_at(request.applied_offset) if first else -1,
                )
                next_offset, first = at + 1, False
                continue
            applied_end = self.image.last_offset + 1
            if next_offset < applied_end:
                chunk = [(o, r) for o, r in self._metadata.read(next_offset) if o < applied_end]
                if chunk:
                    yield controller_pb2.MetadataUpdate(
                        base_offset=chunk[0][0],
                        records=[r for _, r in chunk],
                        next_offset=chunk[-1][0] + 1,
                        log_end_offset=self._metadata.end_offset,
                        last_epoch=self._epoch_at(chunk[-1][0]),
                        applied_offset_epoch=self._epoch_at(request.applied_offset) if first else -1,
                    )
                    next_offset, first = chunk[-1][0] + 1, False
                    continue
            if first:  # nothing to send yet: the node still learns whether its history is this one
                yield controller_pb2.MetadataUpdate(
                    next_offset=next_offset,
                    log_end_offset=self._metadata.end_offset,
                    last_epoch=self._epoch_at(next_offset - 1),
                    applied_offset_epoch=self._epoch_at(request.applied_offset),
                )
                first = False
                continue
            if await self._changed.wait(ticket, self._keepalive_s):
                continue
            yield controller_pb2.MetadataUpdate(
                next_offset=next_offset,
                log_end_offset=self._metadata.end_offset,
                last_epoch=self._epoch_at(next_offset - 1),
            )

    def _epoch_at(self, offset: int) -> int:
        """The epoch of the committed (applied) entry at ``offset``; -1 when there is none."""
        if offset < 0 or offset > self.image.last_offset:
            return -1
        return self._metadata.epoch_at(offset)

    # -----------------------------------------------------------------------------------------
    # topics

    async def CreateTopics(  # noqa: N802
        self, request: controller_pb2.CreateTopicsRequest, context: ServicerContext
    ) -> controller_pb2.CreateTopicsResponse:
        results = []
        limited, throttle_ms = caller_quota(self.image, CONTROLLER_MUTATION_RATE), 0
        for topic in request.topics:
            new = NewTopic(
                name=topic.name,
                num_partitions=None if topic.num_partitions == -1 else topic.num_partitions,
                replication_factor=None if topic.replication_factor == -1 else topic.replication_factor,
                assignments=tuple(tuple(a.broker_ids) for a in sorted(topic.assignments, key=lambda a: a.partition)),
                configs=tuple((c.name, c.value) for c in topic.configs),
            )
            decision = await self._decide_and_commit(
                lambda new=new: self._charged(
                    limited, self.core.create_topic(new, validate_only=request.validate_only), _new_partitions
                )
            )
            throttle_ms = max(throttle_ms, self._throttle_ms(limited, decision))
            result = controller_pb2.CreatableTopicResult(
                name=topic.name, error=wire_error(decision.error, decision.message)
            )
            created = self.image.topic(topic.name)
            if decision.error is ErrorCode.NONE and created is not None and not request.validate_only:
                result.topic_id = created.topic_id
                result.num_partitions = len(created.partitions)
                result.replication_factor = len(created.partitions[0].replicas)
                result.configs.extend(self._config_entries(topic.name, ()))
            results.append(result)
        return controller_pb2.CreateTopicsResponse(topics=results, throttle_time_ms=throttle_ms)

    async def DeleteTopics(  # noqa: N802
        self, request: controller_pb2.DeleteTopicsRequest, context: ServicerContext
    ) -> controller_pb2.DeleteTopicsResponse:
        names = list(request.names) + [
            self.image.topics[topic_id].name if topic_id in self.image.topics else f"<unknown id {topic_id}>"
            for topic_id in request.topic_ids
        ]
        results = []
        limited, throttle_ms = caller_quota(self.image, CONTROLLER_MUTATION_RATE), 0
        for name in names:
            topic = self.image.topic(name)
            decision = await self._decide_and_commit(
                lambda name=name: self._charged(limited, self.core.delete_topic(name), self._partitions_of(name))
            )
            throttle_ms = max(throttle_ms, self._throttle_ms(limited, decision))
            results.append(
                controller_pb2.DeletableTopicResult(
                    name=name,
                    topic_id=topic.topic_id if topic else "",
                    error=wire_error(decision.error, decision.message),
                )
            )
        return controller_pb2.DeleteTopicsResponse(topics=results, throttle_time_ms=throttle_ms)

    async def CreatePartitions(  # noqa: N802
        self, request: controller_pb2.CreatePartitionsRequest, context: ServicerContext
    ) -> controller_pb2.CreatePartitionsResponse:
        results = []
        limited, throttle_ms = caller_quota(self.image, CONTROLLER_MUTATION_RATE), 0
        for topic in request.topics:
            assignments = [tuple(a.broker_ids) for a in topic.assignments]
            decision = await self._decide_and_commit(
                lambda topic=topic, assignments=assignments: self._charged(
                    limited,
                    self.core.create_partitions(
                        topic.name, topic.count, assignments, validate_only=request.validate_only
                    ),
                    _new_partitions,
                )
            )
            throttle_ms = max(throttle_ms, self._throttle_ms(limited, decision))
            results.append(
                controller_pb2.CreatePartitionsTopicResult(
                    name=topic.name, error=wire_error(decision.error, decision.message)
                )
            )
        return controller_pb2.CreatePartitionsResponse(topics=results, throttle_time_ms=throttle_ms)

    def _partitions_of(self, name: str) -> Callable[[ControllerDecision], int]:
        """How many partitions deleting topic ``name`` removes (read when the decision is made)."""
        return lambda decision: len(topic.partitions) if (topic := self.image.topic(name)) is not None else 0

    def _charged(
        self,
        limited: tuple[QuotaEntity, float] | None,
        decision: ControllerDecision,
        partitions: Callable[[ControllerDecision], int],
    ) -> ControllerDecision:
        """A topic change under a controller mutation quota (KIP-599), decided under the lock that
        serialises decisions, so concurrent requests cannot all pass one check: a change the core
        accepted, of ``partitions(decision)`` partitions, is refused while the user's bucket is
        below zero (THROTTLING_QUOTA_EXCEEDED), else charged to it. Refused and validate-only
        changes (no records) are neither."""
        mutated = partitions(decision) if decision.error is ErrorCode.NONE and decision.records else 0
        if limited is None or not mutated:
            return decision
        who, quota = limited
        now_s = self._clock.monotonic_ms() / 1000
        if owed_ms := self._mutations.owed_ms(who, quota, now_s):
            self.metrics.mutations_throttled.inc()
            return ControllerDecision.refuse(
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"the controller mutation quota of {who} is used up: retry in {owed_ms} ms",
            )
        self._mutations.record(who, mutated, quota, now_s)
        return decision

    def _throttle_ms(self, limited: tuple[QuotaEntity, float] | None, decision: ControllerDecision) -> int:
        """``throttle_time_ms`` for a change refused for the quota (0 for any other: as Kafka's
        strict quota, an accepted change says nothing of the debt it left)."""
        if limited is None or decision.error is not ErrorCode.THROTTLING_QUOTA_EXCEEDED:
            return 0
        who, quota = limited
        return self._mutations.owed_ms(who, quota, self._clock.monotonic_ms() / 1000)

    async def DescribeTopics(  # noqa: N802
        self, request: controller_pb2.DescribeTopicsRequest, context: ServicerContext
    ) -> controller_pb2.DescribeTopicsResponse:
        if request.names:
            wanted = list(dict.fromkeys(request.names))  # a name given again is answered once (issue #23)
        else:
            wanted = sorted(t.name for t in self.image.topics.values() if request.include_internal or not t.internal)
        descriptions = []
        for name in wanted:
            topic = self.image.topic(name)
            if topic is None:
                descriptions.append(
                    controller_pb2.TopicDescription(
                        name=name,
                        error=wire_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"),
                    )
                )
                continue
            descriptions.append(self._describe(topic))
        return controller_pb2.DescribeTopicsResponse(topics=descriptions, metadata_offset=self.image.last_offset)

    def _describe(self, topic: TopicImage) -> controller_pb2.TopicDescription:
        fenced = {b.broker_id for b in self.image.brokers.values() if b.fenced}
        return controller_pb2.TopicDescription(
            name=topic.name,
            topic_id=topic.topic_id,
            error=wire_error(ErrorCode.NONE),
            is_internal=topic.internal,
            partitions=[self._describe_partition(p, fenced) for _, p in sorted(topic.partitions.items())],
        )

    @staticmethod
    def _describe_partition(partition: PartitionImage, fenced: set[int]) -> controller_pb2.PartitionDescription:
        return controller_pb2.PartitionDescription(
            partition=partition.partition,
            leader_id=partition.leader,
            leader_epoch=partition.leader_epoch,
            partition_epoch=partition.partition_epoch,
            replicas=partition.replicas,
            isr=partition.isr,
            offline_replicas=[b for b in partition.replicas if b in fenced],
        )

    async def DescribeCluster(  # noqa: N802
        self, request: controller_pb2.DescribeClusterRequest, context: ServicerContext
    ) -> controller_pb2.DescribeClusterResponse:
        leaders: dict[int, int] = {}
        replicas: dict[int, int] = {}
        for topic in self.image.topics.values():
            for partition in topic.partitions.values():
                leaders[partition.leader] = leaders.get(partition.leader, 0) + 1
                for broker_id in partition.replicas:
                    replicas[broker_id] = replicas.get(broker_id, 0) + 1
        brokers = [
            controller_pb2.BrokerDescription(
                endpoint=common_pb2.Node(
                    node_id=b.broker_id, host=b.host, port=b.client_port(on_certificate_listener()), rack=b.rack
                ),
                broker_epoch=b.epoch,
                fenced=b.fenced,
                leader_count=leaders.get(b.broker_id, 0),
                replica_count=replicas.get(b.broker_id, 0),
            )
            for _, b in sorted(self.image.brokers.items())
            if request.include_fenced or not b.fenced
        ]
        shards: dict[int, list[int]] = {}
        for shard, owner in sorted(self.image.shards.items()):
            shards.setdefault(owner.coordinator_id, []).append(shard)
        coordinators = [
            controller_pb2.CoordinatorDescription(
                endpoint=common_pb2.Node(
                    node_id=c.coordinator_id, host=c.host, port=c.client_port(on_certificate_listener())
                ),
                coordinator_epoch=c.epoch,
                fenced=c.fenced,
                shards=shards.get(c.coordinator_id, []),
            )
            for _, c in sorted(self.image.coordinators.items())
            if request.include_fenced or not c.fenced
        ]
        return controller_pb2.DescribeClusterResponse(
            error=wire_error(ErrorCode.NONE),
            cluster_id=self.image.cluster_id,
            controller=self.endpoint,
            brokers=brokers,
            coordinators=coordinators,
            metadata_offset=self.image.last_offset,
            quorum=self.quorum.describe(),
        )

    # -----------------------------------------------------------------------------------------
    # configs

    async def AlterConfigs(  # noqa: N802
        self, request: controller_pb2.AlterConfigsRequest, context: ServicerContext
    ) -> controller_pb2.AlterConfigsResponse:
        results = []
        for resource in request.resources:
            if resource.resource_type != common_pb2.CONFIG_RESOURCE_TYPE_TOPIC:
                decision = ControllerDecision.refuse(
                    ErrorCode.INVALID_REQUEST, "only topic configs can be altered so far"
                )
            else:
                ops = [
                    ConfigOp(c.name, _OPS.get(c.op, "unknown"), c.value if c.HasField("value") else None)
                    for c in resource.configs
                ]
                decision = await self._decide_and_commit(
                    lambda resource=resource, ops=ops: self.core.alter_topic_configs(
                        resource.resource_name, ops, validate_only=request.validate_only
                    )
                )
            results.append(
                controller_pb2.AlterConfigsResourceResult(
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    error=wire_error(decision.error, decision.message),
                )
            )
        return controller_pb2.AlterConfigsResponse(results=results)

    async def DescribeConfigs(  # noqa: N802
        self, request: controller_pb2.DescribeConfigsRequest, context: ServicerContext
    ) -> controller_pb2.DescribeConfigsResponse:
        results = []
        for resource in request.resources:
            result = controller_pb2.DescribeConfigsResult(
                resource_type=resource.resource_type, resource_name=resource.resource_name
            )
            if resource.resource_type != common_pb2.CONFIG_RESOURCE_TYPE_TOPIC:
                result.error.CopyFrom(
                    wire_error(ErrorCode.INVALID_REQUEST, "only topic configs can be described so far")
                )
            elif self.image.topic(resource.resource_name) is None:
                result.error.CopyFrom(
                    wire_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {resource.resource_name!r} does not exist")
                )
            else:
                result.error.CopyFrom(wire_error(ErrorCode.NONE))
                result.configs.extend(
                    self._config_entries(resource.resource_name, resource.names, request.include_documentation)
                )
            results.append(result)
        return controller_pb2.DescribeConfigsResponse(results=results)

    def _config_entries(
        self, topic: str, names: object, include_documentation: bool = False
    ) -> list[common_pb2.ConfigEntry]:
        overrides = self.image.topic_configs(topic)
        wanted = list(names) if names else sorted(TOPIC_CONFIGS)  # type: ignore[call-overload]
        entries = []
        for name in wanted:
            definition = TOPIC_CONFIGS.get(name)
            if definition is None:
                continue
            overridden = name in overrides
            entries.append(
                common_pb2.ConfigEntry(
                    name=name,
                    value=overrides[name] if overridden else definition.render(definition.default),
                    source=common_pb2.CONFIG_SOURCE_DYNAMIC_RESOURCE
                    if overridden
                    else common_pb2.CONFIG_SOURCE_DEFAULT,
                    documentation=definition.doc if include_documentation else "",
                )
            )
        return entries

    # -----------------------------------------------------------------------------------------
    # leadership

    async def AlterPartition(  # noqa: N802
        self, request: controller_pb2.AlterPartitionRequest, context: ServicerContext
    ) -> controller_pb2.AlterPartitionResponse:
        await check_claim(context, node_identity("broker", request.broker_id))
        topics = []
        for topic in request.topics:
            partitions = []
            for proposal in topic.partitions:
                decision = await self._decide_and_commit(
                    lambda topic=topic, proposal=proposal: self.core.alter_partition(
                        request.broker_id,
                        request.broker_epoch,
                        topic.topic_id,
                        proposal.partition,
                        leader_epoch=proposal.leader_epoch,
                        partition_epoch=proposal.partition_epoch,
                        new_isr=list(proposal.new_isr),
                        new_isr_broker_epochs=list(proposal.new_isr_broker_epochs),
                    )
                )
                result = controller_pb2.AlterPartitionResult(
                    partition=proposal.partition, error=wire_error(decision.error, decision.message)
                )
                current = self.image.topics.get(topic.topic_id)
                state = current.partitions.get(proposal.partition) if current else None
                if state is not None:
                    result.leader_id = state.leader
                    result.leader_epoch = state.leader_epoch
                    result.isr.extend(state.isr)
                    result.partition_epoch = state.partition_epoch
                partitions.append(result)
            topics.append(controller_pb2.AlterPartitionTopicResult(topic_id=topic.topic_id, partitions=partitions))
        return controller_pb2.AlterPartitionResponse(error=wire_error(ErrorCode.NONE), topics=topics)

    async def ElectLeaders(  # noqa: N802
        self, request: controller_pb2.ElectLeadersRequest, context: ServicerContext
    ) -> controller_pb2.ElectLeadersResponse:
        if request.election_type != controller_pb2.ELECTION_TYPE_PREFERRED:
            return controller_pb2.ElectLeadersResponse(
                error=wire_error(
                    ErrorCode.INVALID_REQUEST,
                    "unclean election happens only for topics with unclean.leader.election.enable=true",
                )
            )
        wanted = topic_partitions_from_wire(request.partitions) or None
        async with self._lock:
            decision, outcomes = self.core.elect_preferred_leaders(wanted)
            await self._commit(decision)
        return controller_pb2.ElectLeadersResponse(
            error=wire_error(ErrorCode.NONE),
            results=[
                controller_pb2.ElectionResult(topic=topic, partition=partition, error=wire_error(code))
                for (topic, partition), code in sorted(outcomes.items())
            ],
        )

    # -----------------------------------------------------------------------------------------
    # users and ACLs (who may call what is lanes.runtime.guard's; these keep the records)

    async def AlterUserScramCredentials(  # noqa: N802
        self, request: controller_pb2.AlterUserScramCredentialsRequest, context: ServicerContext
    ) -> controller_pb2.AlterUserScramCredentialsResponse:
        names = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        twice = {name for name in names if names.count(name) > 1}
        results = []
        for deletion in request.deletions:
            decision = (
                ControllerDecision.refuse(ErrorCode.DUPLICATE_RESOURCE, f"user {deletion.name!r} is named twice")
                if deletion.name in twice
                else await self._decide_and_commit(
                    lambda d=deletion: self.core.remove_user_credential(d.name, d.mechanism)
                )
            )
            results.append(self._user_result(deletion.name, decision))
        for upsertion in request.upsertions:
            decision = (
                ControllerDecision.refuse(ErrorCode.DUPLICATE_RESOURCE, f"user {upsertion.name!r} is named twice")
                if upsertion.name in twice
                else await self._decide_and_commit(
                    lambda u=upsertion: self.core.set_user_credential(
                        u.name, u.mechanism, u.iterations, u.salt, u.salted_password
                    )
                )
            )
            results.append(self._user_result(upsertion.name, decision))
        return controller_pb2.AlterUserScramCredentialsResponse(results=results)

    @staticmethod
    def _user_result(name: str, decision: ControllerDecision) -> controller_pb2.AlterUserScramCredentialsResult:
        return controller_pb2.AlterUserScramCredentialsResult(
            name=name[:140], error=wire_error(decision.error, decision.message)
        )

    async def DescribeUserScramCredentials(  # noqa: N802
        self, request: controller_pb2.DescribeUserScramCredentialsRequest, context: ServicerContext
    ) -> controller_pb2.DescribeUserScramCredentialsResponse:
        stored = self.image.scram_credentials
        names = list(request.names) or sorted(stored)
        users = []
        for name in names:
            credentials = stored.get(name)
            user = controller_pb2.UserScramCredentials(name=name[:140])
            if credentials is None:
                user.error.CopyFrom(wire_error(ErrorCode.RESOURCE_NOT_FOUND, f"user {name[:140]!r} has no credentials"))
            else:
                user.error.CopyFrom(wire_error(ErrorCode.NONE))
                user.credentials.extend(
                    controller_pb2.ScramCredentialInfo(mechanism=mechanism, iterations=credential.iterations)
                    for mechanism, credential in sorted(credentials.items())
                )
            users.append(user)
        return controller_pb2.DescribeUserScramCredentialsResponse(users=users)

    async def CreateAcls(  # noqa: N802
        self, request: controller_pb2.CreateAclsRequest, context: ServicerContext
    ) -> controller_pb2.CreateAclsResponse:
        bindings = [_acl_binding(binding) for binding in request.creations]
        async with self._lock:
            decisions = self.core.create_acls([b for b in bindings if isinstance(b, AclBinding)])
            merged = ControllerDecision([record for decision in decisions for record in decision.records])
            await self._commit(merged)
        answers = iter(decisions)
        results = []
        for binding in bindings:
            decision = (
                next(answers)
                if isinstance(binding, AclBinding)
                else ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, binding)
            )
            results.append(wire_error(decision.error, decision.message))
        return controller_pb2.CreateAclsResponse(results=results)

    async def DescribeAcls(  # noqa: N802
        self, request: controller_pb2.DescribeAclsRequest, context: ServicerContext
    ) -> controller_pb2.DescribeAclsResponse:
        filter_ = _acl_binding(request.filter)
        if not isinstance(filter_, AclBinding):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, filter_)
            raise AssertionError("abort raises")
        return controller_pb2.DescribeAclsResponse(
            acls=[acl.to_proto() for acl in sorted(self.image.acls) if acl.matches(filter_)]
        )

    async def DeleteAcls(  # noqa: N802
        self, request: controller_pb2.DeleteAclsRequest, context: ServicerContext
    ) -> controller_pb2.DeleteAclsResponse:
        results = []
        for wire_filter in request.filters:
            filter_ = _acl_binding(wire_filter)
            if not isinstance(filter_, AclBinding):
                results.append(controller_pb2.DeleteAclsResult(error=wire_error(ErrorCode.INVALID_REQUEST, filter_)))
                continue
            decision = await self._decide_and_commit(lambda f=filter_: self.core.delete_acls(f))
            results.append(
                controller_pb2.DeleteAclsResult(
                    error=wire_error(ErrorCode.NONE),
                    removed=[record.acl_removed.binding for record in decision.records],
                )
            )
        return controller_pb2.DeleteAclsResponse(results=results)

    async def AlterClientQuotas(  # noqa: N802
        self, request: controller_pb2.AlterClientQuotasRequest, context: ServicerContext
    ) -> controller_pb2.AlterClientQuotasResponse:
        results = []
        for change in request.changes:
            decision = await self._decide_and_commit(
                lambda c=change: self.core.alter_client_quota(
                    QuotaEntity.from_proto(list(c.entity)), c.key, c.value if c.HasField("value") else None
                )
            )
            results.append(wire_error(decision.error, decision.message))
        return controller_pb2.AlterClientQuotasResponse(results=results)

    async def DescribeClientQuotas(  # noqa: N802
        self, request: controller_pb2.DescribeClientQuotasRequest, context: ServicerContext
    ) -> controller_pb2.DescribeClientQuotasResponse:
        wanted = QuotaEntity.from_proto(list(request.entity)) if request.entity else None
        quotas = [
            metadata_pb2.ClientQuotaRecord(entity=entity.to_proto(), key=key, value=rate)
            for entity, keyed in sorted(self.image.client_quotas.items(), key=lambda item: item[0].sort_key())
            if not request.entity or entity == wanted
            for key, rate in sorted(keyed.items())
        ]
        return controller_pb2.DescribeClientQuotasResponse(quotas=quotas)


def _acl_binding(wire: common_pb2.AclBinding) -> AclBinding | str:
    """The binding (or filter) a request names, or why it names none (an unknown enum value)."""
    try:
        return AclBinding.from_proto(wire)
    except ValueError as exc:
        return f"not an ACL this cluster knows: {exc}"


class QuorumService(controller_pb2_grpc.ControllerQuorumServicer):
    """The controllers' Raft traffic, into this controller's quorum."""

    def __init__(self, quorum: Quorum) -> None:
        self._quorum = quorum

    async def Send(  # noqa: N802
        self, request: controller_pb2.RaftMessage, context: ServicerContext
    ) -> controller_pb2.RaftAck:
        await check_claim(context, node_identity("controller", request.sender))
        self._quorum.receive(request)
        return controller_pb2.RaftAck()

    async def DescribeQuorum(  # noqa: N802
        self, request: controller_pb2.DescribeQuorumRequest, context: ServicerContext
    ) -> controller_pb2.DescribeQuorumResponse:
        answer = self._quorum.describe()
        answer.error.CopyFrom(wire_error(ErrorCode.NONE))
        return answer


class ActiveControllerGate(CallInterceptor):
    """Controller RPCs reach only the active controller: elsewhere, and when a call finds its
    controller deposed, they fail with FAILED_PRECONDITION, details starting NOT_CONTROLLER, and
    the active controller's address in trailing metadata (``ACTIVE_CONTROLLER_KEY``): on the
    internal listener the one nodes dial, on the client listener its client listener (when it
    registered one, ``ControllerRegisteredRecord``)."""

    def __init__(self, service: ControllerService, listener: Listener = "client") -> None:
        self._service = service
        self._listener = listener

    def wrappers(self, method: str) -> Wrappers | None:
        if not method.startswith(f"/{CONTROLLER_SERVICE}/"):
            return None
        return {"unary_unary": self._gate_unary, "unary_stream": self._gate_stream}

    def _gate_unary(self, inner: Any) -> Any:
        async def unary(request: Any, context: ServicerContext) -> Any:
            if not self._service.active:
                await self._refuse(context, self._service.quorum.not_leader_message())
            try:
                return await inner(request, context)
            except NotControllerError as exc:
                await self._refuse(context, exc.message)

        return unary

    def _gate_stream(self, inner: Any) -> Any:
        async def stream(request: Any, context: ServicerContext) -> AsyncIterator[Any]:
            if not self._service.active:
                await self._refuse(context, self._service.quorum.not_leader_message())
            try:
                async for item in inner(request, context):
                    yield item
            except NotControllerError as exc:
                await self._refuse(context, exc.message)

        return stream

    async def _refuse(self, context: ServicerContext, why: str) -> None:
        address = self._service.quorum.leader_address if not self._service.active else None
        if address is not None and self._listener != "internal":
            registered = self._service.image.controller_at(address)
            port = registered.client_port(self._listener == "certificates") if registered is not None else 0
            address = f"{registered.host}:{port}" if registered is not None else None
        metadata = ((ACTIVE_CONTROLLER_KEY, address),) if address else ()
        await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"{NOT_CONTROLLER_DETAILS}: {why}", metadata)


CONTROLLER_SERVICE = controller_pb2.DESCRIPTOR.services_by_name["Controller"].full_name
QUORUM_SERVICE = controller_pb2.DESCRIPTOR.services_by_name["ControllerQuorum"].full_name


def add_to_server(service: ControllerService, server: grpc.aio.Server) -> None:
    """Register ``service`` on ``server`` (the generated helper is untyped)."""
    controller_pb2_grpc.add_ControllerServicer_to_server(service, server)  # type: ignore[no-untyped-call]


def add_quorum_to_server(service: ControllerService, server: grpc.aio.Server) -> None:
    """Register the quorum's service of ``service`` on ``server``."""
    controller_pb2_grpc.add_ControllerQuorumServicer_to_server(QuorumService(service.quorum), server)  # type: ignore[no-untyped-call]
