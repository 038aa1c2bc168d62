"""A producer's pipelined connection to one broker: the ``ProduceStream`` RPC.

Requests are written to the stream in ``send`` order and the broker answers them in that order,
so the futures of requests still waiting for their answer (``_waiting``, oldest first) are
resolved by position. The broker starts each request as soon as it reads it, so a partition's
appends happen in stream order however many requests are in flight.

A broker throttling this client (``throttle_time_ms``, recorded in the cluster view) pauses the
writing: requests wait in the outbox, in order, and ``Sent.written`` tells a sender when its
request actually left, so its answer's timeout starts then (as Kafka's clients time a request
from when it is sent, not while the connection is muted).

A stream the cluster refuses (UNAUTHENTICATED, PERMISSION_DENIED) fails its waiting futures with
that refusal, not retried; one ended because its session expired (KIP-368) is retried on a new
stream, authenticated again. A stream that ends or breaks otherwise (the broker went away, or
``abort`` after a request took too long: answers come in order, so one lost answer stalls every
later one) fails every waiting future with a retriable NETWORK_EXCEPTION and is ``broken`` from
then on; the producer opens a new one. Whichever way a stream ends, its request writer (the
async generator gRPC reads requests from) ends with it: a writer left waiting on an outbox nobody
fills would be destroyed pending when the loop closes, and printed as such.
Owned by the client's event loop.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import grpc

from lanes.errors import ErrorCode, LanesError, error_for
from lanes.rpc.wire import security_refusal
from lanes.v1 import broker_pb2, broker_pb2_grpc


@dataclass(frozen=True)
class Sent:
    """A request given to the stream: ``written`` once it left (after any throttle pause), and
    its ``answer`` (or a retriable LanesError when the stream breaks first)."""

    written: asyncio.Event
    answer: asyncio.Future[broker_pb2.ProduceResponse]


class ProduceStream:
    """One ``ProduceStream`` call to the broker at ``address``; ``pause_s()`` says how long the
    broker still throttles this client."""

    def __init__(
        self, stub: broker_pb2_grpc.BrokerStub, address: str, pause_s: Callable[[], float] = lambda: 0.0
    ) -> None:
        self.address = address
        self.broken = False
        self._pause_s = pause_s
        self._outbox: asyncio.Queue[tuple[broker_pb2.ProduceRequest, asyncio.Event] | None] = asyncio.Queue()
        self._waiting: deque[asyncio.Future[broker_pb2.ProduceResponse]] = deque()
        self._call = stub.ProduceStream(self._requests())
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _requests(self) -> AsyncIterator[broker_pb2.ProduceRequest]:
        while (queued := await self._outbox.get()) is not None:
            request, written = queued
            while (pause_s := self._pause_s()) > 0:
                await asyncio.sleep(pause_s)
            written.set()
            yield request

    def send(self, request: broker_pb2.ProduceRequest) -> Sent:
        """Write ``request`` after the ones sent before."""
        sent = Sent(asyncio.Event(), asyncio.get_running_loop().create_future())
        if self.broken:
            sent.answer.set_exception(self._broken_error("the stream had already broken"))
            return sent
        self._waiting.append(sent.answer)
        self._outbox.put_nowait((request, sent.written))
        return sent

    async def _read(self) -> None:
        reason = "the broker ended the stream"
        refusal: LanesError | None = None  # the cluster would not let this client in: not retried
        try:
            async for response in self._call:
                answer = self._waiting.popleft()
                if not answer.done():  # its sender may have stopped waiting
                    answer.set_result(response)
        except grpc.aio.AioRpcError as exc:
            reason = exc.code().name
            refusal = security_refusal(exc)
        except IndexError:
            reason = "the broker answered a request that was never sent"
        except asyncio.CancelledError:  # a cancelled call raises it in its reader
            reason = "aborted: an answer took longer than the request timeout"
            if not self.broken:  # not our ``abort``: this task itself was cancelled
                raise
        finally:
            self.broken = True
            self._outbox.put_nowait(None)  # the request writer ends too (none left pending)
            error = refusal or self._broken_error(reason)
            while self._waiting:
                answer = self._waiting.popleft()
                if not answer.done():
                    answer.set_exception(error)

    def _broken_error(self, reason: str) -> LanesError:
        return error_for(ErrorCode.NETWORK_EXCEPTION, f"{self.address}: produce stream broke ({reason})")

    def abort(self) -> None:
        """Give up on the stream: every request waiting for an answer fails (retriable)."""
        self.broken = True
        self._outbox.put_nowait(None)
        self._call.cancel()

    async def close(self) -> None:
        """End the stream after the requests already sent are answered."""
        self._outbox.put_nowait(None)
        try:
            await self._reader
        finally:
            self.broken = True
