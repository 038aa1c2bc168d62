"""A producer's pipelined connection to one broker: the ``ProduceStream`` RPC.

Partitions' senders give the stream one record batch (of one partition) at a time (``send``).
What they gave while the previous request was being written goes out as one request, as Kafka's
``RecordAccumulator.drain`` gathers every ready partition of a broker into one request: at most
one batch per partition (a partition's batches stay in separate requests, in order) and at most
``max_request_bytes`` (a first batch goes alone whatever its size). Producing to many partitions
then costs a round trip per broker, not per partition. The request's answer is split back into
each batch's ``PartitionAnswer`` by topic and partition (a broker answers refused topics after the
others: positions are not kept).

Requests are written to the stream in ``send`` order and the broker answers them in that order,
so the batches still waiting for their answer (``_unanswered``, oldest first) are resolved by
position: the oldest answer is that of the oldest ``_request_parts`` batches. The broker starts
each request as soon as it reads it, so a partition's appends happen in stream order however many
requests are in flight.

A broker throttling this client (``throttle_time_ms``, recorded in the cluster view) pauses the
writing: batches wait in the outbox, in order, and ``Sent.written`` tells a sender when its
batch actually left, so its answer's timeout starts then (as Kafka's clients time a request
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
import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import grpc
from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from lanes.errors import ErrorCode, LanesError, error_for
from lanes.rpc.wire import security_refusal
from lanes.v1 import broker_pb2, broker_pb2_grpc

#: What a batch adds to a request beside its bytes (field tags, lengths, partition, leader
#: epoch), a bound: requests are gathered up to ``max_request_bytes`` counting it and the topic.
_PART_OVERHEAD_BYTES = 32


class PartitionAnswer(NamedTuple):
    """The broker's answer for one batch, and the throttle its request's answer carried."""

    result: broker_pb2.PartitionProduceResponse
    throttle_time_ms: int


@dataclass(eq=False, slots=True)
class Sent:
    """One partition's batch given to the stream: ``written`` once its request left (after any
    throttle pause), and its ``answer`` (or a retriable LanesError when the stream breaks first)."""

    topic: str
    partition: int
    records: bytes
    leader_epoch: int  # -1: none known
    written: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    answer: asyncio.Future[PartitionAnswer] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    @property
    def request_bytes(self) -> int:
        return len(self.records) + len(self.topic) + _PART_OVERHEAD_BYTES


class ProduceStream:
    """One ``ProduceStream`` call to the broker at ``address``, its requests made with ``acks``
    and ``timeout_ms``; ``pause_s()`` says how long the broker still throttles this client."""

    def __init__(
        self,
        stub: broker_pb2_grpc.BrokerStub,
        address: str,
        *,
        acks: int,
        timeout_ms: int,
        max_request_bytes: int,
        pause_s: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self.address = address
        self.broken = False
        self._acks = acks
        self._timeout_ms = timeout_ms
        self._max_request_bytes = max_request_bytes
        self._pause_s = pause_s
        self._outbox: deque[Sent] = deque()  # given, not yet written
        self._has_outbox = asyncio.Event()
        self._ending = False  # the writer ends once the outbox is empty
        self._unanswered: deque[Sent] = deque()  # given, not yet answered, oldest first
        self._request_parts: deque[int] = deque()  # batches of each request written, oldest first
        self._call = stub.ProduceStream(self._requests())
        self._reader = asyncio.get_running_loop().create_task(self._read())

    def send(self, topic: str, partition: int, records: bytes, leader_epoch: int = -1) -> Sent:
        """Write ``records`` (one partition's batches) after the ones sent before."""
        sent = Sent(topic, partition, records, leader_epoch)
        if self.broken:
            sent.answer.set_exception(self._broken_error("the stream had already broken"))
            return sent
        self._unanswered.append(sent)
        self._outbox.append(sent)
        self._has_outbox.set()
        return sent

    async def _requests(self) -> AsyncIterator[broker_pb2.ProduceRequest]:
        while True:
            while not self._outbox:
                if self._ending:
                    return
                self._has_outbox.clear()
                await self._has_outbox.wait()
            while (pause_s := self._pause_s()) > 0:
                await asyncio.sleep(pause_s)
            if not self._outbox:  # broken meanwhile
                continue
            parts = self._gather()
            self._request_parts.append(len(parts))
            yield self._request_of(parts)

    def _gather(self) -> list[Sent]:
        """The outbox's oldest batches that go out as one request: one per partition, within
        ``max_request_bytes``."""
        first = self._outbox.popleft()
        parts, size = [first], first.request_bytes
        partitions = {(first.topic, first.partition)}
        while self._outbox:
            following = self._outbox[0]
            key = (following.topic, following.partition)
            size += following.request_bytes
            if key in partitions or size > self._max_request_bytes:
                break
            partitions.add(key)
            parts.append(self._outbox.popleft())
        return parts

    def _request_of(self, parts: list[Sent]) -> broker_pb2.ProduceRequest:
        request = broker_pb2.ProduceRequest(acks=self._acks, timeout_ms=self._timeout_ms)  # type: ignore[arg-type]
        topics: dict[str, RepeatedCompositeFieldContainer[broker_pb2.PartitionProduceData]] = {}
        for part in parts:
            partitions = topics.get(part.topic)
            if partitions is None:
                partitions = topics[part.topic] = request.topics.add(topic=part.topic).partitions
            data = partitions.add(partition=part.partition, records=part.records)
            if part.leader_epoch >= 0:  # the broker tells whether it has heard of it (UNKNOWN_LEADER_EPOCH)
                data.current_leader_epoch = part.leader_epoch
            part.written.set_result(None)
        return request

    async def _read(self) -> None:
        reason = "the broker ended the stream"
        refusal: LanesError | None = None  # the cluster would not let this client in: not retried
        try:
            async for response in self._call:
                self._answer(response)
        except grpc.aio.AioRpcError as exc:
            reason = exc.code().name
            refusal = security_refusal(exc)
        except _AnswerMismatchError as exc:
            reason = str(exc)
            self._call.cancel()
        except asyncio.CancelledError:  # a cancelled call raises it in its reader
            reason = "aborted: an answer took longer than the request timeout"
            if not self.broken:  # not our ``abort``: this task itself was cancelled
                raise
        finally:
            self._stop_writing()
            error = refusal or self._broken_error(reason)
            while self._unanswered:
                answer = self._unanswered.popleft().answer
                if not answer.done():
                    answer.set_exception(error)

    def _answer(self, response: broker_pb2.ProduceResponse) -> None:
        """Resolve the batches of the oldest request written from its ``response``."""
        if not self._request_parts:
            raise _AnswerMismatchError("the broker answered a request that was never sent")
        results = {(topic.topic, result.partition): result for topic in response.topics for result in topic.partitions}
        parts = list(itertools.islice(self._unanswered, self._request_parts[0]))
        if any((part.topic, part.partition) not in results for part in parts):
            raise _AnswerMismatchError("the broker's answer left out a partition of the request")
        self._request_parts.popleft()
        for part in parts:
            self._unanswered.popleft()
            if not part.answer.done():  # its sender may have stopped waiting
                part.answer.set_result(PartitionAnswer(results[part.topic, part.partition], response.throttle_time_ms))

    def _stop_writing(self) -> None:
        """No more requests: the writer ends (what the outbox held fails with the unanswered)."""
        self.broken = True
        self._ending = True
        self._outbox.clear()
        self._has_outbox.set()

    def _broken_error(self, reason: str) -> LanesError:
        return error_for(ErrorCode.NETWORK_EXCEPTION, f"{self.address}: produce stream broke ({reason})")

    def abort(self) -> None:
        """Give up on the stream: every batch waiting for an answer fails (retriable)."""
        self._stop_writing()
        self._call.cancel()

    async def close(self) -> None:
        """End the stream after the batches already given are written and answered."""
        self._ending = True
        self._has_outbox.set()
        try:
            await self._reader
        finally:
            self.broken = True


class _AnswerMismatchError(Exception):
    """The broker's answers do not match the requests written."""
