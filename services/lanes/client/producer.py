"""The Producer: batching, partitioning, retries, idempotence.

``lanes.aio.Producer`` is the asynchronous core; ``lanes.Producer`` the synchronous facade.

- ``send`` picks the partition (``lanes.protocol.partitioner``: explicit, user partitioner,
  murmur3 of the key, sticky for keyless records) and adds the record to that partition's open
  batch; it returns a future resolving to ``RecordMetadata`` (offset assigned) or raising the
  typed error.
- A batch is sent when it reaches ``batch_size`` bytes or ``linger_ms`` after its first record.
  One batch per partition is in flight at a time, so records of a partition are written in send
  order even when requests are retried.
- Idempotence (on by default): the producer gets an id and epoch (InitProducerId) and numbers
  records per partition; a retried batch carries the same numbers, so the broker writes it once.
- Retriable errors (leader moved, not enough replicas, timeouts, network) refresh metadata and
  retry with ``retry_backoff_ms`` until ``delivery_timeout_ms``; others fail the batch's futures.
- The buffer is bounded by ``buffer_memory`` bytes: ``send`` waits up to ``max_block_ms`` for
  room, then raises, instead of growing without limit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import grpc

from lanes.client import _loop
from lanes.client._cluster import ClusterView
from lanes.protocol.compression import Compression
from lanes.protocol.errors import ErrorCode, LanesError, RequestTimedOutError, error_code, error_for
from lanes.protocol.partitioner import Partitioner, PartitionerFn
from lanes.protocol.records import Record, encode_batch
from lanes.v1 import broker_pb2, common_pb2

HeadersArg = Mapping[str, bytes | None] | Sequence[tuple[str, bytes | None]] | None
_ACKS = {"0": common_pb2.ACKS_NONE, "1": common_pb2.ACKS_LEADER, "all": common_pb2.ACKS_ALL, "-1": common_pb2.ACKS_ALL}
_RECORD_OVERHEAD_BYTES = 20  # varints and attributes of one encoded record, roughly


@dataclass(frozen=True)
class RecordMetadata:
    """Where a record was written."""

    topic: str
    partition: int
    offset: int
    timestamp: int


@dataclass
class _Batch:
    topic: str
    partition: int
    records: list[tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]] = field(
        default_factory=list
    )
    futures: list[asyncio.Future[RecordMetadata]] = field(default_factory=list)
    size_bytes: int = 0
    created: float = field(default_factory=time.monotonic)
    encoded: bytes | None = None  # fixed at the first send attempt: retries resend the same bytes
    base_sequence: int = -1


class AsyncProducer:
    """Produces records to a Lanes cluster (asynchronously). ``bootstrap``: brokers' host:port list."""

    def __init__(
        self,
        bootstrap: str,
        *,
        acks: str | int = "all",
        linger_ms: int = 5,
        batch_size: int = 64 * 1024,
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
        self.idempotent = enable_idempotence
        self.compression = Compression.parse(compression_type)
        self._partitioner = Partitioner(random.Random(), partitioner)
        self._request_timeout_s = request_timeout_ms / 1000
        self._delivery_timeout_s = delivery_timeout_ms / 1000
        self._backoff_s = retry_backoff_ms / 1000
        self._buffer_limit = buffer_memory
        self._max_block_s = max_block_ms / 1000
        self._buffered = 0
        self._room = asyncio.Condition()
        self._open: dict[tuple[str, int], _Batch] = {}
        self._queues: dict[tuple[str, int], list[_Batch]] = {}
        self._senders: dict[tuple[str, int], asyncio.Task[None]] = {}
        self._cluster = ClusterView(self.bootstrap, self._request_timeout_s)
        self._producer_id = -1
        self._producer_epoch = -1
        self._sequences: dict[tuple[str, int], int] = {}
        self._init_lock = asyncio.Lock()
        self._closed = False

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
        async with self._init_lock:  # concurrent first sends: one id for the producer's lifetime
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
    # sending

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: HeadersArg = None,
        timestamp: int | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Add a record to its partition's batch; the future resolves when it is written."""
        if self._closed:
            raise LanesError("the producer is closed", ErrorCode.INVALID_REQUEST)
        await self._init_producer_id()
        count = await self._partition_count(topic)
        chosen = self._partitioner.partition(topic, key, count, partition)
        header_pairs = tuple(headers.items() if isinstance(headers, Mapping) else (headers or ()))
        size = (
            len(key or b"")
            + len(value or b"")
            + sum(len(k) + len(v or b"") for k, v in header_pairs)
            + _RECORD_OVERHEAD_BYTES
        )
        await self._reserve(size)
        batch = self._open.get((topic, chosen))
        if batch is None:
            batch = self._open[(topic, chosen)] = _Batch(topic, chosen)
            asyncio.get_running_loop().call_later(self.linger_s, self._close_if_open, batch)
        future: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        batch.records.append((key, value, header_pairs, int(time.time() * 1000) if timestamp is None else timestamp))
        batch.futures.append(future)
        batch.size_bytes += size
        if batch.size_bytes >= self.batch_size:
            self._close_batch(batch)
        return future

    async def _reserve(self, size: int) -> None:
        async with self._room:
            try:
                await asyncio.wait_for(
                    self._room.wait_for(lambda: self._buffered + size <= self._buffer_limit or self._buffered == 0),
                    self._max_block_s,
                )
            except TimeoutError:
                raise RequestTimedOutError(
                    f"the producer's buffer ({self._buffer_limit} bytes) stayed full for {self._max_block_s:.0f} s; "
                    "the cluster is slower than the sends, or unreachable"
                ) from None
            self._buffered += size

    def _close_if_open(self, batch: _Batch) -> None:
        if self._open.get((batch.topic, batch.partition)) is batch:
            self._close_batch(batch)

    def _close_batch(self, batch: _Batch) -> None:
        key = (batch.topic, batch.partition)
        del self._open[key]
        self._partitioner.batch_completed(batch.topic, self._cluster.partition_counts.get(batch.topic, 1))
        self._queues.setdefault(key, []).append(batch)
        sender = self._senders.get(key)
        if sender is None or sender.done():
            self._senders[key] = asyncio.get_running_loop().create_task(self._drain(key))

    async def _drain(self, key: tuple[str, int]) -> None:
        queue = self._queues[key]
        while queue:
            batch = queue[0]
            await self._deliver(batch)
            queue.pop(0)
            async with self._room:
                self._buffered -= batch.size_bytes
                self._room.notify_all()

    def _encode(self, batch: _Batch) -> bytes:
        if batch.encoded is None:
            key = (batch.topic, batch.partition)
            if self.idempotent:
                batch.base_sequence = self._sequences.get(key, 0)
                self._sequences[key] = (batch.base_sequence + len(batch.records)) % 2**31
            batch.encoded = encode_batch(
                [Record(i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(batch.records)],
                compression=self.compression,
                producer_id=self._producer_id,
                producer_epoch=self._producer_epoch,
                base_sequence=batch.base_sequence,
            )
        return batch.encoded

    async def _deliver(self, batch: _Batch) -> None:
        deadline = batch.created + self._delivery_timeout_s
        request = broker_pb2.ProduceRequest(
            acks=self.acks,
            timeout_ms=int(self._request_timeout_s * 1000),
            topics=[
                broker_pb2.TopicProduceData(
                    topic=batch.topic,
                    partitions=[
                        broker_pb2.PartitionProduceData(partition=batch.partition, records=self._encode(batch))
                    ],
                )
            ],
        )
        last_error: LanesError = RequestTimedOutError("the batch was never acknowledged")
        while time.monotonic() < deadline:
            address = self._cluster.leader_address(batch.topic, batch.partition)
            if address is None:
                last_error = error_for(
                    ErrorCode.LEADER_NOT_AVAILABLE, f"{batch.topic}-{batch.partition} has no leader now"
                )
                await self._retry_pause(batch.topic)
                continue
            try:
                answer = await self._cluster.stub(address).Produce(request, timeout=self._request_timeout_s)
            except grpc.aio.AioRpcError as exc:
                last_error = error_for(ErrorCode.NETWORK_EXCEPTION, f"{address}: {exc.code().name}")
                await self._retry_pause(batch.topic)
                continue
            result = answer.topics[0].partitions[0]
            code = error_code(result.error.code)
            if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER) or self.acks == common_pb2.ACKS_NONE:
                for index, (future, record) in enumerate(zip(batch.futures, batch.records, strict=True)):
                    if not future.done():
                        future.set_result(
                            RecordMetadata(batch.topic, batch.partition, result.base_offset + index, record[3])
                        )
                return
            last_error = error_for(result.error.code, result.error.message)
            if not last_error.retriable:
                break
            await self._retry_pause(batch.topic)
        for future in batch.futures:
            if not future.done():
                future.set_exception(last_error)

    async def _retry_pause(self, topic: str) -> None:
        await asyncio.sleep(self._backoff_s)
        with contextlib.suppress(LanesError):  # no broker answered: try again after the next pause
            await self._cluster.refresh([topic])

    async def flush(self) -> None:
        """Send every open batch now and wait until every record is written or failed."""
        for batch in list(self._open.values()):
            self._close_batch(batch)
        pending = [task for task in self._senders.values() if not task.done()]
        if pending:
            await asyncio.gather(*pending)

    async def close(self) -> None:
        """Flush, then release connections."""
        await self.flush()
        self._closed = True
        await self._cluster.close()


class Producer:
    """Produces records (synchronously): ``send`` returns a ``concurrent.futures.Future``.

    Sends enter one FIFO queue and a single task appends them in order, so the records a thread
    sends to a partition are written in the order it sent them.
    """

    def __init__(self, bootstrap: str, **settings: object) -> None:
        self._producer, self._queue = _loop.run(_create(bootstrap, settings))
        self._appender = asyncio.run_coroutine_threadsafe(self._append_in_order(), _loop.background_loop())

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: HeadersArg = None,
        timestamp: int | None = None,
    ) -> concurrent.futures.Future[RecordMetadata]:
        """Queue a record; the future resolves to its RecordMetadata (or raises the typed error)."""
        result: concurrent.futures.Future[RecordMetadata] = concurrent.futures.Future()
        request = (topic, value, key, partition, headers, timestamp)
        _loop.background_loop().call_soon_threadsafe(self._queue.put_nowait, (request, result))
        return result

    async def _append_in_order(self) -> None:
        while True:
            (topic, value, key, partition, headers, timestamp), result = await self._queue.get()
            try:
                written = await self._producer.send(
                    topic, value, key, partition=partition, headers=headers, timestamp=timestamp
                )
            except Exception as exc:
                result.set_exception(exc)
            else:
                written.add_done_callback(functools.partial(_settle, result))
            finally:
                self._queue.task_done()

    def flush(self) -> None:
        """Wait until every queued record is written or failed."""
        _loop.run(self._flush())

    async def _flush(self) -> None:
        await self._queue.join()
        await self._producer.flush()

    def close(self) -> None:
        """Flush and release connections."""
        self.flush()
        self._appender.cancel()
        _loop.run(self._producer.close())

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _settle(result: concurrent.futures.Future[RecordMetadata], written: asyncio.Future[RecordMetadata]) -> None:
    if written.cancelled():
        result.cancel()
    elif written.exception() is not None:
        result.set_exception(written.exception())
    else:
        result.set_result(written.result())


_Request = tuple[str, bytes | None, bytes | None, int | None, HeadersArg, int | None]


async def _create(
    bootstrap: str, settings: Mapping[str, object]
) -> tuple[AsyncProducer, asyncio.Queue[tuple[_Request, concurrent.futures.Future[RecordMetadata]]]]:
    """Both live on the background loop, so they are created there."""
    producer = AsyncProducer(bootstrap, **settings)  # type: ignore[arg-type]
    return producer, asyncio.Queue()
