"""A node's link to the controller: registration, heartbeats, and the metadata image.

Brokers and group coordinators both register (``role``), heartbeat to keep their session, and
follow the metadata log; only the requests differ.

The image is a ``MetadataImage`` (the controller's own state machine) kept current by the
WatchMetadata stream: a snapshot first, then deltas; after a disconnect (controller restart,
network), or a stream silent for longer than three keepalives (``lanes.metadata.liveness``), the
link reconnects with backoff, to the next controller, and resumes from the offset after the last
one applied, so it keeps serving with the metadata it has while the controller is away. A failed
heartbeat is followed at once by one to the next controller, each call waiting a quarter of the
session at most, so a controller failover fences nobody. Heartbeats report the
applied offset; the controller unfences the broker once it has caught up with its own
registration. A stale epoch (the controller fenced this incarnation) re-registers.

The **lease**: the controller fences a node a session timeout after the last heartbeat it
received, and only then gives its partitions or shards to others. A heartbeat is received after
it is sent, so while the last one the controller accepted (answered, not fenced) was *sent*
within the session timeout, nobody else has been given this node's roles (``lease_held``; the
registration counts as the first heartbeat). Both sides measure with a monotonic clock.

``on_update`` listeners receive the (offset, record) pairs of each applied delta, or an empty
list after a snapshot replaced the image; the stream's keepalives change nothing and call no one
(a broker would otherwise walk all its partitions every few seconds while idle). Owned by the node's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, NamedTuple

import grpc

from lanes.clock import SYSTEM_CLOCK, Clock
from lanes.deadline import Backoff, Deadline, attempts
from lanes.errors import ErrorCode, error_code
from lanes.metadata.image import MetadataImage, NodeKind, ProducerIdBlock
from lanes.metadata.liveness import METADATA_SILENCE_S, heartbeat_timeout_s
from lanes.rpc.addresses import parse_addresses
from lanes.rpc.controllers import ControllerEndpoints
from lanes.runtime.broadcast import Broadcast
from lanes.v1 import common_pb2, controller_pb2, controller_pb2_grpc, metadata_pb2

_log = logging.getLogger(__name__)
Listener = Callable[[list[tuple[int, metadata_pb2.MetadataRecord]]], None]
_RETRY_MIN_S = 0.05
_RETRY_MAX_S = 1.0
Role = NodeKind | Literal["observer"]  # an observer only watches the metadata


class _NodeRpcs(NamedTuple):
    """The registration and heartbeat RPCs of one kind of node: the same flow, other names."""

    register: str
    register_request: type[Any]
    heartbeat: str
    heartbeat_request: type[Any]
    id_field: str
    epoch_field: str


_RPCS: dict[str, _NodeRpcs] = {
    "broker": _NodeRpcs(
        "RegisterBroker",
        controller_pb2.RegisterBrokerRequest,
        "BrokerHeartbeat",
        controller_pb2.BrokerHeartbeatRequest,
        "broker_id",
        "broker_epoch",
    ),
    "coordinator": _NodeRpcs(
        "RegisterCoordinator",
        controller_pb2.RegisterCoordinatorRequest,
        "CoordinatorHeartbeat",
        controller_pb2.CoordinatorHeartbeatRequest,
        "coordinator_id",
        "coordinator_epoch",
    ),
}


class MetadataRefusedError(Exception):
    """The controller sent metadata this node must not apply (``ControllerLink._refusal``)."""


def _being_cancelled() -> bool:
    """Whether the running task itself was asked to stop (``Task.cancel``), as opposed to a
    CancelledError raised from inside an awaited call."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class ControllerLink:
    """Registration, heartbeats and the metadata image of one broker or coordinator."""

    def __init__(
        self,
        controller_addresses: str,
        *,
        node_id: int,
        incarnation_id: str,
        endpoint: common_pb2.Node,
        cluster_id: str = "",
        on_cluster_id: Callable[[str], None] | None = None,
        applied: tuple[int, int] = (-1, -1),
        on_applied: Callable[[int, int], None] | None = None,
        role: Role = "broker",
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``controller_addresses``: some or all controllers, ``host:port,...`` (the link finds
        the active one and follows it, ``ControllerEndpoints``).

        ``cluster_id``: the cluster the node belongs to ("" to take the controller's at the
        first registration, then told to ``on_cluster_id`` to keep it). Metadata of another
        cluster, or older than what the node applied, is refused (``_refusal``).

        ``applied``: the (offset, quorum epoch) of the last metadata entry the node applied in an
        earlier life ((-1, -1): none); ``on_applied`` is told each new one, to keep it. A
        controller whose committed log does not reach that offset, or holds an entry of another
        epoch there (a directory restored from an old copy, another history), is refused."""
        self.node_id = node_id
        self.role = role
        self.incarnation_id = incarnation_id
        self.endpoint = endpoint
        self.cluster_id = cluster_id
        self._on_cluster_id = on_cluster_id
        self.node_epoch = -1
        self.fenced = True
        self.image = MetadataImage()
        #: (offset, epoch) of the last entry applied, in this life or an earlier one
        self.applied = applied
        self._on_applied = on_applied
        self.heartbeat_interval_s = 0.5
        #: the controller's session timeout, from its heartbeat answers (None until the first)
        self.session_timeout_s: float | None = None
        self._clock = clock
        self._lease_from_ms: int | None = None  # when the last heartbeat the controller accepted was sent
        self.controllers = ControllerEndpoints(parse_addresses(controller_addresses, "the controller list"))
        self._listeners: list[Listener] = []
        self._watching: asyncio.Task[None] | None = None
        self._beating: asyncio.Task[None] | None = None
        self._shut_down: bool | None = None  # the controlled shutdown's outcome, once asked
        self._image_changed = Broadcast()
        #: set when a fenced broker has applied its own registration: it heartbeats at once (the
        #: controller unfences it on that heartbeat), as Kafka's BrokerLifecycleManager does
        self._caught_up = asyncio.Event()

    def lease_held(self) -> bool:
        """Whether the controller accepted a heartbeat (or the registration) sent within its
        session timeout: until that lapses it has not fenced this node (see the module
        docstring). Held before the first answer tells the timeout; never held before registering."""
        if self._lease_from_ms is None:
            return self.role == "observer"
        if self.session_timeout_s is None:
            return True
        return self._clock.monotonic_ms() - self._lease_from_ms <= self.session_timeout_s * 1000

    def on_update(self, listener: Listener) -> None:
        """Call ``listener`` after each change of the image."""
        self._listeners.append(listener)

    async def start(self, catch_up_timeout_s: float = 10) -> None:
        """Register (retrying until the controller answers), then keep watching and beating; return
        once the image has caught up with the registration (so the node knows its partitions or
        shards before it answers clients), or after ``catch_up_timeout_s`` with a warning."""
        if self.role == "observer":
            self.node_epoch = 0
        else:
            await self._register()
            self._beating = asyncio.create_task(self._heartbeats())
        self._watching = asyncio.create_task(self._watch())
        try:
            await self.wait_for(lambda image: image.last_offset >= self.node_epoch, catch_up_timeout_s)
        except TimeoutError:
            _log.warning("metadata not caught up after %.0f s; serving with what is known", catch_up_timeout_s)

    async def shut_down(self, timeout_s: float = 10) -> bool:
        """Controlled shutdown: ask the controller to move this node's leaderships (or shards)
        away and fence it, while the metadata stream goes on, so the node hears of the moves and
        can hand its in-flight work over. The periodic heartbeats stop first (one of them would
        unfence the node again). Whether the controller confirmed within ``timeout_s``; asked
        once (a second call answers as the first did)."""
        if self._shut_down is None:
            self._shut_down = await self._ask_to_shut_down(timeout_s)
        return self._shut_down

    async def _ask_to_shut_down(self, timeout_s: float) -> bool:
        if self._beating is not None:
            self._beating.cancel()
        if self.node_epoch < 0 or self.role == "observer":
            return False
        async for _ in attempts(Deadline(timeout_s), _RETRY_MIN_S):
            with contextlib.suppress(grpc.aio.AioRpcError):
                answer = await self._heartbeat(want_shut_down=True)
                if answer.should_shut_down or answer.error.code != ErrorCode.NONE:
                    return bool(answer.should_shut_down)
        return False

    async def stop(self, *, controlled: bool = True, timeout_s: float = 10) -> None:
        """Stop; with ``controlled``, first ask the controller to move leaderships (or shards) away
        (``shut_down``, asked once)."""
        if controlled:
            await self.shut_down(timeout_s)
        for task in (self._beating, self._watching):
            if task is not None:
                task.cancel()
        await self.controllers.close()

    async def alter_partition(
        self,
        topic_id: str,
        partition: int,
        *,
        leader_epoch: int,
        partition_epoch: int,
        new_isr: list[int],
        new_isr_broker_epochs: list[int],
    ) -> controller_pb2.AlterPartitionResult | None:
        """Propose a new ISR for a partition this broker leads; the controller's answer, or None
        when it could not be reached."""
        request = controller_pb2.AlterPartitionRequest(
            broker_id=self.node_id,
            broker_epoch=self.node_epoch,
            topics=[
                controller_pb2.AlterPartitionTopic(
                    topic_id=topic_id,
                    partitions=[
                        controller_pb2.AlterPartitionProposal(
                            partition=partition,
                            leader_epoch=leader_epoch,
                            partition_epoch=partition_epoch,
                            new_isr=new_isr,
                            new_isr_broker_epochs=new_isr_broker_epochs,
                        )
                    ],
                )
            ],
        )
        answer = await self._call(lambda stub: stub.AlterPartition(request, timeout=5))
        if answer is None:
            return None
        if answer.topics and answer.topics[0].partitions:
            result: controller_pb2.AlterPartitionResult = answer.topics[0].partitions[0]
            return result
        return None

    async def allocate_producer_ids(self) -> ProducerIdBlock | None:
        """A block of producer ids from the controller, or None if unreachable."""
        request = controller_pb2.AllocateProducerIdsRequest(broker_id=self.node_id, broker_epoch=self.node_epoch)
        answer = await self._call(lambda stub: stub.AllocateProducerIds(request, timeout=5))
        if answer is None or answer.error.code != ErrorCode.NONE:
            return None
        return ProducerIdBlock(answer.producer_id_start, answer.producer_id_len)

    async def wait_for(self, condition: Callable[[MetadataImage], bool], timeout_s: float) -> None:
        """Wait until ``condition(image)`` holds (TimeoutError after ``timeout_s``)."""
        await self._image_changed.wait_until(lambda: condition(self.image), timeout_s)

    # -----------------------------------------------------------------------------------------

    async def _call(self, call: Callable[[controller_pb2_grpc.ControllerStub], Awaitable[Any]]) -> Any:
        """``call`` on the active controller, following NOT_CONTROLLER's pointer once per known
        controller; None when none answered."""
        for _ in range(len(self.controllers.addresses) + 1):
            address, stub = self.controllers.target()
            try:
                return await call(stub)
            except grpc.aio.AioRpcError as exc:
                if not self.controllers.failed(exc, address):
                    return None
        return None

    async def _heartbeat(self, *, want_shut_down: bool = False) -> Any:
        """One heartbeat (BrokerHeartbeat or CoordinatorHeartbeat); raises AioRpcError."""
        rpcs = _RPCS[self.role]
        request = rpcs.heartbeat_request(
            current_metadata_offset=self.image.last_offset,
            want_shut_down=want_shut_down,
            **{rpcs.id_field: self.node_id, rpcs.epoch_field: self.node_epoch},
        )
        address, stub = self.controllers.target()
        try:
            return await getattr(stub, rpcs.heartbeat)(request, timeout=heartbeat_timeout_s(self.session_timeout_s))
        except grpc.aio.AioRpcError as exc:
            self.controllers.failed(exc, address)
            raise

    async def _register_once(self) -> tuple[common_pb2.Error, int, str]:
        """One registration (RegisterBroker or RegisterCoordinator): (error, epoch, cluster id)."""
        rpcs = _RPCS[self.role]
        request = rpcs.register_request(
            incarnation_id=self.incarnation_id,
            cluster_id=self.cluster_id,
            endpoint=self.endpoint,
            **{rpcs.id_field: self.node_id},
        )
        address, stub = self.controllers.target()
        try:
            answer = await getattr(stub, rpcs.register)(request, timeout=5)
        except grpc.aio.AioRpcError as exc:
            self.controllers.failed(exc, address)
            raise
        return answer.error, getattr(answer, rpcs.epoch_field), answer.cluster_id

    async def _register(self) -> None:
        backoff = Backoff(_RETRY_MIN_S, _RETRY_MAX_S)
        while True:
            sent_ms = self._clock.monotonic_ms()
            try:
                error, epoch, cluster_id = await self._register_once()
            except grpc.aio.AioRpcError as exc:
                _log.info("controller unreachable (%s); retrying registration", exc.code().name)
            else:
                if error_code(error.code) is ErrorCode.NONE:
                    if self._on_cluster_id is not None and cluster_id != self.cluster_id:
                        self._on_cluster_id(cluster_id)  # kept before anything of it is applied
                    self.node_epoch = epoch
                    self.cluster_id = cluster_id
                    self.fenced = self.role == "broker"
                    self._lease_from_ms = sent_ms
                    return
                _log.warning("registration refused: %s", error.message)
            await backoff.pause()

    async def _heartbeats(self) -> None:
        """Heartbeat every interval; after a failed one, the next goes at once to the controller
        the failure pointed to (``ControllerEndpoints.failed``), after a short pause."""
        failures = Backoff(_RETRY_MIN_S, _RETRY_MAX_S)
        while True:
            sent_ms = self._clock.monotonic_ms()
            try:
                answer = await self._heartbeat()
                code = error_code(answer.error.code)
                if code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED):
                    await self._register()
                    self._call_listeners([])  # the node's epoch changed: what it owns may have, too
                elif code is ErrorCode.NONE:
                    self.fenced = answer.is_fenced
                    if not answer.is_fenced:
                        self._lease_from_ms = sent_ms
                    if answer.heartbeat_interval_ms:
                        self.heartbeat_interval_s = answer.heartbeat_interval_ms / 1000
                    if answer.session_timeout_ms:
                        self.session_timeout_s = answer.session_timeout_ms / 1000
            except grpc.aio.AioRpcError as exc:
                _log.debug(
                    "heartbeat failed (%s: %s); next to %s", exc.code().name, exc.details(), self.controllers.address
                )
                await failures.pause()
                continue
            failures.reset()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._caught_up.wait(), self.heartbeat_interval_s)
            self._caught_up.clear()

    async def _watch(self) -> None:
        backoff = Backoff(_RETRY_MIN_S, _RETRY_MAX_S)
        while True:
            address, stub = self.controllers.target()
            try:
                stream = stub.WatchMetadata(
                    controller_pb2.WatchMetadataRequest(
                        node_id=self.node_id,
                        node_epoch=self.node_epoch,
                        from_offset=self.image.last_offset + 1 if self.image.last_offset >= 0 else -1,
                        applied_offset=self.applied[0],
                        applied_epoch=self.applied[1],
                    )
                )
                first = True
                while True:
                    # a silent stream is left (METADATA_SILENCE_S; the first answer may take a
                    # whole snapshot's time for a new node): its controller may be cut off
                    silence_s = METADATA_SILENCE_S * (3 if first and self.image.last_offset < 0 else 1)
                    try:
                        update = await asyncio.wait_for(stream.read(), silence_s)
                    except TimeoutError:
                        stream.cancel()
                        self.controllers.move_on(address)
                        backoff.reset()
                        _log.info(
                            "metadata stream silent for %.1f s; trying %s, resuming from %d",
                            silence_s,
                            self.controllers.address,
                            self.image.last_offset + 1,
                        )
                        break
                    if update is grpc.aio.EOF:
                        break
                    await self._apply(update, first=first)
                    first = False
                    backoff.reset()
            except grpc.aio.AioRpcError as exc:
                if self.controllers.failed(exc, address):
                    backoff.reset()  # redirected to the active controller: go there at once
                _log.info(
                    "metadata stream from %s broke (%s: %s); resuming from %d at %s",
                    address,
                    exc.code().name,
                    exc.details(),
                    self.image.last_offset + 1,
                    self.controllers.address,
                )
            except MetadataRefusedError as exc:
                _log.error("refusing the controller's metadata: %s; keeping everything as it is", exc)
            except asyncio.CancelledError:
                if _being_cancelled():
                    raise
                # Not this task: gRPC cancelled the call because its channel closed (ChannelCache
                # retires a channel when the TLS files are renewed). The stream broke; resume on a
                # new channel at once. Before, the watch ended here for good and the node applied
                # no metadata again (a broker then never rejoined an ISR after a restart nearby).
                backoff.reset()
                _log.info(
                    "metadata stream from %s closed with its channel; resuming from %d",
                    self.controllers.address,
                    self.image.last_offset + 1,
                )
            await backoff.pause()

    def _check_lineage(self, update: controller_pb2.MetadataUpdate) -> None:
        """Refuse a controller whose committed log is behind what this node applied, or holds
        another epoch at that offset (another history: applying it would roll epochs back and
        delete logs of topics it does not know)."""
        offset, epoch = self.applied
        if offset < 0:
            return
        if update.applied_offset_epoch < 0:
            raise MetadataRefusedError(
                f"its committed metadata ends before offset {offset}, which this node applied (a controller "
                "restored from an older copy, or a quorum that lost its log?)"
            )
        if update.applied_offset_epoch != epoch:
            raise MetadataRefusedError(
                f"its entry at offset {offset} is of epoch {update.applied_offset_epoch}, the one this node "
                f"applied of epoch {epoch}: another history (a controller restored from an older copy?)"
            )

    async def _apply(self, update: controller_pb2.MetadataUpdate, *, first: bool = False) -> None:
        """Apply one update; the ``first`` of a stream is checked against what this node applied."""
        applied: list[tuple[int, metadata_pb2.MetadataRecord]] = []
        behind_registration = self.image.last_offset < self.node_epoch
        if update.snapshot:
            image = MetadataImage.from_snapshot(list(update.records), update.base_offset)
            refusal = self._refusal(image)
            if refusal:
                raise MetadataRefusedError(refusal)
            if first:
                self._check_lineage(update)
            self.image = image
        else:
            if first:
                self._check_lineage(update)
            if update.records and update.base_offset > self.image.last_offset + 1:
                raise MetadataRefusedError(
                    f"its update starts at offset {update.base_offset}, after a gap from {self.image.last_offset}"
                )
            for index, record in enumerate(update.records):
                offset = update.base_offset + index
                if offset > self.image.last_offset:
                    self.image.apply(offset, record)
                    applied.append((offset, record))
            if not applied:  # a keepalive, or records already applied: the image is unchanged
                return
        self._remember_applied(self.image.last_offset, update.last_epoch)
        self._call_listeners(applied)
        self._image_changed.notify_all()
        if behind_registration and self.fenced and self.image.last_offset >= self.node_epoch:
            self._caught_up.set()

    def _remember_applied(self, offset: int, epoch: int) -> None:
        if offset < 0 or epoch < 0 or (offset, epoch) == self.applied:
            return
        self.applied = (offset, epoch)
        if self._on_applied is not None:
            self._on_applied(offset, epoch)

    def _refusal(self, image: MetadataImage) -> str:
        """Why a snapshot must not replace the image ("" when it may): it describes another
        cluster (a controller that lost its volume started a new one), or is older than what
        this node applied (a controller restored from an old copy). Applying either would make a
        broker delete every log the snapshot does not name."""
        if self.cluster_id and image.cluster_id and image.cluster_id != self.cluster_id:
            return f"it describes cluster {image.cluster_id}, this node belongs to cluster {self.cluster_id}"
        if image.last_offset < self.image.last_offset:
            return (
                f"it ends at metadata offset {image.last_offset}, before offset {self.image.last_offset} this "
                "node applied (a controller restored from an older copy?)"
            )
        return ""

    def _call_listeners(self, applied: list[tuple[int, metadata_pb2.MetadataRecord]]) -> None:
        for listener in self._listeners:
            listener(applied)
