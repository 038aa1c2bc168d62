"""A consumer's fetches against real in-process gRPC brokers:

- a caught-up consumer's following FetchStream (decision 0052) has no deadline of its own (its
  length depends on the records that come), so each answer is awaited within a request's time of
  the last; a broker that stops answering in the middle of a stream is given up on then, and the
  consumer fetches again;
- one fetch per broker, each broker's next starting when its own last one ended: a broker where
  nothing comes does not hold back the records of a busy one;
- a position looked up while a seek set one keeps the seek's."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import grpc

import lanes.aio
from lanes.protocol.records import Record, encode_batch
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2
from tests.unit.fake_broker import OneBroker, serving


class Broker(OneBroker):
    """One broker leading partition 0 of every topic, holding ``records`` values at offsets 0...
    Its first FetchStream answers the first record it is asked for and then goes silent (the
    call stays open, as behind a network cut that drops packets); later ones answer what is
    asked for and end. ``follows`` records each call's ``follow``."""

    def __init__(self, records: list[bytes]) -> None:
        self.records = records
        self.follows: list[bool] = []

    def _answer(self, request: broker_pb2.FetchRequest) -> broker_pb2.FetchResponse:
        asked = request.topics[0]
        offset = asked.partitions[0].fetch_offset
        records = b""
        if offset < len(self.records):
            records = encode_batch([Record(offset, 0, None, self.records[offset])], base_offset=offset)
        part = broker_pb2.FetchPartitionResponse(
            partition=0, high_watermark=len(self.records), log_start_offset=0, records=records
        )
        return broker_pb2.FetchResponse(topics=[broker_pb2.FetchTopicResponse(topic=asked.topic, partitions=[part])])

    async def FetchStream(
        self, request: broker_pb2.FetchRequest, context: object
    ) -> AsyncIterator[broker_pb2.FetchResponse]:
        self.follows.append(request.follow)
        yield self._answer(request)
        if len(self.follows) == 1:
            await asyncio.Event().wait()  # silent, the call open


def test_a_following_stream_that_stops_answering_is_given_up_within_a_request_time() -> None:
    async def scenario() -> tuple[list[bytes], float, list[bool]]:
        async with (
            serving(Broker([b"first", b"second"])) as broker,
            lanes.aio.Consumer(
                broker.address, tls=None, credentials=None, request_timeout_ms=500, fetch_max_wait_ms=100
            ) as consumer,
        ):
            consumer.assign([TopicPartition("t", 0)])
            consumer.seek(TopicPartition("t", 0), 0)
            values: list[bytes] = []
            started = time.monotonic()
            async with asyncio.timeout(15):
                while len(values) < 2:
                    values.extend(record.value or b"" for record in await consumer.poll(timeout_ms=200))
            return values, time.monotonic() - started, broker.follows

    values, took_s, follows = asyncio.run(scenario())
    assert values == [b"first", b"second"], "the second record came through a new call"
    assert follows[:2] == [True, True], "each a following stream (the consumer was never behind)"
    assert took_s >= 0.5, "the silent stream was waited on for a request's time"
    assert took_s < 5, "and then given up"


class _Leader(OneBroker):
    """One of two brokers: broker 1 leads partition 0 of topic ``t`` and answers each fetch with
    the record asked for (one per call, then the call ends); broker 2 leads partition 1, where
    nothing is ever written, and holds each fetch open (a long-poll), or with ``failing`` ends it
    at once with UNAVAILABLE (a broker going away). ``addresses``: both brokers', shared
    (Metadata names them)."""

    def __init__(self, node_id: int, addresses: dict[int, str], *, failing: bool = False) -> None:
        self.node_id, self.addresses, self.failing = node_id, addresses, failing
        self.fetches = 0

    async def Metadata(self, request: broker_pb2.MetadataRequest, context: object) -> broker_pb2.MetadataResponse:
        nodes = []
        for node_id, address in sorted(self.addresses.items()):
            host, port = address.split(":")
            nodes.append(common_pb2.Node(node_id=node_id, host=host, port=int(port)))
        partitions = [broker_pb2.PartitionMetadata(partition=p, leader_id=p + 1, leader_epoch=0) for p in (0, 1)]
        topics = [broker_pb2.TopicMetadata(name="t", topic_id="id-t", partitions=partitions)]
        return broker_pb2.MetadataResponse(brokers=nodes, topics=topics)

    async def FetchStream(
        self, request: broker_pb2.FetchRequest, context: object
    ) -> AsyncIterator[broker_pb2.FetchResponse]:
        self.fetches += 1
        if self.failing:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "going away")  # type: ignore[attr-defined]
        if self.node_id == 2:
            await asyncio.Event().wait()  # a long-poll nothing ends
        offset = request.topics[0].partitions[0].fetch_offset
        records = encode_batch([Record(offset, 0, None, b"%d" % offset)], base_offset=offset)
        part = broker_pb2.FetchPartitionResponse(partition=0, high_watermark=offset + 1, records=records)
        yield broker_pb2.FetchResponse(topics=[broker_pb2.FetchTopicResponse(topic="t", partitions=[part])])


@contextlib.asynccontextmanager
async def _two_brokers(*, failing: bool = False) -> AsyncIterator[tuple[_Leader, _Leader, lanes.aio.Consumer]]:
    """The busy and the idle ``_Leader`` (``failing``: the idle one fails each fetch), and a
    consumer of both partitions from offset 0 (long request and wait times: only the behaviour
    under test ends a fetch)."""
    addresses: dict[int, str] = {}
    async with (
        serving(_Leader(1, addresses)) as busy,
        serving(_Leader(2, addresses, failing=failing)) as idle,
    ):
        addresses.update({1: busy.address, 2: idle.address})
        async with lanes.aio.Consumer(
            busy.address, tls=None, credentials=None, request_timeout_ms=30_000, fetch_max_wait_ms=30_000
        ) as consumer:
            consumer.assign([TopicPartition("t", 0), TopicPartition("t", 1)])
            consumer.seek(TopicPartition("t", 0), 0)
            consumer.seek(TopicPartition("t", 1), 0)
            yield busy, idle, consumer


async def _poll_for(consumer: lanes.aio.Consumer, count: int, seconds: float) -> list[bytes]:
    """Values polled until ``count`` came or ``seconds`` passed."""
    values: list[bytes] = []
    deadline = time.monotonic() + seconds
    while len(values) < count and time.monotonic() < deadline:
        values.extend(record.value or b"" for record in await consumer.poll(timeout_ms=200))
    return values


def test_a_partition_resumed_while_another_broker_long_polls_is_fetched_at_once() -> None:
    """A resumed partition is asked for at the next poll, not once the fetch under way at another
    broker (a long-poll, or a following stream that may last long) ends."""

    async def scenario() -> list[bytes]:
        async with _two_brokers() as (_busy, _idle, consumer):
            consumer.pause(TopicPartition("t", 0))
            assert await consumer.poll(timeout_ms=300) == [], "only the idle broker is asked"
            consumer.resume(TopicPartition("t", 0))
            return await _poll_for(consumer, 5, 5)

    assert asyncio.run(scenario())[:5] == [b"%d" % offset for offset in range(5)]


def test_a_broker_where_nothing_comes_does_not_hold_back_the_fetches_from_a_busy_one() -> None:
    """As Kafka's fetcher, one fetch per broker, each broker's next fetch starting when its own
    last one ended: records keep coming from broker 1 while broker 2 holds its long-poll open
    (before, a fetch round waited for every broker's answer, so each record from a busy broker
    waited for an idle one's long-poll to end)."""

    async def scenario() -> tuple[list[bytes], int]:
        async with _two_brokers() as (_busy, idle, consumer):
            return await _poll_for(consumer, 20, 5), idle.fetches

    values, idle_fetches = asyncio.run(scenario())
    assert values[:20] == [b"%d" % offset for offset in range(20)], "each from broker 1, while broker 2 long-polls"
    assert idle_fetches == 1, "one long-poll at broker 2, held open all along"


def test_a_failing_broker_is_asked_again_after_a_pause_while_another_broker_is_busy() -> None:
    """A fetch that failed at one broker holds its partitions for a retry pause, so the rounds
    that a busy broker's records start one after another do not call the failing one (and look
    its leaders up) in a tight loop."""

    async def scenario() -> tuple[int, int]:
        async with _two_brokers(failing=True) as (busy, idle, consumer):
            await _poll_for(consumer, 10_000, 1.0)
            return busy.fetches, idle.fetches

    busy_fetches, failing_fetches = asyncio.run(scenario())
    assert busy_fetches > 50, "the busy broker was read all along"
    assert failing_fetches <= 15, f"{failing_fetches} fetches at the failing broker in 1 s (a pause of 0.1 s each)"


class _HeldOffsets(OneBroker):
    """Answers ListOffsets with offset 0 once ``answer`` is set (``asked``: a lookup arrived)."""

    def __init__(self) -> None:
        self.asked, self.answer = asyncio.Event(), asyncio.Event()

    async def ListOffsets(
        self, request: broker_pb2.ListOffsetsRequest, context: object
    ) -> broker_pb2.ListOffsetsResponse:
        self.asked.set()
        await self.answer.wait()
        topics = [
            broker_pb2.ListOffsetsTopicResponse(
                topic=topic.topic,
                partitions=[
                    broker_pb2.ListOffsetsPartitionResponse(partition=p.partition, offset=0) for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]
        return broker_pb2.ListOffsetsResponse(topics=topics)


def test_a_position_looked_up_while_a_seek_set_one_keeps_the_seeks() -> None:
    """The lookup's answer (offset 0) arrives after ``seek`` set offset 5: the seek stands (before,
    the lookup wrote its older answer over it, and reading went on from there)."""

    async def scenario() -> int:
        async with (
            serving(_HeldOffsets()) as broker,
            lanes.aio.Consumer(broker.address, tls=None, credentials=None, auto_offset_reset="earliest") as consumer,
        ):
            consumer.assign([TopicPartition("t", 0)])
            looked_up = asyncio.ensure_future(consumer.position(TopicPartition("t", 0)))
            await broker.asked.wait()  # the lookup is under way
            consumer.seek(TopicPartition("t", 0), 5)
            broker.answer.set()
            return await looked_up

    assert asyncio.run(scenario()) == 5
