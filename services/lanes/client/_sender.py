"""The sender behind a producer (aiokafka's seam): it takes requests from the accumulator and
delivers them, on the client's event loop.

- Per partition one task (``_drain``) keeps up to ``max_in_flight_requests_per_partition``
  requests in flight on the leader's ``ProduceStream`` (one per broker, answered in order), and
  settles their answers oldest first. The stream gathers what partitions give it meanwhile into
  one wire request per broker (``_produce_stream``): a "request" here is one partition's.
- Idempotence: the producer id and epoch (InitProducerId) and the per-partition sequence numbers
  live here. A retried request carries the same numbers and bytes, so the broker writes it once.
  When a request is not written at its first attempt, the window is recovered in order
  (``_recover``): what was written is kept, the rest is resent one request at a time,
  renumbered if a refused request left a gap.
- Recovery from lost sequence numbers (KIP-360): a request the broker refuses with
  OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID as the oldest of its partition was not
  written, and neither were the numbers before it that the broker lacks (batches that expired
  with an unknown outcome, or a new leader that never got them). The partition then takes a new
  producer epoch (a local bump, as Kafka's) and numbers again from 0, and the request is retried:
  the producer never wedges on a gap. Epochs are per partition, as the broker checks them (there
  is no transaction coordinator holding one epoch for the whole producer); a request already sent
  keeps the epoch and numbers it went out with until it is answered, and no bump happens within a
  request timeout of an abandoned attempt on the partition (decision 0021).
- Retriable errors refresh metadata and retry every ``retry_backoff_ms`` until
  ``delivery_timeout_ms`` after the batch was created; others fail the batch's futures.

Owned by the client's event loop; it shares only the accumulator's lock-guarded state.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

import grpc

from lanes.client._accumulator import Batch, RecordAccumulator
from lanes.client._cluster import NOT_THE_LEADER, ClusterView
from lanes.client._produce_stream import ProduceStream
from lanes.clock import Clock
from lanes.deadline import Deadline, attempts
from lanes.errors import ErrorCode, LanesError, RequestTimedOutError, error_code, error_for
from lanes.protocol.compression import Compression
from lanes.protocol.records import MAX_PRODUCER_EPOCH, encode_runs, next_sequence
from lanes.rpc.wire import security_refusal
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2

#: The broker answers REQUEST_TIMED_OUT itself after the request's timeout_ms; the client waits
#: this much longer before it gives up on the answer (and on the stream, whose answers are ordered).
_ANSWER_GRACE_S = 1.0


class Request:
    """Batches of one partition sent as one record batch. ``encoded`` is made once per
    numbering, so retries resend the same bytes and sequence numbers; ``answer`` is its first
    attempt in flight."""

    __slots__ = ("answer", "base_sequence", "batches", "encoded", "producer_epoch", "records", "size_bytes")

    def __init__(self, batches: list[Batch]) -> None:
        self.batches = batches
        self.records = sum(len(batch.records) for batch in batches)
        self.size_bytes = sum(batch.size_bytes for batch in batches)
        self.encoded: bytes | None = None
        self.base_sequence = -1
        self.producer_epoch = -1
        self.answer: asyncio.Task[broker_pb2.PartitionProduceResponse] | None = None

    @property
    def topic(self) -> str:
        return self.batches[0].topic

    @property
    def partition(self) -> int:
        return self.batches[0].partition

    @property
    def key(self) -> TopicPartition:
        return self.batches[0].key

    def complete(self, base_offset: int, log_append_time_ms: int) -> None:
        """Each batch's records follow the previous batch's."""
        for batch in self.batches:
            batch.outcome.complete(base_offset, log_append_time_ms)
            if base_offset >= 0:
                base_offset += len(batch.records)

    def fail(self, error: LanesError) -> None:
        for batch in self.batches:
            batch.outcome.fail(error)


class Sender:
    """Delivers the accumulator's batches, partition by partition, in order."""

    def __init__(
        self,
        cluster: ClusterView,
        *,
        bootstrap: list[str],
        acks: int,
        idempotent: bool,
        compression: Compression,
        max_in_flight: int,
        max_request_bytes: int,
        request_timeout_s: float,
        delivery_timeout_s: float,
        backoff_s: float,
        clock: Clock,
    ) -> None:
        self._cluster = cluster
        self._bootstrap = bootstrap
        self._acks = acks
        self._idempotent = idempotent
        self._compression = compression
        self._max_in_flight = max_in_flight
        self._max_request_bytes = max_request_bytes
        self._request_timeout_s = request_timeout_s
        self._delivery_timeout_s = delivery_timeout_s
        self._backoff_s = backoff_s
        self._clock = clock
        self._senders: dict[TopicPartition, asyncio.Task[None]] = {}
        #: first attempts in flight (a close interrupted mid-flush cancels them)
        self._attempts: set[asyncio.Task[broker_pb2.PartitionProduceResponse]] = set()
        #: requests taken from the accumulator and not yet settled, wherever they are: waiting for
        #: the producer id, in flight, or being delivered again by ``_recover`` (a close
        #: interrupted mid-flush fails them: their futures would otherwise never resolve)
        self._taken: set[Request] = set()
        self._wakes: dict[TopicPartition, asyncio.Event] = {}
        self.streams: dict[str, ProduceStream] = {}
        self._producer_id = -1
        self._producer_epoch = -1
        self._sequences: dict[TopicPartition, int] = {}
        self._epochs: dict[TopicPartition, int] = {}  # partitions that moved past the producer's first epoch
        self._abandoned_ms: dict[TopicPartition, int] = {}  # when an attempt's answer was last given up on
        self._asking_producer_id: asyncio.Task[None] | None = None

    def attach(self, accumulator: RecordAccumulator) -> None:
        """Send ``accumulator``'s batches (which signals this sender: the two are made together)."""
        self._accumulator = accumulator

    # -----------------------------------------------------------------------------------------
    # signals from the accumulator (SenderSignals), on the loop

    def batch_opened(self, batch: Batch) -> None:
        self.linger_pending(batch, self._accumulator.linger_s)

    def linger_pending(self, batch: Batch, delay_s: float) -> None:
        asyncio.get_running_loop().call_later(delay_s, self._accumulator.close_if_open, batch)

    def first_batch_queued(self, batch: Batch) -> None:
        """Start the partition's sender unless it runs (it sends ``batch`` in its turn)."""
        sender = self._senders.get(batch.key)
        if sender is None or sender.done():
            self._senders[batch.key] = asyncio.get_running_loop().create_task(self._drain(batch.key))

    def batch_queued(self, batch: Batch) -> None:
        """A batch closed while the partition's sender waits with room in its window."""
        wake = self._wakes.get(batch.key)
        if wake is not None:
            wake.set()

    # -----------------------------------------------------------------------------------------
    # lifecycle

    async def wait_idle(self) -> None:
        """Until every partition's sender has sent what it was given. A caller that stops
        waiting (a flush cancelled, or timed out by ``wait_for``) leaves the senders running: their
        batches are still delivered (a gather would have cancelled them, leaving their futures
        unresolved)."""
        while pending := [task for task in self._senders.values() if not task.done()]:
            done, _ = await asyncio.wait(pending)
            for task in done:
                failure = None if task.cancelled() else task.exception()
                if failure is not None:
                    raise failure  # a sender's bug, as gather raised it

    async def close(self) -> None:
        """End every stream: after the answers it owes, for at most a request timeout (a broker
        that stopped answering must not hold a close forever), then by aborting it. A close
        interrupted during its flush also stops the partitions' senders, and fails what they had
        not delivered (its futures would otherwise never resolve), but for what the broker had
        already acknowledged, whose answer the sender had not yet taken in order (``_recover``
        settles a window oldest first)."""
        closed = LanesError("the producer was closed before the batch was acknowledged", ErrorCode.INVALID_REQUEST)
        for sender in self._senders.values():
            sender.cancel()
        if self._asking_producer_id is not None:
            self._asking_producer_id.cancel()
        for attempt in list(self._attempts):
            attempt.cancel()
        for request in list(self._taken):
            answer = request.answer
            if answer is not None and answer.done() and not answer.cancelled() and answer.exception() is None:
                self._outcome(request, answer.result())  # acknowledged: completed (else failed below)
            request.fail(closed)
            self._release(request)  # wakes senders waiting for room, which then find it closed
        self._accumulator.fail_all(closed)
        for stream in list(self.streams.values()):
            try:
                await asyncio.wait_for(stream.close(), self._request_timeout_s)
            except TimeoutError:
                stream.abort()

    # -----------------------------------------------------------------------------------------
    # delivery

    async def init_producer_id(self, deadline: Deadline) -> None:
        """One id for the producer's lifetime: partitions with first batches at once all wait for
        the same request, and all go on in the same turn of the loop (their batches then leave
        together: ``_produce_stream``). A request that found no broker within its own delivery
        timeout (it started with the first batch that asked) is made again for a batch whose
        ``deadline`` is not over; a failed request is made again by the next batch."""
        while self._idempotent and self._producer_id < 0:
            if self._asking_producer_id is None or self._asking_producer_id.done():
                self._asking_producer_id = asyncio.get_running_loop().create_task(self._request_producer_id())
                # retrieved even when every sender waiting for it was cancelled (a flush timed out)
                self._asking_producer_id.add_done_callback(lambda asked: asked.cancelled() or asked.exception())
            try:
                await asyncio.shield(self._asking_producer_id)  # a sender cancelled leaves the others waiting
            except RequestTimedOutError:
                if deadline.expired():
                    raise

    async def _request_producer_id(self) -> None:
        async for _ in attempts(Deadline(self._delivery_timeout_s, self._clock), self._backoff_s):
            for address in [*self._cluster.brokers.values(), *self._bootstrap]:
                try:
                    answer = await self._cluster.stub(address).InitProducerId(
                        broker_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1),
                        timeout=self._request_timeout_s,
                    )
                except grpc.aio.AioRpcError as exc:
                    refused = security_refusal(exc)
                    if refused is not None:
                        raise refused from None
                    continue
                if answer.error.code == 0:
                    self._producer_id, self._producer_epoch = answer.producer_id, answer.producer_epoch
                    return
        raise RequestTimedOutError("no broker could hand out a producer id")

    async def _drain(self, key: TopicPartition) -> None:
        """Send the partition's batches until none is left: the closed ones (as many as fit
        ``max_request_size`` in one request), then the open one once its linger is over. The
        partition is in ``_sending`` until this returns; it leaves it under the same lock as its
        last look at the queue, so no closed batch is missed."""
        wake = self._wakes[key] = asyncio.Event()
        try:
            await self._drain_window(key, wake)
        except BaseException as exc:
            with self._accumulator.lock:
                self._accumulator.sending.discard(key)
            if not isinstance(exc, asyncio.CancelledError):  # (a close fails what a cancel left)
                self._fail_taken(key, exc)
            raise
        finally:
            with self._accumulator.lock:
                self._accumulator.awaiting_batches.discard(key)

    async def _drain_window(self, key: TopicPartition, wake: asyncio.Event) -> None:
        """Keep up to ``max_in_flight_requests_per_partition`` requests in flight, settling their
        answers oldest first. Requests go out on the leader's produce stream, which keeps their
        order; when one is not written at its first attempt, ``_recover`` takes over the window."""
        window: deque[Request] = deque()
        while True:
            wake.clear()
            while window and window[0].answer is not None and window[0].answer.done():
                request = window.popleft()
                if not self._settle_first_answer(request):
                    await self._recover(key, [request, *window])
                    window.clear()
            while len(window) < self._max_in_flight and (
                batches := self._accumulator.take_request(key, idle=not window)
            ):
                request = Request(batches)
                self._taken.add(request)
                try:
                    await self.init_producer_id(self._delivery_deadline(request))
                except LanesError as exc:
                    request.fail(exc)
                    self._release(request)
                    continue
                self._launch(request, wake)
                window.append(request)
            if not window:
                with self._accumulator.lock:
                    if self._accumulator.queues.get(key) or key in self._accumulator.awaiting_batches:
                        continue  # a batch closed meanwhile
                    self._accumulator.sending.discard(key)
                    return
            with self._accumulator.lock:
                if len(window) < self._max_in_flight:
                    if self._accumulator.queues.get(key):
                        continue
                    self._accumulator.awaiting_batches.add(key)  # _close_locked wakes us for a new batch
            await wake.wait()
            with self._accumulator.lock:
                self._accumulator.awaiting_batches.discard(key)

    def _launch(self, request: Request, wake: asyncio.Event) -> None:
        """Number, encode and send ``request`` (its first attempt); ``wake`` is set when it is
        answered."""
        self._number(request)
        request.answer = asyncio.get_running_loop().create_task(self._attempt(request))
        self._attempts.add(request.answer)
        request.answer.add_done_callback(lambda _: wake.set())
        request.answer.add_done_callback(self._attempts.discard)

    def _settle_first_answer(self, request: Request) -> bool:
        """Resolve ``request`` if its first attempt wrote it; False when ``_recover`` must."""
        assert request.answer is not None
        if request.answer.exception() is not None:
            return False
        if self._outcome(request, request.answer.result()) is not None:
            return False
        self._release(request)
        return True

    def _fail_taken(self, key: TopicPartition, cause: BaseException) -> None:
        """The partition's sender stopped on ``cause`` (an exhausted producer epoch, or a bug):
        fail the requests it had taken with it, rather than leave them to a close."""
        error = cause if isinstance(cause, LanesError) else LanesError(f"the producer's sender failed: {cause!r}")
        for request in [request for request in self._taken if request.key == key]:
            request.fail(error)
            self._release(request)

    def _release(self, request: Request) -> None:
        """``request`` is settled (written or failed): its bytes leave the buffer."""
        self._taken.discard(request)
        self._accumulator.release(request.size_bytes)

    async def _recover(self, key: TopicPartition, requests: list[Request]) -> None:
        """``requests[0]``, the oldest in flight, was not written at its first attempt; the later
        ones may have been refused because of it (OUT_OF_ORDER_SEQUENCE_NUMBER after a gap) or
        written (without idempotence, or if the first was written but its answer lost). Wait for
        every answer, then in order: keep what was written; send the rest again one request at a
        time (``_deliver``: retries, a coalesced batch too large split up), renumbered where a
        refused request before them gave its sequence numbers back. The first request's own
        refusal is final unless it can be split: everything before it is written."""
        await asyncio.wait([request.answer for request in requests if request.answer is not None])
        if self._idempotent:
            self._sequences[key] = requests[0].base_sequence
        for position, request in enumerate(requests):
            assert request.answer is not None
            first = request.answer.exception() or request.answer.result()
            error = first if isinstance(first, BaseException) else self._outcome(request, first)
            if error is None:
                self._number(request)  # its numbers are the next ones: move past them
            elif (
                position == 0
                and isinstance(error, LanesError)
                and not error.retriable
                and not (error.code is ErrorCode.MESSAGE_TOO_LARGE and len(request.batches) > 1)
                and not self._lost_numbers(error)
            ):
                request.fail(error)  # nothing of it was written: its numbers stay free
            else:
                await self._deliver_batches(request)
            self._release(request)

    async def _deliver_batches(self, request: Request) -> None:
        """Deliver ``request`` (retrying); if the broker finds the coalesced batch too large (a
        topic's max.message.bytes below max_request_size), deliver its batches one by one."""
        error = await self._deliver(request)
        if error is None:
            return
        if error.code is ErrorCode.MESSAGE_TOO_LARGE and len(request.batches) > 1:
            for batch in request.batches:
                single = Request([batch])
                failure = await self._deliver(single)
                if failure is not None:
                    single.fail(failure)
            return
        request.fail(error)

    def _number(self, request: Request) -> None:
        """Give ``request`` its partition's next sequence numbers and encode it. A request that
        already has those numbers keeps its bytes: a retry must resend exactly what the broker
        may have written."""
        if self._idempotent:
            key = request.key
            expected = self._sequences.get(key, 0)
            epoch = self._epochs.get(key, self._producer_epoch)
            if request.base_sequence != expected or request.producer_epoch != epoch:
                request.base_sequence, request.producer_epoch = expected, epoch
                request.encoded = None
            self._sequences[key] = next_sequence(expected, request.records)
        if request.encoded is None:
            request.encoded = encode_runs(
                [batch.records for batch in request.batches],  # type: ignore[misc]  # Record-shaped tuples
                compression=self._compression,
                producer_id=self._producer_id,
                producer_epoch=request.producer_epoch,
                base_sequence=request.base_sequence,
            )

    def _unnumber(self, request: Request) -> None:
        """The broker refused ``request`` outright (nothing of it was written): give its sequence
        numbers back, so the partition's next request does not leave a gap the broker refuses.
        It is the newest numbered request of its partition (``_deliver`` sends one at a time)."""
        if request.base_sequence >= 0:
            self._sequences[request.key] = request.base_sequence

    def _stream(self, address: str) -> ProduceStream:
        stream = self.streams.get(address)
        if stream is None or stream.broken:
            stream = self.streams[address] = ProduceStream(
                self._cluster.stub(address),
                address,
                acks=self._acks,
                timeout_ms=int(self._request_timeout_s * 1000),
                max_request_bytes=self._max_request_bytes,
                pause_s=lambda: self._cluster.throttle_remaining_s(address),
            )
        return stream

    async def _attempt(self, request: Request) -> broker_pb2.PartitionProduceResponse:
        """Send ``request`` once to its partition's leader; its answer, or a retriable error."""
        address = self._cluster.leader_address(request.topic, request.partition)
        if address is None:
            raise error_for(ErrorCode.LEADER_NOT_AVAILABLE, f"{request.topic}-{request.partition} has no leader now")
        assert request.encoded is not None
        stream = self._stream(address)
        epoch = self._cluster.leader_epoch(request.topic, request.partition)
        sent = stream.send(request.topic, request.partition, request.encoded, epoch)
        # a throttled broker is not written to meanwhile: the answer's timeout starts once it is
        either: list[asyncio.Future[Any]] = [sent.written, sent.answer]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        try:
            answer = await asyncio.wait_for(sent.answer, self._request_timeout_s + _ANSWER_GRACE_S)
        except TimeoutError:
            stream.abort()  # answers come in order: a lost one holds up every later one
            self._abandoned_ms[request.key] = self._clock.monotonic_ms()
            self._cluster.forget_leader(request.topic, request.partition, suspect=address)
            raise RequestTimedOutError(f"{address} did not answer within request_timeout_ms") from None
        except LanesError:  # the stream broke (or was aborted for another partition's answer)
            if sent.written.done():  # the broker may have read it, and may still append it
                self._abandoned_ms[request.key] = self._clock.monotonic_ms()
            raise
        self._cluster.throttle(address, answer.throttle_time_ms)
        result = answer.result
        code = error_code(result.error.code)
        if code in NOT_THE_LEADER:
            self._cluster.refused(request.topic, request.partition, address, code)
        return result

    def _outcome(self, request: Request, result: broker_pb2.PartitionProduceResponse) -> LanesError | None:
        """Resolve ``request`` from the broker's answer, or return the error it carries."""
        if self._acks == common_pb2.ACKS_NONE:
            request.complete(-1, -1)
            return None
        code = error_code(result.error.code)
        if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
            request.complete(result.base_offset, result.log_append_time_ms)
            return None
        return error_for(result.error.code, result.error.message)

    async def _deliver(self, request: Request) -> LanesError | None:
        """Send ``request`` until it is written, retrying what may succeed later; resolve its
        futures, or return the error that stopped it."""
        deadline = self._delivery_deadline(request)
        self._number(request)
        last_error: LanesError = RequestTimedOutError(
            f"a batch of {request.records} records to {request.topic}-{request.partition} was never acknowledged "
            "within delivery_timeout_ms"
        )
        while not deadline.expired():
            try:
                error = self._outcome(request, await self._attempt(request))
            except LanesError as exc:  # no answer: retriable
                error = exc
            if error is None:
                return None
            last_error = error
            if self._lost_numbers(error):
                if self._bump_epoch(request.key):
                    self._number(request)  # in the new epoch, from 0
                else:
                    await self._retry_pause(request.topic)  # a late copy may still land: ask again
                continue
            if not error.retriable:
                self._unnumber(request)
                return error
            await self._retry_pause(request.topic)
        return last_error

    def _delivery_deadline(self, request: Request) -> Deadline:
        """When ``request`` fails if it was not written: ``delivery_timeout_ms`` after its oldest
        batch was made."""
        return Deadline.at_monotonic_ms(request.batches[0].created_ms + self._delivery_timeout_s * 1000, self._clock)

    def _lost_numbers(self, error: BaseException) -> bool:
        """Whether ``error``, answering the oldest request of its partition, says the broker lacks
        the sequence numbers before it (see the module docstring)."""
        return (
            self._idempotent
            and isinstance(error, LanesError)
            and error.code in (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID)
        )

    def _bump_epoch(self, key: TopicPartition) -> bool:
        """Give partition ``key`` the next producer epoch, its numbers from 0 (locally, as
        Kafka's idempotent producer does: brokers take a newer epoch that starts at 0). Not while
        an abandoned attempt on the partition may still be appended (its stream was cut after a
        timeout; the broker may still be working through it): a copy appended late in the old
        epoch and this request renumbered in the new one would be the same records twice. False
        when it must wait."""
        abandoned_ms = self._abandoned_ms.get(key)
        if abandoned_ms is not None and self._clock.monotonic_ms() - abandoned_ms < self._request_timeout_s * 1000:
            return False
        epoch = self._epochs.get(key, self._producer_epoch) + 1
        if epoch > MAX_PRODUCER_EPOCH:
            raise LanesError(
                f"{key.topic}-{key.partition}: the producer epoch is exhausted after {MAX_PRODUCER_EPOCH} "
                "recoveries; close this producer and create a new one",
                ErrorCode.INVALID_PRODUCER_EPOCH,
            )
        self._epochs[key] = epoch
        self._sequences[key] = 0
        return True

    async def _retry_pause(self, topic: str) -> None:
        await asyncio.sleep(self._backoff_s)
        with contextlib.suppress(LanesError):  # no broker answered: try again after the next pause
            await self._cluster.refresh([topic])
