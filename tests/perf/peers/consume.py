"""Workload 2, consume throughput: read back, as a consumer group, the ``records`` records one
produce run wrote, acknowledging every batch as each system's group consumer does. Every system
takes batches of ``BATCH_RECORDS``; a run is timed from the first record delivered (joining the
group is not measured: it is a one-off cost that differs in kind between systems) to the
acknowledgement of the last one, and raises unless exactly ``records`` records arrived.

- Lanes: ``lanes.Consumer(group_id=...)`` subscribed to the topic, ``max_poll_records`` =
  ``BATCH_RECORDS``, an asynchronous commit after every poll but the last, whose commit is
  synchronous;
- Redis: XREADGROUP COUNT ``BATCH_RECORDS`` then one XACK with the batch's ids;
- JetStream: a durable pull consumer with ``AckPolicy.ALL``, ``fetch(BATCH_RECORDS)``, the last
  message of each batch acknowledged (which acknowledges the batch), the final one synchronously;
- Kafka: a confluent-kafka group consumer subscribed to the topic, ``consume(BATCH_RECORDS)``
  (each message checked for an error, as its users must), an asynchronous commit after every
  batch but the last, whose commit is synchronous.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import confluent_kafka
import nats
import redis
from nats.js.api import AckPolicy, ConsumerConfig

import lanes

BATCH_RECORDS = 1_000
_IDLE_TIMEOUT_S = 30  # no record for this long: the run fails instead of hanging


def _check(system: str, received: int, records: int) -> None:
    if received != records:
        raise RuntimeError(f"{system} consumer received {received:,} records, expected {records:,}")


def _read_timed(poll: Callable[[], int], records: int, acknowledge: Callable[[bool], None]) -> tuple[int, float]:
    """``poll()`` (how many records it brought) until ``records`` arrived, or none did for
    ``_IDLE_TIMEOUT_S``; ``acknowledge(last)`` after each batch (``last``: the final one). The
    records received, and the seconds from the first delivered to the last acknowledgement."""
    received, started, last_seen = 0, 0.0, time.monotonic()
    while received < records:
        count = poll()
        if not count:
            if time.monotonic() - last_seen > _IDLE_TIMEOUT_S:
                break
            continue
        if not received:
            started = time.perf_counter()
        last_seen = time.monotonic()
        received += count
        acknowledge(received >= records)
    return received, time.perf_counter() - started


def lanes_consume(bootstrap: str, topic: str, records: int, group: str) -> float:
    """A group consumer from the earliest offset, committing after every poll (the last commit
    waits for its answer)."""
    with lanes.Consumer(
        bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=BATCH_RECORDS,
    ) as consumer:
        consumer.subscribe([topic])
        received, elapsed = _read_timed(
            lambda: len(consumer.poll(timeout_ms=1000)),
            records,
            lambda last: consumer.commit(asynchronous=not last),
        )
    _check("lanes", received, records)
    return elapsed


def kafka_consume(bootstrap: str, topic: str, records: int, group: str) -> float:
    """A confluent-kafka group consumer from the earliest offset, committing after every batch."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )

    def poll() -> int:
        batch = consumer.consume(BATCH_RECORDS, 1.0)
        errors = [message.error() for message in batch if message.error() is not None]
        if errors:
            raise RuntimeError(f"kafka consumer: {errors[0]}")
        return len(batch)

    try:
        consumer.subscribe([topic])
        received, elapsed = _read_timed(poll, records, lambda last: consumer.commit(asynchronous=not last))
    finally:
        consumer.close()
    _check("kafka", received, records)
    return elapsed


def redis_consume(address: str, stream: str, records: int, group: str) -> float:
    """XREADGROUP then XACK of the batch's ids, one consumer of a new group from the start."""
    host, port = address.split(":")
    client = redis.Redis(host=host, port=int(port))
    client.xgroup_create(stream, group, id="0")
    received, started = 0, 0.0
    while received < records:
        answer = client.xreadgroup(group, "c1", {stream: ">"}, count=BATCH_RECORDS, block=_IDLE_TIMEOUT_S * 1000)
        if not answer:
            break
        entries = answer[0][1]
        if not received:
            started = time.perf_counter()
        received += len(entries)
        client.xack(stream, group, *(entry_id for entry_id, _fields in entries))
    elapsed = time.perf_counter() - started
    client.close()
    _check("redis", received, records)
    return elapsed


async def _nats_consume(address: str, subject: str, records: int, durable: str) -> float:
    connection = await nats.connect(f"nats://{address}")
    stream = connection.jetstream()
    subscription = await stream.pull_subscribe(
        subject, durable=durable, config=ConsumerConfig(ack_policy=AckPolicy.ALL, max_ack_pending=-1)
    )
    received, started = 0, 0.0
    while received < records:
        try:
            messages = await subscription.fetch(min(BATCH_RECORDS, records - received), timeout=_IDLE_TIMEOUT_S)
        except TimeoutError:
            break
        if not received:
            started = time.perf_counter()
        received += len(messages)
        if received >= records:
            await messages[-1].ack_sync()
        else:
            await messages[-1].ack()
    elapsed = time.perf_counter() - started
    await connection.close()
    _check("jetstream", received, records)
    return elapsed


def nats_consume(address: str, subject: str, records: int, durable: str) -> float:
    """A durable pull consumer, acknowledging each fetched batch through its last message."""
    return asyncio.run(_nats_consume(address, subject, records, durable))
