"""Which ACL each RPC of each Lanes service needs: one table, ``RULES``, that the guard
(``lanes.runtime.access.guard``) applies to every call, as Kafka's ``KafkaApis`` authorizes each request.

A rule says what a call needs, from its request:

- ``needs``: (operation, resource type, name) triples that must all be allowed, else the call
  ends with PERMISSION_DENIED naming the first refused one (a whole-call refusal: the request is
  about that resource, or about the cluster);
- ``per_topic`` (Produce, ProduceStream, Fetch, FetchStream): the operation each named topic needs; topics
  refused are taken out of the request and answered with TOPIC_AUTHORIZATION_FAILED per
  partition, as Kafka does, so a producer writing two topics on one broker keeps the one it may;
- ``per_resource`` (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
  DescribeConfigs): each named resource is authorized on its own; refused ones are taken out of
  the request and answered in their place with TOPIC_AUTHORIZATION_FAILED (or
  CLUSTER_AUTHORIZATION_FAILED), as Kafka's admin requests are, so deleting two topics of which
  the caller may delete one deletes that one;
- ``trim``: what the answer may show (Metadata, DescribeTopics, ListGroups): resources the
  caller may not DESCRIBE are left out of listings, and named ones answered as refused, so a
  caller learns nothing of topics and groups it may not see.

The cluster's own nodes (their certificates) are held to ``NODE_RULES`` instead: what their role
needs and nothing more. Super users pass every rule but ``nodes_only`` ones. A method missing
from ``RULES`` is refused to everyone else: a new RPC stays closed until it has a rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from lanes.errors import ErrorCode
from lanes.metadata.image import MetadataImage
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.rpc.wire import message_of, wire_error
from lanes.security.acls import CLUSTER_NAME, TOPIC_OPERATIONS, Authorizer, Operation, ResourceType
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2, controller_pb2, coordinator_pb2

#: (operation, resource type, resource name): one permission a call needs.
Need = tuple[Operation, ResourceType, str]

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER


@dataclass(frozen=True)
class Access:
    """One call's caller, as rules ask about it."""

    principal: str
    host: str
    authorizer: Authorizer
    image: MetadataImage

    def allows(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        """Whether the caller may do ``operation`` on the resource."""
        return self.authorizer.allows(self.principal, self.host, operation, resource_type, name)


@dataclass(frozen=True)
class Described:
    """A rule's callable (its needs, trim or request test) and what it does, in words: the
    table of ``docs/security.md`` is generated from these (``lanes.runtime.access.rules_table``)."""

    call: Callable[..., Any]
    doc: str

    def __call__(self, *args: Any) -> Any:
        return self.call(*args)


def _doc(callable_: Callable[..., Any]) -> str:
    """What a rule's callable does, in words ("" for one that does nothing)."""
    return callable_.doc if isinstance(callable_, Described) else ""


@dataclass(frozen=True)
class PerResource:
    """How an admin request names its resources and how each refused one is answered: the
    request's repeated ``fields`` (in order), ``need(field, entry, access)`` (the first refused
    permission of an entry, or the error it is answered with; None when allowed),
    ``result(field, entry, refusal)`` (its answer) and the response's repeated ``results`` field
    (answers in request order)."""

    fields: tuple[str, ...]
    need: Callable[[str, Any, Access], Need | common_pb2.Error | None]
    result: Callable[[str, Any, Any], Any]
    results: str
    doc: str


@dataclass(frozen=True)
class Rule:
    """What one RPC needs (see the module docstring). ``nodes_only``: the cluster's own work,
    which no ACL grants (registration, the metadata stream with its stored keys, replication,
    the quorum): only a node's certificate passes, and ``nodes_only_when`` narrows that to the
    requests it says (a follower's OffsetForLeaderEpoch, not a consumer's). ``kafka``: the Kafka
    API it stands for."""

    needs: Callable[[Any, Access], Iterable[Need]] = lambda request, access: ()
    per_topic: Operation | None = None
    trim: Callable[[Any, Any, Access], None] | None = None
    nodes_only: bool = False
    nodes_only_when: Callable[[Any], bool] | None = None
    per_resource: PerResource | None = None
    kafka: str = ""

    def describe(self) -> str:
        """What the rule needs, in words (generated from its parts)."""
        if self.nodes_only:
            return "a node's certificate (`NODE_RULES`): no ACL grants it and a super user does not pass"
        parts = [_doc(self.needs)] if _doc(self.needs) else []
        if self.per_topic is not None:
            parts.append(
                f"{self.per_topic.name} on each topic; refused topics are answered TOPIC_AUTHORIZATION_FAILED per "
                "partition and the rest is done"
            )
        if self.per_resource is not None:
            parts.append(self.per_resource.doc)
        if self.trim is not None:
            parts.append(_doc(self.trim))
        if self.nodes_only_when is not None:
            parts.append(_doc(self.nodes_only_when))
        return "; ".join(parts) or "any authenticated caller"

    def for_nodes_only(self, request: Any) -> bool:
        """Whether ``request`` is one only the cluster's nodes may make."""
        if self.nodes_only_when is not None:
            return request is not None and self.nodes_only_when(request)
        return self.nodes_only


def refusal_code(resource_type: ResourceType) -> ErrorCode:
    """The error a refusal of a resource of this type is reported with."""
    return {
        TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }.get(resource_type, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


def first_refused(needs: Iterable[Need], access: Access) -> Need | None:
    """The first of ``needs`` the caller is not allowed; None when all are."""
    return next((need for need in needs if not access.allows(*need)), None)


def refused_now(request: Any, rule: Rule, access: Access) -> Need | None:
    """The first permission ``access`` (the ACLs in force now) no longer grants of what
    ``request`` asks, once its refused topics and resources were taken out at admission; None
    when it still grants all. A server stream checks this before each answer after the first, so
    a caller that lost a permission mid-stream gets no further answer (as each Kafka request is
    authorized on its own)."""
    refused = first_refused(rule.needs(request, access), access)
    if refused is not None or rule.per_topic is None:
        return refused
    operation = rule.per_topic
    names = (topic.topic for topic in request.topics)
    return next(((operation, TOPIC, name) for name in names if not access.allows(operation, TOPIC, name)), None)


def _cluster(operation: Operation) -> Described:
    return Described(lambda request, access: [(operation, CLUSTER, CLUSTER_NAME)], f"{operation.name} on the cluster")


def _group(operation: Operation, *, topics: Operation | None = None, unnamed: str = "") -> Described:
    """``operation`` on the request's ``group_id``, and ``topics`` on each topic its
    ``topics``/``partitions`` name. A request naming no partition (ResetOffsets: every partition
    the group committed; FetchOffsets: all its offsets) needs nothing more here: the coordinator
    resolves those partitions and authorizes each topic itself (``resolved_partitions``), and a
    DeleteOffsets naming none deletes nothing."""

    def needs(request: Any, access: Access) -> Iterator[Need]:
        yield operation, GROUP, request.group_id
        if topics is None:
            return
        for name in dict.fromkeys(entry.topic for entry in request.partitions if entry.partitions):
            yield topics, TOPIC, name

    doc = f"{operation.name} on the group"
    if topics is not None:
        doc += f", {topics.name} on each topic named" + (f" ({unnamed})" if unnamed else "")
    return Described(needs, doc)


def resolved_partitions(
    partitions: Iterable[TopicPartition], operation: Operation, access: Access | None
) -> tuple[list[TopicPartition], list[TopicPartition]]:
    """Of ``partitions`` a request did not name but the service resolved for it (the partitions a
    group committed): (those the caller may ``operation``, those of topics it may DESCRIBE but not
    ``operation``: answered TOPIC_AUTHORIZATION_FAILED). Topics it may not DESCRIBE are left out
    of both, as a listing leaves them out: the answer reveals nothing of them, and DENY wins as
    it does for named topics. ``access`` None: everything passes (a node, a super user, no ACLs)."""
    listed = list(partitions)
    if access is None:
        return listed, []
    allowed, refused = [], []
    for partition in listed:
        if access.allows(operation, TOPIC, partition[0]):
            allowed.append(partition)
        elif access.allows(Operation.DESCRIBE, TOPIC, partition[0]):
            refused.append(partition)
    return allowed, refused


def _heartbeat(request: coordinator_pb2.HeartbeatRequest, access: Access) -> Iterator[Need]:
    """READ on the group, and DESCRIBE on each topic subscribed by name (KIP-848: a member learns
    the partitions of what it subscribes to). A pattern is resolved by the coordinator over the
    topics the member may DESCRIBE (``lanes.coordinator.core``, with the principal the heartbeat
    is recorded with)."""
    yield Operation.READ, GROUP, request.group_id
    for name in dict.fromkeys(request.subscription.topic_names):
        yield Operation.DESCRIBE, TOPIC, name


def _groups(operation: Operation) -> Described:
    return Described(
        lambda request, access: [(operation, GROUP, group_id) for group_id in dict.fromkeys(request.group_ids)],
        f"{operation.name} on each group",
    )


def _refused(access: Access, *needs: Need) -> Need | None:
    """The first of ``needs`` the caller is not allowed."""
    return first_refused(needs, access)


def refusal_error(need: Need, access: Access) -> common_pb2.Error:
    """The error answering a refused ``need``."""
    operation, resource_type, name = need
    return wire_error(
        refusal_code(resource_type),
        f"{access.principal} may not {operation.name} {resource_type.name.lower()} {name!r}",
    )


def _create_topic_need(field: str, topic: Any, access: Access) -> Need | None:
    """CREATE on the cluster, or else on the topic (Kafka allows either)."""
    if access.allows(Operation.CREATE, CLUSTER, CLUSTER_NAME):
        return None
    return _refused(access, (Operation.CREATE, TOPIC, topic.name))


def _delete_topic_need(field: str, named: str, access: Access) -> Need | common_pb2.Error | None:
    """DELETE on the topic. By id, a topic the caller may not DESCRIBE is answered as an unknown
    id is, word for word: the refusal tells neither its name nor that the id exists."""
    if field == "names":
        return _refused(access, (Operation.DELETE, TOPIC, named))
    topic = access.image.topics.get(named)
    if topic is None or not access.allows(Operation.DESCRIBE, TOPIC, topic.name):
        return wire_error(ErrorCode.UNKNOWN_TOPIC_ID, f"no topic you may see has the id {named!r}")
    return _refused(access, (Operation.DELETE, TOPIC, topic.name))


def _config_need(operation: Operation) -> Callable[[str, Any, Access], Need | None]:
    def need(field: str, resource: Any, access: Access) -> Need | None:
        if resource.resource_type == common_pb2.CONFIG_RESOURCE_TYPE_TOPIC:
            return _refused(access, (operation, TOPIC, resource.resource_name))
        return _refused(access, (operation, CLUSTER, CLUSTER_NAME))

    return need


_CREATE_TOPICS = PerResource(
    ("topics",),
    _create_topic_need,
    lambda field, topic, error: controller_pb2.CreatableTopicResult(name=topic.name, error=error),
    "topics",
    "CREATE on the cluster, or on each topic name; answered per topic",
)
_DELETE_TOPICS = PerResource(
    ("names", "topic_ids"),
    _delete_topic_need,
    lambda field, named, error: controller_pb2.DeletableTopicResult(
        **({"name": named} if field == "names" else {"topic_id": named}), error=error
    ),
    "topics",
    "DELETE on each topic, answered per topic; by id, a topic the caller may not DESCRIBE is answered as an "
    "unknown id is (UNKNOWN_TOPIC_ID, word for word)",
)
_DESCRIBE_GROUPS = PerResource(
    ("group_ids",),
    lambda field, group_id, access: _refused(access, (Operation.DESCRIBE, GROUP, group_id)),
    lambda field, group_id, error: coordinator_pb2.GroupDescription(group_id=group_id, error=error),
    "groups",
    "DESCRIBE on each group, answered per group",
)
_CREATE_PARTITIONS = PerResource(
    ("topics",),
    lambda field, topic, access: _refused(access, (Operation.ALTER, TOPIC, topic.name)),
    lambda field, topic, error: controller_pb2.CreatePartitionsTopicResult(name=topic.name, error=error),
    "topics",
    "ALTER on each topic, answered per topic",
)


def _configs(operation: Operation, result: Callable[..., Any]) -> PerResource:
    """AlterConfigs or DescribeConfigs: ``operation`` on each topic, or on the cluster for a
    broker's configs; a refused resource answered by a ``result`` message naming it."""
    return PerResource(
        ("resources",),
        _config_need(operation),
        lambda field, resource, error: result(
            resource_type=resource.resource_type, resource_name=resource.resource_name, error=error
        ),
        "results",
        f"{operation.name} on each topic (on the cluster for a broker's configs), answered per resource",
    )


_ALTER_CONFIGS = _configs(Operation.ALTER_CONFIGS, controller_pb2.AlterConfigsResourceResult)
_DESCRIBE_CONFIGS = _configs(Operation.DESCRIBE_CONFIGS, controller_pb2.DescribeConfigsResult)


def split_resources(request: Any, per: PerResource, access: Access) -> list[tuple[int, Any]]:
    """Take the resources the caller may not act on out of an admin ``request`` (in place);
    return their answers with the positions they take among the results."""
    refused: list[tuple[int, Any]] = []
    position = 0
    for field in per.fields:
        entries = getattr(request, field)
        kept = []
        for entry in entries:
            need = per.need(field, entry, access)
            if need is None:
                kept.append(entry if isinstance(entry, str) else type(entry).FromString(entry.SerializeToString()))
            else:
                error = need if isinstance(need, common_pb2.Error) else refusal_error(need, access)
                refused.append((position, per.result(field, entry, error)))
            position += 1
        if len(kept) != len(entries):
            del entries[:]
            entries.extend(kept)
    return refused


def answer_resources(response: Any, per: PerResource, refused: list[tuple[int, Any]]) -> None:
    """Put the refused resources' answers in their places among ``response``'s results."""
    if not refused:
        return
    field = getattr(response, per.results)
    results = [type(r).FromString(r.SerializeToString()) for r in field]
    for position, answer in refused:  # ascending: each insertion leaves the next one's place right
        results.insert(min(position, len(results)), answer)
    del field[:]
    field.extend(results)


def _init_producer_id(request: broker_pb2.InitProducerIdRequest, access: Access) -> Iterator[Need]:
    """A transactional producer needs WRITE on its transactional id (refused:
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent one IDEMPOTENT_WRITE on the cluster or
    WRITE on some topic no DENY covers (KIP-679; refused: CLUSTER_AUTHORIZATION_FAILED, as Kafka)."""
    if request.transactional_id:
        yield Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    elif not access.authorizer.allows_any(access.principal, access.host, Operation.WRITE, TOPIC):
        yield Operation.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME


def _offset_for_leader_epoch(request: broker_pb2.OffsetForLeaderEpochRequest, access: Access) -> Iterator[Need]:
    """A consumer's needs DESCRIBE on each topic (a follower's, replica id set, is the nodes')."""
    for name in dict.fromkeys(topic.topic for topic in request.topics):
        yield Operation.DESCRIBE, TOPIC, name


def _trim_topics(request: Any, response: Any, access: Access) -> None:
    """Listed topics the caller may not DESCRIBE are left out; named ones answered as refused.
    Asked for, a topic's authorized operations are narrowed to those the caller may do."""
    named: set[str] = set(getattr(request, "topics", None) or getattr(request, "names", None) or ())
    narrow = getattr(request, "include_authorized_operations", False)
    kept = []
    for topic in response.topics:
        if access.allows(Operation.DESCRIBE, TOPIC, topic.name):
            if narrow:
                allowed = [op.name for op in TOPIC_OPERATIONS if access.allows(op, TOPIC, topic.name)]
                del topic.authorized_operations[:]
                topic.authorized_operations.extend(allowed)
            kept.append(topic)
        elif topic.name in named:
            kept.append(
                type(topic)(
                    name=topic.name,
                    error=wire_error(
                        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        f"{access.principal} may not DESCRIBE topic {topic.name!r}",
                    ),
                )
            )
    del response.topics[:]
    response.topics.extend(kept)


def _trim_offsets(response: coordinator_pb2.FetchOffsetsResponse, access: Access) -> None:
    """Committed offsets of topics the caller may not DESCRIBE are left out."""
    kept = [topic for topic in response.topics if access.allows(Operation.DESCRIBE, TOPIC, topic.topic)]
    del response.topics[:]
    response.topics.extend(kept)


def _member_topics(member: coordinator_pb2.MemberDescription) -> set[str]:
    return {
        *member.subscription.topic_names,
        *(entry.topic for entry in member.assignment.topic_partitions),
        *(entry.topic for entry in member.target_assignment.topic_partitions),
    }


def _trim_described(
    request: coordinator_pb2.DescribeGroupsRequest, response: coordinator_pb2.DescribeGroupsResponse, access: Access
) -> None:
    """A group a member of which subscribes to or is assigned a topic the caller may not DESCRIBE
    is answered TOPIC_AUTHORIZATION_FAILED, without naming it (Kafka 4.x's ConsumerGroupDescribe);
    offsets and lag (``include_offsets``) of such topics are left out, as FetchOffsets leaves them out."""
    for index, group in enumerate(response.groups):
        hidden = any(
            not access.allows(Operation.DESCRIBE, TOPIC, topic)
            for member in group.members
            for topic in _member_topics(member)
        )
        if hidden:
            response.groups[index].CopyFrom(
                coordinator_pb2.GroupDescription(
                    group_id=group.group_id,
                    error=wire_error(
                        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        f"{access.principal} may not DESCRIBE a topic group {group.group_id!r} reads",
                    ),
                )
            )
            continue
        kept = [state for state in group.offsets if access.allows(Operation.DESCRIBE, TOPIC, state.topic)]
        if len(kept) != len(group.offsets):
            del group.offsets[:]
            group.offsets.extend(kept)


def _trim_groups(request: coordinator_pb2.ListGroupsRequest, response: Any, access: Access) -> None:
    kept = [group for group in response.groups if access.allows(Operation.DESCRIBE, GROUP, group.group_id)]
    del response.groups[:]
    response.groups.extend(kept)


def method_name(service: str, name: str) -> str:
    """The full gRPC method name of ``name`` of a Lanes service (``RULES``' keys)."""
    return f"/lanes.v1.{service}/{name}"


def _nodes_only(kafka: str) -> Rule:
    return Rule(nodes_only=True, kafka=kafka)


_INIT_PRODUCER_ID = Described(
    _init_producer_id,
    "WRITE on the transactional id (refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one, IDEMPOTENT_WRITE "
    "on the cluster or WRITE on some topic no DENY covers (KIP-679; refused: CLUSTER_AUTHORIZATION_FAILED)",
)
_TRIM_TOPICS = Described(
    _trim_topics,
    "DESCRIBE on each topic: others are left out of listings, and a named one is answered "
    "TOPIC_AUTHORIZATION_FAILED whether it exists or not",
)

#: Full method name -> what it needs.
RULES: dict[str, Rule] = {
    # Broker
    method_name("Broker", "Metadata"): Rule(trim=_TRIM_TOPICS, kafka="Metadata"),
    method_name("Broker", "Produce"): Rule(per_topic=Operation.WRITE, kafka="Produce"),
    method_name("Broker", "ProduceStream"): Rule(per_topic=Operation.WRITE, kafka="Produce"),
    method_name("Broker", "Fetch"): Rule(per_topic=Operation.READ, kafka="Fetch"),
    method_name("Broker", "FetchStream"): Rule(per_topic=Operation.READ, kafka="Fetch"),
    method_name("Broker", "ListOffsets"): Rule(per_topic=Operation.DESCRIBE, kafka="ListOffsets"),
    method_name("Broker", "ReplicaFetch"): _nodes_only("Fetch (a follower's)"),
    method_name("Broker", "OffsetForLeaderEpoch"): Rule(
        Described(_offset_for_leader_epoch, "DESCRIBE on each topic"),
        nodes_only_when=Described(lambda request: request.replica_id >= 0, "a follower's (replica id set): a node's"),
        kafka="OffsetForLeaderEpoch",
    ),
    method_name("Broker", "DeleteRecords"): Rule(per_topic=Operation.DELETE, kafka="DeleteRecords"),
    method_name("Broker", "InitProducerId"): Rule(_INIT_PRODUCER_ID, kafka="InitProducerId"),
    method_name("Broker", "DescribeLogs"): Rule(_cluster(Operation.DESCRIBE), kafka="DescribeLogDirs"),
    method_name("Broker", "Scan"): Rule(
        Described(lambda request, access: [(Operation.READ, TOPIC, request.topic)], "READ on the topic"),
        kafka="Fetch (filtered on the broker)",
    ),
    # Controller
    method_name("ControllerQuorum", "Send"): _nodes_only("KRaft's Vote, BeginQuorumEpoch, Fetch"),
    method_name("ControllerQuorum", "DescribeQuorum"): Rule(_cluster(Operation.DESCRIBE), kafka="DescribeQuorum"),
    method_name("Controller", "RegisterBroker"): _nodes_only("BrokerRegistration"),
    method_name("Controller", "BrokerHeartbeat"): _nodes_only("BrokerHeartbeat"),
    method_name("Controller", "WatchMetadata"): _nodes_only("Fetch of __cluster_metadata"),  # users' stored keys
    method_name("Controller", "CreateTopics"): Rule(per_resource=_CREATE_TOPICS, kafka="CreateTopics"),
    method_name("Controller", "DeleteTopics"): Rule(per_resource=_DELETE_TOPICS, kafka="DeleteTopics"),
    method_name("Controller", "CreatePartitions"): Rule(per_resource=_CREATE_PARTITIONS, kafka="CreatePartitions"),
    method_name("Controller", "DescribeTopics"): Rule(trim=_TRIM_TOPICS, kafka="DescribeTopicPartitions"),
    method_name("Controller", "DescribeCluster"): Rule(_cluster(Operation.DESCRIBE), kafka="DescribeCluster"),
    method_name("Controller", "AlterConfigs"): Rule(per_resource=_ALTER_CONFIGS, kafka="IncrementalAlterConfigs"),
    method_name("Controller", "DescribeConfigs"): Rule(per_resource=_DESCRIBE_CONFIGS, kafka="DescribeConfigs"),
    method_name("Controller", "AlterPartition"): _nodes_only("AlterPartition"),
    method_name("Controller", "ElectLeaders"): Rule(_cluster(Operation.ALTER), kafka="ElectLeaders"),
    method_name("Controller", "RegisterCoordinator"): _nodes_only("(none: Kafka's coordinators live in brokers)"),
    method_name("Controller", "CoordinatorHeartbeat"): _nodes_only("(none: Kafka's coordinators live in brokers)"),
    method_name("Controller", "AllocateProducerIds"): _nodes_only("AllocateProducerIds"),
    method_name("Controller", "AddController"): Rule(_cluster(Operation.ALTER), kafka="AddRaftVoter"),
    method_name("Controller", "RemoveController"): Rule(_cluster(Operation.ALTER), kafka="RemoveRaftVoter"),
    method_name("Controller", "AlterUserScramCredentials"): Rule(
        _cluster(Operation.ALTER), kafka="AlterUserScramCredentials"
    ),
    method_name("Controller", "DescribeUserScramCredentials"): Rule(
        _cluster(Operation.DESCRIBE), kafka="DescribeUserScramCredentials"
    ),
    method_name("Controller", "CreateAcls"): Rule(_cluster(Operation.ALTER), kafka="CreateAcls"),
    method_name("Controller", "DescribeAcls"): Rule(_cluster(Operation.DESCRIBE), kafka="DescribeAcls"),
    method_name("Controller", "DeleteAcls"): Rule(_cluster(Operation.ALTER), kafka="DeleteAcls"),
    method_name("Controller", "AlterClientQuotas"): Rule(_cluster(Operation.ALTER_CONFIGS), kafka="AlterClientQuotas"),
    method_name("Controller", "DescribeClientQuotas"): Rule(
        _cluster(Operation.DESCRIBE_CONFIGS), kafka="DescribeClientQuotas"
    ),
    # GroupCoordinator
    method_name("GroupCoordinator", "FindCoordinator"): Rule(_groups(Operation.DESCRIBE), kafka="FindCoordinator"),
    method_name("GroupCoordinator", "Heartbeat"): Rule(
        Described(
            _heartbeat,
            "READ on the group, DESCRIBE on each topic subscribed by name; a pattern is resolved over the topics "
            "the member may DESCRIBE",
        ),
        kafka="ConsumerGroupHeartbeat",
    ),
    method_name("GroupCoordinator", "LeaveGroup"): Rule(_group(Operation.READ), kafka="ConsumerGroupHeartbeat (leave)"),
    method_name("GroupCoordinator", "CommitOffsets"): Rule(
        _group(Operation.READ), per_topic=Operation.READ, kafka="OffsetCommit"
    ),
    method_name("GroupCoordinator", "FetchOffsets"): Rule(
        _group(Operation.DESCRIBE, topics=Operation.DESCRIBE),
        trim=Described(
            lambda request, response, access: _trim_offsets(response, access),
            "offsets of topics the caller may not DESCRIBE are left out",
        ),
        kafka="OffsetFetch",
    ),
    method_name("GroupCoordinator", "ListGroups"): Rule(
        trim=Described(_trim_groups, "groups the caller may not DESCRIBE are left out"), kafka="ListGroups"
    ),
    method_name("GroupCoordinator", "DescribeGroups"): Rule(
        per_resource=_DESCRIBE_GROUPS,
        trim=Described(
            _trim_described,
            "a group whose members read a topic the caller may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED; "
            "offsets and lag of such topics are left out",
        ),
        kafka="ConsumerGroupDescribe",
    ),
    method_name("GroupCoordinator", "DeleteGroups"): Rule(_groups(Operation.DELETE), kafka="DeleteGroups"),
    method_name("GroupCoordinator", "ResetOffsets"): Rule(
        _group(
            Operation.READ,
            topics=Operation.READ,
            unnamed="naming none, every committed partition: READ on each topic, those without DESCRIBE left out",
        ),
        kafka="OffsetCommit (kafka-consumer-groups --reset-offsets)",
    ),
    method_name("GroupCoordinator", "DeleteOffsets"): Rule(
        _group(Operation.DELETE, topics=Operation.READ, unnamed="naming none deletes nothing"), kafka="OffsetDelete"
    ),
    # Reflection lists the services: any authenticated caller may
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": Rule(kafka="ApiVersions"),
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo": Rule(kafka="ApiVersions"),
}


def _only_consumer_offsets(request: Any) -> bool:
    """A coordinator's Produce and Fetch: partitions of ``__consumer_offsets``, no other topic."""
    return all(topic.topic == CONSUMER_OFFSETS_TOPIC for topic in request.topics)


_REFLECTION = {
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": None,
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo": None,
}

#: The calls a broker makes on behalf of a Kafka client whose group or admin request it forwards to the
#: group's coordinator or the active controller (Kafka's Envelope, KIP-590): every call of the
#: GroupCoordinator service and the controller's topic and config calls, which the guard authorizes
#: as that client, by ``RULES``.
FORWARDED: frozenset[str] = frozenset(
    method_name("GroupCoordinator", method.name)
    for method in coordinator_pb2.DESCRIPTOR.services_by_name["GroupCoordinator"].methods
) | frozenset(
    method_name("Controller", name)
    for name in ("CreateTopics", "DeleteTopics", "CreatePartitions", "DescribeConfigs", "AlterConfigs")
)


#: What a node of each role may call, and nothing more (a node's certificate names its role:
#: ``broker-1``, ``coordinator-1``, ``controller-0``): full method name -> None (any request) or
#: which requests. So one compromised pod is one role's reach, not the cluster's: no node may
#: manage ACLs, users or quotas, or read or write a user's records as itself, and only a broker
#: replicates. A node that also passes ``check_claim`` in the service may act only as itself. The
#: exception is Kafka's (KIP-590): a broker may make the calls ``FORWARDED`` lists on behalf of any
#: principal it names, authorized as that principal — a super user's name included — so a
#: compromised broker reaches topics and groups as any user, as a compromised Kafka broker does.
NODE_RULES: dict[str, dict[str, Callable[[Any], bool] | None]] = {
    "broker": {
        method_name("Broker", "ReplicaFetch"): None,
        method_name("Broker", "OffsetForLeaderEpoch"): Described(
            lambda request: request.replica_id >= 0, "a follower's"
        ),
        method_name("Controller", "RegisterBroker"): None,
        method_name("Controller", "BrokerHeartbeat"): None,
        method_name("Controller", "WatchMetadata"): None,
        method_name("Controller", "AlterPartition"): None,
        method_name("Controller", "AllocateProducerIds"): None,
        **_REFLECTION,
    },
    "coordinator": {
        method_name("Broker", "Produce"): Described(_only_consumer_offsets, "to `__consumer_offsets` only"),
        method_name("Broker", "Fetch"): Described(_only_consumer_offsets, "of `__consumer_offsets` only"),
        method_name("Broker", "ListOffsets"): None,  # where offsets lie and a record's time: lag and resets
        method_name("Controller", "RegisterCoordinator"): None,
        method_name("Controller", "CoordinatorHeartbeat"): None,
        method_name("Controller", "WatchMetadata"): None,
        **_REFLECTION,
    },
    "controller": {
        method_name("ControllerQuorum", "Send"): None,
        method_name("ControllerQuorum", "DescribeQuorum"): None,
        method_name("Controller", "AddController"): None,  # a new controller joining (Kafka's AddRaftVoter)
        **_REFLECTION,
    },
}


def node_may(node: str, method: str, request: Any) -> bool:
    """Whether the node named ``node`` (its certificate's name) may make this call (``request``
    None: a client stream's, allowed only where any request is)."""
    allowed = NODE_RULES.get(node.rsplit("-", 1)[0], {})
    if method not in allowed:
        return False
    which = allowed[method]
    return which is None or (request is not None and which(request))


def split_topics(request: Any, operation: Operation, access: Access) -> list[tuple[str, list[int]]]:
    """Take the topics the caller may not ``operation`` out of a per-topic ``request`` (Produce,
    Fetch, ListOffsets, DeleteRecords, CommitOffsets) in place; return them with their partitions, to be
    answered as refused."""
    refused: list[tuple[str, list[int]]] = []
    kept = []
    for topic in request.topics:
        if access.allows(operation, TOPIC, topic.topic):
            kept.append(topic)
        else:
            refused.append((topic.topic, [p.partition for p in topic.partitions]))
    if refused:
        del request.topics[:]
        request.topics.extend(kept)
    return refused


#: What a refused partition's answer holds besides its error, per per-topic response ("nothing").
_NOTHING: dict[type, dict[str, int]] = {
    broker_pb2.ProduceResponse: {"base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1},
    broker_pb2.FetchResponse: {"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1},
    broker_pb2.ListOffsetsResponse: {"offset": -1, "timestamp_ms": -1, "leader_epoch": -1},
    broker_pb2.DeleteRecordsResponse: {"low_watermark": -1},
    coordinator_pb2.CommitOffsetsResponse: {},
}


def answer_refused(response: Any, refused: list[tuple[str, list[int]]], operation: Operation, access: Access) -> None:
    """Add TOPIC_AUTHORIZATION_FAILED answers for ``refused`` partitions to a per-topic
    ``response`` (Produce, Fetch, ListOffsets, DeleteRecords, CommitOffsets; their other fields at their
    "nothing" values: offsets -1); a Fetch answer keeping its records apart gets them in its
    message (``message_of``), after its other partitions, with no records."""
    response = message_of(response)
    nothing = _NOTHING[type(response)]
    for name, partitions in refused:
        error = wire_error(
            ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"{access.principal} may not {operation.name} topic {name!r}"
        )
        answered = response.topics.add(topic=name).partitions
        for partition in partitions:
            answered.add(partition=partition, error=error, **nothing)
