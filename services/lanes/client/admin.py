"""The Admin client: topics, partitions, configs, the cluster, and consumer groups.

``lanes.aio.Admin`` is the asynchronous core; ``lanes.Admin`` the synchronous facade. Bootstrap
from any broker: its Metadata (``cluster_only``) names the active controller, where admin requests
go; a request answered NOT_CONTROLLER follows the controller it names, and one that fails to
connect asks the brokers again, with backoff, within the request timeout. One channel per broker
and controller is kept for the client's life. Every
error code becomes the typed exception of ``lanes.errors`` (TopicAlreadyExistsError,
InvalidConfigError, ...), whose message says what to do. Group requests go to each group's
coordinator (``_group_admin``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import grpc

from lanes.client import _loop
from lanes.client._cluster import checked_client_id
from lanes.client._group_admin import GroupAdmin, GroupDescription, GroupListing, MemberInfo, OffsetReset, PartitionLag
from lanes.deadline import Backoff, Deadline
from lanes.errors import ErrorCode, LanesError, NotControllerError, error_for
from lanes.rpc.addresses import parse_addresses
from lanes.rpc.channels import ChannelCache
from lanes.rpc.controllers import active_controller_named, is_not_controller
from lanes.rpc.credentials import ClientCredentials, client_credentials
from lanes.rpc.tls import ClientTls
from lanes.rpc.wire import security_refusal
from lanes.security import scram
from lanes.security.acls import AclBinding
from lanes.security.quota_entities import Part, QuotaEntity
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, controller_pb2_grpc, metadata_pb2

T = TypeVar("T")
#: An answer about topics changed one by one (CreateTopics, DeleteTopics, CreatePartitions).
Mutation = TypeVar(
    "Mutation",
    controller_pb2.CreateTopicsResponse,
    controller_pb2.DeleteTopicsResponse,
    controller_pb2.CreatePartitionsResponse,
)
TOPIC = common_pb2.CONFIG_RESOURCE_TYPE_TOPIC


@dataclass(frozen=True)
class QuotaInfo:
    """A client quota: whose (``entity``: a user, a client id, or both; each part a name or
    ``DEFAULT``), which, and the rate."""

    entity: QuotaEntity
    key: str
    rate: float

    @property
    def user(self) -> Part:
        return self.entity.user

    @property
    def client_id(self) -> Part:
        return self.entity.client_id


@dataclass(frozen=True)
class UserInfo:
    """A user with credentials: its mechanisms and their iterations."""

    name: str
    mechanisms: tuple[str, ...]
    iterations: tuple[int, ...]


@dataclass(frozen=True)
class PartitionInfo:
    """A partition's placement and leadership."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclass(frozen=True)
class TopicInfo:
    """A topic and its partitions."""

    name: str
    topic_id: str
    internal: bool
    partitions: tuple[PartitionInfo, ...]
    #: with ``include_authorized_operations``: what the caller may do on it (``READ``, ``WRITE``,
    #: ``CREATE``, ``DELETE``, ``ALTER``, ``DESCRIBE``, ``DESCRIBE_CONFIGS``, ``ALTER_CONFIGS``); else None
    authorized_operations: frozenset[str] | None = None


@dataclass(frozen=True)
class BrokerInfo:
    """A broker as the controller sees it."""

    broker_id: int
    host: str
    port: int
    rack: str
    fenced: bool
    leaders: int
    replicas: int


@dataclass(frozen=True)
class CoordinatorInfo:
    """A group coordinator as the controller sees it."""

    coordinator_id: int
    host: str
    port: int
    fenced: bool
    shards: tuple[int, ...]


@dataclass(frozen=True)
class ControllerInfo:
    """One voter of the controller quorum, as the active controller sees it."""

    controller_id: int
    host: str
    port: int
    #: its metadata log end (-1: unknown) and how far it is behind the active controller's
    log_end_offset: int
    lag: int
    #: milliseconds since it last fetched from the active controller (0 for the active one)
    last_fetch_age_ms: int


@dataclass(frozen=True)
class ClusterInfo:
    """The cluster: id, controller, brokers, group coordinators, the controller quorum."""

    cluster_id: str
    controller: str
    brokers: tuple[BrokerInfo, ...]
    coordinators: tuple[CoordinatorInfo, ...] = ()
    metadata_offset: int = -1
    #: the quorum's epoch and its voters (the active controller among them)
    quorum_epoch: int = -1
    controllers: tuple[ControllerInfo, ...] = ()
    #: controllers fetching the metadata without a vote (to be added to the quorum, or removed)
    observers: tuple[ControllerInfo, ...] = ()
    #: the active controller's node id
    controller_id: int = -1


@dataclass(frozen=True)
class ReplicaLogInfo:
    """One partition replica's log on one broker (``high_watermark`` is authoritative on the leader)."""

    broker_id: int
    topic: str
    partition: int
    is_leader: bool
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int
    segments: int


@dataclass(frozen=True)
class ConfigInfo:
    """A topic config's effective value and where it comes from."""

    name: str
    value: str | None
    is_default: bool
    documentation: str


def _controllers(
    quorum: controller_pb2.DescribeQuorumResponse, *, observers: bool = False
) -> tuple[ControllerInfo, ...]:
    return tuple(
        ControllerInfo(
            v.endpoint.node_id,
            v.endpoint.host,
            v.endpoint.port,
            v.log_end_offset,
            quorum.log_end_offset - v.log_end_offset if v.log_end_offset >= 0 else -1,
            v.last_fetch_age_ms,
        )
        for v in (quorum.observers if observers else quorum.voters)
    )


def _raise_if_error(error: common_pb2.Error) -> None:
    if error.code != 0:  # ErrorCode.NONE
        raise error_for(error.code, error.message)


class AsyncAdmin:
    """Administration, asynchronously. ``bootstrap``: ``host:port[,host:port...]`` of brokers."""

    def __init__(
        self,
        bootstrap: str,
        *,
        request_timeout_ms: int = 30_000,
        tls: ClientTls = "process",
        credentials: ClientCredentials = "process",
        client_id: str = "lanes-admin",
    ) -> None:
        self.bootstrap = parse_addresses(bootstrap)
        self._tls: ClientTls = tls
        self._credentials = client_credentials(credentials)
        self._client_id = checked_client_id(client_id)
        self._timeout_s = request_timeout_ms / 1000
        #: one channel per broker and controller, kept (a TLS handshake per call would be the cost)
        self._channels = ChannelCache(tls=tls, credentials=self._credentials, client_id=self._client_id)
        self._controller: str | None = None
        self._groups: GroupAdmin | None = None

    @property
    def groups(self) -> GroupAdmin:
        """Group administration (created on first use)."""
        if self._groups is None:
            self._groups = GroupAdmin(self.bootstrap, self._timeout_s, self._tls, self._credentials, self._client_id)
        return self._groups

    async def _find_controller(self) -> str:
        """The active controller's client address, from the first broker that knows it; a retriable
        NOT_CONTROLLER error while brokers answer without knowing it yet (a controller just took
        office), BROKER_NOT_AVAILABLE when none answers."""
        problems = []
        answered = False
        for address in self.bootstrap:
            try:
                stub = self._channels.stub(address, broker_pb2_grpc.BrokerStub)
                metadata = await stub.Metadata(broker_pb2.MetadataRequest(cluster_only=True), timeout=self._timeout_s)
            except grpc.aio.AioRpcError as exc:
                refused = security_refusal(exc)
                if refused is not None:
                    raise refused from None
                problems.append(f"{address}: {exc.code().name}")
                continue
            if metadata.controller.port:
                return f"{metadata.controller.host}:{metadata.controller.port}"
            problems.append(f"{address}: the active controller's client listener is not known yet")
            answered = True
        if answered:
            raise error_for(  # a broker answered: the controller is there, not yet registered
                ErrorCode.NOT_CONTROLLER, f"no broker knows the active controller yet ({'; '.join(problems)})"
            )
        raise LanesError(
            f"no broker of {','.join(self.bootstrap)} could name the controller ({'; '.join(problems) or 'unknown'}); "
            "check the bootstrap address and that the cluster is up",
            ErrorCode.BROKER_NOT_AVAILABLE,
        )

    async def _call(
        self, call: Callable[[controller_pb2_grpc.ControllerStub], Awaitable[T]], deadline: Deadline | None = None
    ) -> T:
        """``call`` on the active controller: found through the brokers, and followed when a
        controller answers NOT_CONTROLLER (it names the active one when it knows it). Retried
        with backoff within the request timeout (or ``deadline``) while controllers elect a new
        active one."""
        deadline = deadline or Deadline(self._timeout_s)
        backoff = Backoff(0.05, 1.0)
        while True:
            if self._controller is None:
                try:
                    self._controller = await self._find_controller()
                except NotControllerError:
                    if deadline.expired():
                        raise
                    await backoff.pause()
                    continue
            try:
                return await call(self._channels.stub(self._controller, controller_pb2_grpc.ControllerStub))
            except grpc.aio.AioRpcError as exc:
                refused = security_refusal(exc)
                if refused is not None:
                    raise refused from None
                named = active_controller_named(exc) if is_not_controller(exc) else None
                redirected = named is not None and named != self._controller
                self._controller = named
                if deadline.expired():
                    raise LanesError(
                        f"the controller did not answer: {exc.details()}", ErrorCode.NETWORK_EXCEPTION
                    ) from exc
                if not redirected:  # pointed at the same one again, or at none: let an election finish
                    await backoff.pause()

    async def _mutate(
        self, send: Callable[[controller_pb2_grpc.ControllerStub, float], Awaitable[Mutation]]
    ) -> Mutation:
        """``_call`` for a topic or partition change of one topic, ``send(stub, timeout_s)``:
        refused for the user's controller mutation quota (THROTTLING_QUOTA_EXCEEDED), it is sent
        again after the throttle time while the request timeout allows (Kafka's
        ``retry.on.quota.violation``); every attempt shares the one request timeout."""
        deadline = Deadline(self._timeout_s)
        while True:
            answer = await self._call(lambda stub: send(stub, max(0.1, deadline.remaining_s())), deadline)
            throttled = answer.topics[0].error.code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
            if not throttled or answer.throttle_time_ms / 1000 >= deadline.remaining_s():
                return answer
            await asyncio.sleep(answer.throttle_time_ms / 1000)

    async def create_topic(
        self, name: str, partitions: int = -1, replication_factor: int = -1, config: Mapping[str, str] | None = None
    ) -> str:
        """Create a topic (-1: the cluster defaults); return its topic id."""
        request = controller_pb2.CreateTopicsRequest(
            topics=[
                controller_pb2.CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    configs=[common_pb2.ConfigValue(name=k, value=v) for k, v in (config or {}).items()],
                )
            ],
            timeout_ms=int(self._timeout_s * 1000),
        )
        answer = await self._mutate(lambda stub, timeout_s: stub.CreateTopics(request, timeout=timeout_s))
        _raise_if_error(answer.topics[0].error)
        return str(answer.topics[0].topic_id)

    async def delete_topic(self, name: str) -> None:
        """Delete a topic and its records."""
        answer = await self._mutate(
            lambda stub, timeout_s: stub.DeleteTopics(
                controller_pb2.DeleteTopicsRequest(names=[name]), timeout=timeout_s
            )
        )
        _raise_if_error(answer.topics[0].error)

    async def describe_topic(self, name: str, *, include_authorized_operations: bool = False) -> TopicInfo:
        """A topic with its partitions."""
        return (await self.describe_topics([name], include_authorized_operations=include_authorized_operations))[0]

    async def describe_topics(
        self, names: Sequence[str] = (), *, include_internal: bool = False, include_authorized_operations: bool = False
    ) -> list[TopicInfo]:
        """Topics with their partitions, sorted by name; no names: every topic. An unknown name
        raises its error (UnknownTopicOrPartitionError). ``include_authorized_operations``: each
        with what the caller may do on it (Kafka's KIP-430)."""
        request = controller_pb2.DescribeTopicsRequest(
            names=list(names),
            include_internal=include_internal,
            include_authorized_operations=include_authorized_operations,
        )
        answer = await self._call(lambda stub: stub.DescribeTopics(request, timeout=self._timeout_s))
        topics = []
        for topic in answer.topics:
            _raise_if_error(topic.error)
            topics.append(
                TopicInfo(
                    topic.name,
                    topic.topic_id,
                    topic.is_internal,
                    tuple(
                        PartitionInfo(
                            p.partition,
                            p.leader_id,
                            p.leader_epoch,
                            tuple(p.replicas),
                            tuple(p.isr),
                            tuple(p.offline_replicas),
                        )
                        for p in topic.partitions
                    ),
                    frozenset(topic.authorized_operations) if include_authorized_operations else None,
                )
            )
        return sorted(topics, key=lambda t: t.name)

    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """Topic names, sorted."""
        answer = await self._call(
            lambda stub: stub.DescribeTopics(
                controller_pb2.DescribeTopicsRequest(include_internal=include_internal), timeout=self._timeout_s
            )
        )
        return sorted(topic.name for topic in answer.topics)

    async def create_partitions(self, name: str, total: int) -> None:
        """Grow a topic to ``total`` partitions (keys map differently afterwards)."""
        request = controller_pb2.CreatePartitionsRequest(
            topics=[controller_pb2.CreatePartitionsTopic(name=name, count=total)]
        )
        answer = await self._mutate(lambda stub, timeout_s: stub.CreatePartitions(request, timeout=timeout_s))
        _raise_if_error(answer.topics[0].error)

    async def alter_configs(
        self,
        name: str,
        *,
        set: Mapping[str, str] | None = None,
        delete: Sequence[str] = (),
    ) -> None:
        """Set and remove topic config overrides, all or nothing."""
        changes = [
            controller_pb2.AlterableConfig(name=k, op=controller_pb2.ALTER_CONFIG_OP_SET, value=v)
            for k, v in (set or {}).items()
        ] + [controller_pb2.AlterableConfig(name=k, op=controller_pb2.ALTER_CONFIG_OP_DELETE) for k in delete]
        request = controller_pb2.AlterConfigsRequest(
            resources=[controller_pb2.AlterConfigsResource(resource_type=TOPIC, resource_name=name, configs=changes)]
        )
        answer = await self._call(lambda stub: stub.AlterConfigs(request, timeout=self._timeout_s))
        _raise_if_error(answer.results[0].error)

    async def describe_configs(self, name: str) -> dict[str, ConfigInfo]:
        """Every topic config's effective value."""
        request = controller_pb2.DescribeConfigsRequest(
            resources=[controller_pb2.DescribeConfigsResource(resource_type=TOPIC, resource_name=name)],
            include_documentation=True,
        )
        answer = await self._call(lambda stub: stub.DescribeConfigs(request, timeout=self._timeout_s))
        result = answer.results[0]
        _raise_if_error(result.error)
        return {
            entry.name: ConfigInfo(
                entry.name,
                entry.value if entry.HasField("value") else None,
                entry.source == common_pb2.CONFIG_SOURCE_DEFAULT,
                entry.documentation,
            )
            for entry in result.configs
        }

    async def describe_cluster(self) -> ClusterInfo:
        """The cluster id, the controller and every broker (fenced ones included)."""
        answer = await self._call(
            lambda stub: stub.DescribeCluster(
                controller_pb2.DescribeClusterRequest(include_fenced=True), timeout=self._timeout_s
            )
        )
        _raise_if_error(answer.error)
        return ClusterInfo(
            answer.cluster_id,
            f"{answer.controller.host}:{answer.controller.port}",
            tuple(
                BrokerInfo(
                    b.endpoint.node_id,
                    b.endpoint.host,
                    b.endpoint.port,
                    b.endpoint.rack,
                    b.fenced,
                    b.leader_count,
                    b.replica_count,
                )
                for b in answer.brokers
            ),
            tuple(
                CoordinatorInfo(c.endpoint.node_id, c.endpoint.host, c.endpoint.port, c.fenced, tuple(c.shards))
                for c in answer.coordinators
            ),
            answer.metadata_offset,
            answer.quorum.epoch,
            _controllers(answer.quorum),
            _controllers(answer.quorum, observers=True),
            answer.controller.node_id,
        )

    async def add_controller(self, controller_id: int, address: str) -> tuple[ControllerInfo, ...]:
        """Make a controller a voter of the quorum (KIP-853; ``kafka-metadata-quorum
        add-controller``): it must run, started with ``--voters`` naming the quorum, and have
        caught up (it fetches as an observer). One change at a time; returns the voters once
        the change is committed."""
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"a controller's address is host:port, not {address!r}")
        node = common_pb2.Node(node_id=controller_id, host=host, port=int(port))
        answer = await self._call(
            lambda stub: stub.AddController(
                controller_pb2.AddControllerRequest(controller=node), timeout=self._timeout_s
            )
        )
        _raise_if_error(answer.error)
        return _controllers(answer.quorum)

    async def remove_controller(self, controller_id: int) -> tuple[ControllerInfo, ...]:
        """Remove a voter from the quorum (the active controller too: it resigns once the change
        is committed); returns the voters once the change is committed."""
        answer = await self._call(
            lambda stub: stub.RemoveController(
                controller_pb2.RemoveControllerRequest(node_id=controller_id), timeout=self._timeout_s
            )
        )
        _raise_if_error(answer.error)
        return _controllers(answer.quorum)

    async def describe_logs(self, topics: Sequence[str] = ()) -> list[ReplicaLogInfo]:
        """Every replica's log (offsets, size, segments) of ``topics`` (all when empty), asked of
        every live broker at once; sorted by topic, partition, broker. A broker that does not
        answer raises BROKER_NOT_AVAILABLE naming it."""
        cluster = await self.describe_cluster()

        async def ask(broker: BrokerInfo) -> broker_pb2.DescribeLogsResponse:
            address = f"{broker.host}:{broker.port}"
            try:
                stub = self._channels.stub(address, broker_pb2_grpc.BrokerStub)
                answer: broker_pb2.DescribeLogsResponse = await stub.DescribeLogs(
                    broker_pb2.DescribeLogsRequest(topics=list(topics)), timeout=self._timeout_s
                )
                return answer
            except grpc.aio.AioRpcError as exc:
                raise LanesError(
                    f"broker {broker.broker_id} at {address} did not answer: {exc.details()}",
                    ErrorCode.BROKER_NOT_AVAILABLE,
                ) from exc

        answers = await asyncio.gather(*(ask(b) for b in cluster.brokers if not b.fenced))
        replicas = [
            ReplicaLogInfo(
                answer.broker_id,
                r.topic,
                r.partition,
                r.is_leader,
                r.log_start_offset,
                r.log_end_offset,
                r.high_watermark,
                r.size_bytes,
                r.segments,
            )
            for answer in answers
            for r in answer.replicas
        ]
        return sorted(replicas, key=lambda r: (r.topic, r.partition, r.broker_id))

    # -----------------------------------------------------------------------------------------
    # users and ACLs

    async def set_user_password(
        self,
        name: str,
        password: str,
        *,
        mechanism: str = scram.DEFAULT_MECHANISM,
        iterations: int = scram.DEFAULT_ITERATIONS,
    ) -> None:
        """Create user ``name``, or change its password (Kafka's AlterUserScramCredentials): the
        password is salted here, so only its SCRAM keys reach the cluster."""
        if mechanism not in scram.MECHANISMS:
            raise LanesError(f"unknown mechanism {mechanism!r}", ErrorCode.UNSUPPORTED_SASL_MECHANISM)
        if not password:
            raise LanesError("a password is not empty", ErrorCode.UNACCEPTABLE_CREDENTIAL)
        salt = os.urandom(32)
        salted = await asyncio.to_thread(scram.salted_password, mechanism, password, salt, iterations)
        upsertion = controller_pb2.ScramCredentialUpsertion(
            name=name, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=salted
        )
        answer = await self._call(
            lambda stub: stub.AlterUserScramCredentials(
                controller_pb2.AlterUserScramCredentialsRequest(upsertions=[upsertion]), timeout=self._timeout_s
            )
        )
        _raise_if_error(answer.results[0].error)

    async def delete_user(self, name: str, *, mechanisms: Sequence[str] | None = None) -> None:
        """Remove every credential of user ``name``, or only those of ``mechanisms`` (its ACLs
        stay: ``delete_acls``)."""
        if mechanisms is None:
            mechanisms = (await self.describe_users([name]))[0].mechanisms
        deletions = [controller_pb2.ScramCredentialDeletion(name=name, mechanism=m) for m in mechanisms]
        answer = await self._call(
            lambda stub: stub.AlterUserScramCredentials(
                controller_pb2.AlterUserScramCredentialsRequest(deletions=deletions), timeout=self._timeout_s
            )
        )
        for result in answer.results:
            _raise_if_error(result.error)

    async def describe_users(self, names: Sequence[str] = ()) -> list[UserInfo]:
        """Users with credentials (no names: every one), with their mechanisms; an unknown name
        raises RESOURCE_NOT_FOUND."""
        answer = await self._call(
            lambda stub: stub.DescribeUserScramCredentials(
                controller_pb2.DescribeUserScramCredentialsRequest(names=list(names)), timeout=self._timeout_s
            )
        )
        users = []
        for user in answer.users:
            _raise_if_error(user.error)
            users.append(
                UserInfo(
                    user.name,
                    tuple(c.mechanism for c in user.credentials),
                    tuple(c.iterations for c in user.credentials),
                )
            )
        return users

    async def create_acls(self, acls: Sequence[AclBinding]) -> None:
        """Add ACLs (``AclBinding.of("alice", "read", topic="a")``); adding one present is no change."""
        answer = await self._call(
            lambda stub: stub.CreateAcls(
                controller_pb2.CreateAclsRequest(creations=[acl.to_proto() for acl in acls]), timeout=self._timeout_s
            )
        )
        for error in answer.results:
            _raise_if_error(error)

    async def describe_acls(self, filter_: AclBinding | None = None) -> list[AclBinding]:
        """The ACLs a filter selects (ANY and empty fields match anything; None: every ACL)."""
        wire = filter_.to_proto() if filter_ is not None else common_pb2.AclBinding()
        answer = await self._call(
            lambda stub: stub.DescribeAcls(controller_pb2.DescribeAclsRequest(filter=wire), timeout=self._timeout_s)
        )
        return [AclBinding.from_proto(acl) for acl in answer.acls]

    async def delete_acls(self, filters: Sequence[AclBinding]) -> list[AclBinding]:
        """Remove every ACL a filter selects; return those removed."""
        answer = await self._call(
            lambda stub: stub.DeleteAcls(
                controller_pb2.DeleteAclsRequest(filters=[f.to_proto() for f in filters]), timeout=self._timeout_s
            )
        )
        removed: list[AclBinding] = []
        for result in answer.results:
            _raise_if_error(result.error)
            removed.extend(AclBinding.from_proto(acl) for acl in result.removed)
        return removed

    async def set_quota(self, key: str, rate: float | None, *, user: Part = None, client_id: Part = None) -> None:
        """Set the quota under ``key`` of a ``user``, a ``client_id``, or a user's client id
        (either may be ``DEFAULT``: every user, or client, without a quota of its own), or remove
        it with ``rate`` None (Kafka's AlterClientQuotas). Keys: ``producer_byte_rate``,
        ``consumer_byte_rate`` (bytes per second on each broker), ``request_percentage`` (percent
        of one event loop's time on each service process), ``controller_mutation_rate``
        (partitions created, added or deleted per second). Which quota a call falls under is
        Kafka's precedence (``lanes.security.quota_entities``)."""
        entity = QuotaEntity(user, client_id)
        if (problem := entity.problem()) is not None:
            raise LanesError(problem, ErrorCode.INVALID_REQUEST)
        change = metadata_pb2.ClientQuotaRecord(entity=entity.to_proto(), key=key, value=rate)
        answer = await self._call(
            lambda stub: stub.AlterClientQuotas(
                controller_pb2.AlterClientQuotasRequest(changes=[change]), timeout=self._timeout_s
            )
        )
        _raise_if_error(answer.results[0])

    async def describe_quotas(self, *, user: Part = None, client_id: Part = None) -> list[QuotaInfo]:
        """The quotas set, defaults first; only the entity named, exactly, when one is."""
        wanted = QuotaEntity(user, client_id)
        request = controller_pb2.DescribeClientQuotasRequest(entity=wanted.to_proto())
        answer = await self._call(lambda stub: stub.DescribeClientQuotas(request, timeout=self._timeout_s))
        quotas = []
        for quota in answer.quotas:
            entity = QuotaEntity.from_proto(list(quota.entity))
            if entity is not None:
                quotas.append(QuotaInfo(entity, quota.key, quota.value))
        return quotas

    # -----------------------------------------------------------------------------------------
    # consumer groups

    async def list_groups(self) -> list[GroupListing]:
        """Every consumer group of the cluster, by id."""
        return await self.groups.list_groups()

    async def describe_group(self, group_id: str, *, include_offsets: bool = True) -> GroupDescription:
        """A group's state, members, assignments, and per partition committed offset, log end
        offset and lag (records and milliseconds)."""
        return await self.groups.describe_group(group_id, include_offsets=include_offsets)

    async def delete_group(self, group_id: str) -> None:
        """Delete an empty group and its committed offsets."""
        await self.groups.delete_group(group_id)

    async def reset_offsets(
        self, group_id: str, to: str, *, partitions: Sequence[TopicPartition] = (), dry_run: bool = True
    ) -> list[OffsetReset]:
        """Move an empty group's offsets to ``earliest``, ``latest``, ``offset:N``,
        ``timestamp:MS`` or ``shift:N`` (clamped to the log); a dry run unless ``dry_run=False``."""
        return await self.groups.reset_offsets(group_id, to, partitions=partitions, dry_run=dry_run)

    async def delete_offsets(self, group_id: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, str]:
        """Delete a group's offsets of topics it does not subscribe to; per partition '' or why not."""
        return await self.groups.delete_offsets(group_id, partitions)

    async def close(self) -> None:
        """Release connections."""
        await self._channels.close()
        if self._groups is not None:
            await self._groups.close()

    async def __aenter__(self) -> AsyncAdmin:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class Admin:
    """Administration, synchronously (``lanes.aio.Admin`` runs on a background loop)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        request_timeout_ms: int = 30_000,
        tls: ClientTls = "process",
        credentials: ClientCredentials = "process",
        client_id: str = "lanes-admin",
    ) -> None:
        self._admin = AsyncAdmin(
            bootstrap, request_timeout_ms=request_timeout_ms, tls=tls, credentials=credentials, client_id=client_id
        )
        _loop.close_at_exit(self._admin)  # its channels closed at exit without close()

    def create_topic(
        self, name: str, partitions: int = -1, replication_factor: int = -1, config: Mapping[str, str] | None = None
    ) -> str:
        """See ``AsyncAdmin.create_topic``."""
        return _loop.run(self._admin.create_topic(name, partitions, replication_factor, config))

    def delete_topic(self, name: str) -> None:
        """See ``AsyncAdmin.delete_topic``."""
        _loop.run(self._admin.delete_topic(name))

    def describe_topic(self, name: str, *, include_authorized_operations: bool = False) -> TopicInfo:
        """See ``AsyncAdmin.describe_topic``."""
        return _loop.run(self._admin.describe_topic(name, include_authorized_operations=include_authorized_operations))

    def describe_topics(
        self, names: Sequence[str] = (), *, include_internal: bool = False, include_authorized_operations: bool = False
    ) -> list[TopicInfo]:
        """See ``AsyncAdmin.describe_topics``."""
        return _loop.run(
            self._admin.describe_topics(
                names, include_internal=include_internal, include_authorized_operations=include_authorized_operations
            )
        )

    def describe_logs(self, topics: Sequence[str] = ()) -> list[ReplicaLogInfo]:
        """See ``AsyncAdmin.describe_logs``."""
        return _loop.run(self._admin.describe_logs(topics))

    def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """See ``AsyncAdmin.list_topics``."""
        return _loop.run(self._admin.list_topics(include_internal=include_internal))

    def create_partitions(self, name: str, total: int) -> None:
        """See ``AsyncAdmin.create_partitions``."""
        _loop.run(self._admin.create_partitions(name, total))

    def alter_configs(self, name: str, *, set: Mapping[str, str] | None = None, delete: Sequence[str] = ()) -> None:
        """See ``AsyncAdmin.alter_configs``."""
        _loop.run(self._admin.alter_configs(name, set=set, delete=delete))

    def describe_configs(self, name: str) -> dict[str, ConfigInfo]:
        """See ``AsyncAdmin.describe_configs``."""
        return _loop.run(self._admin.describe_configs(name))

    def describe_cluster(self) -> ClusterInfo:
        """See ``AsyncAdmin.describe_cluster``."""
        return _loop.run(self._admin.describe_cluster())

    def add_controller(self, controller_id: int, address: str) -> tuple[ControllerInfo, ...]:
        """See ``AsyncAdmin.add_controller``."""
        return _loop.run(self._admin.add_controller(controller_id, address))

    def remove_controller(self, controller_id: int) -> tuple[ControllerInfo, ...]:
        """See ``AsyncAdmin.remove_controller``."""
        return _loop.run(self._admin.remove_controller(controller_id))

    def set_user_password(
        self,
        name: str,
        password: str,
        *,
        mechanism: str = scram.DEFAULT_MECHANISM,
        iterations: int = scram.DEFAULT_ITERATIONS,
    ) -> None:
        """See ``AsyncAdmin.set_user_password``."""
        _loop.run(self._admin.set_user_password(name, password, mechanism=mechanism, iterations=iterations))

    def delete_user(self, name: str, *, mechanisms: Sequence[str] | None = None) -> None:
        """See ``AsyncAdmin.delete_user``."""
        _loop.run(self._admin.delete_user(name, mechanisms=mechanisms))

    def describe_users(self, names: Sequence[str] = ()) -> list[UserInfo]:
        """See ``AsyncAdmin.describe_users``."""
        return _loop.run(self._admin.describe_users(names))

    def create_acls(self, acls: Sequence[AclBinding]) -> None:
        """See ``AsyncAdmin.create_acls``."""
        _loop.run(self._admin.create_acls(acls))

    def describe_acls(self, filter_: AclBinding | None = None) -> list[AclBinding]:
        """See ``AsyncAdmin.describe_acls``."""
        return _loop.run(self._admin.describe_acls(filter_))

    def delete_acls(self, filters: Sequence[AclBinding]) -> list[AclBinding]:
        """See ``AsyncAdmin.delete_acls``."""
        return _loop.run(self._admin.delete_acls(filters))

    def set_quota(self, key: str, rate: float | None, *, user: Part = None, client_id: Part = None) -> None:
        """See ``AsyncAdmin.set_quota``."""
        _loop.run(self._admin.set_quota(key, rate, user=user, client_id=client_id))

    def describe_quotas(self, *, user: Part = None, client_id: Part = None) -> list[QuotaInfo]:
        """See ``AsyncAdmin.describe_quotas``."""
        return _loop.run(self._admin.describe_quotas(user=user, client_id=client_id))

    def list_groups(self) -> list[GroupListing]:
        """See ``AsyncAdmin.list_groups``."""
        return _loop.run(self._admin.list_groups())

    def describe_group(self, group_id: str, *, include_offsets: bool = True) -> GroupDescription:
        """See ``AsyncAdmin.describe_group``."""
        return _loop.run(self._admin.describe_group(group_id, include_offsets=include_offsets))

    def delete_group(self, group_id: str) -> None:
        """See ``AsyncAdmin.delete_group``."""
        _loop.run(self._admin.delete_group(group_id))

    def reset_offsets(
        self, group_id: str, to: str, *, partitions: Sequence[TopicPartition] = (), dry_run: bool = True
    ) -> list[OffsetReset]:
        """See ``AsyncAdmin.reset_offsets``."""
        return _loop.run(self._admin.reset_offsets(group_id, to, partitions=partitions, dry_run=dry_run))

    def delete_offsets(self, group_id: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, str]:
        """See ``AsyncAdmin.delete_offsets``."""
        return _loop.run(self._admin.delete_offsets(group_id, partitions))

    def close(self) -> None:
        """Release connections."""
        _loop.closed(self._admin)
        _loop.run(self._admin.close())

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "Admin",
    "AsyncAdmin",
    "BrokerInfo",
    "ClusterInfo",
    "ConfigInfo",
    "CoordinatorInfo",
    "GroupDescription",
    "GroupListing",
    "MemberInfo",
    "OffsetReset",
    "PartitionInfo",
    "PartitionLag",
    "ReplicaLogInfo",
    "TopicInfo",
]
