"""A caught-up consumer's following FetchStream (decision 0052) against a real in-process gRPC
broker: the call has no deadline of its own (its length depends on the records that come), so
each answer is awaited within a request's time of the last; a broker that stops answering in the
middle of a stream is given up on then, and the consumer fetches again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import lanes.aio
from lanes.protocol.records import Record, encode_batch
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2
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
