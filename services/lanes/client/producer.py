"""The Producer: batching, partitioning, retries, idempotence.

``lanes.aio.Producer`` is the asynchronous core; ``lanes.Producer`` the synchronous facade. Both
append to the same accumulator, so a synchronous ``send`` costs no hop to the client's event loop:

- ``send`` picks the partition (``lanes.protocol.partitioner``: explicit, user partitioner,
  murmur3 of the key, sticky for keyless records) and adds the record to that partition's open
  batch under one lock; it returns a ``RecordFuture`` resolving to ``RecordMetadata`` (offset
  assigned) or raising the typed error. Futures resolve once per batch (``_record_future``).
- A batch closes when it reaches ``batch_size`` bytes or ``linger_ms`` after its first record;
  closed batches queue per partition and the event loop sends them: up to
  ``max_in_flight_requests_per_partition`` requests per partition at once (default 5), on one
  ``ProduceStream`` per broker (``_produce_stream``), which the broker handles in order, so records
  of a partition are written in send order. A request takes every queued batch, up to
  ``max_request_size`` bytes, as one record batch (``encode_runs``): when the window is full the
  next request grows with the backlog. While requests are in flight the open batch keeps growing
  past ``linger_ms`` until the next answer, so batches grow with the round trip at low rates.
- Idempotence (on by default): the producer gets an id and epoch (InitProducerId) and numbers
  records per partition; a retried batch carries the same numbers, so the broker writes it once.
  When a request is not written at its first attempt, the window is recovered in order
  (``_recover``): what was written is kept, the rest is resent one request at a time, renumbered
  if a refused request left a gap. Order then holds across retries. Without idempotence a retry
  can reorder records when more than one request was in flight (as in Kafka): set
  ``max_in_flight_requests_per_partition=1`` for strict order without idempotence.
- Retriable errors (leader moved, not enough replicas, timeouts, network) refresh metadata and
  retry with ``retry_backoff_ms`` until ``delivery_timeout_ms``; others fail the batch's futures.
- The buffer is bounded by ``buffer_memory`` bytes: ``send`` waits up to ``max_block_ms`` for
  room, then fails, instead of growing without limit.

Threads: the accumulator (``_open``, ``_buffered``, the partitioner) is guarded by ``_lock`` and
may be used from any thread; queues of closed batches, senders and metadata belong to the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import grpc

from lanes.client import _loop
from lanes.client._cluster import ClusterView
from lanes.client._produce_stream import ProduceStream
from lanes.client._record_future import BatchOutcome, RecordFuture, RecordMetadata
from lanes.errors import ErrorCode, LanesError, RequestTimedOutError, error_code, error_for
from lanes.protocol.compression import Compression
from lanes.protocol.partitioner import Partitioner, PartitionerFn
from lanes.protocol.records import MAX_CACHED_BATCHES, encode_runs, next_sequence
from lanes.rpc.wire import produce_request
from lanes.v1 import broker_pb2, common_pb2

HeadersArg = Mapping[str, bytes | None] | Sequence[tuple[str, bytes | None]] | None
_ACKS = {"0": common_pb2.ACKS_NONE, "1": common_pb2.ACKS_LEADER, "all": common_pb2.ACKS_ALL, "-1": common_pb2.ACKS_ALL}
_RECORD_OVERHEAD_BYTES = 20  # varints and attributes of one encoded record, roughly
#: The broker answers REQUEST_TIMED_OUT itself after the request's timeout_ms; the client waits
#: this much longer before it gives up on the answer (and on the stream, whose answers are ordered).
_ANSWER_GRACE_S = 1.0


__all__ = ["AsyncProducer", "HeadersArg", "Producer", "RecordFuture", "RecordMetadata"]


class _Outgoing(NamedTuple):
    """A record checked by ``send``, with its estimated encoded size."""

    topic: str
    value: bytes | None
    key: bytes | None
    partition: int | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int
    size_bytes: int


class _Batch:
    """One partition's records on their way: ``(index, timestamp, key, value, headers)`` tuples
    (what ``encode_batch`` takes), and the outcome their futures share."""

    __slots__ = ("created", "outcome", "partition", "records", "size_bytes", "topic")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.records: list[tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]] = []
        self.outcome = BatchOutcome()
        self.size_bytes = 0
        self.created = time.monotonic()


class _Request:
    """Batches of one partition sent as one record batch. ``message`` is encoded once per
    numbering, so retries resend the same bytes and sequence numbers; ``answer`` is its first
    attempt in flight."""

    __slots__ = ("answer", "base_sequence", "batches", "message", "records", "size_bytes")

    def __init__(self, batches: list[_Batch]) -> None:
        self.batches = batches
        self.records = sum(len(batch.records) for batch in batches)
        self.size_bytes = sum(batch.size_bytes for batch in batches)
        self.message: broker_pb2.ProduceRequest | None = None
        self.base_sequence = -1
        self.answer: asyncio.Task[broker_pb2.PartitionProduceResponse] | None = None

    @property
    def topic(self) -> str:
        return self.batches[0].topic

    @property
    def partition(self) -> int:
        return self.batches[0].partition

    def complete(self, base_offset: int, log_append_time_ms: int) -> None:
        """Each batch's records follow the previous batch's."""
        for batch in self.batches:
            batch.outcome.complete(base_offset, log_append_time_ms)
            if base_offset >= 0:
                base_offset += len(batch.records)

    def fail(self, error: LanesError) -> None:
        for batch in self.batches:
            batch.outcome.fail(error)


def _headers(headers: HeadersArg) -> tuple[tuple[str, bytes | None], ...]:
    if not headers:
        return ()
    pairs = tuple(headers.items() if isinstance(headers, Mapping) else headers)
    for name, value in pairs:
        if not isinstance(name, str) or not (value is None or isinstance(value, bytes)):
            raise TypeError(f"a header is (str name, bytes or None value), not ({name!r}, {type(value).__name__})")
    return pairs


def _check_bytes(what: str, data: object) -> None:
    if data is not None and not isinstance(data, bytes):
        raise TypeError(f"the record's {what} must be bytes or None, not {type(data).__name__}; encode it first")


class AsyncProducer:
    """Produces records to a Lanes cluster (asynchronously). ``bootstrap``: brokers' host:port list."""

    def __init__(
        self,
        bootstrap: str,
        *,
        acks: str | int = "all",
        linger_ms: int = 5,
        batch_size: int = 64 * 1024,
        max_request_size: int = 1024 * 1024,
        max_in_flight_requests_per_partition: int = MAX_CACHED_BATCHES,
        enable_idempotence: bool = True,
        compression_type: str = "none",
        partitioner: PartitionerFn | None = None,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        buffer_memory: int = 32 * 1024 * 1024,
        max_block_ms: int = 60_000,
        unknown_topic_wait_ms: int = 2_000,
    ) -> None:
        self.bootstrap = [a.strip() for a in bootstrap.split(",") if a.strip()]
        if str(acks) not in _ACKS:
            raise LanesError(f"acks={acks!r} is not one of 0, 1, all", ErrorCode.INVALID_REQUIRED_ACKS)
        self.acks = _ACKS[str(acks)]
        if enable_idempotence and self.acks != common_pb2.ACKS_ALL:
            raise LanesError(
                "enable_idempotence needs acks='all'; set acks='all' or enable_idempotence=False",
                ErrorCode.INVALID_REQUEST,
            )
        self.linger_s = linger_ms / 1000
        self.batch_size = batch_size
        self.max_request_size = max_request_size
        if not 1 <= max_in_flight_requests_per_partition <= (MAX_CACHED_BATCHES if enable_idempotence else 2**31):
            raise LanesError(
                f"max_in_flight_requests_per_partition={max_in_flight_requests_per_partition} must be at least 1, and "
                f"at most {MAX_CACHED_BATCHES} with idempotence (the broker recognises retries of that many batches)",
                ErrorCode.INVALID_REQUEST,
            )
        self.max_in_flight = max_in_flight_requests_per_partition
        self.idempotent = enable_idempotence
        self.compression = Compression.parse(compression_type)
        self._partitioner = Partitioner(random.Random(), partitioner)
        self._request_timeout_s = request_timeout_ms / 1000
        self._delivery_timeout_s = delivery_timeout_ms / 1000
        self._backoff_s = retry_backoff_ms / 1000
        self._buffer_limit = buffer_memory
        self._max_block_s = max_block_ms / 1000
        self._unknown_topic_wait_s = min(unknown_topic_wait_ms, max_block_ms) / 1000
        # the accumulator, shared by every thread
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._buffered = 0
        self._open: dict[tuple[str, int], _Batch] = {}
        self._closed = False
        # the loop's own
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = -1
        self._room_waiters: list[asyncio.Future[None]] = []
        self._queues: dict[tuple[str, int], deque[_Batch]] = {}
        self._senders: dict[tuple[str, int], asyncio.Task[None]] = {}
        self._sending: set[tuple[str, int]] = set()  # partitions whose sender runs or is starting (under _lock)
        self._awaiting_batches: set[tuple[str, int]] = set()  # senders with room for a request (under _lock)
        self._wakes: dict[tuple[str, int], asyncio.Event] = {}
        self._streams: dict[str, ProduceStream] = {}
        self._cluster = ClusterView(self.bootstrap, self._request_timeout_s)
        self._producer_id = -1
        self._producer_epoch = -1
        self._sequences: dict[tuple[str, int], int] = {}
        self._init_lock = asyncio.Lock()
        with contextlib.suppress(RuntimeError):  # constructed outside a loop: bound at the first send
            self._bind_loop()

    def _bind_loop(self) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()

    def _on_loop(self, callback: object, batch: _Batch) -> None:
        """Run ``callback(batch)`` on the loop, in call order (from the loop thread or any other)."""
        assert self._loop is not None
        if threading.get_ident() == self._loop_thread:
            self._loop.call_soon(callback, batch)  # type: ignore[arg-type]
        else:
            self._loop.call_soon_threadsafe(callback, batch)  # type: ignore[arg-type]

    # -----------------------------------------------------------------------------------------
    # metadata

    async def _partition_count(self, topic: str) -> int:
        """The topic's partition count. A topic the brokers do not know yet is asked for again
        for ``unknown_topic_wait_ms`` (a topic just created reaches every broker's metadata a
        moment later: ``create`` then ``send`` must work), then it is an error."""
        count = self._cluster.partition_counts.get(topic)
        deadline = time.monotonic() + self._unknown_topic_wait_s
        while count is None:
            await self._cluster.refresh([topic])
            count = self._cluster.partition_counts.get(topic)
            if count is None:
                if time.monotonic() >= deadline:
                    raise error_for(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist; create it first"
                    )
                await asyncio.sleep(self._backoff_s)
        return count

    async def _init_producer_id(self) -> None:
        if not self.idempotent or self._producer_id >= 0:
            return
        async with self._init_lock:  # concurrent first batches: one id for the producer's lifetime
            if self._producer_id < 0:
                await self._request_producer_id()

    async def _request_producer_id(self) -> None:
        deadline = time.monotonic() + self._delivery_timeout_s
        while True:
            for address in [*self._cluster.brokers.values(), *self.bootstrap]:
                try:
                    answer = await self._cluster.stub(address).InitProducerId(
                        broker_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1),
                        timeout=self._request_timeout_s,
                    )
                except grpc.aio.AioRpcError:
                    continue
                if answer.error.code == 0:
                    self._producer_id, self._producer_epoch = answer.producer_id, answer.producer_epoch
                    return
            if time.monotonic() > deadline:
                raise RequestTimedOutError("no broker could hand out a producer id")
            await asyncio.sleep(self._backoff_s)

    # -----------------------------------------------------------------------------------------
    # the accumulator (any thread)

    def _append(self, record: _Outgoing, num_partitions: int) -> RecordFuture | None:
        """Add one record to its partition's open batch; None when the buffer has no room for it."""
        with self._lock:
            if self._closed:
                raise LanesError("the producer is closed", ErrorCode.INVALID_REQUEST)
            if not self._has_room(record.size_bytes):
                return None
            chosen = self._partitioner.partition(record.topic, record.key, num_partitions, record.partition)
            self._buffered += record.size_bytes
            key = (record.topic, chosen)
            batch = self._open.get(key)
            if batch is None:
                batch = self._open[key] = _Batch(record.topic, chosen)
                if key not in self._sending:  # a busy sender looks at the open batch when it is done
                    self._on_loop(self._arm_linger, batch)
            index = len(batch.records)
            batch.records.append((index, record.timestamp, record.key, record.value, record.headers))
            batch.size_bytes += record.size_bytes
            if batch.size_bytes >= self.batch_size:
                self._close_locked(batch)
        return RecordFuture(batch.outcome, record.topic, chosen, index, record.timestamp)

    def _has_room(self, size: int) -> bool:
        """Whether ``size`` more bytes fit the buffer (a record larger than it fits an empty one);
        the caller holds the lock."""
        return self._buffered + size <= self._buffer_limit or self._buffered == 0

    def _close_locked(self, batch: _Batch) -> None:
        """Queue ``batch`` for sending, behind its partition's earlier batches (the caller holds
        the lock). It joins the queue here, at once: were it handed to the loop to queue later,
        the sender could meanwhile take the partition's next open batch and send it first."""
        key = (batch.topic, batch.partition)
        self._detach_locked(batch)
        self._queues.setdefault(key, deque()).append(batch)
        if key not in self._sending:
            self._sending.add(key)
            self._on_loop(self._ensure_sender, batch)
        elif key in self._awaiting_batches:
            self._awaiting_batches.discard(key)
            self._on_loop(self._wake_sender, batch)

    def _detach_locked(self, batch: _Batch) -> None:
        """No more records join ``batch`` (the caller holds the lock)."""
        del self._open[(batch.topic, batch.partition)]
        self._partitioner.batch_completed(
            batch.topic, batch.partition, self._cluster.partition_counts.get(batch.topic, 1)
        )

    @staticmethod
    def _prepare(
        topic: str,
        value: bytes | None,
        key: bytes | None,
        *,
        partition: int | None,
        headers: HeadersArg,
        timestamp: int | None,
    ) -> _Outgoing:
        """Check the record's types (a TypeError is a bug in the caller: raised, not deferred)."""
        if headers is None and timestamp is None and type(value) is bytes and (key is None or type(key) is bytes):
            size = len(value) + (len(key) if key else 0) + _RECORD_OVERHEAD_BYTES  # the common case, quickly
            return _Outgoing(topic, value, key, partition, (), int(time.time() * 1000), size)
        _check_bytes("value", value)
        _check_bytes("key", key)
        if timestamp is not None and (not isinstance(timestamp, int) or isinstance(timestamp, bool)):
            raise TypeError(f"the record's timestamp is milliseconds since the epoch (int), not {timestamp!r}")
        pairs = _headers(headers)
        size = len(key or b"") + len(value or b"") + _RECORD_OVERHEAD_BYTES
        for name, header_value in pairs:
            size += len(name) + len(header_value or b"")
        stamp = int(time.time() * 1000) if timestamp is None else timestamp
        return _Outgoing(topic, value, key, partition, pairs, stamp, size)

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: HeadersArg = None,
        timestamp: int | None = None,
    ) -> RecordFuture:
        """Add a record to its partition's batch; the returned future (awaitable) resolves when it
        is written. Waits up to ``max_block_ms`` while the buffer is full."""
        record = self._prepare(topic, value, key, partition=partition, headers=headers, timestamp=timestamp)
        self._bind_loop()
        try:
            count = self._cluster.partition_counts.get(topic) or await self._partition_count(topic)
            deadline = time.monotonic() + self._max_block_s
            while (future := self._append(record, count)) is None:
                waiter = asyncio.get_running_loop().create_future()
                self._room_waiters.append(waiter)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._buffer_full()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter, remaining)
            return future
        except LanesError as exc:
            return RecordFuture.failed(exc, topic, -1 if partition is None else partition)

    def _buffer_full(self) -> LanesError:
        return RequestTimedOutError(
            f"the producer's buffer ({self._buffer_limit} bytes) stayed full for {self._max_block_s:.0f} s; "
            "the cluster is slower than the sends, or unreachable"
        )

    def _send_blocking(self, record: _Outgoing) -> RecordFuture:
        """``send`` for threads other than the loop's: blocks (up to ``max_block_ms``) while full."""
        topic, partition = record.topic, record.partition
        try:
            count = self._cluster.partition_counts.get(topic) or _loop.run(self._partition_count(topic))
            deadline = time.monotonic() + self._max_block_s
            while (future := self._append(record, count)) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or threading.get_ident() == self._loop_thread:  # only the loop frees room
                    raise self._buffer_full()
                with self._room:  # the same lock as _append's check: no release is missed
                    self._room.wait_for(lambda: self._has_room(record.size_bytes), remaining)
            return future
        except LanesError as exc:
            return RecordFuture.failed(exc, topic, -1 if partition is None else partition)

    # -----------------------------------------------------------------------------------------
    # the sender (the loop)

    def _arm_linger(self, batch: _Batch) -> None:
        assert self._loop is not None
        self._loop.call_later(self.linger_s, self._close_if_open, batch)

    def _close_if_open(self, batch: _Batch) -> None:
        """Linger is over. While the partition's sender is busy the open batch keeps taking
        records (the sender takes it next): batches grow with the round trip instead of queueing
        up small, so latency stays near one round trip at any rate."""
        key = (batch.topic, batch.partition)
        with self._lock:
            if key not in self._sending and self._open.get(key) is batch:
                self._close_locked(batch)

    def _ensure_sender(self, batch: _Batch) -> None:
        """Start the partition's sender unless it runs (it sends ``batch`` in its turn)."""
        key = (batch.topic, batch.partition)
        sender = self._senders.get(key)
        if sender is None or sender.done():
            self._senders[key] = asyncio.get_running_loop().create_task(self._drain(key))

    def _wake_sender(self, batch: _Batch) -> None:
        """A batch closed while the partition's sender waits with room in its window."""
        wake = self._wakes.get((batch.topic, batch.partition))
        if wake is not None:
            wake.set()

    async def _drain(self, key: tuple[str, int]) -> None:
        """Send the partition's batches until none is left: the closed ones (as many as fit
        ``max_request_size`` in one request), then the open one once its linger is over. The
        partition is in ``_sending`` until this returns; it leaves it under the same lock as its
        last look at the queue, so no closed batch is missed."""
        wake = self._wakes[key] = asyncio.Event()
        try:
            await self._drain_window(key, wake)
        except BaseException:
            with self._lock:
                self._sending.discard(key)
            raise
        finally:
            with self._lock:
                self._awaiting_batches.discard(key)

    async def _drain_window(self, key: tuple[str, int], wake: asyncio.Event) -> None:
        """Keep up to ``max_in_flight_requests_per_partition`` requests in flight, settling their
        answers oldest first. Requests go out on the leader's produce stream, which keeps their
        order; when one is not written at its first attempt, ``_recover`` takes over the window."""
        window: deque[_Request] = deque()
        while True:
            wake.clear()
            while window and window[0].answer is not None and window[0].answer.done():
                request = window.popleft()
                if not self._settle_first_answer(request):
                    await self._recover(key, [request, *window])
                    window.clear()
            while len(window) < self.max_in_flight and (batches := self._take_request(key, idle=not window)):
                request = _Request(batches)
                try:
                    await self._init_producer_id()
                except LanesError as exc:
                    request.fail(exc)
                    self._release(request.size_bytes)
                    continue
                self._launch(request, wake)
                window.append(request)
            if not window:
                with self._lock:
                    if self._queues.get(key) or key in self._awaiting_batches:
                        continue  # a batch closed meanwhile
                    self._sending.discard(key)
                    return
            with self._lock:
                if len(window) < self.max_in_flight:
                    if self._queues.get(key):
                        continue
                    self._awaiting_batches.add(key)  # _close_locked wakes us for a new batch
            await wake.wait()
            with self._lock:
                self._awaiting_batches.discard(key)

    def _take_request(self, key: tuple[str, int], *, idle: bool) -> list[_Batch] | None:
        """The partition's next request: its closed batches (as many as fit ``max_request_size``),
        or else its open batch once linger is over. None when there is nothing to send yet; an
        ``idle`` sender (nothing in flight) then arms the open batch's linger and stops."""
        assert self._loop is not None
        with self._lock:  # closing threads append to the queue under the lock
            queue = self._queues.setdefault(key, deque())
            if not queue:
                batch = self._open.get(key)
                if batch is None:
                    return None
                linger_left_s = batch.created + self.linger_s - time.monotonic()
                if linger_left_s > 0:  # while requests are in flight, it grows until the next answer
                    if idle:
                        self._loop.call_later(linger_left_s, self._close_if_open, batch)
                    return None
                self._detach_locked(batch)
                queue.append(batch)
            batches = [queue.popleft()]
            size = batches[0].size_bytes
            while queue and size + queue[0].size_bytes <= self.max_request_size:
                size += queue[0].size_bytes
                batches.append(queue.popleft())
            return batches

    def _launch(self, request: _Request, wake: asyncio.Event) -> None:
        """Number, encode and send ``request`` (its first attempt); ``wake`` is set when it is
        answered."""
        assert self._loop is not None
        self._number(request)
        request.answer = self._loop.create_task(self._attempt(request))
        request.answer.add_done_callback(lambda _: wake.set())

    def _settle_first_answer(self, request: _Request) -> bool:
        """Resolve ``request`` if its first attempt wrote it; False when ``_recover`` must."""
        assert request.answer is not None
        if request.answer.exception() is not None:
            return False
        if self._outcome(request, request.answer.result()) is not None:
            return False
        self._release(request.size_bytes)
        return True

    async def _recover(self, key: tuple[str, int], requests: list[_Request]) -> None:
        """``requests[0]``, the oldest in flight, was not written at its first attempt; the later
        ones may have been refused because of it (OUT_OF_ORDER_SEQUENCE_NUMBER after a gap) or
        written (without idempotence, or if the first was written but its answer lost). Wait for
        every answer, then in order: keep what was written; send the rest again one request at a
        time (``_deliver``: retries, a coalesced batch too large split up), renumbered where a
        refused request before them gave its sequence numbers back. The first request's own
        refusal is final unless it can be split: everything before it is written."""
        await asyncio.wait([request.answer for request in requests if request.answer is not None])
        if self.idempotent:
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
            ):
                request.fail(error)  # nothing of it was written: its numbers stay free
            else:
                await self._deliver_batches(request)
            self._release(request.size_bytes)

    async def _deliver_batches(self, request: _Request) -> None:
        """Deliver ``request`` (retrying); if the broker finds the coalesced batch too large (a
        topic's max.message.bytes below max_request_size), deliver its batches one by one."""
        error = await self._deliver(request)
        if error is None:
            return
        if error.code is ErrorCode.MESSAGE_TOO_LARGE and len(request.batches) > 1:
            for batch in request.batches:
                single = _Request([batch])
                failure = await self._deliver(single)
                if failure is not None:
                    single.fail(failure)
            return
        request.fail(error)

    def _release(self, size: int) -> None:
        with self._lock:
            self._buffered -= size
            self._room.notify_all()
        waiters, self._room_waiters = self._room_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _number(self, request: _Request) -> None:
        """Give ``request`` its partition's next sequence numbers and encode it. A request that
        already has those numbers keeps its bytes: a retry must resend exactly what the broker
        may have written."""
        if self.idempotent:
            key = (request.topic, request.partition)
            expected = self._sequences.get(key, 0)
            if request.base_sequence != expected:
                request.base_sequence = expected
                request.message = None
            self._sequences[key] = next_sequence(expected, request.records)
        if request.message is None:
            records = encode_runs(
                [batch.records for batch in request.batches],  # type: ignore[misc]  # Record-shaped tuples
                compression=self.compression,
                producer_id=self._producer_id,
                producer_epoch=self._producer_epoch,
                base_sequence=request.base_sequence,
            )
            request.message = produce_request(
                request.topic,
                request.partition,
                records,
                acks=self.acks,
                timeout_ms=int(self._request_timeout_s * 1000),
            )

    def _unnumber(self, request: _Request) -> None:
        """The broker refused ``request`` outright (nothing of it was written): give its sequence
        numbers back, so the partition's next request does not leave a gap the broker refuses.
        It is the newest numbered request of its partition (``_deliver`` sends one at a time)."""
        if request.base_sequence >= 0:
            self._sequences[(request.topic, request.partition)] = request.base_sequence

    def _stream(self, address: str) -> ProduceStream:
        stream = self._streams.get(address)
        if stream is None or stream.broken:
            stream = self._streams[address] = ProduceStream(self._cluster.stub(address), address)
        return stream

    async def _attempt(self, request: _Request) -> broker_pb2.PartitionProduceResponse:
        """Send ``request`` once to its partition's leader; its answer, or a retriable error."""
        address = self._cluster.leader_address(request.topic, request.partition)
        if address is None:
            raise error_for(ErrorCode.LEADER_NOT_AVAILABLE, f"{request.topic}-{request.partition} has no leader now")
        assert request.message is not None
        stream = self._stream(address)
        answer = stream.send(request.message)
        try:
            response = await asyncio.wait_for(answer, self._request_timeout_s + _ANSWER_GRACE_S)
        except TimeoutError:
            stream.abort()  # answers come in order: a lost one holds up every later one
            raise RequestTimedOutError(f"{address} did not answer within request_timeout_ms") from None
        return response.topics[0].partitions[0]

    def _outcome(self, request: _Request, result: broker_pb2.PartitionProduceResponse) -> LanesError | None:
        """Resolve ``request`` from the broker's answer, or return the error it carries."""
        if self.acks == common_pb2.ACKS_NONE:
            request.complete(-1, -1)
            return None
        code = error_code(result.error.code)
        if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
            request.complete(result.base_offset, result.log_append_time_ms)
            return None
        return error_for(result.error.code, result.error.message)

    async def _deliver(self, request: _Request) -> LanesError | None:
        """Send ``request`` until it is written, retrying what may succeed later; resolve its
        futures, or return the error that stopped it."""
        deadline = request.batches[0].created + self._delivery_timeout_s
        self._number(request)
        last_error: LanesError = RequestTimedOutError(
            f"a batch of {request.records} records to {request.topic}-{request.partition} was never acknowledged "
            "within delivery_timeout_ms"
        )
        while time.monotonic() < deadline:
            try:
                error = self._outcome(request, await self._attempt(request))
            except LanesError as exc:  # no answer: retriable
                error = exc
            if error is None:
                return None
            last_error = error
            if not error.retriable:
                self._unnumber(request)
                return error
            await self._retry_pause(request.topic)
        return last_error

    async def _retry_pause(self, topic: str) -> None:
        await asyncio.sleep(self._backoff_s)
        with contextlib.suppress(LanesError):  # no broker answered: try again after the next pause
            await self._cluster.refresh([topic])

    async def flush(self) -> None:
        """Send every open batch now and wait until every record sent before is written or failed."""
        self._bind_loop()
        with self._lock:
            for batch in list(self._open.values()):
                self._close_locked(batch)
        await asyncio.sleep(0)  # the enqueue callbacks run
        while pending := [task for task in self._senders.values() if not task.done()]:
            await asyncio.gather(*pending)

    async def close(self) -> None:
        """Flush, then release connections. Sends after close fail."""
        await self.flush()
        with self._lock:
            self._closed = True
        for stream in self._streams.values():
            await stream.close()
        await self._cluster.close()


class Producer:
    """Produces records (synchronously): ``send`` returns a ``RecordFuture`` at once.

    The calling thread appends to the batch itself (no hop to the client loop per record), so the
    records a thread sends to a partition are written in the order it sent them.
    """

    def __init__(self, bootstrap: str, **settings: object) -> None:
        self._producer = _loop.run(_create(bootstrap, settings))

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: HeadersArg = None,
        timestamp: int | None = None,
    ) -> RecordFuture:
        """Queue a record; the future resolves to its RecordMetadata (or raises the typed error).
        Blocks up to ``max_block_ms`` while the buffer is full."""
        producer = self._producer
        return producer._send_blocking(
            producer._prepare(topic, value, key, partition=partition, headers=headers, timestamp=timestamp)
        )

    def flush(self) -> None:
        """Wait until every record sent before is written or failed."""
        _loop.run(self._producer.flush())

    def close(self) -> None:
        """Flush and release connections."""
        _loop.run(self._producer.close())

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _create(bootstrap: str, settings: Mapping[str, object]) -> AsyncProducer:
    """The producer lives on the background loop, so it is created there."""
    return AsyncProducer(bootstrap, **settings)  # type: ignore[arg-type]
