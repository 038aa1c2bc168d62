"""The GroupCoordinator gRPC service (DESIGN.md section 8; proto/lanes/v1/coordinator.proto):
the face of a group coordinator. It turns requests into calls of the group state machine
(``GroupCoordinatorCore``) on the shard that serves the group (``shards.Shards``: loading,
routing, durability), and answers only once what an answer depends on is durable.

A coordinator registers with the controller (``ControllerLink``, role coordinator) and follows
the metadata log. Requests for groups on other shards answer NOT_COORDINATOR, and for a shard
still loading COORDINATOR_LOAD_IN_PROGRESS (both retriable: clients find the coordinator again).
Owned by one event loop.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

import grpc
from prometheus_client.metrics_core import Metric

from lanes.clock import Clock
from lanes.coordinator.core import (
    CommitEntry,
    GroupConfig,
    GroupCoordinatorCore,
    GroupDecision,
    HeartbeatInput,
    Subscription,
)
from lanes.coordinator.group import Group
from lanes.coordinator.metrics import CoordinatorMetrics, GroupSnapshot, PartitionLag
from lanes.coordinator.offsets import offset_states, reset_targets
from lanes.coordinator.shards import GroupRouteError, Shards, now
from lanes.errors import ErrorCode, LanesError
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC, validate_group_id
from lanes.protocol.partitioner import partition_for_key
from lanes.rpc.wire import (
    ServicerContext,
    assignment_from_wire,
    assignment_to_wire,
    peer_host,
    topic_partitions_from_wire,
    wire_error,
)
from lanes.runtime.access.access_rules import resolved_partitions
from lanes.runtime.access.guard import request_context
from lanes.runtime.access.image_authorizer import ImageAuthorizer
from lanes.runtime.link.controller_link import ControllerLink
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.serving.logs import fields
from lanes.security.acls import Operation
from lanes.topic_partition import TopicPartition
from lanes.v1 import common_pb2, coordinator_pb2, coordinator_pb2_grpc

_log = logging.getLogger(__name__)


class GroupCoordinatorService(coordinator_pb2_grpc.GroupCoordinatorServicer):
    """Consumer groups of the shards this coordinator owns. ``start`` before serving."""

    def __init__(
        self,
        coordinator_id: int,
        *,
        controller_addresses: str,
        endpoint: common_pb2.Node,
        clock: Clock,
        config: GroupConfig | None = None,
        expire_interval_ms: int = 250,
        metrics: CoordinatorMetrics | None = None,
    ) -> None:
        self.coordinator_id = coordinator_id
        self.metrics = metrics or CoordinatorMetrics(ServiceMetrics("coordinator"))
        self.endpoint = endpoint
        self.config = config or GroupConfig()
        self._clock = clock
        self.link = ControllerLink(
            controller_addresses,
            node_id=coordinator_id,
            incarnation_id=str(uuid.uuid4()),
            endpoint=endpoint,
            role="coordinator",
        )
        self.shards = Shards(
            coordinator_id,
            self.link,
            clock=clock,
            config=self.config,
            metrics=self.metrics,
            expire_interval_ms=expire_interval_ms,
            visible_topics=ImageAuthorizer(lambda: self.link.image).visible_topics,
        )
        self.brokers = self.shards.brokers

    async def start(self) -> None:
        """Register, follow metadata, load the shards given to this coordinator."""
        self.metrics.service.add_snapshot(self._metrics_snapshot)
        await self.link.start()
        self.shards.start()

    async def stop(self) -> None:
        """Hand the shards back (the controller moves them) and stop."""
        self.shards.stop_expiring()
        await self.link.stop(controlled=True)
        await self.shards.close()

    # -----------------------------------------------------------------------------------------
    # RPCs: discovery and membership

    async def FindCoordinator(  # noqa: N802
        self, request: coordinator_pb2.FindCoordinatorRequest, context: ServicerContext
    ) -> coordinator_pb2.FindCoordinatorResponse:
        image = self.link.image
        count = self.shards.shard_count()
        answers = []
        if not self.link.lease_held():  # its image may be stale: it must not name anyone, itself least
            refusal = wire_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, self.shards.lease_lapsed())
            return coordinator_pb2.FindCoordinatorResponse(
                coordinators=[
                    coordinator_pb2.GroupCoordinatorLocation(group_id=group_id, error=refusal)
                    for group_id in request.group_ids
                ]
            )
        for group_id in request.group_ids:
            try:
                validate_group_id(group_id)
            except LanesError as exc:
                answers.append(
                    coordinator_pb2.GroupCoordinatorLocation(
                        group_id=group_id, error=wire_error(ErrorCode.INVALID_GROUP_ID, exc.message)
                    )
                )
                continue
            if count == 0:
                answers.append(
                    coordinator_pb2.GroupCoordinatorLocation(
                        group_id=group_id,
                        error=wire_error(
                            ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{CONSUMER_OFFSETS_TOPIC} is not created yet"
                        ),
                    )
                )
                continue
            shard = partition_for_key(group_id.encode(), count)
            owner = image.shards.get(shard)
            coordinator = image.coordinators.get(owner.coordinator_id) if owner is not None else None
            if coordinator is None or coordinator.fenced:
                answers.append(
                    coordinator_pb2.GroupCoordinatorLocation(
                        group_id=group_id,
                        shard=shard,
                        error=wire_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"shard {shard} has no live coordinator"),
                    )
                )
                continue
            answers.append(
                coordinator_pb2.GroupCoordinatorLocation(
                    group_id=group_id,
                    shard=shard,
                    error=wire_error(ErrorCode.NONE),
                    coordinator=common_pb2.Node(
                        node_id=coordinator.coordinator_id,
                        host=coordinator.host,
                        port=coordinator.client_port(request_context(context).on_certificate_listener),
                    ),
                )
            )
        return coordinator_pb2.FindCoordinatorResponse(coordinators=answers)

    async def Heartbeat(  # noqa: N802
        self, request: coordinator_pb2.HeartbeatRequest, context: ServicerContext
    ) -> coordinator_pb2.HeartbeatResponse:
        joining = request.member_epoch == 0
        call = request_context(context)
        heartbeat = HeartbeatInput(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            instance_id=request.instance_id,
            rack_id=request.rack_id,
            client_id=request.client_id,
            client_host=call.forwarded_host or peer_host(context),
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscription=Subscription(tuple(request.subscription.topic_names), request.subscription.topic_regex)
            if request.HasField("subscription")
            else None,
            server_assignor=request.server_assignor if request.server_assignor or joining else None,
            owned=assignment_from_wire(request.owned_partitions) if request.HasField("owned_partitions") else None,
            principal=access.principal if (access := call.access) is not None else "",
            classic=request.classic,
        )
        counts = self.shards.partition_counts()
        if heartbeat.member_epoch >= 0:
            regex = heartbeat.subscription.topic_regex if heartbeat.subscription is not None else ""
            await self.shards.resolve_patterns(request.group_id, regex, counts)
        at = now(self._clock)
        try:
            result = await self.shards.decide(request.group_id, lambda core: core.heartbeat(heartbeat, at, counts))
        except GroupRouteError as exc:
            return coordinator_pb2.HeartbeatResponse(
                error=wire_error(exc.code, exc.message), member_id=request.member_id
            )
        response = coordinator_pb2.HeartbeatResponse(
            error=wire_error(result.error, result.message),
            member_id=result.member_id,
            member_epoch=result.member_epoch,
            heartbeat_interval_ms=result.heartbeat_interval_ms or self.config.heartbeat_interval_ms,
            session_timeout_ms=self.config.session_timeout_ms,
            assignment_settled=result.settled,
        )
        if result.assignment is not None:
            response.assignment.CopyFrom(assignment_to_wire(result.assignment))
        return response

    async def LeaveGroup(  # noqa: N802
        self, request: coordinator_pb2.LeaveGroupRequest, context: ServicerContext
    ) -> coordinator_pb2.LeaveGroupResponse:
        now_ms = self._clock.now_ms()
        try:
            code, message = await self.shards.decide(
                request.group_id,
                lambda core: _pair(core.leave(request.group_id, request.member_id, request.instance_id, now_ms)),
            )
        except GroupRouteError as exc:
            return coordinator_pb2.LeaveGroupResponse(error=wire_error(exc.code, exc.message))
        if code is ErrorCode.NONE:
            _log.info(
                "group %s: member %s left (%s)",
                request.group_id,
                request.member_id,
                request.reason or "no reason",
                extra=fields(group=request.group_id),
            )
        return coordinator_pb2.LeaveGroupResponse(error=wire_error(code, message))

    # -----------------------------------------------------------------------------------------
    # RPCs: offsets

    async def CommitOffsets(  # noqa: N802
        self, request: coordinator_pb2.CommitOffsetsRequest, context: ServicerContext
    ) -> coordinator_pb2.CommitOffsetsResponse:
        entries = [
            CommitEntry(t.topic, p.partition, p.committed_offset, p.committed_leader_epoch, p.metadata)
            for t in request.topics
            for p in t.partitions
        ]
        counts = self.shards.partition_counts()
        now_ms = self._clock.now_ms()
        try:
            outcomes = await self.shards.decide(
                request.group_id,
                lambda core: core.commit_offsets(
                    request.group_id,
                    request.member_id,
                    request.member_epoch,
                    entries,
                    now_ms=now_ms,
                    partition_counts=counts,
                ),
            )
            results = [(e.topic, e.partition, wire_error(code, message)) for e, code, message in outcomes]
        except GroupRouteError as exc:
            results = [(e.topic, e.partition, wire_error(exc.code, exc.message)) for e in entries]
        failed = sum(1 for _, _, error in results if error.code)
        self.metrics.committed(len(results) - failed, failed)
        by_topic: dict[str, list[coordinator_pb2.PartitionResult]] = {}
        for topic, partition, error in results:
            by_topic.setdefault(topic, []).append(coordinator_pb2.PartitionResult(partition=partition, error=error))
        return coordinator_pb2.CommitOffsetsResponse(
            topics=[coordinator_pb2.CommitOffsetsTopicResult(topic=t, partitions=ps) for t, ps in by_topic.items()]
        )

    async def FetchOffsets(  # noqa: N802
        self, request: coordinator_pb2.FetchOffsetsRequest, context: ServicerContext
    ) -> coordinator_pb2.FetchOffsetsResponse:
        try:
            loaded = self.shards.route(request.group_id)
            await self.shards.durable(loaded, loaded.position())
        except GroupRouteError as exc:
            return coordinator_pb2.FetchOffsetsResponse(error=wire_error(exc.code, exc.message))
        wanted = topic_partitions_from_wire(request.partitions) or None
        offsets = loaded.core.fetch_offsets(request.group_id, wanted)
        by_topic: dict[str, list[coordinator_pb2.CommittedOffset]] = {}
        for (topic, partition), commit in offsets.items():
            by_topic.setdefault(topic, []).append(
                coordinator_pb2.CommittedOffset(
                    partition=partition,
                    committed_offset=commit.offset if commit is not None else -1,
                    committed_leader_epoch=commit.leader_epoch if commit is not None else -1,
                    metadata=commit.metadata if commit is not None else "",
                    commit_timestamp_ms=commit.commit_timestamp_ms if commit is not None else -1,
                    error=wire_error(ErrorCode.NONE),
                )
            )
        return coordinator_pb2.FetchOffsetsResponse(
            error=wire_error(ErrorCode.NONE),
            topics=[coordinator_pb2.FetchOffsetsTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )

    # -----------------------------------------------------------------------------------------
    # RPCs: administration

    async def ListGroups(  # noqa: N802
        self, request: coordinator_pb2.ListGroupsRequest, context: ServicerContext
    ) -> coordinator_pb2.ListGroupsResponse:
        states = set(request.states)
        listings = []
        loading = False
        for loaded in sorted(self.shards.loaded.values(), key=lambda s: s.shard):
            if not loaded.active:
                loading = True
                continue
            for group in loaded.core.store:
                state = int(group.state())
                if not states or state in states:
                    listings.append(
                        coordinator_pb2.GroupListing(
                            group_id=group.group_id,
                            state=state,  # type: ignore[arg-type]
                            member_count=len(group.members),
                            coordinator_id=self.coordinator_id,
                        )
                    )
        error = (
            wire_error(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "some shards are still loading")
            if loading
            else wire_error(ErrorCode.NONE)
        )
        listings.sort(key=lambda listing: listing.group_id)
        return coordinator_pb2.ListGroupsResponse(error=error, groups=listings)

    async def DescribeGroups(  # noqa: N802
        self, request: coordinator_pb2.DescribeGroupsRequest, context: ServicerContext
    ) -> coordinator_pb2.DescribeGroupsResponse:
        described = []
        for group_id in dict.fromkeys(request.group_ids):  # a group given again is answered once
            try:
                loaded = self.shards.route(group_id)
                await self.shards.durable(loaded, loaded.position())
            except GroupRouteError as exc:
                described.append(
                    coordinator_pb2.GroupDescription(group_id=group_id, error=wire_error(exc.code, exc.message))
                )
                continue
            group = loaded.core.store.get(group_id)
            if group is None:
                described.append(
                    coordinator_pb2.GroupDescription(
                        group_id=group_id,
                        error=wire_error(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist"),
                        state=coordinator_pb2.GROUP_STATE_DEAD,
                    )
                )
                continue
            description = self._describe(group)
            if request.include_offsets:
                description.offsets.extend(await self._offset_states(group))
            described.append(description)
        return coordinator_pb2.DescribeGroupsResponse(groups=described)

    def _describe(self, group: Group) -> coordinator_pb2.GroupDescription:
        members = []
        for member_id, identity in sorted(group.members.items()):
            current = group.assignment(member_id)
            members.append(
                coordinator_pb2.MemberDescription(
                    member_id=member_id,
                    instance_id=identity.instance_id,
                    member_epoch=current.member_epoch,
                    client_id=identity.client_id,
                    client_host=identity.client_host,
                    rack_id=identity.rack_id,
                    subscription=coordinator_pb2.Subscription(
                        topic_names=identity.topic_names, topic_regex=identity.topic_regex
                    ),
                    assignment=assignment_to_wire(current.assigned),
                    target_assignment=assignment_to_wire(group.targets.get(member_id, frozenset())),
                )
            )
        return coordinator_pb2.GroupDescription(
            group_id=group.group_id,
            error=wire_error(ErrorCode.NONE),
            state=int(group.state()),  # type: ignore[arg-type]
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor=group.assignor,
            members=members,
            coordinator=self.endpoint,
        )

    async def _offset_states(self, group: Group) -> list[coordinator_pb2.PartitionOffsetState]:
        return await offset_states(group, self.brokers, self.shards.partition_counts(), self._clock)

    # -----------------------------------------------------------------------------------------
    # metrics

    async def _metrics_snapshot(self) -> list[Metric]:
        """Groups of the loaded shards with their lag (end offsets and record times read from the
        brokers now, every group at once)."""
        loaded = [shard for shard in self.shards.loaded.values() if shard.active]
        groups = [group for shard in loaded for group in shard.core.store]
        offsets = await asyncio.gather(*(self._offset_states(group) for group in groups), return_exceptions=True)
        states = []
        for group, partitions in zip(groups, offsets, strict=True):
            lags = (
                ()
                if isinstance(partitions, BaseException)
                else tuple(PartitionLag(p.topic, p.partition, p.committed_offset, p.lag, p.lag_ms) for p in partitions)
            )
            states.append(GroupSnapshot(group.group_id, group.state(), len(group.members), group.group_epoch, lags))
        return self.metrics.gauges(len(loaded), len(self.shards.loaded) - len(loaded), states)

    async def DeleteGroups(  # noqa: N802
        self, request: coordinator_pb2.DeleteGroupsRequest, context: ServicerContext
    ) -> coordinator_pb2.DeleteGroupsResponse:
        results = []
        for group_id in request.group_ids:
            try:
                code, message = await self.shards.decide(group_id, _deleting(group_id))
            except GroupRouteError as exc:
                code, message = exc.code, exc.message
            results.append(coordinator_pb2.GroupResult(group_id=group_id, error=wire_error(code, message)))
        return coordinator_pb2.DeleteGroupsResponse(results=results)

    async def ResetOffsets(  # noqa: N802
        self, request: coordinator_pb2.ResetOffsetsRequest, context: ServicerContext
    ) -> coordinator_pb2.ResetOffsetsResponse:
        try:
            loaded = self.shards.route(request.group_id)
            await self.shards.durable(loaded, loaded.position())
        except GroupRouteError as exc:
            return coordinator_pb2.ResetOffsetsResponse(error=wire_error(exc.code, exc.message))
        group = loaded.core.store.get(request.group_id)
        if group is not None and group.members:
            return coordinator_pb2.ResetOffsetsResponse(
                error=wire_error(
                    ErrorCode.NON_EMPTY_GROUP,
                    f"group {request.group_id!r} has {len(group.members)} active members; stop them first",
                )
            )
        kind = request.to.WhichOneof("to")
        if kind is None:
            return coordinator_pb2.ResetOffsetsResponse(
                error=wire_error(
                    ErrorCode.INVALID_REQUEST, "say where to reset to: earliest, latest, offset, timestamp or shift"
                )
            )
        committed = dict(group.offsets) if group is not None else {}
        wanted = topic_partitions_from_wire(request.partitions)
        refused: list[TopicPartition] = []
        if not request.partitions:  # every partition committed: authorized here, topic by topic
            wanted, refused = resolved_partitions(sorted(committed), Operation.READ, request_context(context).access)
        counts = self.shards.partition_counts()
        missing = [p for p in wanted if not 0 <= p[1] < counts.get(p[0], 0)]
        present = [p for p in wanted if p not in missing]
        targets, errors = await reset_targets(self.brokers, present, kind, request.to, committed)
        resets = [
            coordinator_pb2.OffsetReset(
                topic=topic,
                partition=partition,
                previous_offset=committed[tp].offset if tp in committed else -1,
                new_offset=targets.get(tp, -1),
                error=wire_error(*errors.get(tp, (ErrorCode.NONE, ""))),
            )
            for tp in wanted
            for topic, partition in [tp]
            if (topic, partition) not in missing
        ]
        resets += [
            _unreset(topic, partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist")
            for topic, partition in missing
        ]
        resets += [
            _unreset(topic, partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"you may not READ topic {topic!r}")
            for topic, partition in refused
        ]
        if not request.dry_run and targets:
            now_ms = self._clock.now_ms()
            try:
                code, message = await self.shards.decide(
                    request.group_id, lambda core: _pair(core.reset_offsets(request.group_id, targets, now_ms))
                )
            except GroupRouteError as exc:
                code, message = exc.code, exc.message
            if code is not ErrorCode.NONE:
                return coordinator_pb2.ResetOffsetsResponse(error=wire_error(code, message))
        return coordinator_pb2.ResetOffsetsResponse(
            error=wire_error(ErrorCode.NONE), resets=resets, dry_run=request.dry_run
        )

    async def DeleteOffsets(  # noqa: N802
        self, request: coordinator_pb2.DeleteOffsetsRequest, context: ServicerContext
    ) -> coordinator_pb2.DeleteOffsetsResponse:
        wanted = topic_partitions_from_wire(request.partitions)
        try:
            code, results = await self.shards.decide(
                request.group_id,
                lambda core: _deleted(core.delete_offsets(request.group_id, wanted)),
            )
        except GroupRouteError as exc:
            return coordinator_pb2.DeleteOffsetsResponse(error=wire_error(exc.code, exc.message))
        if code is not ErrorCode.NONE:
            return coordinator_pb2.DeleteOffsetsResponse(
                error=wire_error(code, f"group {request.group_id!r} does not exist")
            )
        return coordinator_pb2.DeleteOffsetsResponse(
            error=wire_error(ErrorCode.NONE),
            results=[
                coordinator_pb2.TopicPartitionResult(
                    topic=topic,
                    partition=partition,
                    error=wire_error(
                        result,
                        "the group subscribes to this topic; its offsets are in use"
                        if result is not ErrorCode.NONE
                        else "",
                    ),
                )
                for (topic, partition), result in results
            ],
        )


def _unreset(topic: str, partition: int, code: ErrorCode, message: str) -> coordinator_pb2.OffsetReset:
    """A partition a reset leaves as it is, and why."""
    return coordinator_pb2.OffsetReset(
        topic=topic, partition=partition, previous_offset=-1, new_offset=-1, error=wire_error(code, message)
    )


def _pair(outcome: tuple[ErrorCode, str, GroupDecision]) -> tuple[tuple[ErrorCode, str], GroupDecision]:
    code, message, decision = outcome
    return (code, message), decision


def _deleting(
    group_id: str,
) -> Callable[[GroupCoordinatorCore], tuple[tuple[ErrorCode, str], GroupDecision]]:
    return lambda core: _pair(core.delete_group(group_id))


def _deleted(
    outcome: tuple[ErrorCode, list[tuple[TopicPartition, ErrorCode]], GroupDecision],
) -> tuple[tuple[ErrorCode, list[tuple[TopicPartition, ErrorCode]]], GroupDecision]:
    code, results, decision = outcome
    return (code, results), decision


def add_to_server(service: GroupCoordinatorService, server: grpc.aio.Server) -> None:
    """Register the service on a gRPC server."""
    coordinator_pb2_grpc.add_GroupCoordinatorServicer_to_server(service, server)  # type: ignore[no-untyped-call]
