"""The Producer: batching, partitioning, retries, idempotence.

``lanes.aio.Producer`` is the asynchronous core; ``lanes.Producer`` the synchronous facade. Both
append to the same accumulator, so a synchronous ``send`` costs no hop to the client's event loop:

- ``send`` picks the partition (``lanes.protocol.partitioner``: explicit, user partitioner,
  murmur3 of the key, sticky for keyless records) and adds the record to that partition's open
  batch under one lock; it returns a ``RecordFuture`` resolving to ``RecordMetadata`` (offset
  assigned) or raising the typed error. Futures resolve once per batch (``_record_future``).
- A batch closes when it reaches ``batch_size`` bytes or ``linger_ms`` after its first record;
  closed batches queue per partition and the event loop sends them. One request per partition is
  in flight at a time, so records of a partition are written in send order even when requests are
  retried; when the partition's sender is free it takes every queued batch, up to
  ``max_request_size`` bytes, as one record batch (``encode_runs``): the request grows with the
  backlog, so a partition's throughput is not capped at ``batch_size`` per round trip.
- Idempotence (on by default): the producer gets an id and epoch (InitProducerId) and numbers
  records per partition; a retried batch carries the same numbers, so the broker writes it once.
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
import itertools
import random
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import grpc

from lanes.client import _loop
from lanes.client._cluster import ClusterView
from lanes.client._record_future import BatchOutcome, RecordFuture, RecordMetadata
from lanes.protocol.compression import Compression
from lanes.protocol.errors import ErrorCode, LanesError, RequestTimedOutError, error_code, error_for
from lanes.protocol.partitioner import Partitioner, PartitionerFn
from lanes.protocol.records import encode_runs
from lanes.v1 import broker_pb2, common_pb2

HeadersArg = Mapping[str, bytes | None] | Sequence[tuple[str, bytes | None]] | None
_ACKS = {"0": common_pb2.ACKS_NONE, "1": common_pb2.ACKS_LEADER, "all": common_pb2.ACKS_ALL, "-1": common_pb2.ACKS_ALL}
_RECORD_OVERHEAD_BYTES = 20  # varints and attributes of one encoded record, roughly


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
    """Batches of one partition sent as one record batch: encoded and numbered once, so retries
    resend the same bytes and sequence numbers."""

    __slots__ = ("base_sequence", "batches", "encoded", "records")

    def __init__(self, batches: list[_Batch]) -> None:
        self.batches = batches
        self.records = sum(len(batch.records) for batch in batches)
        self.encoded = b""
        self.base_sequence = -1

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
        enable_idempotence: bool = True,
        compression_type: str = "none",
        partitioner: PartitionerFn | None = None,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        buffer_memory: int = 32 * 1024 * 1024,
        max_block_ms: int = 60_000,
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
        self.idempotent = enable_idempotence
        self.compression = Compression.parse(compression_type)
        self._partitioner = Partitioner(random.Random(), partitioner)
        self._request_timeout_s = request_timeout_ms / 1000
        self._delivery_timeout_s = delivery_timeout_ms / 1000
        self._backoff_s = retry_backoff_ms / 1000
        self._buffer_limit = buffer_memory
        self._max_block_s = max_block_ms / 1000
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
        if topic not in self._cluster.partition_counts:
            await self._cluster.refresh([topic])
        count = self._cluster.partition_counts.get(topic)
        if count is None:
            raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist; create it first")
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

    def _detach_locked(self, batch: _Batch) -> None:
        """No more records join ``batch`` (the caller holds the lock)."""
        del self._open[(batch.topic, batch.partition)]
        self._partitioner.batch_completed(batch.topic, self._cluster.partition_counts.get(batch.topic, 1))

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

    async def _drain(self, key: tuple[str, int]) -> None:
        """Send the partition's batches, one request at a time: the closed ones (as many as fit
        ``max_request_size`` in one request), then the open one once its linger is over. The
        partition is in ``_sending`` until this returns; it leaves it under the same lock as its
        last look at the queue, so no closed batch is missed."""
        try:
            await self._drain_queue(key)
        except BaseException:
            with self._lock:
                self._sending.discard(key)
            raise

    async def _drain_queue(self, key: tuple[str, int]) -> None:
        assert self._loop is not None
        while True:
            with self._lock:  # closing threads append to the queue under the lock
                queue = self._queues.setdefault(key, deque())
                if not queue:
                    batch = self._open.get(key)
                    if batch is None:
                        self._sending.discard(key)
                        return
                    linger_left_s = batch.created + self.linger_s - time.monotonic()
                    if linger_left_s > 0:
                        self._loop.call_later(linger_left_s, self._close_if_open, batch)
                        self._sending.discard(key)
                        return
                    self._detach_locked(batch)
                    queue.append(batch)
                batches = self._next_request_locked(queue)
            try:
                await self._init_producer_id()
                await self._deliver_batches(batches)
            except LanesError as exc:
                _Request(batches).fail(exc)
            with self._lock:
                for _ in batches:
                    queue.popleft()
            self._release(sum(batch.size_bytes for batch in batches))

    def _next_request_locked(self, queue: deque[_Batch]) -> list[_Batch]:
        """The queue's first batches, as many as fit ``max_request_size`` (at least one)."""
        batches = [queue[0]]
        size = queue[0].size_bytes
        for batch in itertools.islice(queue, 1, None):
            size += batch.size_bytes
            if size > self.max_request_size:
                break
            batches.append(batch)
        return batches

    async def _deliver_batches(self, batches: list[_Batch]) -> None:
        """Deliver ``batches`` as one request; if the broker finds the coalesced batch too large
        (a topic's max.message.bytes below max_request_size), deliver them one by one."""
        request = _Request(batches)
        error = await self._deliver(request)
        if error is None:
            return
        if error.code is ErrorCode.MESSAGE_TOO_LARGE and len(batches) > 1:
            for batch in batches:
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

    def _encode(self, request: _Request) -> bytes:
        """Number and encode ``request`` (once: retries resend the same bytes)."""
        if not request.encoded:
            key = (request.topic, request.partition)
            if self.idempotent:
                request.base_sequence = self._sequences.get(key, 0)
                self._sequences[key] = (request.base_sequence + request.records) % 2**31
            request.encoded = encode_runs(
                [batch.records for batch in request.batches],  # type: ignore[misc]  # Record-shaped tuples
                compression=self.compression,
                producer_id=self._producer_id,
                producer_epoch=self._producer_epoch,
                base_sequence=request.base_sequence,
            )
        return request.encoded

    def _unnumber(self, request: _Request) -> None:
        """The broker refused ``request`` outright (nothing of it was written): give its sequence
        numbers back, so the partition's next batch does not leave a gap the broker refuses. It is
        the newest numbered request of its partition: one request is in flight per partition."""
        if request.base_sequence >= 0:
            self._sequences[(request.topic, request.partition)] = request.base_sequence
            request.base_sequence = -1
        request.encoded = b""

    async def _deliver(self, request: _Request) -> LanesError | None:
        """Send ``request`` until it is written, retrying what may succeed later; resolve its
        futures, or return the error that stopped it."""
        batch = request.batches[0]
        deadline = batch.created + self._delivery_timeout_s
        produce = broker_pb2.ProduceRequest(
            acks=self.acks,
            timeout_ms=int(self._request_timeout_s * 1000),
            topics=[
                broker_pb2.TopicProduceData(
                    topic=batch.topic,
                    partitions=[
                        broker_pb2.PartitionProduceData(partition=batch.partition, records=self._encode(request))
                    ],
                )
            ],
        )
        last_error: LanesError = RequestTimedOutError(
            f"a batch of {request.records} records to {batch.topic}-{batch.partition} was never acknowledged "
            "within delivery_timeout_ms"
        )
        while time.monotonic() < deadline:
            address = self._cluster.leader_address(batch.topic, batch.partition)
            if address is None:
                last_error = error_for(
                    ErrorCode.LEADER_NOT_AVAILABLE, f"{batch.topic}-{batch.partition} has no leader now"
                )
                await self._retry_pause(batch.topic)
                continue
            try:
                answer = await self._cluster.stub(address).Produce(produce, timeout=self._request_timeout_s)
            except grpc.aio.AioRpcError as exc:
                last_error = error_for(ErrorCode.NETWORK_EXCEPTION, f"{address}: {exc.code().name}")
                await self._retry_pause(batch.topic)
                continue
            result = answer.topics[0].partitions[0]
            if self.acks == common_pb2.ACKS_NONE:
                request.complete(-1, -1)
                return None
            code = error_code(result.error.code)
            if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                request.complete(result.base_offset, result.log_append_time_ms)
                return None
            last_error = error_for(result.error.code, result.error.message)
            if not last_error.retriable:
                self._unnumber(request)
                return last_error
            await self._retry_pause(batch.topic)
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
