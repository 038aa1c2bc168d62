"""The Kafka face of a broker (Kafka's ``KafkaApis``): which APIs and versions it serves, and
each one's answer from the broker's engine (``BrokerNode``).

A request whose API or version is not served is answered UNSUPPORTED_VERSION in a response of
its own API and version where the protocol has one (ApiVersions: its version 0, with the table,
so that a client learns what to send), never with a dropped connection; only bytes that are no
request of any API close the connection (``lanes.kafka.listener``).

Served so far: ApiVersions (v0-v4), Metadata (v4-v12, the KIP-896 floor up), Produce (v3-v12),
Fetch (v4-v12), ListOffsets (v1-v6), InitProducerId (v0-v5) (``lanes.kafka.records_apis``): issue #38 adds the rest.
Owned by the broker's event loop.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode as KafkaError

from lanes.broker.fetch_limits import FETCH_MAX_BYTES
from lanes.broker.node import BrokerNode
from lanes.kafka.answers import Answer, Reply
from lanes.kafka.codec import build, decode, encode, nested, refusal, request_class, response_class
from lanes.kafka.frames import RequestKey
from lanes.kafka.records_apis import FETCH, INIT_PRODUCER_ID, LIST_OFFSETS, PRODUCE, RecordApis, init_producer_id
from lanes.metadata.image import MetadataImage, TopicImage

API_VERSIONS = 18
METADATA = 3


@dataclass(frozen=True)
class Served:
    """An API this face answers, the versions it accepts and its handler (request header, body
    and version in, response body out)."""

    min_version: int
    max_version: int
    handler: Callable[[Any, Any, int], Awaitable[Any | None]]


class KafkaApis:
    """The face (see the module docstring)."""

    def __init__(self, node: BrokerNode, *, fetch_max_bytes: int = FETCH_MAX_BYTES) -> None:
        self._node = node
        records = RecordApis(node, fetch_max_bytes=fetch_max_bytes)
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

    async def answer(self, key: RequestKey, frame: bytes) -> Reply | None:
        """The reply to a request frame (an empty frame for a request answered by silence: a
        produce with acks=0); None when it is no request at all (the connection is then
        closed). MalformedRequestError for one that does not parse."""
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
        answered = await served.handler(header, body, key.api_version)
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

    async def _api_versions(self, header: Any, request: Any, version: int) -> Any:
        return self._versions_table(version)

    # -----------------------------------------------------------------------------------------
    # Metadata

    async def _metadata(self, header: Any, request: Any, version: int) -> Any:
        """Brokers (their Kafka listeners), and the topics asked for (all when ``topics`` is
        null); a topic that does not exist is answered UNKNOWN_TOPIC_OR_PARTITION (Lanes creates
        no topic on a client's request)."""
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
            for _, b in sorted(image.brokers.items())
            if not b.fenced and b.kafka_port
        )
        if request.topics is None:
            names = sorted(t.name for t in image.topics.values())
        else:
            names = [t.name or _name_of(image, t.topic_id) for t in request.topics]
        listed = {b.node_id for b in brokers}
        topics = tuple(self._topic(cls, image, name, listed) for name in dict.fromkeys(names))
        # (KRaft: clients send admin requests to a broker: this one, else another listed one)
        controller_id = self._node.broker_id if self._node.broker_id in listed else min(listed, default=-1)
        return build(
            cls, brokers=brokers, cluster_id=image.cluster_id or None, controller_id=controller_id, topics=topics
        )

    def _topic(self, cls: type[Any], image: MetadataImage, name: str, listed: set[int]) -> Any:
        topic_class = nested(cls, "MetadataResponseTopic")
        topic = image.topic(name)
        if topic is None:
            return build(topic_class, error_code=KafkaError.unknown_topic_or_partition, name=name)
        return build(
            topic_class,
            name=topic.name,
            topic_id=uuid.UUID(topic.topic_id),
            is_internal=topic.internal,
            partitions=self._partitions(cls, image, topic, listed),
            topic_authorized_operations=-2147483648,  # not asked for (Kafka's "omitted")
        )

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


def _name_of(image: MetadataImage, topic_id: Any) -> str:
    topic = image.topics.get(str(topic_id)) if topic_id is not None else None
    return topic.name if topic is not None else ""
