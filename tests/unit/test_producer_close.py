"""Closing a producer leaves nothing pending on its event loop, however its streams ended, and
returns even when a broker stopped answering (issue #35: every producer close printed "Task was
destroyed but it is pending!" and "aclose(): asynchronous generator is already running"). An
asynchronous producer is an asynchronous context manager. Against a real in-process gRPC broker."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import AsyncIterator

import pytest

import lanes.aio
from lanes.v1 import broker_pb2, common_pb2
from tests.unit.fake_broker import OneBroker, serving


class Broker(OneBroker):
    """One broker leading partition 0 of every topic. ``ends_streams``: each produce stream ends
    after one answer (as a broker ends a stream whose session expired); ``silent``: produce
    requests are read and never answered; ``answer_after_s``: each answer that late;
    ``no_producer_ids``: InitProducerId is never answered; ``producer_ids_from``: before that
    time (``time.monotonic()``), it is answered with a retriable error; ``refuses_marked``:
    records holding ``b"refused"`` are answered NOT_ENOUGH_REPLICAS (retriable), the others
    written."""

    def __init__(
        self,
        *,
        ends_streams: bool = False,
        silent: bool = False,
        answer_after_s: float = 0.0,
        no_producer_ids: bool = False,
        producer_ids_from: float = 0.0,
        refuses_marked: bool = False,
    ) -> None:
        self.ends_streams, self.silent, self.answer_after_s = ends_streams, silent, answer_after_s
        self.no_producer_ids, self.producer_ids_from = no_producer_ids, producer_ids_from
        self.refuses_marked = refuses_marked
        self.offset = 0
        self.received = asyncio.Event()  # a produce request arrived
        self.produce_requests = 0
        self._counted = asyncio.Condition()  # produce_requests grew
        self.asked_for_producer_id = asyncio.Event()

    async def InitProducerId(
        self, request: broker_pb2.InitProducerIdRequest, context: object
    ) -> broker_pb2.InitProducerIdResponse:
        self.asked_for_producer_id.set()
        if self.no_producer_ids:
            await asyncio.Event().wait()
        if time.monotonic() < self.producer_ids_from:
            return broker_pb2.InitProducerIdResponse(error=common_pb2.Error(code=15, message="not yet"))
        return broker_pb2.InitProducerIdResponse(producer_id=7, producer_epoch=0)

    async def read_requests(self, count: int) -> None:
        """Until ``count`` produce requests arrived (at most 10 s)."""
        async with asyncio.timeout(10), self._counted:
            await self._counted.wait_for(lambda: self.produce_requests >= count)

    async def ProduceStream(
        self, requests: AsyncIterator[broker_pb2.ProduceRequest], context: object
    ) -> AsyncIterator[broker_pb2.ProduceResponse]:
        async for request in requests:
            self.received.set()
            async with self._counted:
                self.produce_requests += 1
                self._counted.notify_all()
            if self.silent:
                continue
            await asyncio.sleep(self.answer_after_s)
            if self.refuses_marked and b"refused" in request.topics[0].partitions[0].records:
                answered = broker_pb2.PartitionProduceResponse(partition=0, error=common_pb2.Error(code=19))
            else:
                self.offset += 1
                answered = broker_pb2.PartitionProduceResponse(partition=0, base_offset=self.offset)
            yield broker_pb2.ProduceResponse(topics=[{"topic": request.topics[0].topic, "partitions": [answered]}])
            if self.ends_streams:
                return


def _asyncio_complaints(caplog: pytest.LogCaptureFixture, coroutine: object) -> list[str]:
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(coroutine)  # type: ignore[arg-type]
        gc.collect()
    return [
        record.getMessage()
        for record in caplog.records
        # (gRPC's poller thread may hand one last event to the loop as asyncio.run closes it: gRPC's,
        # not the producer's, and harmless; what this test is about are tasks left pending)
        if record.name == "asyncio" and "PollerCompletionQueue._handle_events" not in record.getMessage()
    ]


def test_a_producer_whose_streams_the_broker_ends_closes_leaving_nothing_pending(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        async with (
            serving(Broker(ends_streams=True)) as broker,
            lanes.aio.Producer(broker.address, tls=None, credentials=None) as producer,
        ):
            for index in range(5):  # each on a new stream: the one before was ended
                metadata = await (await producer.send("t", b"%d" % index))
                assert metadata.offset == index + 1
            gc.collect()  # streams the producer dropped

    assert _asyncio_complaints(caplog, scenario()) == []


def test_closing_a_producer_whose_broker_stopped_answering_returns_and_leaves_nothing_pending(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        async with serving(Broker(silent=True)) as broker:
            producer = lanes.aio.Producer(
                broker.address, tls=None, credentials=None, request_timeout_ms=500, delivery_timeout_ms=1500
            )
            future = await producer.send("t", b"never answered")
            await asyncio.wait_for(producer.close(), 10)  # before: waited forever for the answer
            with pytest.raises(lanes.errors.LanesError):
                await future

    assert _asyncio_complaints(caplog, scenario()) == []


def test_a_close_cancelled_midway_still_ends_every_stream(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async with serving(Broker(silent=True)) as broker:
            producer = lanes.aio.Producer(broker.address, tls=None, credentials=None, request_timeout_ms=500)
            await producer.send("t", b"never answered")
            closing = asyncio.ensure_future(producer.close())
            await broker.received.wait()  # the close is flushing: waiting for an answer that never comes
            closing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await closing

    assert _asyncio_complaints(caplog, scenario()) == []


def test_a_flush_given_up_on_leaves_the_batches_on_their_way(caplog: pytest.LogCaptureFixture) -> None:
    """A caller that stops waiting for a flush (``wait_for`` timed out) does not stop delivery:
    before, the flush's gather cancelled the partitions' senders and their futures never
    resolved."""

    async def scenario() -> None:
        async with (
            serving(Broker(answer_after_s=0.3)) as broker,
            lanes.aio.Producer(broker.address, tls=None, credentials=None) as producer,
        ):
            future = await producer.send("t", b"slow")
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(producer.flush(), 0.05)
            assert (await asyncio.wait_for(future, 10)).offset == 1

    assert _asyncio_complaints(caplog, scenario()) == []


async def _interrupt_and_expect_failed(closing: asyncio.Future[None], future: lanes.RecordFuture) -> None:
    """Cancel the ``closing`` producer's close; ``future`` then fails as closed."""
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    with pytest.raises(lanes.errors.LanesError, match="closed"):
        await asyncio.wait_for(future, 5)


def test_a_close_cancelled_while_a_batch_waits_for_a_producer_id_fails_the_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A batch the sender took from the accumulator before the producer id came (idempotence)
    is failed by a close interrupted mid-flush; before, its future never resolved."""

    async def scenario() -> None:
        async with serving(Broker(no_producer_ids=True)) as broker:
            producer = lanes.aio.Producer(broker.address, tls=None, credentials=None, enable_idempotence=True)
            future = await producer.send("t", b"no producer id yet")
            closing = asyncio.ensure_future(producer.close())
            await asyncio.wait_for(broker.asked_for_producer_id.wait(), 10)
            await _interrupt_and_expect_failed(closing, future)

    assert _asyncio_complaints(caplog, scenario()) == []


def test_a_close_cancelled_while_a_batch_is_being_delivered_again_fails_the_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A batch whose first attempt went unanswered is delivered again outside the first
    attempts' bookkeeping (``_recover``); a close interrupted then fails it too."""

    async def scenario() -> None:
        async with serving(Broker(silent=True)) as broker:
            producer = lanes.aio.Producer(
                broker.address, tls=None, credentials=None, request_timeout_ms=200, delivery_timeout_ms=60_000
            )
            future = await producer.send("t", b"never answered")
            closing = asyncio.ensure_future(producer.close())
            await broker.read_requests(2)  # the first attempt timed out, and it is sent again
            await _interrupt_and_expect_failed(closing, future)

    assert _asyncio_complaints(caplog, scenario()) == []


def test_a_sender_that_stops_on_an_error_fails_the_batches_it_had_taken(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition's sender stopped by an error while delivering a batch again (an exhausted
    producer epoch raises there) fails that batch with the error at once, rather than leaving
    it to a close (or, before the close failed it, to never resolve)."""

    async def broken_delivery(self: object, request: object) -> None:
        raise RuntimeError("a bug while delivering again")

    monkeypatch.setattr("lanes.client._sender.Sender._deliver", broken_delivery)

    async def scenario() -> None:
        async with serving(Broker(silent=True)) as broker:
            producer = lanes.aio.Producer(broker.address, tls=None, credentials=None, request_timeout_ms=200)
            future = await producer.send("t", b"never answered")
            with pytest.raises(lanes.errors.LanesError, match="a bug while delivering again"):
                await asyncio.wait_for(future, 10)
            await producer.close()

    assert _asyncio_complaints(caplog, scenario()) == []


def test_a_batch_that_joined_a_producer_id_request_late_gets_its_own_delivery_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Partitions share one InitProducerId request, timed from the first batch that asked; a
    batch that joined it later asks again when it gives up, rather than failing before its own
    delivery timeout."""

    async def scenario() -> None:
        async with (
            serving(Broker(producer_ids_from=time.monotonic() + 3.8)) as broker,
            lanes.aio.Producer(
                broker.address, tls=None, credentials=None, enable_idempotence=True, delivery_timeout_ms=3000
            ) as producer,
        ):
            early = await producer.send("early", b"asks first")
            await asyncio.sleep(1.5)
            late = await producer.send("late", b"joins the request 1.5 s later")
            with pytest.raises(lanes.errors.LanesError):
                await asyncio.wait_for(early, 10)  # its 3 s are over before ids are handed out
            assert (await asyncio.wait_for(late, 10)).offset == 1  # ids from 3.8 s, its deadline 4.5 s

    assert _asyncio_complaints(caplog, scenario()) == []


def test_a_close_cancelled_while_an_earlier_batch_is_retried_completes_a_later_one_already_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without idempotence a partition's later request can be written while an earlier one is
    refused and retried (``_recover`` settles the window oldest first): a close interrupted then
    completes the written one with its offset, and fails only the other."""

    async def scenario() -> None:
        async with serving(Broker(refuses_marked=True, answer_after_s=0.2)) as broker:
            producer = lanes.aio.Producer(
                broker.address, tls=None, credentials=None, enable_idempotence=False, acks="1", linger_ms=0
            )
            refused = await producer.send("t", b"refused for now")
            await asyncio.wait_for(broker.received.wait(), 10)
            written = await producer.send("t", b"written")  # a second request in flight behind it
            closing = asyncio.ensure_future(producer.close())
            await broker.read_requests(3)  # both answered, the first sent again
            await _interrupt_and_expect_failed(closing, refused)
            assert (await asyncio.wait_for(written, 5)).offset == 1

    assert _asyncio_complaints(caplog, scenario()) == []
