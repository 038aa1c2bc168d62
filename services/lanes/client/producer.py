"""The Producer: the face of batching, partitioning, retries and idempotence.

``lanes.aio.Producer`` is the asynchronous core; ``lanes.Producer`` the synchronous facade. Both
append to the same accumulator, so a synchronous ``send`` costs no hop to the client's event loop.
The work is split along aiokafka's seams:

- this module checks a record (types, headers, timestamp from the injected clock), finds the
  topic's partition count and waits up to ``max_block_ms`` for buffer room;
- ``_accumulator.RecordAccumulator`` picks the partition (``lanes.protocol.partitioner``:
  explicit, user partitioner, murmur3 of the key, sticky for keyless records), adds the record to
  that partition's open batch under one lock and queues closed batches (``batch_size``,
  ``linger_ms``); it bounds the buffer by ``buffer_memory`` bytes;
- ``_sender.Sender`` sends the queued batches on the client's loop: up to
  ``max_in_flight_requests_per_partition`` requests per partition (default 5) on one
  ``ProduceStream`` per broker, which the broker handles in order, so records of a partition are
  written in send order; it holds the idempotent producer's id, epoch and sequence numbers and
  retries retriable errors until ``delivery_timeout_ms``.

``send`` returns a ``RecordFuture`` resolving to ``RecordMetadata`` (offset assigned) or raising
the typed error; futures resolve once per batch (``_record_future``). Without idempotence a retry
can reorder records when more than one request was in flight (as in Kafka): set
``max_in_flight_requests_per_partition=1`` for strict order without idempotence.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections.abc import Callable, Mapping, Sequence

from lanes.client import _loop
from lanes.client._accumulator import RECORD_OVERHEAD_BYTES, Batch, RecordAccumulator
from lanes.client._cluster import ClusterView
from lanes.client._record_future import RecordFuture, RecordMetadata
from lanes.client._sender import Sender
from lanes.clock import SYSTEM_CLOCK, Clock
from lanes.deadline import Deadline, attempts
from lanes.errors import ErrorCode, LanesError, RequestTimedOutError, error_for
from lanes.protocol.compression import Compression
from lanes.protocol.partitioner import Partitioner, PartitionerFn
from lanes.protocol.records import MAX_CACHED_BATCHES
from lanes.rpc.addresses import parse_addresses
from lanes.rpc.credentials import ClientCredentials
from lanes.rpc.tls import ClientTls
from lanes.v1 import common_pb2

HeadersArg = Mapping[str, bytes | None] | Sequence[tuple[str, bytes | None]] | None
_ACKS = {"0": common_pb2.ACKS_NONE, "1": common_pb2.ACKS_LEADER, "all": common_pb2.ACKS_ALL, "-1": common_pb2.ACKS_ALL}
#: The broker answers REQUEST_TIMED_OUT itself after the request's timeout_ms; the client waits
#: this much longer before it gives up on the answer (and on the stream, whose answers are ordered).
_ANSWER_GRACE_S = 1.0


__all__ = ["AsyncProducer", "HeadersArg", "Producer", "RecordFuture", "RecordMetadata"]


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


def _fail_the_rest(
    futures: list[RecordFuture], total: int, error: LanesError, topic: str, partition: int | None
) -> None:
    """The records of a ``send_batch`` not yet in (``futures`` has those that are) fail with ``error``."""
    futures += [RecordFuture.failed(error, topic, -1 if partition is None else partition)] * (total - len(futures))


def _batch_timestamp(
    values: Sequence[bytes | None], keys: Sequence[bytes | None] | None, timestamp: int | None, clock: Clock
) -> int:
    """The timestamp of a ``send_batch``'s records, its arguments checked (a mistake is the
    caller's bug: raised, not deferred)."""
    if keys is not None and len(keys) != len(values):
        raise ValueError(f"{len(keys)} keys for {len(values)} values: one key per value (or keys=None)")
    if timestamp is not None and (not isinstance(timestamp, int) or isinstance(timestamp, bool)):
        raise TypeError(f"the records' timestamp is milliseconds since the epoch (int), not {timestamp!r}")
    return clock.now_ms() if timestamp is None else timestamp


class AsyncProducer:
    """Produces records to a Lanes cluster (asynchronously). ``bootstrap``: brokers' host:port list.
    ``clock``: record timestamps and the time base of every timeout (``lanes.deadline``; it must
    move with the event loop's time)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        acks: str | int = "all",
        linger_ms: int = 5,
        batch_size: int = 64 * 1024,
        max_request_size: int = 1024 * 1024,
        max_in_flight_requests_per_partition: int = MAX_CACHED_BATCHES,
        enable_idempotence: bool | None = None,
        compression_type: str = "none",
        partitioner: PartitionerFn | None = None,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        buffer_memory: int = 32 * 1024 * 1024,
        max_block_ms: int = 60_000,
        unknown_topic_wait_ms: int = 2_000,
        clock: Clock = SYSTEM_CLOCK,
        tls: ClientTls = "process",
        credentials: ClientCredentials = "process",
        client_id: str = "lanes-producer",
    ) -> None:
        self.bootstrap = parse_addresses(bootstrap)
        if str(acks) not in _ACKS:
            raise LanesError(f"acks={acks!r} is not one of 0, 1, all", ErrorCode.INVALID_REQUIRED_ACKS)
        self.acks = _ACKS[str(acks)]
        if enable_idempotence is None:
            # Kafka's default (KIP-679): on, unless a setting the user chose conflicts with it
            enable_idempotence = (
                self.acks == common_pb2.ACKS_ALL and max_in_flight_requests_per_partition <= MAX_CACHED_BATCHES
            )
        elif enable_idempotence and self.acks != common_pb2.ACKS_ALL:
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
        self._clock = clock
        self._max_block_s = max_block_ms / 1000
        self._unknown_topic_wait_s = min(unknown_topic_wait_ms, max_block_ms) / 1000
        self._backoff_s = retry_backoff_ms / 1000
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = -1
        self._cluster = ClusterView(self.bootstrap, request_timeout_ms / 1000, tls, credentials, client_id)
        self._sender = Sender(
            self._cluster,
            bootstrap=self.bootstrap,
            acks=self.acks,
            idempotent=enable_idempotence,
            compression=self.compression,
            max_in_flight=max_in_flight_requests_per_partition,
            max_request_bytes=max_request_size,
            request_timeout_s=request_timeout_ms / 1000,
            delivery_timeout_s=delivery_timeout_ms / 1000,
            backoff_s=self._backoff_s,
            clock=clock,
        )
        self._accumulator = RecordAccumulator(
            batch_size=batch_size,
            max_request_size=max_request_size,
            linger_s=self.linger_s,
            buffer_memory=buffer_memory,
            partitioner=Partitioner(random.Random(), partitioner),
            partition_counts=self._cluster.partition_counts,
            signals=self._sender,
            on_loop=self._on_loop,
            clock=clock,
        )
        self._sender.attach(self._accumulator)
        with contextlib.suppress(RuntimeError):  # constructed outside a loop: bound at the first send
            self._bind_loop()

    def _bind_loop(self) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()

    def _on_loop(self, callback: Callable[[Batch], None], batch: Batch) -> None:
        """Run ``callback(batch)`` on the loop, in call order (from the loop thread or any other)."""
        assert self._loop is not None
        if threading.get_ident() == self._loop_thread:
            self._loop.call_soon(callback, batch)
        else:
            self._loop.call_soon_threadsafe(callback, batch)

    # -----------------------------------------------------------------------------------------
    # metadata

    async def _partition_count(self, topic: str) -> int:
        """The topic's partition count. A topic the brokers do not know yet is asked for again
        for ``unknown_topic_wait_ms`` (a topic just created reaches every broker's metadata a
        moment later: ``create`` then ``send`` must work), then it is an error."""
        count = self._cluster.partition_counts.get(topic)
        if count is not None:
            return count
        async for _ in attempts(Deadline(self._unknown_topic_wait_s, self._clock), self._backoff_s):
            await self._cluster.refresh([topic])
            count = self._cluster.partition_counts.get(topic)
            if count is not None:
                return count
        raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist; create it first")

    def _prepare(
        self,
        value: bytes | None,
        key: bytes | None,
        headers: HeadersArg,
        timestamp: int | None,
    ) -> tuple[tuple[tuple[str, bytes | None], ...], int, int]:
        """Check a record's types (a TypeError is a bug in the caller: raised, not deferred): its
        headers as pairs, its timestamp and its estimated encoded size."""
        _check_bytes("value", value)
        _check_bytes("key", key)
        if timestamp is not None and (not isinstance(timestamp, int) or isinstance(timestamp, bool)):
            raise TypeError(f"the record's timestamp is milliseconds since the epoch (int), not {timestamp!r}")
        pairs = _headers(headers)
        size = len(key or b"") + len(value or b"") + RECORD_OVERHEAD_BYTES
        for name, header_value in pairs:
            size += len(name) + len(header_value or b"")
        return pairs, self._clock.now_ms() if timestamp is None else timestamp, size

    def _append_at_once(  # noqa: PLR0917 - the hot path of every send: positional arguments cost least
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int | None,
        headers: HeadersArg,
        timestamp: int | None,
    ) -> RecordFuture | None:
        """The common record (bytes, no headers or timestamp, its topic's partition count known,
        room in the buffer) in one call into the accumulator's C core (``send_at_once``); None
        when it takes the long way (checks, a metadata lookup, waiting for room). No Python code
        runs per record but this: this is where a send's time goes."""
        try:
            return self._accumulator.send_at_once(topic, value, key, partition, headers, timestamp)
        except LanesError as exc:
            return RecordFuture.failed(exc, topic, -1 if partition is None else partition)

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
        self._bind_loop()
        if (future := self._append_at_once(topic, value, key, partition, headers, timestamp)) is not None:
            return future
        pairs, stamp, size = self._prepare(value, key, headers, timestamp)
        try:
            count = self._cluster.partition_counts.get(topic) or await self._partition_count(topic)
            deadline = self._block_deadline()
            append = self._accumulator.append
            while (future := append(topic, value, key, partition, pairs, stamp, size, count)) is None:
                if not await self._accumulator.wait_for_room(deadline):
                    raise self._buffer_full()
            return future
        except LanesError as exc:
            return RecordFuture.failed(exc, topic, -1 if partition is None else partition)

    async def send_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None = None,
        *,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> list[RecordFuture]:
        """``send`` for many records of one topic at once (``keys``: one per value, or None):
        their futures, in order. One call to the accumulator per run of records that fits the
        buffer, no Python call per record: the producer's batch path (issue #39). While the
        buffer is full it waits for room: ``max_block_ms`` without a record getting in, and the
        records not yet in fail with RequestTimedOutError. A value or key that is not bytes
        raises TypeError (the records before it are sent)."""
        self._bind_loop()
        stamp = _batch_timestamp(values, keys, timestamp, self._clock)
        futures: list[RecordFuture] = []
        try:
            count = self._cluster.partition_counts.get(topic) or await self._partition_count(topic)
            deadline = None
            while deadline := self._append_batch(topic, values, keys, partition, stamp, count, futures, deadline):
                if not await self._accumulator.wait_for_room(deadline):
                    raise self._buffer_full()
        except LanesError as exc:
            _fail_the_rest(futures, len(values), exc, topic, partition)
        return futures

    def send_batch_blocking(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        timestamp: int | None,
    ) -> list[RecordFuture]:
        """``send_batch`` for threads other than the loop's: blocks while the buffer is full."""
        stamp = _batch_timestamp(values, keys, timestamp, self._clock)
        futures: list[RecordFuture] = []
        try:
            count = self._cluster.partition_counts.get(topic) or _loop.run(self._partition_count(topic))
            deadline = None
            while deadline := self._append_batch(topic, values, keys, partition, stamp, count, futures, deadline):
                if threading.get_ident() == self._loop_thread:  # only the loop frees room
                    raise self._buffer_full()
                room = len(values[len(futures)] or b"") + RECORD_OVERHEAD_BYTES
                if not self._accumulator.wait_for_room_blocking(room, deadline):
                    raise self._buffer_full()
        except LanesError as exc:
            _fail_the_rest(futures, len(values), exc, topic, partition)
        return futures

    def _append_batch(  # noqa: PLR0917 - shared by both send_batch paths
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        stamp: int,
        count: int,
        futures: list[RecordFuture],
        deadline: Deadline | None,
    ) -> Deadline | None:
        """Append the records after ``futures``' to the accumulator, adding their futures. None
        when all are in; else the buffer is full and the caller waits for room until the deadline
        returned: ``deadline`` again, or a new ``max_block_ms`` when records went in since it."""
        before = len(futures)
        while len(futures) < len(values):
            added = self._accumulator.append_many(topic, values, keys, partition, stamp, count, len(futures))
            if not added:
                return deadline if deadline is not None and len(futures) == before else self._block_deadline()
            futures += added
        return None

    def _block_deadline(self) -> Deadline:
        return Deadline(self._max_block_s, self._clock)

    def _buffer_full(self) -> LanesError:
        return RequestTimedOutError(
            f"the producer's buffer ({self._accumulator.buffer_limit} bytes) stayed full for "
            f"{self._max_block_s:.0f} s; "
            "the cluster is slower than the sends, or unreachable"
        )

    def send_blocking(  # noqa: PLR0917 - the hot path of every send: positional arguments cost least
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int | None,
        headers: HeadersArg,
        timestamp: int | None,
    ) -> RecordFuture:
        """``send``'s long way for threads other than the loop's (``Producer.send`` tries
        ``_append_at_once`` first): checks the record, looks the topic up, and blocks (up to
        ``max_block_ms``) while the buffer is full."""
        pairs, stamp, size = self._prepare(value, key, headers, timestamp)
        try:
            count = self._cluster.partition_counts.get(topic) or _loop.run(self._partition_count(topic))
            deadline = self._block_deadline()
            append = self._accumulator.append
            while (future := append(topic, value, key, partition, pairs, stamp, size, count)) is None:
                if threading.get_ident() == self._loop_thread:  # only the loop frees room
                    raise self._buffer_full()
                if not self._accumulator.wait_for_room_blocking(size, deadline):
                    raise self._buffer_full()
            return future
        except LanesError as exc:
            return RecordFuture.failed(exc, topic, -1 if partition is None else partition)

    async def flush(self) -> None:
        """Send every open batch now and wait until every record sent before is written or failed."""
        self._bind_loop()
        self._accumulator.close_all()
        await asyncio.sleep(0)  # the enqueue callbacks run
        await self._sender.wait_idle()

    async def close(self) -> None:
        """Flush, then release connections. Sends after close starts fail. Interrupted (cancelled,
        or a flush that raised), it still ends every stream and closes every channel, so nothing
        is left pending on the loop."""
        with self._accumulator.lock:
            self._accumulator.closed = True
        try:
            await self.flush()
        finally:
            await self._sender.close()
            await self._cluster.close()

    async def __aenter__(self) -> AsyncProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class Producer:
    """Produces records (synchronously): ``send`` returns a ``RecordFuture`` at once.

    The calling thread appends to the batch itself (no hop to the client loop per record), so the
    records a thread sends to a partition are written in the order it sent them.
    """

    def __init__(self, bootstrap: str, **settings: object) -> None:
        self._producer = _loop.run(_create(bootstrap, settings))
        _loop.close_at_exit(self._producer)  # what was sent is delivered at exit without close()

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
        future = producer._append_at_once(topic, value, key, partition, headers, timestamp)
        return (
            future if future is not None else producer.send_blocking(topic, value, key, partition, headers, timestamp)
        )

    def send_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None = None,
        *,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> list[RecordFuture]:
        """``send`` for many records of one topic at once, without a Python call per record (see
        ``lanes.aio.Producer.send_batch``); their futures, in order."""
        return self._producer.send_batch_blocking(topic, values, keys, partition, timestamp)

    def flush(self) -> None:
        """Wait until every record sent before is written or failed."""
        _loop.run(self._producer.flush())

    def close(self) -> None:
        """Flush and release connections."""
        _loop.closed(self._producer)
        _loop.run(self._producer.close())

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _create(bootstrap: str, settings: Mapping[str, object]) -> AsyncProducer:
    """The producer lives on the background loop, so it is created there."""
    return AsyncProducer(bootstrap, **settings)  # type: ignore[arg-type]
