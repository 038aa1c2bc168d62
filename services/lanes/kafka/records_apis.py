"""Produce, Fetch, ListOffsets and InitProducerId on the Kafka face: each request mapped field by field onto the
engine's partition-level contract (the messages the gRPC face passes too: decision 0036) and the
answer mapped back. Record batches cross unchanged: the RecordBatch v2 bytes a Kafka producer
sends are what the log stores and what a Kafka consumer fetches.

Differences the mapping takes care of: Kafka answers a retried idempotent batch NONE with the
original's offset (Lanes' engine says DUPLICATE_SEQUENCE_NUMBER with it); acks=0 gets no response
at all; Lanes' ``OFFSET_SPEC`` values are Kafka's timestamps -2 (earliest) and -1 (latest).

Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from kio.schema.errors import ErrorCode as KafkaError

from lanes.broker.consumer_fetch import ConsumerFetch
from lanes.broker.fetch_limits import FETCH_MAX_BYTES, FetchLimits
from lanes.broker.node import BrokerNode
from lanes.broker.replica_manager import Writer
from lanes.errors import ErrorCode
from lanes.kafka.codec import build, nested, response_class
from lanes.v1 import broker_pb2, common_pb2

PRODUCE, FETCH, LIST_OFFSETS, INIT_PRODUCER_ID = 0, 1, 2, 22
_ACKS = {0: common_pb2.ACKS_NONE, 1: common_pb2.ACKS_LEADER, -1: common_pb2.ACKS_ALL}
#: Kafka's ListOffsets timestamps that name a position instead of a time
_EARLIEST, _LATEST = -2, -1


def _code(code: int) -> KafkaError:
    """A Lanes error code as Kafka's (they are Kafka's numbers: decision 0002)."""
    if code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
        return KafkaError.none  # (Kafka answers a retried batch as written, with its offset)
    try:
        return KafkaError(code)
    except ValueError:
        return KafkaError.unknown_server_error


class RecordApis:
    """The record APIs of one broker's Kafka face."""

    def __init__(self, node: BrokerNode) -> None:
        self._node = node
        #: who writes through this face: no verified certificate (Kafka's clients are users)
        self._writer = Writer(None, False)

    async def produce(self, header: Any, request: Any, version: int) -> Any | None:
        """Append each partition's batches (the engine's ``append``); None for acks=0."""
        acks = _ACKS.get(int(request.acks))
        cls = response_class(PRODUCE, version)
        if acks is None:
            return build(cls)  # (an invalid acks: Kafka answers INVALID_REQUIRED_ACKS per partition)
        timeout_s = max(request.timeout.total_seconds(), 0.0) or 30.0
        replicas = self._node.replicas
        started = [
            (
                topic.name,
                [
                    asyncio.create_task(
                        replicas.append(
                            topic.name,
                            broker_pb2.PartitionProduceData(partition=p.index, records=bytes(p.records or b"")),
                            acks,
                            timeout_s,
                            self._writer,
                        )
                    )
                    for p in topic.partition_data
                ],
            )
            for topic in request.topic_data
        ]
        topic_class, partition_class = nested(cls, "TopicProduceResponse"), nested(cls, "PartitionProduceResponse")
        responses = []
        for name, tasks in started:
            answers = await asyncio.gather(*tasks)
            responses.append(
                build(
                    topic_class,
                    name=name,
                    partition_responses=tuple(
                        build(
                            partition_class,
                            index=a.partition,
                            error_code=_code(a.error.code),
                            error_message=a.error.message or None,
                            base_offset=a.base_offset,
                            log_append_time=_time(a.log_append_time_ms),
                            log_start_offset=a.log_start_offset,
                        )
                        for a in answers
                    ),
                )
            )
        if acks == common_pb2.ACKS_NONE:
            return None
        return build(cls, responses=tuple(responses))

    async def fetch(self, header: Any, request: Any, version: int) -> Any:
        """Long-poll reads through the engine's ``ConsumerFetches`` (the same memory bound and
        waits as the gRPC face)."""
        wanted = broker_pb2.FetchRequest(
            max_wait_ms=int(request.max_wait.total_seconds() * 1000),
            min_bytes=int(request.min_bytes),
            max_bytes=int(getattr(request, "max_bytes", FETCH_MAX_BYTES) or FETCH_MAX_BYTES),
            topics=[
                broker_pb2.FetchTopic(
                    topic=topic.topic,
                    partitions=[
                        broker_pb2.FetchPartition(
                            partition=p.partition,
                            fetch_offset=p.fetch_offset,
                            current_leader_epoch=getattr(p, "current_leader_epoch", -1),
                            partition_max_bytes=p.partition_max_bytes,
                        )
                        for p in topic.partitions
                    ],
                )
                for topic in request.topics
            ],
        )
        limits = FetchLimits.clamp(wanted.max_bytes, wanted.min_bytes, wanted.max_wait_ms, cap_bytes=FETCH_MAX_BYTES)
        fetch = ConsumerFetch(wanted, limits.max_bytes)
        cls = response_class(FETCH, version)
        if not fetch.keys:
            return build(cls)
        answer = await self._node.consumer_fetches.fetch(fetch, limits)
        try:
            topic_class, partition_class = nested(cls, "FetchableTopicResponse"), nested(cls, "PartitionData")
            responses = tuple(
                build(
                    topic_class,
                    topic=topic.topic,
                    partitions=tuple(
                        build(
                            partition_class,
                            partition_index=p.partition,
                            error_code=_code(p.error.code),
                            high_watermark=p.high_watermark,
                            last_stable_offset=p.last_stable_offset,
                            log_start_offset=p.log_start_offset,
                            preferred_read_replica=-1,
                            records=p.records or None,
                        )
                        for p in topic.partitions
                    ),
                )
                for topic in answer.response.topics
            )
            return build(cls, responses=responses)
        finally:
            answer.release()  # (the bytes are copied into the response's dataclasses)

    async def list_offsets(self, header: Any, request: Any, version: int) -> Any:
        """The earliest, latest, or first offset at or after a time, per partition."""
        cls = response_class(LIST_OFFSETS, version)
        topic_class, partition_class = (
            nested(cls, "ListOffsetsTopicResponse"),
            nested(cls, "ListOffsetsPartitionResponse"),
        )
        topics = []
        for topic in request.topics:
            partitions = []
            for p in topic.partitions:
                stamp = int(p.timestamp)
                spec = (
                    broker_pb2.OFFSET_SPEC_EARLIEST
                    if stamp == _EARLIEST
                    else broker_pb2.OFFSET_SPEC_LATEST
                    if stamp == _LATEST
                    else broker_pb2.OFFSET_SPEC_TIMESTAMP
                )
                found = await self._node.replicas.list_offset(
                    topic.name,
                    broker_pb2.ListOffsetsPartition(
                        partition=p.partition_index,
                        spec=spec,
                        timestamp_ms=max(stamp, 0),
                        current_leader_epoch=getattr(p, "current_leader_epoch", -1),
                    ),
                )
                partitions.append(
                    build(
                        partition_class,
                        partition_index=p.partition_index,
                        error_code=_code(found.error.code),
                        timestamp=found.timestamp_ms,
                        offset=found.offset,
                        leader_epoch=found.leader_epoch,
                    )
                )
            topics.append(build(topic_class, name=topic.name, partitions=tuple(partitions)))
        return build(cls, topics=tuple(topics))


async def init_producer_id(node: BrokerNode, header: Any, request: Any, version: int) -> Any:
    """An idempotent producer's id and epoch (every modern client asks first); transactions are
    not served (Lanes has none yet)."""
    cls = response_class(INIT_PRODUCER_ID, version)
    if request.transactional_id:
        return build(cls, error_code=KafkaError.unsupported_version, producer_id=-1, producer_epoch=-1)
    producer_id = await node.producer_ids.next_id()
    if producer_id is None:
        return build(cls, error_code=KafkaError.coordinator_not_available, producer_id=-1, producer_epoch=-1)
    return build(cls, producer_id=producer_id, producer_epoch=0)


def _time(ms: int) -> datetime.datetime | None:
    return None if ms < 0 else datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
