"""The Controller gRPC service: the controller's face (Kafka's ``ControllerApis``).

Each RPC checks who claims to call where a node must (``check_claim``), decodes its request,
asks the controller's engine (``lanes.controller.quorum_controller.QuorumController``: every
change is one ``write``, decided and committed on the active controller only) and encodes the
answer. Who may call at all is the server's guard (``lanes.runtime.access.guard``); that only the active
controller answers is the gate's (``lanes.controller.gate``). Topic changes count against the
caller's controller mutation quota (``lanes.controller.mutation_quotas``). Owned by the
controller's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from lanes.controller.core import ConfigOp, ControllerDecision, NewTopic
from lanes.controller.describe import (
    config_entries,
    describe_brokers,
    describe_coordinators,
    describe_topic,
    partition_state,
)
from lanes.controller.mutation_quotas import new_partitions, partitions_of
from lanes.controller.quorum_controller import QuorumController
from lanes.controller.raft import Voter
from lanes.controller.security_apis import SecurityApis
from lanes.errors import ErrorCode
from lanes.metadata.image import CONTROLLER_MUTATION_RATE, ProducerIdBlock
from lanes.rpc.tls import check_claim, node_identity
from lanes.rpc.wire import ServicerContext, topic_partitions_from_wire, wire_error
from lanes.runtime.access.guard import request_context
from lanes.security.acls import TOPIC_OPERATIONS
from lanes.v1 import common_pb2, controller_pb2, controller_pb2_grpc

#: how long AddController / RemoveController wait for the change to commit
QUORUM_CHANGE_TIMEOUT_S = 30.0
_OPS = {
    controller_pb2.ALTER_CONFIG_OP_SET: "set",
    controller_pb2.ALTER_CONFIG_OP_DELETE: "delete",
    controller_pb2.ALTER_CONFIG_OP_APPEND: "append",
    controller_pb2.ALTER_CONFIG_OP_SUBTRACT: "subtract",
}


class ControllerService(SecurityApis, controller_pb2_grpc.ControllerServicer):
    """The gRPC face of ``controller``; see the module docstring (users, ACLs and quotas:
    ``SecurityApis``)."""

    def __init__(self, controller: QuorumController) -> None:
        #: the engine this face serves
        self.controller = controller
        self._core = controller.core
        self._quotas = controller.mutation_quotas

    # -----------------------------------------------------------------------------------------
    # brokers and coordinators: registration and heartbeats

    async def RegisterBroker(  # noqa: N802 - gRPC method names
        self, request: controller_pb2.RegisterBrokerRequest, context: ServicerContext
    ) -> controller_pb2.RegisterBrokerResponse:
        await check_claim(context, node_identity("broker", request.broker_id))
        decision = await self.controller.register_node(
            "broker", request.broker_id, request.incarnation_id, request.cluster_id, request.endpoint
        )
        if decision.error is not ErrorCode.NONE:
            return controller_pb2.RegisterBrokerResponse(error=wire_error(decision.error, decision.message))
        return controller_pb2.RegisterBrokerResponse(
            error=wire_error(ErrorCode.NONE),
            broker_epoch=self.controller.image.brokers[request.broker_id].epoch,
            cluster_id=self.controller.image.cluster_id,
        )

    async def BrokerHeartbeat(  # noqa: N802
        self, request: controller_pb2.BrokerHeartbeatRequest, context: ServicerContext
    ) -> controller_pb2.BrokerHeartbeatResponse:
        await check_claim(context, node_identity("broker", request.broker_id))
        decision = await self.controller.node_heartbeat(
            "broker",
            request.broker_id,
            request.broker_epoch,
            request.current_metadata_offset,
            request.want_shut_down,
        )
        if decision.error is not ErrorCode.NONE:
            return controller_pb2.BrokerHeartbeatResponse(error=wire_error(decision.error, decision.message))
        if decision.records and not request.want_shut_down:  # unfenced: __consumer_offsets may be due
            await self.controller.write(self._core.ensure_offsets_topic)
        broker = self.controller.image.brokers[request.broker_id]
        return controller_pb2.BrokerHeartbeatResponse(
            error=wire_error(ErrorCode.NONE),
            is_caught_up=request.current_metadata_offset >= broker.epoch,
            is_fenced=broker.fenced,
            should_shut_down=request.want_shut_down and broker.fenced,
            heartbeat_interval_ms=self.controller.heartbeats.heartbeat_interval_ms,
            session_timeout_ms=self.controller.heartbeats.session_timeout_ms,
        )

    async def RegisterCoordinator(  # noqa: N802
        self, request: controller_pb2.RegisterCoordinatorRequest, context: ServicerContext
    ) -> controller_pb2.RegisterCoordinatorResponse:
        await check_claim(context, node_identity("coordinator", request.coordinator_id))
        decision = await self.controller.register_node(
            "coordinator", request.coordinator_id, request.incarnation_id, request.cluster_id, request.endpoint
        )
        if decision.error is not ErrorCode.NONE:
            return controller_pb2.RegisterCoordinatorResponse(error=wire_error(decision.error, decision.message))
        await self.controller.write(self._core.ensure_offsets_topic)
        return controller_pb2.RegisterCoordinatorResponse(
            error=wire_error(ErrorCode.NONE),
            coordinator_epoch=self.controller.image.coordinators[request.coordinator_id].epoch,
            cluster_id=self.controller.image.cluster_id,
        )

    async def CoordinatorHeartbeat(  # noqa: N802
        self, request: controller_pb2.CoordinatorHeartbeatRequest, context: ServicerContext
    ) -> controller_pb2.CoordinatorHeartbeatResponse:
        await check_claim(context, node_identity("coordinator", request.coordinator_id))
        decision = await self.controller.node_heartbeat(
            "coordinator", request.coordinator_id, request.coordinator_epoch, -1, request.want_shut_down
        )
        if decision.error is not ErrorCode.NONE:
            return controller_pb2.CoordinatorHeartbeatResponse(error=wire_error(decision.error, decision.message))
        coordinator = self.controller.image.coordinators[request.coordinator_id]
        return controller_pb2.CoordinatorHeartbeatResponse(
            error=wire_error(ErrorCode.NONE),
            is_fenced=coordinator.fenced,
            should_shut_down=request.want_shut_down and coordinator.fenced,
            heartbeat_interval_ms=self.controller.heartbeats.heartbeat_interval_ms,
            session_timeout_ms=self.controller.heartbeats.session_timeout_ms,
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
            await asyncio.wait_for(
                self.controller.quorum.change_voters(add=add, remove=remove), QUORUM_CHANGE_TIMEOUT_S
            )
        except ValueError as exc:
            return self._quorum_change_refused(str(exc))
        except TimeoutError:
            return controller_pb2.ChangeControllersResponse(
                error=wire_error(ErrorCode.REQUEST_TIMED_OUT, "the change was not committed in time (outcome unknown)"),
                quorum=self.controller.quorum.describe(),
            )
        return controller_pb2.ChangeControllersResponse(quorum=self.controller.quorum.describe())

    def _quorum_change_refused(self, why: str) -> controller_pb2.ChangeControllersResponse:
        return controller_pb2.ChangeControllersResponse(
            error=wire_error(ErrorCode.INVALID_REQUEST, why), quorum=self.controller.quorum.describe()
        )

    async def AllocateProducerIds(  # noqa: N802
        self, request: controller_pb2.AllocateProducerIdsRequest, context: ServicerContext
    ) -> controller_pb2.AllocateProducerIdsResponse:
        await check_claim(context, node_identity("broker", request.broker_id))
        decision = await self.controller.write(
            lambda: self._core.allocate_producer_ids(request.broker_id, request.broker_epoch)
        )
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
        """The committed metadata log from ``from_offset``, then every change (``MetadataStream``)."""
        async for update in self.controller.stream.watch(request):
            yield update

    # -----------------------------------------------------------------------------------------
    # topics

    async def CreateTopics(  # noqa: N802
        self, request: controller_pb2.CreateTopicsRequest, context: ServicerContext
    ) -> controller_pb2.CreateTopicsResponse:
        results = []
        limited, throttle_ms = request_context(context).quota(self.controller.image, CONTROLLER_MUTATION_RATE), 0
        for topic in request.topics:
            new = NewTopic(
                name=topic.name,
                num_partitions=None if topic.num_partitions == -1 else topic.num_partitions,
                replication_factor=None if topic.replication_factor == -1 else topic.replication_factor,
                assignments=tuple(tuple(a.broker_ids) for a in sorted(topic.assignments, key=lambda a: a.partition)),
                configs=tuple((c.name, c.value) for c in topic.configs),
            )
            decision = await self.controller.write(
                lambda new=new: self._quotas.charged(
                    limited, self._core.create_topic(new, validate_only=request.validate_only), new_partitions
                )
            )
            throttle_ms = max(throttle_ms, self._quotas.throttle_ms(limited, decision))
            result = controller_pb2.CreatableTopicResult(
                name=topic.name, error=wire_error(decision.error, decision.message)
            )
            created = self.controller.image.topic(topic.name)
            if decision.error is ErrorCode.NONE and created is not None and not request.validate_only:
                result.topic_id = created.topic_id
                result.num_partitions = len(created.partitions)
                result.replication_factor = len(created.partitions[0].replicas)
                result.configs.extend(config_entries(self.controller.image, topic.name))
            results.append(result)
        return controller_pb2.CreateTopicsResponse(topics=results, throttle_time_ms=throttle_ms)

    async def DeleteTopics(  # noqa: N802
        self, request: controller_pb2.DeleteTopicsRequest, context: ServicerContext
    ) -> controller_pb2.DeleteTopicsResponse:
        names = list(request.names) + [
            self.controller.image.topics[topic_id].name
            if topic_id in self.controller.image.topics
            else f"<unknown id {topic_id}>"
            for topic_id in request.topic_ids
        ]
        results = []
        limited, throttle_ms = request_context(context).quota(self.controller.image, CONTROLLER_MUTATION_RATE), 0
        for name in names:
            topic = self.controller.image.topic(name)
            decision = await self.controller.write(
                lambda name=name: self._quotas.charged(
                    limited, self._core.delete_topic(name), partitions_of(lambda: self.controller.image, name)
                )
            )
            throttle_ms = max(throttle_ms, self._quotas.throttle_ms(limited, decision))
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
        limited, throttle_ms = request_context(context).quota(self.controller.image, CONTROLLER_MUTATION_RATE), 0
        for topic in request.topics:
            assignments = [tuple(a.broker_ids) for a in topic.assignments]
            decision = await self.controller.write(
                lambda topic=topic, assignments=assignments: self._quotas.charged(
                    limited,
                    self._core.create_partitions(
                        topic.name, topic.count, assignments, validate_only=request.validate_only
                    ),
                    new_partitions,
                )
            )
            throttle_ms = max(throttle_ms, self._quotas.throttle_ms(limited, decision))
            results.append(
                controller_pb2.CreatePartitionsTopicResult(
                    name=topic.name, error=wire_error(decision.error, decision.message)
                )
            )
        return controller_pb2.CreatePartitionsResponse(topics=results, throttle_time_ms=throttle_ms)

    async def DescribeTopics(  # noqa: N802
        self, request: controller_pb2.DescribeTopicsRequest, context: ServicerContext
    ) -> controller_pb2.DescribeTopicsResponse:
        if request.names:
            wanted = list(dict.fromkeys(request.names))  # a name given again is answered once
        else:
            wanted = sorted(
                t.name for t in self.controller.image.topics.values() if request.include_internal or not t.internal
            )
        descriptions = []
        for name in wanted:
            topic = self.controller.image.topic(name)
            if topic is None:
                descriptions.append(
                    controller_pb2.TopicDescription(
                        name=name,
                        error=wire_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"),
                    )
                )
                continue
            described = describe_topic(self.controller.image, topic)
            if request.include_authorized_operations:  # all: the guard narrows them for a user with ACLs
                described.authorized_operations.extend(op.name for op in TOPIC_OPERATIONS)
            descriptions.append(described)
        return controller_pb2.DescribeTopicsResponse(
            topics=descriptions, metadata_offset=self.controller.image.last_offset
        )

    async def DescribeCluster(  # noqa: N802
        self, request: controller_pb2.DescribeClusterRequest, context: ServicerContext
    ) -> controller_pb2.DescribeClusterResponse:
        image = self.controller.image
        certificates = request_context(context).on_certificate_listener
        return controller_pb2.DescribeClusterResponse(
            error=wire_error(ErrorCode.NONE),
            cluster_id=image.cluster_id,
            controller=self.controller.endpoint,
            brokers=describe_brokers(image, include_fenced=request.include_fenced, certificates=certificates),
            coordinators=describe_coordinators(image, include_fenced=request.include_fenced, certificates=certificates),
            metadata_offset=image.last_offset,
            quorum=self.controller.quorum.describe(),
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
                decision = await self.controller.write(
                    lambda resource=resource, ops=ops: self._core.alter_topic_configs(
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
            elif self.controller.image.topic(resource.resource_name) is None:
                result.error.CopyFrom(
                    wire_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {resource.resource_name!r} does not exist")
                )
            else:
                result.error.CopyFrom(wire_error(ErrorCode.NONE))
                result.configs.extend(
                    config_entries(
                        self.controller.image,
                        resource.resource_name,
                        resource.names,
                        include_documentation=request.include_documentation,
                    )
                )
            results.append(result)
        return controller_pb2.DescribeConfigsResponse(results=results)

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
                decision = await self.controller.write(
                    lambda topic=topic, proposal=proposal: self._core.alter_partition(
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
                partition_state(self.controller.image, topic.topic_id, proposal.partition, result)
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
        _, outcomes = await self.controller.write_with(lambda: self._core.elect_preferred_leaders(wanted))
        return controller_pb2.ElectLeadersResponse(
            error=wire_error(ErrorCode.NONE),
            results=[
                controller_pb2.ElectionResult(topic=topic, partition=partition, error=wire_error(code))
                for (topic, partition), code in sorted(outcomes.items())
            ],
        )


def add_to_server(service: ControllerService, server: grpc.aio.Server) -> None:
    """Register ``service`` on ``server`` (the generated helper is untyped)."""
    controller_pb2_grpc.add_ControllerServicer_to_server(service, server)  # type: ignore[no-untyped-call]
