"""A producer's stream to a broker leaves nothing pending behind it, however it ends (issue #35:
every producer close printed "Task was destroyed but it is pending!" and "aclose(): asynchronous
generator is already running"), against a real in-process gRPC server."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator

import grpc
import pytest

from lanes.client._produce_stream import ProduceStream
from lanes.v1 import broker_pb2, broker_pb2_grpc


class Broker(broker_pb2_grpc.BrokerServicer):
    """Answers each produce request of a stream, except those of topic ``silent``; ends the stream
    after answering one of topic ``last`` (as a broker ends a stream whose session expired)."""

    async def ProduceStream(
        self, requests: AsyncIterator[broker_pb2.ProduceRequest], context: object
    ) -> AsyncIterator[broker_pb2.ProduceResponse]:
        async for request in requests:
            if request.topics[0].topic != "silent":
                yield broker_pb2.ProduceResponse()
            if request.topics[0].topic == "last":
                return


async def _streams_end_every_way() -> None:
    server = grpc.aio.server()
    broker_pb2_grpc.add_BrokerServicer_to_server(Broker(), server)
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
            closed = ProduceStream(stub, address)
            await closed.send(broker_pb2.ProduceRequest(topics=[{"topic": "t"}])).answer
            await closed.close()
            aborted = ProduceStream(stub, address)
            lost = aborted.send(broker_pb2.ProduceRequest(topics=[{"topic": "silent"}]))
            await lost.written.wait()
            aborted.abort()  # an answer took too long
            with pytest.raises(Exception, match="produce stream broke"):
                await lost.answer
            ended = ProduceStream(stub, address)  # the broker ends it: the producer drops it
            await ended.send(broker_pb2.ProduceRequest(topics=[{"topic": "last"}])).answer
            while not ended.broken:  # the broker's end of the stream reaches its reader
                await asyncio.sleep(0.01)
            del ended
            gc.collect()  # (before: its request writer, still waiting, was destroyed pending)
            await asyncio.sleep(0.1)
            broken = ProduceStream(stub, address)  # the broker goes away under it
            await broken.send(broker_pb2.ProduceRequest(topics=[{"topic": "t"}])).answer
    finally:
        await server.stop(None)
    await asyncio.sleep(0.1)


def test_a_stream_closed_aborted_or_broken_leaves_no_task_or_generator_pending(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(_streams_end_every_way())
        gc.collect()
    complaints = [record.getMessage() for record in caplog.records if record.name == "asyncio"]
    assert not complaints, complaints
