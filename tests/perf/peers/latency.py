"""Workload 3, latency at a fixed offered rate: ``rate_per_s`` records/s for ``seconds``, sent in
ticks of one millisecond (each tick sends its share, then the driver sleeps until the next tick),
while a consumer in the same process reads them as they come.

Both latencies are measured from each record's *scheduled* send time (the start of its tick), so
a stalled system is charged for the records it made wait (no coordinated omission):

- produce latency: scheduled send -> acknowledgement (each system's notion, as in workload 1);
- end-to-end latency: scheduled send -> the consumer holding the record.

A record's value carries its sequence number in its first 8 bytes. Consumers: Lanes, a free
consumer assigned the partition at its end; Redis, XREAD BLOCK from ``$``; JetStream, a pull
consumer (``AckPolicy.NONE``: the consumer side does not ack, as XREAD and a free consumer); Kafka,
a confluent-kafka consumer assigned the partition at its end offset, its producer's delivery reports
served by a thread of their own (librdkafka calls back only from ``poll``). The
producer settings are the throughput ones, except Lanes' and Kafka's ``linger_ms=0``: Redis sends each
tick's pipeline at once and JetStream publishes each record at once, so Lanes sends a batch as
soon as the partition's previous request is answered (records that arrive meanwhile join it).
The floor under every Lanes figure is a Python gRPC round trip: ``limits.grpc_round_trip_ms``.
"""

from __future__ import annotations

import asyncio
import math
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import confluent_kafka
import nats
import redis
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig

import lanes
from tests.perf.peers.produce import kafka_producer

_SEQUENCE = struct.Struct(">q")
_DRAIN_TIMEOUT_S = 30


@dataclass
class Latencies:
    """Seconds per record, in sequence order (NaN: never observed)."""

    produce_s: list[float]
    end_to_end_s: list[float]


class _Schedule:
    """The fixed-rate schedule: ticks of 1 ms, each sending ``per_tick`` records at its start."""

    def __init__(self, rate_per_s: int, seconds: float, value_bytes: int) -> None:
        self.rate_per_s = rate_per_s
        self.count = int(rate_per_s * seconds)
        self.per_tick = max(1, rate_per_s // 1000)
        self.padding = b"p" * (value_bytes - _SEQUENCE.size)
        self.start = 0.0
        self.acked = [float("nan")] * self.count
        self.seen = [float("nan")] * self.count
        self.seen_count = 0
        self.all_seen = threading.Event()

    def due(self, sequence: int) -> float:
        """When the tick that sends ``sequence`` is scheduled (every record of a tick leaves then)."""
        return self.start + (sequence - sequence % self.per_tick) / self.rate_per_s

    def value(self, sequence: int) -> bytes:
        return _SEQUENCE.pack(sequence) + self.padding

    def ticks(self) -> range:
        return range(0, self.count, self.per_tick)

    def tick_records(self, first: int) -> range:
        return range(first, min(first + self.per_tick, self.count))

    def on_ack(self, sequence: int) -> None:
        self.acked[sequence] = time.perf_counter()

    def on_seen(self, values: list[bytes]) -> None:
        now = time.perf_counter()
        for value in values:
            sequence = _SEQUENCE.unpack_from(value)[0]
            if 0 <= sequence < self.count:
                self.seen[sequence] = now
                self.seen_count += 1
        if self.seen_count >= self.count:
            self.all_seen.set()

    def result(self) -> Latencies:
        missing = sum(1 for t in self.seen if math.isnan(t))
        if missing:
            raise RuntimeError(f"{missing:,} of {self.count:,} records never reached the consumer")
        return Latencies(
            [self.acked[i] - self.due(i) for i in range(self.count)],
            [self.seen[i] - self.due(i) for i in range(self.count)],
        )


def _run_schedule(schedule: _Schedule, send_tick: Callable[[range], None]) -> None:
    schedule.start = time.perf_counter() + 0.05
    for first in schedule.ticks():
        pause = schedule.due(first) - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        send_tick(schedule.tick_records(first))


@contextmanager
def _reading(schedule: _Schedule, read: Callable[[Callable[[], None], Callable[[], bool]], None]) -> Iterator[None]:
    """``read(ready, reading)`` on a thread of its own: it places its consumer at the partition's
    end, calls ``ready()``, then reads while ``reading()``. The block runs once it is ready (its
    failure raised instead); afterwards the reader is stopped and joined."""
    stop, ready = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            read(ready.set, lambda: not stop.is_set() and not schedule.all_seen.is_set())
        except BaseException as exc:
            failures.append(exc)
        finally:
            ready.set()

    reader = threading.Thread(target=run, name="latency-consumer")
    reader.start()
    try:
        ready.wait(30)
        if failures:
            raise RuntimeError(f"the latency consumer failed: {failures[0]!r}") from failures[0]
        yield
    finally:
        stop.set()
        reader.join()


def lanes_latency(
    bootstrap: str, topic: str, rate_per_s: int, seconds: float, value_bytes: int, *, acks: str
) -> Latencies:
    schedule = _Schedule(rate_per_s, seconds, value_bytes)

    def read(ready: Callable[[], None], reading: Callable[[], bool]) -> None:
        with lanes.Consumer(bootstrap, fetch_max_wait_ms=100) as consumer:
            consumer.assign([lanes.TopicPartition(topic, 0)])
            consumer.seek_to_end()
            consumer.position(lanes.TopicPartition(topic, 0))
            ready()
            while reading():
                schedule.on_seen([record.value for record in consumer.poll(timeout_ms=100) if record.value])

    with _reading(schedule, read):
        with lanes.Producer(bootstrap, acks=acks, enable_idempotence=acks == "all", linger_ms=0) as producer:
            producer.send(topic, schedule.value(-1)).result(timeout=30)  # warm: metadata, producer id

            def send_tick(sequences: range) -> None:
                for sequence in sequences:
                    producer.send(topic, schedule.value(sequence)).add_done_callback(
                        lambda _f, sequence=sequence: schedule.on_ack(sequence)
                    )

            _run_schedule(schedule, send_tick)
        schedule.all_seen.wait(_DRAIN_TIMEOUT_S)
    return schedule.result()


def kafka_latency(
    bootstrap: str, topic: str, rate_per_s: int, seconds: float, value_bytes: int, *, acks: str
) -> Latencies:
    schedule = _Schedule(rate_per_s, seconds, value_bytes)

    def read(ready: Callable[[], None], reading: Callable[[], bool]) -> None:
        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"latency-{topic}", "enable.auto.commit": False}
        )
        try:
            deadline = time.monotonic() + 30
            while True:  # a topic just created reaches every node's metadata a moment later
                try:
                    _low, end = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0), timeout=5)
                    break
                except confluent_kafka.KafkaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            consumer.assign([confluent_kafka.TopicPartition(topic, 0, end)])  # at the end, resolved now
            ready()
            while reading():
                # poll returns as soon as a record is there (consume(n) waits for n or its timeout),
                # then whatever else is there joins it
                first = consumer.poll(0.1)
                if first is not None:
                    batch = [first, *consumer.consume(1000, 0)]
                    schedule.on_seen([m.value() for m in batch if m.error() is None and m.value()])
        finally:
            consumer.close()

    producer = kafka_producer(bootstrap, acks=acks, **{"linger.ms": 0})
    reporting = threading.Event()

    def serve_reports() -> None:  # librdkafka calls back only from poll
        while not reporting.is_set():
            producer.poll(0.05)

    reports = threading.Thread(target=serve_reports, name="kafka-delivery-reports")
    with _reading(schedule, read):
        producer.produce(topic, schedule.value(-1))
        producer.flush(30)  # warm: metadata, producer id
        reports.start()
        try:

            def send_tick(sequences: range) -> None:
                for sequence in sequences:
                    producer.produce(
                        topic,
                        schedule.value(sequence),
                        on_delivery=lambda error, _m, sequence=sequence: error is None and schedule.on_ack(sequence),
                    )

            _run_schedule(schedule, send_tick)
            schedule.all_seen.wait(_DRAIN_TIMEOUT_S)
            producer.flush(30)
        finally:
            reporting.set()
            reports.join()
    return schedule.result()


def redis_latency(address: str, stream: str, rate_per_s: int, seconds: float, value_bytes: int) -> Latencies:
    schedule = _Schedule(rate_per_s, seconds, value_bytes)
    host, port = address.split(":")
    producer = redis.Redis(host=host, port=int(port))
    producer.xadd(stream, {b"v": schedule.value(-1)})
    stop = threading.Event()

    def consume() -> None:
        reader = redis.Redis(host=host, port=int(port))
        last = producer.xinfo_stream(stream)["last-generated-id"]
        while not stop.is_set() and not schedule.all_seen.is_set():
            answer = reader.xread({stream: last}, count=1000, block=100)
            if answer:
                entries = answer[0][1]
                last = entries[-1][0]
                schedule.on_seen([fields[b"v"] for _id, fields in entries])
        reader.close()

    reader_thread = threading.Thread(target=consume, name="latency-consumer")
    reader_thread.start()
    try:

        def send_tick(sequences: range) -> None:
            pipe = producer.pipeline(transaction=False)
            for sequence in sequences:
                pipe.xadd(stream, {b"v": schedule.value(sequence)})
            pipe.execute()
            for sequence in sequences:
                schedule.on_ack(sequence)

        _run_schedule(schedule, send_tick)
        schedule.all_seen.wait(_DRAIN_TIMEOUT_S)
    finally:
        stop.set()
        reader_thread.join()
        producer.close()
    return schedule.result()


async def _nats_latency(address: str, subject: str, rate_per_s: int, seconds: float, value_bytes: int) -> Latencies:
    schedule = _Schedule(rate_per_s, seconds, value_bytes)
    connection = await nats.connect(f"nats://{address}")
    stream = connection.jetstream(publish_async_max_pending=4_000)
    await stream.add_stream(StreamConfig(name=subject.replace(".", "-"), subjects=[subject], storage=StorageType.FILE))
    subscription = await stream.pull_subscribe(
        subject,
        durable=None,
        config=ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.NEW),
    )
    done = asyncio.Event()

    async def consume() -> None:
        while not done.is_set() and not schedule.all_seen.is_set():
            try:
                messages = await subscription.fetch(1000, timeout=0.1)
            except TimeoutError:
                continue
            schedule.on_seen([message.data for message in messages])

    reader = asyncio.create_task(consume())
    try:
        schedule.start = time.perf_counter() + 0.05
        for first in schedule.ticks():
            pause = schedule.due(first) - time.perf_counter()
            if pause > 0:
                await asyncio.sleep(pause)
            for sequence in schedule.tick_records(first):
                ack = await stream.publish_async(subject, schedule.value(sequence))
                ack.add_done_callback(lambda _f, sequence=sequence: schedule.on_ack(sequence))
        await stream.publish_async_completed()
        deadline = time.monotonic() + _DRAIN_TIMEOUT_S
        while not schedule.all_seen.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    finally:
        done.set()
        await reader
        await connection.close()
    return schedule.result()


def nats_latency(address: str, subject: str, rate_per_s: int, seconds: float, value_bytes: int) -> Latencies:
    return asyncio.run(_nats_latency(address, subject, rate_per_s, seconds, value_bytes))
