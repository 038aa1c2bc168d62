"""Kafka's admin APIs on the Kafka face.

Topics and configs (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
IncrementalAlterConfigs) are the controller's: the broker forwards each request to the active
controller on the client's behalf (``AdminCalls``; the controller authorizes it as that client, per
resource, as its gRPC face does) and maps the answer back. DescribeCluster, DeleteRecords and
OffsetForLeaderEpoch are the broker's own, from its metadata image and engine, authorized by the
same ``RULES``.

Mappings: Kafka's config resource types (TOPIC 2, BROKER 4, GROUP 32) and config types are Lanes'
in other numbers; config sources and IncrementalAlterConfigs' operations are the same numbers.

Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kio.schema.errors import ErrorCode as KafkaError

from lanes.broker.node import BrokerNode
from lanes.kafka.access import allows, broker_rule
from lanes.kafka.answers import KafkaCall
from lanes.kafka.codec import OPERATIONS_OMITTED, build, kafka_brokers, nested, response_class, whole_ms
from lanes.kafka.group_apis import kafka_code
from lanes.security.acls import Operation
from lanes.v1 import common_pb2, controller_pb2

DELETE_RECORDS, CREATE_TOPICS, DELETE_TOPICS, OFFSET_FOR_LEADER_EPOCH = 21, 19, 20, 23
DESCRIBE_CONFIGS, CREATE_PARTITIONS, INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CLUSTER = 32, 37, 44, 60

#: Kafka's config resource types -> Lanes' (and back)
_RESOURCE_TYPES = {
    2: common_pb2.CONFIG_RESOURCE_TYPE_TOPIC,
    4: common_pb2.CONFIG_RESOURCE_TYPE_BROKER,
    32: common_pb2.CONFIG_RESOURCE_TYPE_GROUP,
}
_KAFKA_RESOURCE_TYPES = {lanes: kafka for kafka, lanes in _RESOURCE_TYPES.items()}
#: Lanes' config types -> Kafka's (BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7)
_CONFIG_TYPES = {
    common_pb2.CONFIG_TYPE_BOOLEAN: 1,
    common_pb2.CONFIG_TYPE_STRING: 2,
    common_pb2.CONFIG_TYPE_INT: 3,
    common_pb2.CONFIG_TYPE_LONG: 5,
    common_pb2.CONFIG_TYPE_DOUBLE: 6,
    common_pb2.CONFIG_TYPE_LIST: 7,
}
_DELETE_RECORDS = broker_rule("DeleteRecords").per_topic
Caller = tuple[str, str, str]
_RESPONSES = {
    "DescribeConfigs": controller_pb2.DescribeConfigsResponse,
    "AlterConfigs": controller_pb2.AlterConfigsResponse,
}


class AdminCalls(Protocol):
    """The broker's admin calls to the active controller (``lanes.broker.forwarding.ControllerForwarding``)."""

    async def ask(
        self, method: str, request: Any, caller: Caller, *, refusal: Callable[[common_pb2.Error], Any]
    ) -> Any: ...


class AdminApis:
    """The admin APIs of one broker's Kafka face (see the module docstring)."""

    def __init__(self, node: BrokerNode, controller: AdminCalls) -> None:
        self._node = node
        self._controller = controller

    def _ask(self, call: KafkaCall, method: str, request: Any, refusal: Callable[[common_pb2.Error], Any]) -> Any:
        caller = (call.caller.principal, call.caller.host, call.caller.client_id)
        return self._controller.ask(method, request, caller, refusal=refusal)

    # -----------------------------------------------------------------------------------------
    # Topics

    async def create_topics(self, call: KafkaCall) -> Any:
        """Each topic created by the controller (-1 partitions or replication: the cluster's defaults)."""
        request = call.body
        cls = response_class(CREATE_TOPICS, call.version)
        asked = controller_pb2.CreateTopicsRequest(
            timeout_ms=max(whole_ms(request.timeout), 0), validate_only=bool(getattr(request, "validate_only", False))
        )
        for topic in request.topics:
            created = asked.topics.add(
                name=topic.name, num_partitions=topic.num_partitions, replication_factor=topic.replication_factor
            )
            for assignment in topic.assignments:
                created.assignments.add(partition=assignment.partition_index, broker_ids=assignment.broker_ids)
            for config in topic.configs:
                created.configs.add(name=config.name, value=config.value)

        def refusal(error: common_pb2.Error) -> Any:
            return controller_pb2.CreateTopicsResponse(
                topics=[controller_pb2.CreatableTopicResult(name=t.name, error=error) for t in asked.topics]
            )

        answer = await self._ask(call, "CreateTopics", asked, refusal)
        topic_class = nested(cls, "CreatableTopicResult")
        config_class = nested(cls, "CreatableTopicConfigs") if call.version >= 5 else None
        return build(
            cls,
            throttle_time=datetime.timedelta(milliseconds=answer.throttle_time_ms),
            topics=tuple(
                build(
                    topic_class,
                    name=t.name,
                    topic_id=uuid.UUID(t.topic_id) if t.topic_id else uuid.UUID(int=0),
                    error_code=kafka_code(t.error),
                    error_message=t.error.message or None,
                    num_partitions=t.num_partitions if not t.error.code else -1,
                    replication_factor=t.replication_factor if not t.error.code else -1,
                    configs=tuple(_config(config_class, c) for c in t.configs)
                    if config_class is not None and not t.error.code
                    else None,
                )
                for t in answer.topics
            ),
        )

    async def delete_topics(self, call: KafkaCall) -> Any:
        """Topics deleted by name or (v6) id."""
        request = call.body
        cls = response_class(DELETE_TOPICS, call.version)
        asked = controller_pb2.DeleteTopicsRequest(timeout_ms=max(whole_ms(request.timeout), 0))
        if call.version >= 6:
            for topic in request.topics:
                if topic.name:
                    asked.names.append(topic.name)
                elif topic.topic_id is not None:
                    asked.topic_ids.append(str(topic.topic_id))
        else:
            asked.names.extend(request.topic_names)

        def refusal(error: common_pb2.Error) -> Any:
            return controller_pb2.DeleteTopicsResponse(
                topics=[controller_pb2.DeletableTopicResult(name=n, error=error) for n in asked.names]
                + [controller_pb2.DeletableTopicResult(topic_id=i, error=error) for i in asked.topic_ids]
            )

        answer = await self._ask(call, "DeleteTopics", asked, refusal)
        result_class = nested(cls, "DeletableTopicResult")
        return build(
            cls,
            responses=tuple(
                build(
                    result_class,
                    name=t.name or None,
                    topic_id=uuid.UUID(t.topic_id) if t.topic_id else uuid.UUID(int=0),
                    error_code=kafka_code(t.error),
                    error_message=t.error.message or None,
                )
                for t in answer.topics
            ),
        )

    async def create_partitions(self, call: KafkaCall) -> Any:
        """Topics grown to their new partition counts."""
        request = call.body
        cls = response_class(CREATE_PARTITIONS, call.version)
        asked = controller_pb2.CreatePartitionsRequest(
            timeout_ms=max(whole_ms(request.timeout), 0), validate_only=bool(request.validate_only)
        )
        for topic in request.topics:
            grown = asked.topics.add(name=topic.name, count=topic.count)
            for index, assignment in enumerate(topic.assignments or ()):
                grown.assignments.add(partition=index, broker_ids=assignment.broker_ids)

        def refusal(error: common_pb2.Error) -> Any:
            return controller_pb2.CreatePartitionsResponse(
                topics=[controller_pb2.CreatePartitionsTopicResult(name=t.name, error=error) for t in asked.topics]
            )

        answer = await self._ask(call, "CreatePartitions", asked, refusal)
        result_class = nested(cls, "CreatePartitionsTopicResult")
        return build(
            cls,
            results=tuple(
                build(result_class, name=t.name, error_code=kafka_code(t.error), error_message=t.error.message or None)
                for t in answer.topics
            ),
        )

    # -----------------------------------------------------------------------------------------
    # Configs

    async def describe_configs(self, call: KafkaCall) -> Any:
        """Each resource's configs with their sources (and synonyms and documentation when asked)."""
        request = call.body
        cls = response_class(DESCRIBE_CONFIGS, call.version)
        result_class, config_class = nested(cls, "DescribeConfigsResult"), nested(cls, "DescribeConfigsResourceResult")
        synonym_class = nested(cls, "DescribeConfigsSynonym")
        kinds = [_RESOURCE_TYPES.get(int(r.resource_type)) for r in request.resources]
        asked = controller_pb2.DescribeConfigsRequest(
            include_documentation=bool(getattr(request, "include_documentation", False)),
            include_synonyms=bool(request.include_synonyms),
        )
        for resource, kind in zip(request.resources, kinds, strict=True):
            if kind is not None:
                asked.resources.add(
                    resource_type=kind, resource_name=resource.resource_name, names=resource.configuration_keys or ()
                )

        def configs(result: controller_pb2.DescribeConfigsResult) -> dict[str, Any]:
            return {
                "configs": tuple(
                    _config(
                        config_class,
                        c,
                        config_type=_CONFIG_TYPES.get(c.type, 0),
                        documentation=c.documentation or None,
                        synonyms=tuple(
                            build(
                                synonym_class,
                                name=s.name,
                                value=s.value if s.HasField("value") else None,
                                source=int(s.source),
                            )
                            for s in c.synonyms
                        ),
                    )
                    for c in result.configs
                )
            }

        results = await self._per_resource(
            call,
            "DescribeConfigs",
            asked,
            result_type=controller_pb2.DescribeConfigsResult,
            result_class=result_class,
            kinds=kinds,
            more=configs,
        )
        return build(cls, results=results)

    async def incremental_alter_configs(self, call: KafkaCall) -> Any:
        """Each resource's configs set, deleted, appended to or subtracted from (Kafka's operations)."""
        request = call.body
        cls = response_class(INCREMENTAL_ALTER_CONFIGS, call.version)
        result_class = nested(cls, "AlterConfigsResourceResponse")
        kinds = [_RESOURCE_TYPES.get(int(r.resource_type)) for r in request.resources]
        asked = controller_pb2.AlterConfigsRequest(validate_only=bool(request.validate_only))
        for resource, kind in zip(request.resources, kinds, strict=True):
            if kind is None:
                continue
            altered = asked.resources.add(resource_type=kind, resource_name=resource.resource_name)
            for config in resource.configs:
                entry = altered.configs.add(name=config.name, op=int(config.config_operation))
                if config.value is not None:
                    entry.value = config.value

        responses = await self._per_resource(
            call,
            "AlterConfigs",
            asked,
            result_type=controller_pb2.AlterConfigsResourceResult,
            result_class=result_class,
            kinds=kinds,
            more=lambda _: {},
        )
        return build(cls, responses=responses)

    async def _per_resource(
        self,
        call: KafkaCall,
        method: str,
        asked: Any,
        *,
        result_type: type[Any],
        result_class: type[Any],
        kinds: Sequence[int | None],
        more: Callable[[Any], dict[str, Any]],
    ) -> tuple[Any, ...]:
        """The controller's answer to a config call, one result per resource of the Kafka request
        in its order (a resource type Lanes has not: INVALID_REQUEST), ``more(result)`` added."""

        def refusal(error: common_pb2.Error) -> Any:
            return _RESPONSES[method](
                results=[
                    result_type(resource_type=r.resource_type, resource_name=r.resource_name, error=error)
                    for r in asked.resources
                ]
            )

        answer = await self._ask(call, method, asked, refusal) if asked.resources else None
        found = iter(answer.results if answer is not None else ())
        results = []
        for resource, kind in zip(call.body.resources, kinds, strict=True):
            named = {"resource_type": resource.resource_type, "resource_name": resource.resource_name}
            if kind is None:
                refused = f"resource type {resource.resource_type} is not served"
                results.append(
                    build(result_class, error_code=KafkaError.invalid_request, error_message=refused, **named)
                )
                continue
            result = next(found)
            code, message = kafka_code(result.error), result.error.message or None
            results.append(build(result_class, error_code=code, error_message=message, **named, **more(result)))
        return tuple(results)

    # -----------------------------------------------------------------------------------------
    # The broker's own

    async def describe_cluster(self, call: KafkaCall) -> Any:
        """The cluster's id and its brokers' Kafka listeners, to any authenticated caller, as Kafka
        answers it (what Metadata tells anyone: the gRPC face's DescribeCluster, which tells more,
        needs DESCRIBE on the cluster); a listed broker is the controller clients send admin
        requests to."""
        cls = response_class(DESCRIBE_CLUSTER, call.version)
        image = self._node.image
        broker_class = nested(cls, "DescribeClusterBroker")
        brokers = kafka_brokers(image)
        listed = {b.broker_id for b in brokers}
        return build(
            cls,
            endpoint_type=1,
            cluster_id=image.cluster_id or "",
            controller_id=self._node.broker_id if self._node.broker_id in listed else min(listed, default=-1),
            brokers=tuple(
                build(broker_class, broker_id=b.broker_id, host=b.host, port=b.kafka_port, rack=b.rack or None)
                for b in brokers
            ),
            cluster_authorized_operations=OPERATIONS_OMITTED,
        )

    async def delete_records(self, call: KafkaCall) -> Any:
        """Each partition's log start moved up to the given offset (-1: the high-water mark), on its
        leader (DELETE on the topic)."""
        request = call.body
        cls = response_class(DELETE_RECORDS, call.version)
        topic_class, partition_class = (
            nested(cls, "DeleteRecordsTopicResult"),
            nested(cls, "DeleteRecordsPartitionResult"),
        )
        assert _DELETE_RECORDS is not None

        async def one(topic: str, partition: int, offset: int) -> Any:
            if not allows(call.access, _DELETE_RECORDS, topic):
                return build(
                    partition_class,
                    partition_index=partition,
                    low_watermark=-1,
                    error_code=KafkaError.topic_authorization_failed,
                )
            done = await self._node.replicas.delete_records(topic, partition, offset)
            return build(
                partition_class,
                partition_index=partition,
                low_watermark=done.low_watermark,
                error_code=kafka_code(done.error),
            )

        topics = []
        for topic in request.topics:
            partitions = await asyncio.gather(*(one(topic.name, p.partition_index, p.offset) for p in topic.partitions))
            topics.append(build(topic_class, name=topic.name, partitions=tuple(partitions)))
        return build(cls, topics=tuple(topics))

    async def offset_for_leader_epoch(self, call: KafkaCall) -> Any:
        """Where each leader epoch ends in this leader's log (a consumer checking its position after
        a leader change; DESCRIBE on the topic). A follower's request (replica id set) is refused:
        replication is the cluster's own, over gRPC."""
        request = call.body
        cls = response_class(OFFSET_FOR_LEADER_EPOCH, call.version)
        topic_class, partition_class = nested(cls, "OffsetForLeaderTopicResult"), nested(cls, "EpochEndOffset")
        follower = int(getattr(request, "replica_id", -1)) >= 0

        def one(topic: str, p: Any) -> Any:
            if follower or not allows(call.access, Operation.DESCRIBE, topic):  # (RULES: DESCRIBE on each topic)
                code = KafkaError.cluster_authorization_failed if follower else KafkaError.topic_authorization_failed
                return build(partition_class, partition=p.partition, error_code=code, leader_epoch=-1, end_offset=-1)
            found = self._node.replicas.epoch_end_offset(topic, p.partition, p.current_leader_epoch, p.leader_epoch)
            return build(
                partition_class,
                partition=p.partition,
                error_code=kafka_code(found.error),
                leader_epoch=found.end.leader_epoch if not found.error.code else -1,
                end_offset=found.end.end_offset if not found.error.code else -1,
            )

        return build(
            cls,
            topics=tuple(
                build(topic_class, topic=t.topic, partitions=tuple(one(t.topic, p) for p in t.partitions))
                for t in request.topics
            ),
        )


def _config(config_class: type[Any], entry: common_pb2.ConfigEntry, **more: Any) -> Any:
    """A config entry as Kafka's (its value null when unset)."""
    return build(
        config_class,
        name=entry.name,
        value=entry.value if entry.HasField("value") else None,
        read_only=entry.read_only,
        config_source=int(entry.source),
        is_sensitive=entry.sensitive,
        **more,
    )
