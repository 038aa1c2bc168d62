"""Consumer groups and offsets on the Kafka face: Kafka's group APIs answered by Lanes' group
coordinators, to which the broker forwards each request on the client's behalf (``GroupCalls``:
the coordinator authorizes it as that client).

- FindCoordinator names a broker's Kafka listener (the group's coordinator is no broker: any
  broker forwards; the same one for every member of a group, chosen by the group id's hash).
- KIP-848's ConsumerGroupHeartbeat is Lanes' own heartbeat, field for field (topic ids turned into
  names and back); ConsumerGroupDescribe is its DescribeGroups.
- The classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) keeps Lanes' server-side
  assignment, as Kafka 4 serves classic members of a consumer group: a JoinGroup is a heartbeat
  that joins (``classic``: a known member keeps its place, reconciled with the partitions its
  subscription says it owns) and makes the member a follower (no leader: nobody computes an
  assignment on the client side); SyncGroup answers the assignment the coordinator gives it,
  encoded as Kafka's ConsumerProtocolAssignment; Heartbeat answers REBALANCE_IN_PROGRESS whenever
  the member's assignment is not settled, so the client rejoins to learn it (revoking first: the
  coordinator gives a partition to a member only once its previous owner reported it released).
  The generation is the member epoch, which OffsetCommit then checks.
- OffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups and DeleteGroups map onto the
  coordinators' calls of the same meaning.

Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar, cast

from kio.schema.consumer_protocol_assignment.v0.data import ConsumerProtocolAssignment
from kio.schema.consumer_protocol_assignment.v0.data import TopicPartition as AssignedTopic
from kio.schema.consumer_protocol_subscription.v0.data import ConsumerProtocolSubscription as SubscriptionV0
from kio.schema.consumer_protocol_subscription.v1.data import ConsumerProtocolSubscription as SubscriptionV1
from kio.schema.consumer_protocol_subscription.v2.data import ConsumerProtocolSubscription as SubscriptionV2
from kio.schema.consumer_protocol_subscription.v3.data import ConsumerProtocolSubscription as SubscriptionV3
from kio.schema.errors import ErrorCode as KafkaError
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from lanes.broker.node import BrokerNode
from lanes.kafka.answers import KafkaCall
from lanes.kafka.codec import (
    OPERATIONS_OMITTED,
    build,
    kafka_brokers,
    milliseconds,
    nested,
    response_class,
    whole_ms,
)
from lanes.protocol.partitioner import partition_for_key
from lanes.runtime.access.access_rules import RULES, first_refused, method_name
from lanes.v1 import common_pb2, coordinator_pb2

FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 10, 11, 12, 13, 14
OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE = 8, 9, 15, 16, 42, 47
CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69

#: the only classic protocol type Lanes' groups take (Kafka Connect's "connect" is not one)
CONSUMER_PROTOCOL = "consumer"
#: the classic assignors whose server-side namesakes Lanes has (others: the group's default)
_ASSIGNORS = {"range": "range", "roundrobin": "roundrobin"}
_SUBSCRIPTIONS = (SubscriptionV0, SubscriptionV1, SubscriptionV2, SubscriptionV3)
#: a classic JoinGroup's joins, at most, until its assignment settles (an eager member's second
#: one releases what the first took from it)
_JOIN_HEARTBEATS = 3
#: groups one request may name (each is a call to its coordinator), and calls in flight per request
MAX_GROUPS_PER_REQUEST = 1_000
_CALLS_PER_REQUEST = 16
_STATES = {
    coordinator_pb2.GROUP_STATE_EMPTY: "Empty",
    coordinator_pb2.GROUP_STATE_RECONCILING: "Reconciling",
    coordinator_pb2.GROUP_STATE_STABLE: "Stable",
    coordinator_pb2.GROUP_STATE_DEAD: "Dead",
    coordinator_pb2.GROUP_STATE_LOADING: "Assigning",
}
_FIND_COORDINATOR = RULES[method_name("GroupCoordinator", "FindCoordinator")]

Caller = tuple[str, str, str]
T = TypeVar("T")


class GroupCalls(Protocol):
    """The broker's calls to the group coordinators (``lanes.broker.group_link.GroupLink``)."""

    def coordinator_address(self, group_id: str) -> str | None: ...

    async def ask(
        self,
        group_id: str,
        method: str,
        request: Any,
        caller: Caller,
        *,
        error_of: Callable[[Any], common_pb2.Error],
        refusal: Callable[[common_pb2.Error], Any],
    ) -> Any: ...

    async def ask_each(self, method: str, request: Any, caller: Caller) -> list[Any]: ...


def kafka_code(error: common_pb2.Error) -> KafkaError:
    """A Lanes error as Kafka's (the same numbers: decision 0002)."""
    try:
        return KafkaError(int(error.code))
    except ValueError:
        return KafkaError.unknown_server_error


async def bounded(calls: Iterable[Awaitable[T]], limit: int = _CALLS_PER_REQUEST) -> list[T]:
    """The calls' answers in order, at most ``limit`` in flight (one request fans out boundedly)."""
    gate = asyncio.Semaphore(limit)

    async def one(call: Awaitable[T]) -> T:
        async with gate:
            return await call

    return list(await asyncio.gather(*(one(call) for call in calls)))


def too_many(names: Iterable[str]) -> bool:
    """Whether a request names more groups than one request may."""
    return len(set(names)) > MAX_GROUPS_PER_REQUEST


class GroupApis:
    """The group APIs of one broker's Kafka face (see the module docstring)."""

    def __init__(self, node: BrokerNode, groups: GroupCalls) -> None:
        self._node = node
        self._groups = groups

    def _ask(
        self, call: KafkaCall, group_id: str, method: str, request: Any, refusal: Callable[[common_pb2.Error], Any]
    ) -> Awaitable[Any]:
        caller = (call.caller.principal, call.caller.host, call.caller.client_id)
        return self._groups.ask(group_id, method, request, caller, error_of=_error_of, refusal=refusal)

    # -----------------------------------------------------------------------------------------
    # FindCoordinator

    async def find_coordinator(self, call: KafkaCall) -> Any:
        """A broker's Kafka listener per group (DESCRIBE on the group needed); transactions have
        no coordinator (Lanes has none yet: INVALID_REQUEST)."""
        request, version = call.body, call.version
        cls = response_class(FIND_COORDINATOR, version)
        keys = tuple(request.coordinator_keys) if version >= 4 else (request.key,)
        answers = [self._coordinator(call, key, int(getattr(request, "key_type", 0))) for key in keys]
        if version >= 4:
            entry = nested(cls, "Coordinator")
            return build(
                cls,
                coordinators=tuple(build(entry, key=key, **answer) for key, answer in zip(keys, answers, strict=True)),
            )
        return build(cls, **answers[0])

    def _coordinator(self, call: KafkaCall, key: str, key_type: int) -> dict[str, Any]:
        def refused(code: KafkaError, message: str) -> dict[str, Any]:
            return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}

        if key_type != 0:
            return refused(
                KafkaError.invalid_request, "transactions are not supported: there is no transaction coordinator"
            )
        if call.access is not None:
            need = first_refused(
                _FIND_COORDINATOR.needs(coordinator_pb2.FindCoordinatorRequest(group_ids=[key]), call.access),
                call.access,
            )
            if need is not None:
                return refused(
                    KafkaError.group_authorization_failed, f"{call.access.principal} may not DESCRIBE group {key!r}"
                )
        if not key:
            return refused(KafkaError.invalid_group_id, "a group id is not empty")
        image = self._node.image
        brokers = kafka_brokers(image)
        if not brokers or self._groups.coordinator_address(key) is None:
            return refused(KafkaError.coordinator_not_available, f"no coordinator serves group {key!r} now")
        broker = brokers[partition_for_key(key.encode(), len(brokers))]
        return {"error_code": KafkaError.none, "error_message": None, "node_id": broker.broker_id,
                "host": broker.host, "port": broker.kafka_port}  # fmt: skip

    # -----------------------------------------------------------------------------------------
    # KIP-848

    async def consumer_group_heartbeat(self, call: KafkaCall) -> Any:
        """Lanes' heartbeat, field for field; the member id a v0 client leaves to the server is a
        new UUID; the assignment is answered at every heartbeat."""
        request, image = call.body, self._node.image
        cls = response_class(CONSUMER_GROUP_HEARTBEAT, call.version)
        member_id = request.member_id or (str(uuid.uuid4()) if request.member_epoch == 0 else "")
        asked = coordinator_pb2.HeartbeatRequest(
            group_id=request.group_id,
            member_id=member_id,
            member_epoch=request.member_epoch,
            instance_id=request.instance_id or "",
            rack_id=request.rack_id or "",
            rebalance_timeout_ms=max(whole_ms(request.rebalance_timeout), 0),
            server_assignor=request.server_assignor or "",
            client_id=call.caller.client_id,
        )
        if request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None:
            asked.subscription.topic_names.extend(request.subscribed_topic_names or ())
            asked.subscription.topic_regex = request.subscribed_topic_regex or ""
        owned_topics = [image.topics.get(str(owned.topic_id)) for owned in request.topic_partitions or ()]
        if request.topic_partitions is not None and all(topic is not None for topic in owned_topics):
            # (an id this broker does not know yet: "unchanged", so nothing pending is taken as released)
            asked.owned_partitions.SetInParent()
            for owned, topic in zip(request.topic_partitions, owned_topics, strict=True):
                assert topic is not None
                asked.owned_partitions.topic_partitions.add(topic=topic.name, partitions=owned.partitions)

        def refusal(error: common_pb2.Error) -> Any:
            return coordinator_pb2.HeartbeatResponse(error=error, member_id=member_id)

        answer = await self._ask(call, request.group_id, "Heartbeat", asked, refusal)
        assignment = None
        if answer.HasField("assignment") and not answer.error.code:
            assignment_class, topic_class = nested(cls, "Assignment"), nested(cls, "TopicPartitions")
            assignment = build(
                assignment_class,
                topic_partitions=tuple(
                    build(topic_class, topic_id=uuid.UUID(found.topic_id), partitions=tuple(tp.partitions))
                    for tp in answer.assignment.topic_partitions
                    if (found := image.topic(tp.topic)) is not None
                ),
            )
        return build(
            cls,
            error_code=kafka_code(answer.error),
            error_message=answer.error.message or None,
            member_id=answer.member_id or member_id or None,
            member_epoch=answer.member_epoch,
            heartbeat_interval=milliseconds(answer.heartbeat_interval_ms),
            assignment=assignment,
        )

    async def consumer_group_describe(self, call: KafkaCall) -> Any:
        """Each group as Lanes' DescribeGroups tells it, with topic ids and names."""
        cls = response_class(CONSUMER_GROUP_DESCRIBE, call.version)
        image = self._node.image
        group_class, member_class = nested(cls, "DescribedGroup"), nested(cls, "Member")
        assignment_class, topic_class = nested(cls, "Assignment"), nested(cls, "TopicPartitions")

        def assignment(given: coordinator_pb2.Assignment) -> Any:
            return build(
                assignment_class,
                topic_partitions=tuple(
                    build(
                        topic_class,
                        topic_id=uuid.UUID(found.topic_id),
                        topic_name=tp.topic,
                        partitions=tuple(tp.partitions),
                    )
                    for tp in given.topic_partitions
                    if (found := image.topic(tp.topic)) is not None
                ),
            )

        described = await self._describe(call, call.body.group_ids)
        groups = tuple(
            build(
                group_class,
                error_code=kafka_code(group.error),
                error_message=group.error.message or None,
                group_id=group.group_id,
                group_state=_STATES.get(group.state, "Dead"),
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=group.assignor,
                authorized_operations=OPERATIONS_OMITTED,
                members=tuple(
                    build(
                        member_class,
                        member_id=m.member_id,
                        instance_id=m.instance_id or None,
                        rack_id=m.rack_id or None,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=tuple(m.subscription.topic_names),
                        subscribed_topic_regex=m.subscription.topic_regex or None,
                        assignment=assignment(m.assignment),
                        target_assignment=assignment(m.target_assignment),
                        member_type=-1,
                    )
                    for m in group.members
                ),
            )
            for group in described
        )
        return build(cls, groups=groups)

    async def _describe(self, call: KafkaCall, group_ids: Iterable[str]) -> list[coordinator_pb2.GroupDescription]:
        """Lanes' description of each group, asked of its own coordinator."""

        async def one(group_id: str) -> coordinator_pb2.GroupDescription:
            def refusal(error: common_pb2.Error) -> Any:
                return coordinator_pb2.DescribeGroupsResponse(
                    groups=[coordinator_pb2.GroupDescription(group_id=group_id, error=error)]
                )

            asked = coordinator_pb2.DescribeGroupsRequest(group_ids=[group_id])
            answer = await self._ask(call, group_id, "DescribeGroups", asked, refusal)
            return answer.groups[0] if answer.groups else coordinator_pb2.GroupDescription(group_id=group_id)

        names = list(group_ids)
        if too_many(names):
            refused = common_pb2.Error(
                code=cast(Any, int(KafkaError.invalid_request)),
                message=f"a request names at most {MAX_GROUPS_PER_REQUEST} groups",
            )
            return [coordinator_pb2.GroupDescription(group_id=name, error=refused) for name in names]
        return await bounded(one(group_id) for group_id in names)

    # -----------------------------------------------------------------------------------------
    # The classic protocol

    async def join_group(self, call: KafkaCall) -> Any:
        """See the module docstring: a follower's answer, with the member epoch as generation."""
        request, version = call.body, call.version
        cls = response_class(JOIN_GROUP, version)

        def answer(code: KafkaError, member_id: str = "", generation: int = -1, protocol: str | None = None) -> Any:
            return build(
                cls,
                error_code=code,
                generation_id=generation,
                protocol_type=CONSUMER_PROTOCOL if protocol is not None else None,
                protocol_name=protocol,
                leader="",
                member_id=member_id,
            )

        if request.protocol_type != CONSUMER_PROTOCOL or not request.protocols:
            return answer(KafkaError.inconsistent_group_protocol, request.member_id)
        member_id = request.member_id
        if not member_id:
            member_id = str(uuid.uuid4())
            if version >= 4 and not request.group_instance_id:  # (KIP-394: a dynamic member joins again with it)
                return answer(KafkaError.member_id_required, member_id)
        protocol = request.protocols[0]
        subscription = _subscription(bytes(protocol.metadata))
        if subscription is None:
            return answer(KafkaError.inconsistent_group_protocol, member_id)
        owned = coordinator_pb2.Assignment(
            topic_partitions=[
                common_pb2.TopicPartitions(topic=tp.topic, partitions=tp.partitions)
                for tp in getattr(subscription, "owned_partitions", ())
            ]
        )
        asked = coordinator_pb2.HeartbeatRequest(
            group_id=request.group_id,
            member_id=member_id,
            member_epoch=0,
            instance_id=request.group_instance_id or "",
            rack_id=getattr(subscription, "rack_id", None) or "",
            rebalance_timeout_ms=max(whole_ms(getattr(request, "rebalance_timeout", request.session_timeout)), 0),
            subscription=coordinator_pb2.Subscription(topic_names=subscription.topics),
            server_assignor=_ASSIGNORS.get(protocol.name, ""),
            owned_partitions=owned,
            client_id=call.caller.client_id,
            classic=True,
        )
        joined = None
        for _ in range(_JOIN_HEARTBEATS):  # (the same join again: only a join reconciles a classic member)
            heard = await self._heartbeat(call, asked)
            if heard.error.code:
                if joined is None:
                    return answer(_classic_code(heard.error), member_id)
                break  # (the join before stands: the client learns the rest at its next heartbeat)
            joined = heard
            if heard.assignment_settled:
                break
        assert joined is not None
        return answer(KafkaError.none, member_id, joined.member_epoch, protocol.name)

    async def sync_group(self, call: KafkaCall) -> Any:
        """The member's assignment as the coordinator gives it (what a leader sends is ignored:
        nobody leads)."""
        request = call.body
        cls = response_class(SYNC_GROUP, call.version)
        if request.generation_id <= 0:  # (0, -1, -2 would be a join or a leave of Lanes' heartbeat)
            return build(cls, error_code=KafkaError.illegal_generation, assignment=b"")
        heard = await self._classic_heartbeat(call, request)
        code = self._classic_state(heard, request.generation_id)
        if code is KafkaError.coordinator_load_in_progress:
            code = KafkaError.coordinator_not_available  # (a Java classic member rediscovers and rejoins)
        if code is not KafkaError.none:
            return build(cls, error_code=code, assignment=b"")
        return build(
            cls,
            protocol_type=getattr(request, "protocol_type", None),
            protocol_name=getattr(request, "protocol_name", None),
            assignment=_encoded_assignment(heard.assignment),
        )

    async def heartbeat(self, call: KafkaCall) -> Any:
        """REBALANCE_IN_PROGRESS while the member's assignment is not settled."""
        request = call.body
        cls = response_class(HEARTBEAT, call.version)
        if request.generation_id <= 0:
            return build(cls, error_code=KafkaError.illegal_generation)
        heard = await self._classic_heartbeat(call, request)
        code = self._classic_state(heard, request.generation_id)
        if code is KafkaError.coordinator_load_in_progress:
            code = KafkaError.none  # (as Kafka answers while a shard loads: the member carries on)
        elif code is KafkaError.none and not heard.assignment_settled:
            code = KafkaError.rebalance_in_progress
        return build(cls, error_code=code)

    async def _classic_heartbeat(self, call: KafkaCall, request: Any) -> Any:
        return await self._heartbeat(
            call,
            coordinator_pb2.HeartbeatRequest(
                group_id=request.group_id,
                member_id=request.member_id,
                member_epoch=request.generation_id,
                instance_id=getattr(request, "group_instance_id", None) or "",
                client_id=call.caller.client_id,
                classic=True,
            ),
        )

    @staticmethod
    def _classic_state(heard: coordinator_pb2.HeartbeatResponse, generation: int) -> KafkaError:
        if heard.error.code:
            return _classic_code(heard.error)
        return KafkaError.none if heard.member_epoch == generation else KafkaError.rebalance_in_progress

    async def _heartbeat(self, call: KafkaCall, asked: coordinator_pb2.HeartbeatRequest) -> Any:
        def refusal(error: common_pb2.Error) -> Any:
            return coordinator_pb2.HeartbeatResponse(error=error, member_id=asked.member_id)

        return await self._ask(call, asked.group_id, "Heartbeat", asked, refusal)

    async def leave_group(self, call: KafkaCall) -> Any:
        """Each member leaves (v3+: several at once, each answered)."""
        request, version = call.body, call.version
        cls = response_class(LEAVE_GROUP, version)
        if version < 3:
            members = [(request.member_id, None, None)]
        else:
            members = [(m.member_id, m.group_instance_id, getattr(m, "reason", None)) for m in request.members]

        async def leave(member_id: str, instance_id: str | None, reason: str | None) -> KafkaError:
            def refusal(error: common_pb2.Error) -> Any:
                return coordinator_pb2.LeaveGroupResponse(error=error)

            asked = coordinator_pb2.LeaveGroupRequest(
                group_id=request.group_id, member_id=member_id, instance_id=instance_id or "", reason=reason or ""
            )
            answer = await self._ask(call, request.group_id, "LeaveGroup", asked, refusal)
            return kafka_code(answer.error)

        if too_many(m[0] or str(m[1]) for m in members):
            return build(cls, error_code=KafkaError.invalid_request)
        codes = await bounded(leave(*member) for member in members)
        if version < 3:
            return build(cls, error_code=codes[0])
        member_class = nested(cls, "MemberResponse")
        answered = tuple(
            build(member_class, member_id=m[0], group_instance_id=m[1], error_code=code)
            for m, code in zip(members, codes, strict=True)
        )
        authorization = next((c for c in codes if c is KafkaError.group_authorization_failed), KafkaError.none)
        return build(cls, error_code=authorization, members=answered)

    # -----------------------------------------------------------------------------------------
    # Offsets

    async def offset_commit(self, call: KafkaCall) -> Any:
        """Lanes' CommitOffsets: the generation is the member epoch (-1: a tool or a consumer
        without a group); a stale one is ILLEGAL_GENERATION to a classic client (v8 and before),
        STALE_MEMBER_EPOCH to a KIP-848 one."""
        request, version = call.body, call.version
        cls = response_class(OFFSET_COMMIT, version)
        asked = coordinator_pb2.CommitOffsetsRequest(
            group_id=request.group_id,
            member_id=request.member_id or "",
            member_epoch=request.generation_id_or_member_epoch,
            topics=[
                coordinator_pb2.CommitOffsetsTopic(
                    topic=topic.name,
                    partitions=[
                        coordinator_pb2.CommitOffsetsPartition(
                            partition=p.partition_index,
                            committed_offset=p.committed_offset,
                            committed_leader_epoch=getattr(p, "committed_leader_epoch", -1),
                            metadata=p.committed_metadata or "",
                        )
                        for p in topic.partitions
                    ],
                )
                for topic in request.topics
            ],
        )

        def refusal(error: common_pb2.Error) -> Any:
            return coordinator_pb2.CommitOffsetsResponse(
                topics=[
                    coordinator_pb2.CommitOffsetsTopicResult(
                        topic=topic.topic,
                        partitions=[
                            coordinator_pb2.PartitionResult(partition=p.partition, error=error)
                            for p in topic.partitions
                        ],
                    )
                    for topic in asked.topics
                ]
            )

        answer = await self._ask(call, request.group_id, "CommitOffsets", asked, refusal)
        topic_class, partition_class = (
            nested(cls, "OffsetCommitResponseTopic"),
            nested(cls, "OffsetCommitResponsePartition"),
        )

        def code(error: common_pb2.Error) -> KafkaError:
            found = kafka_code(error)  # (a classic member's stale generation: ILLEGAL_GENERATION already)
            if found in (KafkaError.fenced_member_epoch, KafkaError.stale_member_epoch):
                return KafkaError.stale_member_epoch if version >= 9 else KafkaError.illegal_generation
            return found

        return build(
            cls,
            topics=tuple(
                build(
                    topic_class,
                    name=topic.topic,
                    partitions=tuple(
                        build(partition_class, partition_index=p.partition, error_code=code(p.error))
                        for p in topic.partitions
                    ),
                )
                for topic in answer.topics
            ),
        )

    async def offset_fetch(self, call: KafkaCall) -> Any:
        """Committed offsets (-1 where none); v8+ asks several groups at once."""
        request, version = call.body, call.version
        cls = response_class(OFFSET_FETCH, version)
        if version >= 8:
            asks = [(g.group_id, g.topics, getattr(g, "member_id", None) or "", getattr(g, "member_epoch", -1))
                    for g in request.groups]  # fmt: skip
        else:
            asks = [(request.group_id, request.topics, "", -1)]
        require_stable = bool(getattr(request, "require_stable", False))

        async def one(
            group_id: str, topics: Any, member_id: str, member_epoch: int
        ) -> tuple[KafkaError, tuple[Any, ...]]:
            asked = coordinator_pb2.FetchOffsetsRequest(
                group_id=group_id, member_id=member_id, member_epoch=member_epoch, require_stable=require_stable
            )
            for topic in topics or ():
                asked.partitions.add(topic=topic.name, partitions=topic.partition_indexes)

            def refusal(error: common_pb2.Error) -> Any:
                return coordinator_pb2.FetchOffsetsResponse(error=error)

            answer = await self._ask(call, group_id, "FetchOffsets", asked, refusal)
            return kafka_code(answer.error), self._offsets(cls, version, answer, topics)

        if too_many(ask[0] for ask in asks):
            refused = (KafkaError.invalid_request, ())
            answers = [refused for _ in asks]
        else:
            answers = await bounded(one(*ask) for ask in asks)
        if version >= 8:
            group_class = nested(cls, "OffsetFetchResponseGroup")
            return build(
                cls,
                groups=tuple(
                    build(group_class, group_id=ask[0], error_code=code, topics=topics)
                    for ask, (code, topics) in zip(asks, answers, strict=True)
                ),
            )
        code, topics = answers[0]
        return build(cls, error_code=code, topics=topics)

    @staticmethod
    def _offsets(
        response: type[Any], version: int, answer: coordinator_pb2.FetchOffsetsResponse, asked: Any
    ) -> tuple[Any, ...]:
        """The answer's offsets as Kafka's topics, every asked partition answered (-1: none)."""
        suffix = "s" if version >= 8 else ""
        topic_class = nested(response, f"OffsetFetchResponseTopic{suffix}")
        partition_class = nested(response, f"OffsetFetchResponsePartition{suffix}")
        found = {(t.topic, p.partition): p for t in answer.topics for p in t.partitions}
        names = [t.name for t in asked] if asked is not None else [t.topic for t in answer.topics]
        wanted = (
            {t.name: list(t.partition_indexes) for t in asked}
            if asked is not None
            else {t.topic: [p.partition for p in t.partitions] for t in answer.topics}
        )

        def partition(topic: str, index: int) -> Any:
            given = found.get((topic, index))
            if given is None:
                return build(partition_class, partition_index=index, committed_offset=-1, committed_leader_epoch=-1,
                             metadata="")  # fmt: skip
            return build(
                partition_class,
                partition_index=index,
                committed_offset=given.committed_offset,
                committed_leader_epoch=given.committed_leader_epoch,
                metadata=given.metadata,
                error_code=kafka_code(given.error),
            )

        return tuple(
            build(topic_class, name=name, partitions=tuple(partition(name, index) for index in wanted[name]))
            for name in dict.fromkeys(names)
        )

    async def offset_delete(self, call: KafkaCall) -> Any:
        """Lanes' DeleteOffsets (GROUP_SUBSCRIBED_TO_TOPIC for a topic the group still reads)."""
        request = call.body
        cls = response_class(OFFSET_DELETE, call.version)
        asked = coordinator_pb2.DeleteOffsetsRequest(group_id=request.group_id)
        for topic in request.topics:
            asked.partitions.add(topic=topic.name, partitions=[p.partition_index for p in topic.partitions])

        def refusal(error: common_pb2.Error) -> Any:
            return coordinator_pb2.DeleteOffsetsResponse(error=error)

        answer = await self._ask(call, request.group_id, "DeleteOffsets", asked, refusal)
        results: dict[str, list[tuple[int, KafkaError]]] = {}
        for result in answer.results:
            results.setdefault(result.topic, []).append((result.partition, kafka_code(result.error)))
        topic_class, partition_class = (
            nested(cls, "OffsetDeleteResponseTopic"),
            nested(cls, "OffsetDeleteResponsePartition"),
        )
        return build(
            cls,
            error_code=kafka_code(answer.error),
            topics=tuple(
                build(
                    topic_class,
                    name=name,
                    partitions=tuple(build(partition_class, partition_index=p, error_code=c) for p, c in answered),
                )
                for name, answered in results.items()
            ),
        )

    # -----------------------------------------------------------------------------------------
    # Administration

    async def list_groups(self, call: KafkaCall) -> Any:
        """Every coordinator's groups (those a coordinator that does not answer holds are missing:
        COORDINATOR_NOT_AVAILABLE then, as a Kafka broker's is when a shard is loading)."""
        request = call.body
        cls = response_class(LIST_GROUPS, call.version)
        states = {name.lower(): state for state, name in _STATES.items()}
        asked_states = [s.lower() for s in getattr(request, "states_filter", ())]
        wanted = [states[s] for s in asked_states if s in states]
        types = {t.lower() for t in getattr(request, "types_filter", ())}
        if (types and "consumer" not in types) or (asked_states and not wanted):
            return build(cls)  # (every Lanes group is of type "consumer"; no group is in a state Lanes has not)
        caller = (call.caller.principal, call.caller.host, call.caller.client_id)
        answers = await self._groups.ask_each("ListGroups", coordinator_pb2.ListGroupsRequest(states=wanted), caller)
        expected = len(self._node.image.live_coordinators())
        code = (
            KafkaError.none
            if len(answers) == expected and not any(a.error.code for a in answers)
            else (KafkaError.coordinator_not_available)
        )
        listed_class = nested(cls, "ListedGroup")
        listed = tuple(
            build(
                listed_class,
                group_id=g.group_id,
                protocol_type=CONSUMER_PROTOCOL,
                group_state=_STATES.get(g.state, "Dead"),
                group_type="consumer",
            )
            for answer in answers
            for g in answer.groups
        )
        return build(cls, error_code=code, groups=listed)

    async def describe_groups(self, call: KafkaCall) -> Any:
        """The classic view of each group: members with their subscription and assignment
        encoded as Kafka's consumer protocol; a group that does not exist is "Dead", as Kafka says."""
        cls = response_class(DESCRIBE_GROUPS, call.version)
        group_class, member_class = nested(cls, "DescribedGroup"), nested(cls, "DescribedGroupMember")
        described = await self._describe(call, call.body.groups)

        def group(found: coordinator_pb2.GroupDescription) -> Any:
            code = kafka_code(found.error)
            if code is KafkaError.group_id_not_found:
                return build(
                    group_class, group_id=found.group_id, group_state="Dead", authorized_operations=OPERATIONS_OMITTED
                )
            return build(
                group_class,
                error_code=code,
                group_id=found.group_id,
                group_state=_STATES.get(found.state, "Dead"),
                protocol_type=CONSUMER_PROTOCOL,
                protocol_data=found.assignor,
                authorized_operations=OPERATIONS_OMITTED,
                members=tuple(
                    build(
                        member_class,
                        member_id=m.member_id,
                        group_instance_id=m.instance_id or None,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=_encoded_subscription(m.subscription),
                        member_assignment=_encoded_assignment(m.assignment),
                    )
                    for m in found.members
                ),
            )

        return build(cls, groups=tuple(group(found) for found in described))

    async def delete_groups(self, call: KafkaCall) -> Any:
        """Each group deleted on its coordinator (NON_EMPTY_GROUP while it has members)."""
        cls = response_class(DELETE_GROUPS, call.version)
        names = list(call.body.groups_names)

        async def one(group_id: str) -> KafkaError:
            def refusal(error: common_pb2.Error) -> Any:
                return coordinator_pb2.DeleteGroupsResponse(
                    results=[coordinator_pb2.GroupResult(group_id=group_id, error=error)]
                )

            asked = coordinator_pb2.DeleteGroupsRequest(group_ids=[group_id])
            answer = await self._ask(call, group_id, "DeleteGroups", asked, refusal)
            return kafka_code(answer.results[0].error) if answer.results else KafkaError.unknown_server_error

        if too_many(names):
            codes = [KafkaError.invalid_request for _ in names]
        else:
            codes = await bounded(one(name) for name in names)
        result_class = nested(cls, "DeletableGroupResult")
        return build(
            cls, results=tuple(build(result_class, group_id=n, error_code=c) for n, c in zip(names, codes, strict=True))
        )


# ---------------------------------------------------------------------------------------------
# helpers


def _error_of(answer: Any) -> common_pb2.Error:
    """The error that decides whether an answer is retried on another coordinator."""
    if hasattr(answer, "error"):
        return answer.error  # type: ignore[no-any-return]
    for field in ("groups", "results", "topics"):
        entries = getattr(answer, field, None)
        if entries:
            first = entries[0]
            if hasattr(first, "error"):
                return first.error  # type: ignore[no-any-return]
            if hasattr(first, "partitions") and first.partitions:
                return first.partitions[0].error  # type: ignore[no-any-return]
    return common_pb2.Error()


def _classic_code(error: common_pb2.Error) -> KafkaError:
    """A heartbeat's refusal as a classic member is told it (a stale epoch: ILLEGAL_GENERATION)."""
    code = kafka_code(error)
    if code in (KafkaError.fenced_member_epoch, KafkaError.stale_member_epoch):
        return KafkaError.illegal_generation
    return code


def _subscription(metadata: bytes) -> Any | None:
    """A classic member's ConsumerProtocolSubscription (a version, then its fields; a version
    above 3 read as 3, as Kafka reads newer ones); None when it does not parse."""
    if len(metadata) < 2:
        return None
    version = min(int.from_bytes(metadata[:2], "big", signed=True), len(_SUBSCRIPTIONS) - 1)
    if version < 0:
        return None
    try:
        subscription, _ = entity_reader(_SUBSCRIPTIONS[version])(metadata, 2)
    except Exception:  # kio's BufferUnderflow, a bad UTF-8 string: no subscription
        return None
    return subscription


def _encoded_subscription(subscription: coordinator_pb2.Subscription) -> bytes:
    buffer = io.BytesIO()
    buffer.write((0).to_bytes(2, "big"))
    entity_writer(SubscriptionV0)(buffer, SubscriptionV0(topics=tuple(subscription.topic_names), user_data=None))
    return buffer.getvalue()


def _encoded_assignment(assignment: coordinator_pb2.Assignment) -> bytes:
    """Kafka's ConsumerProtocolAssignment v0 of ``assignment`` (every client reads v0)."""
    buffer = io.BytesIO()
    buffer.write((0).to_bytes(2, "big"))
    topics = tuple(
        AssignedTopic(topic=TopicName(tp.topic), partitions=tuple(i32(p) for p in tp.partitions))
        for tp in assignment.topic_partitions
    )
    entity_writer(ConsumerProtocolAssignment)(
        buffer, ConsumerProtocolAssignment(assigned_partitions=topics, user_data=None)
    )
    return buffer.getvalue()
