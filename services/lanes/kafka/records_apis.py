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
from typing import Any, cast

from kio.schema.errors import ErrorCode as KafkaError

from lanes.broker.byte_rate_quotas import ByteRateQuotas
from lanes.broker.consumer_fetch import ConsumerFetch
from lanes.broker.fetch_limits import FETCH_MAX_BYTES, FetchLimits
from lanes.broker.fetch_wire import FetchedRecords
from lanes.broker.node import BrokerNode
from lanes.broker.replica_manager import Writer
from lanes.errors import ErrorCode
from lanes.kafka.access import allows, broker_rule, topic_operation
from lanes.kafka.answers import Answer, KafkaCall
from lanes.kafka.codec import build, milliseconds, nested, response_class, whole_ms
from lanes.metadata.image import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE
from lanes.runtime.access.access_rules import answer_refused, first_refused, refusal_code
from lanes.security.quotas import window_bytes
from lanes.v1 import broker_pb2, common_pb2

PRODUCE, FETCH, LIST_OFFSETS, INIT_PRODUCER_ID = 0, 1, 2, 22
_ACKS = {0: common_pb2.ACKS_NONE, 1: common_pb2.ACKS_LEADER, -1: common_pb2.ACKS_ALL}
#: the longest a produce waits for its acknowledgements (a larger timeout is taken as this)
_MAX_PRODUCE_TIMEOUT_S = 300.0
#: Kafka's ListOffsets timestamps that name a position instead of a time
_EARLIEST, _LATEST = -2, -1
#: what each topic needs, as the gRPC call that stands for the API (one table: ``RULES``)
_WRITE, _READ, _DESCRIBE = topic_operation("Produce"), topic_operation("Fetch"), topic_operation("ListOffsets")
_INIT_PRODUCER_ID = broker_rule("InitProducerId")
_REFUSED = broker_pb2.PartitionProduceResponse(base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)


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

    def __init__(self, node: BrokerNode, quotas: ByteRateQuotas, *, fetch_max_bytes: int = FETCH_MAX_BYTES) -> None:
        self._node = node
        self._quotas = quotas
        self._metrics = node.metrics
        self._fetch_max_bytes = fetch_max_bytes
        #: who writes through this face: no verified certificate (Kafka's clients are users)
        self._writer = Writer(None, False)

    async def produce(self, call: KafkaCall) -> Answer:
        """Append each partition's batches (the engine's ``append``). A topic the caller may not
        WRITE is answered TOPIC_AUTHORIZATION_FAILED, an invalid acks INVALID_REQUIRED_ACKS and an
        internal topic INVALID_TOPIC_EXCEPTION, per partition, as Kafka answers them; a caller
        over its producer byte rate waits while it owes and is told ``throttle_time_ms``; acks=0
        gets no answer, and the connection is closed when a partition failed (an acks=0 producer
        notices nothing else, as with Kafka)."""
        request, access = call.body, call.access
        acks = _ACKS.get(int(request.acks))
        timeout_s = min(max(request.timeout.total_seconds(), 0.0), _MAX_PRODUCE_TIMEOUT_S)
        replicas = self._node.replicas
        image = self._node.image

        async def one(topic: str, partition: Any) -> broker_pb2.PartitionProduceResponse:
            refused = (
                KafkaError.topic_authorization_failed
                if not allows(access, _WRITE, topic)
                else KafkaError.invalid_required_acks
                if acks is None
                else KafkaError.invalid_topic_exception
                if (found := image.topic(topic)) is not None and found.internal
                else None
            )
            if refused is not None:
                answer = broker_pb2.PartitionProduceResponse()
                answer.CopyFrom(_REFUSED)
                answer.partition = partition.index
                answer.error.code = cast(Any, int(refused))
                answer.error.message = f"{topic}: {refused.name}"
                return answer
            assert acks is not None
            data = broker_pb2.PartitionProduceData(partition=partition.index, records=bytes(partition.records or b""))
            return await replicas.append(topic, data, acks, timeout_s, self._writer)

        limited = call.caller.quota(image, PRODUCER_BYTE_RATE)  # (every client's: no node uses this face)
        size_bytes = sum(len(p.records or b"") for topic in request.topic_data for p in topic.partition_data)
        throttle_ms = await self._quotas.admit(PRODUCER_BYTE_RATE, limited, size_bytes)
        started = [
            (topic.name, [asyncio.create_task(one(topic.name, p)) for p in topic.partition_data])
            for topic in request.topic_data
        ]
        cls = response_class(PRODUCE, call.version)
        topic_class, partition_class = nested(cls, "TopicProduceResponse"), nested(cls, "PartitionProduceResponse")
        responses = []
        failed = False
        for name, tasks in started:
            answers = await asyncio.gather(*tasks)
            for a in answers:
                if a.error.code:
                    self._metrics.partition_error("Produce", a.error.code)
            failed = failed or any(_code(a.error.code) is not KafkaError.none for a in answers)
            responses.append(
                build(
                    topic_class,
                    name=name,
                    partition_responses=tuple(
                        build(
                            partition_class,
                            index=a.partition,
                            error_code=_code(a.error.code),
                            error_message=_message(a.error),
                            base_offset=a.base_offset,
                            log_append_time=_time(a.log_append_time_ms),
                            log_start_offset=a.log_start_offset,
                        )
                        for a in answers
                    ),
                )
            )
        if acks == common_pb2.ACKS_NONE:
            return Answer(None, close=failed)
        return Answer(build(cls, responses=tuple(responses), throttle_time=milliseconds(throttle_ms)))

    async def fetch(self, call: KafkaCall) -> Answer:
        """Long-poll reads through the engine's ``ConsumerFetches`` (the same memory bound, waits
        and quotas as the gRPC face): topics the caller may not READ are answered
        TOPIC_AUTHORIZATION_FAILED per partition; a caller over its consumer byte rate is muted
        while it owes, reads at most what its window allows and is told ``throttle_time_ms``; the
        records' memory is given back once the answer was sent (``Answer.release``), each
        principal's client id counted as one holder."""
        request, access = call.body, call.access
        refused = [topic for topic in request.topics if not allows(access, _READ, topic.topic)]
        wanted = broker_pb2.FetchRequest(
            max_wait_ms=whole_ms(request.max_wait),
            min_bytes=int(request.min_bytes),
            max_bytes=int(getattr(request, "max_bytes", self._fetch_max_bytes) or self._fetch_max_bytes),
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
                if allows(access, _READ, topic.topic)
            ],
        )
        image = self._node.image
        limited = call.caller.quota(image, CONSUMER_BYTE_RATE)  # (__consumer_offsets too: no node uses this face)
        cap_bytes = self._fetch_max_bytes if limited is None else min(self._fetch_max_bytes, window_bytes(limited[1]))
        limits = FetchLimits.clamp(wanted.max_bytes, wanted.min_bytes, wanted.max_wait_ms, cap_bytes=cap_bytes)
        fetch = ConsumerFetch(wanted, limits.max_bytes)
        cls = response_class(FETCH, call.version)
        topic_class, partition_class = nested(cls, "FetchableTopicResponse"), nested(cls, "PartitionData")
        refusals = broker_pb2.FetchResponse()
        if refused:
            assert access is not None
            named = [(topic.topic, [p.partition for p in topic.partitions]) for topic in refused]
            answer_refused(refusals, named, _READ, access)

        def answered(fetched: FetchedRecords) -> tuple[Any, ...]:
            records = fetched.records_in_order()
            return tuple(
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
                            records=next(records),  # (empty, never null: librdkafka refuses a null)
                        )
                        for p in topic.partitions
                    ),
                )
                for topic in fetched.response.topics
            )

        refused_answer = FetchedRecords(refusals, [])  # (refused partitions have no records)

        if not fetch.keys:
            return Answer(build(cls, responses=answered(refused_answer)))
        reserved = limits.max_bytes if limited is not None else 0
        await self._quotas.admit(CONSUMER_BYTE_RATE, limited, reserved)
        sent_bytes = 0
        try:
            holder = f"kafka:{call.caller.principal}:{call.caller.client_id}"
            answer = await self._node.consumer_fetches.fetch(fetch, limits, holder)
            sent_bytes = sum(size for size, _ in answer.sent.values())
        finally:
            owed_ms = self._quotas.record(CONSUMER_BYTE_RATE, limited, sent_bytes - reserved) if limited else 0
        try:
            for code in fetch.errors:
                self._metrics.partition_error("Fetch", code)
            for topic_name, (size, records) in answer.sent.items():
                self._metrics.fetched(topic_name, size, records)
            responses = answered(answer.fetched) + answered(refused_answer)
        except BaseException:
            answer.release()
            raise
        return Answer(build(cls, responses=responses, throttle_time=milliseconds(owed_ms)), release=answer.release)

    async def list_offsets(self, call: KafkaCall) -> Any:
        """The earliest, latest, or first offset at or after a time, per partition (topics the
        caller may not DESCRIBE: TOPIC_AUTHORIZATION_FAILED)."""
        request = call.body
        cls = response_class(LIST_OFFSETS, call.version)
        topic_class, partition_class = (
            nested(cls, "ListOffsetsTopicResponse"),
            nested(cls, "ListOffsetsPartitionResponse"),
        )
        topics = []
        for topic in request.topics:
            partitions = []
            for p in topic.partitions:
                stamp = int(p.timestamp)
                refused = not allows(call.access, _DESCRIBE, topic.name)
                if refused or (stamp < 0 and stamp not in (_EARLIEST, _LATEST)):  # (-3 max timestamp, -4 local)
                    partitions.append(
                        build(
                            partition_class,
                            partition_index=p.partition_index,
                            error_code=KafkaError.topic_authorization_failed
                            if refused
                            else KafkaError.unsupported_version,
                            timestamp=-1,
                            offset=-1,
                            leader_epoch=-1,
                        )
                    )
                    continue
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


async def init_producer_id(node: BrokerNode, call: KafkaCall) -> Any:
    """An idempotent producer's id and epoch (every modern client asks first), authorized as the
    gRPC call is (IDEMPOTENT_WRITE on the cluster or WRITE on some topic: KIP-679); transactions
    are not served (Lanes has none yet)."""
    request = call.body
    cls = response_class(INIT_PRODUCER_ID, call.version)
    if call.access is not None:
        asked = broker_pb2.InitProducerIdRequest(transactional_id=request.transactional_id or "")
        need = first_refused(_INIT_PRODUCER_ID.needs(asked, call.access), call.access)
        if need is not None:
            code = KafkaError(int(refusal_code(need[1])))
            return build(cls, error_code=code, producer_id=-1, producer_epoch=-1)
    if request.transactional_id:
        return build(cls, error_code=KafkaError.unsupported_version, producer_id=-1, producer_epoch=-1)
    producer_id = await node.producer_ids.next_id()
    if producer_id is None:
        return build(cls, error_code=KafkaError.coordinator_not_available, producer_id=-1, producer_epoch=-1)
    return build(cls, producer_id=producer_id, producer_epoch=0)


def _message(error: common_pb2.Error) -> str | None:
    """An error's message for a Kafka client (none for what Kafka answers as success)."""
    return (error.message or None) if _code(error.code) is not KafkaError.none else None


def _time(ms: int) -> datetime.datetime | None:
    return None if ms < 0 else datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
