"""Workload 1, produce throughput: ``records`` records of ``value_bytes`` each from one producer in
this process, to one stream/partition per system, timed from the first send to the last
acknowledgement. Every function returns the elapsed seconds and raises if any record failed.

Durability per system (stated next to every figure):
- Lanes: acks=1 on one broker, or acks=all (idempotent) on three brokers with RF 3; the
  producer's defaults otherwise (batch_size 64 KiB, linger 5 ms, max_request_size 1 MiB);
- Redis: XADD pipelined 1,000 commands per round trip, acknowledged by the server (AOF everysec);
- JetStream: async publish, every publish acknowledged by the stream (file storage);
- Kafka: confluent-kafka (librdkafka), the producer a Python user of Kafka would pick, with
  Lanes' producer defaults (``KAFKA_PRODUCER``): acks=1 on one node, or acks=all (idempotent) on
  three with RF 3; delivery reports for failures only (Lanes' figure checks futures, not callbacks).

Every record is checked: the consume workload reads each run's records back and fails unless the
count is exact. ``redis_delete`` and ``nats_delete`` free a run's streams afterwards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import confluent_kafka
import nats
import redis
from nats.js.api import StorageType, StreamConfig

import lanes

REDIS_PIPELINE = 1_000
NATS_MAX_PENDING = 4_000
#: confluent-kafka's settings that differ from librdkafka's defaults: Lanes' producer defaults
#: (batch 64 KiB, linger 5 ms, a 32 MiB buffer, requests up to 1 MiB, 5 in flight)
KAFKA_PRODUCER = {
    "linger.ms": 5,
    "batch.size": 64 * 1024,
    "queue.buffering.max.kbytes": 32 * 1024,
    "message.max.bytes": 1024 * 1024,
    "max.in.flight.requests.per.connection": 5,
}


def kafka_producer(bootstrap: str, *, acks: str, **settings: object) -> confluent_kafka.Producer:
    """A confluent-kafka producer with ``KAFKA_PRODUCER``'s settings, idempotent with acks=all."""
    config = {"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": acks == "all"}
    return confluent_kafka.Producer(config | KAFKA_PRODUCER | settings)


def kafka_produce(
    bootstrap: str, topic: str, records: int, value: bytes, *, acks: str, keys: Sequence[bytes] = ()
) -> float:
    """``Producer.produce`` per record (keyed over ``keys`` in turn, if any; a full queue is
    served with ``poll`` and retried), then ``flush``; any failed delivery raises."""
    failures: list[object] = []

    def failed(error: object, _message: object) -> None:
        if error is not None:
            failures.append(error)

    producer = kafka_producer(bootstrap, acks=acks, on_delivery=failed, **{"delivery.report.only.error": True})
    send = producer.produce
    started = time.perf_counter()
    for index in range(records):
        key = keys[index % len(keys)] if keys else None
        while True:
            try:
                send(topic, value, key)
                break
            except BufferError:  # the queue is full (librdkafka's max.block.ms is the caller's)
                producer.poll(0.001)
    left = producer.flush(120)
    elapsed = time.perf_counter() - started
    if left or failures:
        raise RuntimeError(f"kafka produce failed: {left} undelivered, {failures[:1]}")
    return elapsed


#: records per ``send_batch`` call in the batch runs
SEND_BATCH_RECORDS = 10_000


def lanes_produce(
    bootstrap: str,
    topic: str,
    records: int,
    value: bytes,
    *,
    acks: str,
    keys: Sequence[bytes] = (),
    batch: bool = False,
) -> float:
    """``lanes.Producer.send`` per record (keyed over ``keys`` in turn, if any), then ``flush``;
    ``batch``: ``send_batch`` of ``SEND_BATCH_RECORDS`` records per call instead (the lists built
    before the clock starts)."""
    with lanes.Producer(bootstrap, acks=acks, enable_idempotence=acks == "all") as producer:
        failures: list[BaseException] = []
        send = producer.send
        values = [value] * min(records, SEND_BATCH_RECORDS)
        batch_keys = [keys[index % len(keys)] for index in range(len(values))] if keys else None
        started = time.perf_counter()
        last = None
        if batch:
            for start in range(0, records, len(values)):
                count = min(len(values), records - start)  # the lists are cut for the last call only
                chunk_values = values if count == len(values) else values[:count]
                chunk_keys = batch_keys if batch_keys is None or count == len(values) else batch_keys[:count]
                futures = producer.send_batch(topic, chunk_values, chunk_keys)
                last = futures[-1]
        elif keys:
            for index in range(records):
                last = send(topic, value, keys[index % len(keys)])
        else:
            for _ in range(records):
                last = send(topic, value)
        producer.flush()
        elapsed = time.perf_counter() - started
        if last is not None and last.exception() is not None:
            failures.append(last.exception())  # type: ignore[arg-type]
    if failures:
        raise RuntimeError(f"lanes produce failed: {failures[0]}")
    return elapsed


def redis_produce(address: str, stream: str, records: int, value: bytes, keys: Sequence[bytes] = ()) -> float:
    """XADD in pipelines of ``REDIS_PIPELINE`` commands (no MULTI), each pipeline's replies
    checked; with ``keys``, each entry carries its key as a field (a stream has no partitions)."""
    host, port = address.split(":")
    client = redis.Redis(host=host, port=int(port))
    started = time.perf_counter()
    sent = 0
    while sent < records:
        pipe = client.pipeline(transaction=False)
        for index in range(sent, min(sent + REDIS_PIPELINE, records)):
            pipe.xadd(stream, {b"k": keys[index % len(keys)], b"v": value} if keys else {b"v": value})
        replies = pipe.execute()
        sent += len(replies)
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed


async def _nats_produce(address: str, subject: str, records: int, value: bytes) -> float:
    connection = await nats.connect(f"nats://{address}")
    stream = connection.jetstream(publish_async_max_pending=NATS_MAX_PENDING)
    await stream.add_stream(StreamConfig(name=subject.replace(".", "-"), subjects=[subject], storage=StorageType.FILE))
    failures: list[BaseException] = []

    def check(future: asyncio.Future[object]) -> None:
        if not future.cancelled() and future.exception() is not None:
            failures.append(future.exception())  # type: ignore[arg-type]

    started = time.perf_counter()
    for _ in range(records):
        (await stream.publish_async(subject, value)).add_done_callback(check)
    await stream.publish_async_completed()
    elapsed = time.perf_counter() - started
    await connection.close()
    if failures:
        raise RuntimeError(f"jetstream publish failed: {failures[0]}")
    return elapsed


def nats_produce(address: str, subject: str, records: int, value: bytes) -> float:
    """JetStream async publish with acks, ``NATS_MAX_PENDING`` in flight."""
    return asyncio.run(_nats_produce(address, subject, records, value))


def redis_delete(address: str, streams: list[str]) -> None:
    host, port = address.split(":")
    client = redis.Redis(host=host, port=int(port))
    client.delete(*streams)
    client.close()


async def _nats_delete(address: str, subjects: list[str]) -> None:
    connection = await nats.connect(f"nats://{address}")
    stream = connection.jetstream()
    for subject in subjects:
        await stream.delete_stream(subject.replace(".", "-"))
    await connection.close()


def nats_delete(address: str, subjects: list[str]) -> None:
    asyncio.run(_nats_delete(address, subjects))
