"""The Kafka face of a broker (Kafka's ``KafkaApis``): which APIs and versions it serves, and
each one's answer from the broker's engine (``BrokerNode``).

A request whose API or version is not served is answered UNSUPPORTED_VERSION in a response of
its own API and version where the protocol has one (ApiVersions: its version 0, with the table,
so that a client learns what to send), never with a dropped connection; only bytes that are no
request of any API close the connection (``lanes.kafka.listener``).

Served so far: ApiVersions (v0-v4), Metadata (v4-v12, the KIP-896 floor up), Produce (v3-v12),
Fetch (v4-v12), ListOffsets (v1-v6), InitProducerId (v0-v5) (``lanes.kafka.records_apis``), and
on a cluster with ``--auth required`` SaslHandshake (v1) and SaslAuthenticate (v0-v2)
(``lanes.kafka.sasl``): issue #38 adds the rest.

Every request but ApiVersions and SASL's is made by the connection's authenticated principal
(else the connection is closed, as Kafka closes it) and authorized per topic by the gRPC face's
rules (``lanes.kafka.access``).
Owned by the broker's event loop.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode as KafkaError

from lanes.broker.byte_rate_quotas import ByteRateQuotas
from lanes.broker.fetch_limits import FETCH_MAX_BYTES
from lanes.broker.node import BrokerNode
from lanes.kafka import admin_apis as admin_api
from lanes.kafka import group_apis as groups_api
from lanes.kafka.access import KafkaAccess, KafkaCaller, allows
from lanes.kafka.answers import Answer, KafkaCall, Reply
from lanes.kafka.codec import (
    OPERATIONS_OMITTED,
    build,
    decode,
    encode,
    kafka_brokers,
    nested,
    refusal,
    request_class,
    response_class,
)
from lanes.kafka.frames import RequestKey
from lanes.kafka.records_apis import FETCH, INIT_PRODUCER_ID, LIST_OFFSETS, PRODUCE, RecordApis, init_producer_id
from lanes.kafka.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE, KafkaAuthentication, KafkaConnection
from lanes.metadata.image import MetadataImage, TopicImage
from lanes.runtime.access.access_rules import Access
from lanes.security.acls import Operation

_log = logging.getLogger(__name__)

API_VERSIONS = 18
METADATA = 3
#: the requests a connection may make before it is authenticated
_BEFORE_AUTHENTICATION = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})
#: what the topics of a listing need (Metadata is trimmed as the gRPC face's is: ``_TRIM_TOPICS``)
_DESCRIBE = Operation.DESCRIBE


@dataclass(frozen=True)
class Served:
    """An API this face answers, the versions it accepts and its handler (request header, body
    and version in, response body out)."""

    min_version: int
    max_version: int
    handler: Callable[[KafkaCall], Awaitable[Any | None]]


class KafkaApis:
    """The face (see the module docstring)."""

    def __init__(
        self,
        node: BrokerNode,
        *,
        quotas: ByteRateQuotas,
        authentication: KafkaAuthentication,
        access: KafkaAccess,
        groups: groups_api.GroupCalls | None = None,
        controller: admin_api.AdminCalls | None = None,
        fetch_max_bytes: int = FETCH_MAX_BYTES,
    ) -> None:
        self._node = node
        self.authentication = authentication
        self._access = access
        records = RecordApis(node, quotas, fetch_max_bytes=fetch_max_bytes)
        self.served: dict[int, Served] = {
            API_VERSIONS: Served(0, 4, self._api_versions),
            METADATA: Served(4, 12, self._metadata),
            # (versions that name topics; the ones that give topic ids come with their mapping)
            PRODUCE: Served(3, 12, records.produce),
            FETCH: Served(4, 12, records.fetch),
            # (v7's max-timestamp and v8's earliest-local offsets are not served yet)
            LIST_OFFSETS: Served(1, 6, records.list_offsets),
            INIT_PRODUCER_ID: Served(0, 5, functools.partial(init_producer_id, node)),
        }
        if groups is not None:  # (what Lanes' group coordinators answer, through this broker)
            group = groups_api.GroupApis(node, groups)
            self.served.update(
                {
                    groups_api.FIND_COORDINATOR: Served(0, 6, group.find_coordinator),
                    groups_api.JOIN_GROUP: Served(2, 9, group.join_group),
                    groups_api.SYNC_GROUP: Served(0, 5, group.sync_group),
                    groups_api.HEARTBEAT: Served(0, 4, group.heartbeat),
                    groups_api.LEAVE_GROUP: Served(0, 5, group.leave_group),
                    groups_api.OFFSET_COMMIT: Served(2, 9, group.offset_commit),
                    groups_api.OFFSET_FETCH: Served(2, 9, group.offset_fetch),  # (v1 has no group error)
                    groups_api.OFFSET_DELETE: Served(0, 0, group.offset_delete),
                    groups_api.LIST_GROUPS: Served(0, 5, group.list_groups),
                    groups_api.DESCRIBE_GROUPS: Served(0, 5, group.describe_groups),
                    groups_api.DELETE_GROUPS: Served(0, 2, group.delete_groups),
                    groups_api.CONSUMER_GROUP_HEARTBEAT: Served(0, 1, group.consumer_group_heartbeat),
                    groups_api.CONSUMER_GROUP_DESCRIBE: Served(0, 1, group.consumer_group_describe),
                }
            )
        if controller is not None:  # (topics and configs are the controller's; the rest this broker's)
            admin = admin_api.AdminApis(node, controller)
            self.served.update(
                {
                    admin_api.CREATE_TOPICS: Served(2, 7, admin.create_topics),
                    admin_api.DELETE_TOPICS: Served(1, 6, admin.delete_topics),
                    admin_api.CREATE_PARTITIONS: Served(0, 3, admin.create_partitions),
                    admin_api.DESCRIBE_CONFIGS: Served(1, 4, admin.describe_configs),
                    admin_api.INCREMENTAL_ALTER_CONFIGS: Served(0, 1, admin.incremental_alter_configs),
                    admin_api.DESCRIBE_CLUSTER: Served(0, 1, admin.describe_cluster),
                    admin_api.DELETE_RECORDS: Served(0, 2, admin.delete_records),
                    admin_api.OFFSET_FOR_LEADER_EPOCH: Served(2, 4, admin.offset_for_leader_epoch),
                }
            )
        if authentication.required:
            # (v0 listed too: librdkafka 2.0 looks for it, then authenticates with v1 and SaslAuthenticate)
            self.served[SASL_HANDSHAKE] = Served(0, 1, self._handshake)
            self.served[SASL_AUTHENTICATE] = Served(0, 2, self._authenticate)

    async def answer(self, key: RequestKey, frame: bytes, connection: KafkaConnection) -> Reply | None:
        """The reply to a request frame (an empty frame for a request answered by silence: a
        produce with acks=0); None when it is no request at all (the connection is then
        closed). MalformedRequestError for one that does not parse."""
        if key.api_key not in _BEFORE_AUTHENTICATION:
            refused = self.authentication.refusal(connection)
            if refused is None and self._node.image.last_offset < 0:  # (no users, ACLs or topics yet)
                refused = "this broker has not loaded the cluster's metadata yet (the client retries)"
            if refused is not None:
                _log.info("closing a Kafka connection from %s: %s", connection.host, refused)
                return Reply(b"", close=True)
        served = self.served.get(key.api_key)
        cls = request_class(key.api_key, key.api_version)
        if served is None or not served.min_version <= key.api_version <= served.max_version:
            if key.api_key == API_VERSIONS:  # v0, which every client reads
                return Reply(encode(key.correlation_id, self._versions_table(0, KafkaError.unsupported_version)))
            if cls is None:
                return None
            return Reply(
                encode(key.correlation_id, refusal(key.api_key, key.api_version, KafkaError.unsupported_version))
            )
        assert cls is not None  # (a served version is one kio knows)
        header, body = decode(frame, cls)
        caller = KafkaCaller(connection.principal or "", connection.host, header.client_id or "")
        access = self._access.of(caller) if connection.principal is not None else None
        answered = await served.handler(KafkaCall(header, body, key.api_version, caller, access, connection))
        if not isinstance(answered, Answer):
            answered = Answer(answered)
        data = b"" if answered.response is None else encode(key.correlation_id, answered.response)
        return Reply(data, answered.release, answered.close)

    # -----------------------------------------------------------------------------------------
    # ApiVersions

    def _versions_table(self, version: int, code: KafkaError = KafkaError.none) -> Any:
        cls = response_class(API_VERSIONS, version)
        entry = nested(cls, "ApiVersion")
        keys = tuple(
            build(entry, api_key=key, min_version=served.min_version, max_version=served.max_version)
            for key, served in sorted(self.served.items())
        )
        return build(cls, error_code=code, api_keys=keys)

    async def _api_versions(self, call: KafkaCall) -> Any:
        return self._versions_table(call.version)

    # -----------------------------------------------------------------------------------------
    # SASL

    async def _handshake(self, call: KafkaCall) -> Answer:
        return await self.authentication.handshake(call.connection, call.header, call.body, call.version)

    async def _authenticate(self, call: KafkaCall) -> Answer:
        return await self.authentication.authenticate(call.connection, call.header, call.body, call.version)

    # -----------------------------------------------------------------------------------------
    # Metadata

    async def _metadata(self, call: KafkaCall) -> Any:
        """Brokers (their Kafka listeners), and the topics asked for (all when ``topics`` is
        null) that the caller may DESCRIBE: others are left out of a listing, and a named one is
        answered TOPIC_AUTHORIZATION_FAILED whether it exists or not; a topic that does not exist
        is answered UNKNOWN_TOPIC_OR_PARTITION (Lanes creates no topic on a client's request)."""
        request, version, access = call.body, call.version, call.access
        image = self._node.image
        cls = response_class(METADATA, version)
        brokers = tuple(
            build(
                nested(cls, "MetadataResponseBroker"),
                node_id=b.broker_id,
                host=b.host,
                port=b.kafka_port,
                rack=b.rack or None,
            )
            for b in kafka_brokers(image)
        )
        listed = {b.node_id for b in brokers}
        if request.topics is None:
            names = sorted(t.name for t in image.topics.values() if allows(access, _DESCRIBE, t.name))
            topics = tuple(self._topic(cls, image, name, listed, access) for name in names)
        else:
            asked = dict.fromkeys((t.name or None, None if t.name else t.topic_id) for t in request.topics)
            topics = tuple(
                self._topic(cls, image, name, listed, access)
                if name is not None
                else self._topic_by_id(cls, image, topic_id, listed, access)
                for name, topic_id in asked
            )
        # (KRaft: clients send admin requests to a broker: this one, else another listed one)
        controller_id = self._node.broker_id if self._node.broker_id in listed else min(listed, default=-1)
        return build(
            cls, brokers=brokers, cluster_id=image.cluster_id or None, controller_id=controller_id, topics=topics
        )

    def _topic(self, cls: type[Any], image: MetadataImage, name: str, listed: set[int], access: Access | None) -> Any:
        topic_class = nested(cls, "MetadataResponseTopic")
        if not allows(access, _DESCRIBE, name):
            return build(topic_class, error_code=KafkaError.topic_authorization_failed, name=name)
        topic = image.topic(name)
        if topic is None:
            return build(topic_class, error_code=KafkaError.unknown_topic_or_partition, name=name)
        return build(
            topic_class,
            name=topic.name,
            topic_id=uuid.UUID(topic.topic_id),
            is_internal=topic.internal,
            partitions=self._partitions(cls, image, topic, listed),
            topic_authorized_operations=OPERATIONS_OMITTED,
        )

    def _topic_by_id(
        self, cls: type[Any], image: MetadataImage, topic_id: Any, listed: set[int], access: Access | None
    ) -> Any:
        """A topic asked for by id (v10+): UNKNOWN_TOPIC_ID for an id no topic has, and a topic
        the caller may not DESCRIBE answered as refused; neither with a name (Kafka's null)."""
        topic = image.topics.get(str(topic_id)) if topic_id is not None else None
        if topic is None or not allows(access, _DESCRIBE, topic.name):
            code = KafkaError.unknown_topic_id if topic is None else KafkaError.topic_authorization_failed
            return build(nested(cls, "MetadataResponseTopic"), error_code=code, name=None, topic_id=topic_id)
        return self._topic(cls, image, topic.name, listed, access)

    def _partitions(self, cls: type[Any], image: MetadataImage, topic: TopicImage, listed: set[int]) -> tuple[Any, ...]:
        """Each partition's leader as the gRPC face names it (``named_leader``: none while the
        leader cannot vouch for leading), and none (LEADER_NOT_AVAILABLE) when it has no Kafka
        listener in the answer's brokers."""
        partition_class = nested(cls, "MetadataResponsePartition")
        live = {b.broker_id for b in image.brokers.values() if not b.fenced}
        answered = []
        for _, p in sorted(topic.partitions.items()):
            leader = self._node.replicas.named_leader(topic.name, p)
            if leader not in listed:
                leader = -1
            answered.append(
                build(
                    partition_class,
                    error_code=KafkaError.none if leader >= 0 else KafkaError.leader_not_available,
                    partition_index=p.partition,
                    leader_id=leader,
                    leader_epoch=p.leader_epoch,
                    replica_nodes=tuple(p.replicas),
                    isr_nodes=tuple(p.isr),
                    offline_replicas=tuple(r for r in p.replicas if r not in live),
                )
            )
        return tuple(answered)
