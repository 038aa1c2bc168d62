"""An acks=all workload on one partition and the checkers that judge it after a fault.

``PartitionWorkload`` runs, in threads of the test process:

- ``producers`` idempotent producers (acks=all), each sending numbered values ``p<n>-<seq>`` to
  the partition at a steady pace, recording for every record when it was sent and when and where
  it was acknowledged, or when and why it failed;
- a tail consumer (assigned, not in a group) recording every (offset, value) it is handed;

both Lanes' clients, or with ``kafka_bootstrap`` confluent-kafka's (librdkafka) through the brokers'
Kafka listeners, as the cluster's admin user over SASL_SSL;
- a sampler asking every broker, every 100 ms, for each replica's high-water mark (DescribeLogs).

``check(final_log)`` then asserts, against the partition as read back in full after the fault:

- every acknowledged record is in the log exactly once, at the offset it was acknowledged with;
- no value is in the log twice (idempotence), and each producer's records are in send order;
- the tail consumer's offsets have no gap and each record it was handed is still in the log, at
  the same offset (nothing readable was later gone);
- no replica's high-water mark ever moved backwards (within one process's life).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import confluent_kafka
import grpc

import lanes
from lanes import TlsFiles, UserPassword
from lanes.security.scram import DEFAULT_MECHANISM
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, broker_pb2_grpc
from tests.integration.processes import client_channel


@dataclass
class Send:
    """One record a producer sent."""

    producer: int
    seq: int
    sent_at: float
    acked_at: float | None = None
    offset: int = -1
    failed_at: float | None = None
    error: str = ""

    @property
    def value(self) -> bytes:
        return f"p{self.producer}-{self.seq}".encode()


@dataclass
class Samples:
    """High-water marks seen per broker address, in sampling order, one list per stretch of
    answers: a broker that did not answer (killed, then restarted at the same address) starts a
    new list, since a restarted replica's mark starts again from its checkpoint."""

    by_broker: dict[str, list[list[tuple[float, int]]]] = field(default_factory=dict)


class PartitionWorkload:
    """See the module docstring. Start with ``start()``, end with ``stop()``."""

    def __init__(
        self,
        bootstrap: str,
        brokers: Sequence[str],
        topic: str,
        partition: int = 0,
        *,
        producers: int = 2,
        interval_s: float = 0.005,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        kafka_bootstrap: str | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.kafka_bootstrap = kafka_bootstrap
        self.brokers = list(brokers)
        self.topic = topic
        self.partition = partition
        self.interval_s = interval_s
        self.request_timeout_ms = request_timeout_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.sends: list[list[Send]] = [[] for _ in range(producers)]
        self.consumed: list[tuple[float, int, bytes]] = []
        self.samples = Samples()
        self._stopping = threading.Event()
        self._stop_consuming = threading.Event()
        produce, consume = (
            (self._produce, self._consume)
            if kafka_bootstrap is None
            else (
                self._produce_kafka,
                self._consume_kafka,
            )
        )
        self._threads = [threading.Thread(target=produce, args=(n,), daemon=True) for n in range(producers)]
        self._threads.append(threading.Thread(target=self._sample, daemon=True))
        self._consumer_thread = threading.Thread(target=consume, daemon=True)
        self.errors: list[BaseException] = []
        self.stopped_at = float("inf")  # when stop() was called: the end of every silence

    # -----------------------------------------------------------------------------------------
    # running

    def start(self) -> None:
        for thread in [*self._threads, self._consumer_thread]:
            thread.start()

    def stop(self) -> None:
        """Stop sending, wait for every send's outcome, let the consumer catch up, stop it."""
        self.stopped_at = time.time()
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=self.delivery_timeout_ms / 1000 + 30)
        acked = self.acknowledged()
        end = max((s.offset for s in acked), default=-1) + 1
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not self.consumed or self.consumed[-1][1] < end - 1):
            time.sleep(0.05)
        self._stop_consuming.set()
        self._consumer_thread.join(timeout=30)
        if self.errors:
            raise self.errors[0]

    def _produce(self, producer_index: int) -> None:
        try:
            with lanes.Producer(
                self.bootstrap,
                request_timeout_ms=self.request_timeout_ms,
                delivery_timeout_ms=self.delivery_timeout_ms,
                linger_ms=2,
            ) as producer:
                for seq in itertools.count():
                    if self._stopping.is_set():
                        break
                    send = Send(producer_index, seq, time.time())
                    future = producer.send(self.topic, send.value, partition=self.partition)
                    future.add_done_callback(lambda f, s=send: self._settled(s, f))  # type: ignore[misc]
                    self.sends[producer_index].append(send)
                    time.sleep(self.interval_s)
                producer.flush()
        except BaseException as exc:
            self.errors.append(exc)

    def _kafka_settings(self, **settings: object) -> dict[str, object]:
        """confluent-kafka's settings for this cluster: its Kafka listeners, as its admin user
        (``clients_of``' environment) over SASL_SSL, or plaintext."""
        assert self.kafka_bootstrap is not None
        tls, user = TlsFiles.from_environment(), UserPassword.from_environment()
        secure: dict[str, object] = {}
        if tls is not None and user is not None:
            secure = {
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": DEFAULT_MECHANISM,  # (the admin's)
                "sasl.username": user.username,
                "sasl.password": user.password,
                "ssl.ca.location": str(tls.ca_file),
            }
        return {"bootstrap.servers": self.kafka_bootstrap, **secure, **settings}

    def _produce_kafka(self, producer_index: int) -> None:
        """``_produce`` with confluent-kafka's idempotent producer."""
        try:
            producer = confluent_kafka.Producer(
                self._kafka_settings(
                    **{
                        "enable.idempotence": True,
                        "acks": "all",
                        "linger.ms": 2,
                        "request.timeout.ms": self.request_timeout_ms,
                        "message.timeout.ms": self.delivery_timeout_ms,
                    }
                )
            )
            for seq in itertools.count():
                if self._stopping.is_set():
                    break
                send = Send(producer_index, seq, time.time())
                producer.produce(
                    self.topic,
                    send.value,
                    partition=self.partition,
                    on_delivery=lambda e, m, s=send: _delivered(s, e, m),
                )
                self.sends[producer_index].append(send)
                producer.poll(0)
                time.sleep(self.interval_s)
            producer.flush(self.delivery_timeout_ms / 1000 + 10)
        except BaseException as exc:
            self.errors.append(exc)

    def _consume_kafka(self) -> None:
        """``_consume`` with confluent-kafka's consumer (assigned, no group)."""
        try:
            consumer = confluent_kafka.Consumer(
                self._kafka_settings(**{"group.id": "tail", "enable.auto.commit": False})
            )
            consumer.assign(
                [confluent_kafka.TopicPartition(self.topic, self.partition, confluent_kafka.OFFSET_BEGINNING)]
            )
            try:
                while not self._stop_consuming.is_set():
                    message = consumer.poll(0.2)
                    if message is not None and not message.error():
                        self.consumed.append((time.time(), message.offset(), message.value() or b""))
            finally:
                consumer.close()
        except BaseException as exc:
            self.errors.append(exc)

    @staticmethod
    def _settled(send: Send, future: lanes.RecordFuture) -> None:
        error = future.exception()
        if error is None:
            send.offset = future.result().offset
            send.acked_at = time.time()
        else:
            send.error = f"{type(error).__name__}: {error}"
            send.failed_at = time.time()

    def _consume(self) -> None:
        try:
            with lanes.Consumer(self.bootstrap, auto_offset_reset="earliest", request_timeout_ms=5_000) as consumer:
                consumer.assign([TopicPartition(self.topic, self.partition)])
                while not self._stop_consuming.is_set():
                    for record in consumer.poll(200):
                        self.consumed.append((time.time(), record.offset, record.value or b""))
        except BaseException as exc:
            self.errors.append(exc)

    def _sample(self) -> None:
        async def sample_forever() -> None:
            channels = {address: client_channel(address) for address in self.brokers}
            try:
                while not self._stopping.is_set():
                    for address, channel in channels.items():
                        try:
                            described = await broker_pb2_grpc.BrokerStub(channel).DescribeLogs(
                                broker_pb2.DescribeLogsRequest(topics=[self.topic]), timeout=0.5
                            )
                        except grpc.aio.AioRpcError:
                            lives = self.samples.by_broker.setdefault(address, [[]])
                            if lives[-1]:
                                lives.append([])  # whatever answers next may be a new process
                            continue
                        for replica in described.replicas:
                            if replica.partition == self.partition:
                                lives = self.samples.by_broker.setdefault(address, [[]])
                                lives[-1].append((time.time(), replica.high_watermark))
                    await asyncio.sleep(0.1)
            finally:
                for channel in channels.values():
                    await channel.close()

        asyncio.run(sample_forever())

    # -----------------------------------------------------------------------------------------
    # results

    def all_sends(self) -> list[Send]:
        return [s for sends in self.sends for s in sends]

    def acknowledged(self) -> list[Send]:
        return [s for s in self.all_sends() if s.acked_at is not None]

    def failed(self) -> list[Send]:
        return [s for s in self.all_sends() if s.failed_at is not None]

    def longest_write_silence(self, moment: float) -> float | None:
        """The longest time without an acknowledgement from ``moment`` (a fault) on (None if
        nothing was acknowledged after it): how long writes took to recover."""
        return _longest_silence(
            moment, [s.acked_at for s in self.all_sends() if s.acked_at is not None], self.stopped_at
        )

    def recovered_at(self, moment: float) -> float:
        """When writes recovered from a fault at ``moment``: the first acknowledgement of a record
        sent a second after it (what was in flight at the fault may be acknowledged at once);
        infinity if none was."""
        acks = [s.acked_at for s in self.all_sends() if s.sent_at > moment + 1 and s.acked_at is not None]
        return min(acks, default=float("inf"))

    def longest_read_silence(self, moment: float) -> float | None:
        """The longest time from ``moment`` on without a record reaching the tail consumer."""
        return _longest_silence(moment, [at for at, _, _ in self.consumed], self.stopped_at)

    def read_partition(self) -> list[tuple[int, bytes]]:
        """The whole partition up to its high-water mark, from its current leader."""
        tp = TopicPartition(self.topic, self.partition)
        with lanes.Consumer(self.bootstrap, auto_offset_reset="earliest") as consumer:
            consumer.assign([tp])
            end = consumer.end_offsets([tp])[tp]
            records: list[tuple[int, bytes]] = []
            deadline = time.monotonic() + 60
            while (not records or records[-1][0] < end - 1) and time.monotonic() < deadline:
                records.extend((r.offset, r.value or b"") for r in consumer.poll(500))
        assert not records or records[-1][0] >= end - 1, f"could not read the partition to {end}"
        return records

    def check(self, final_log: list[tuple[int, bytes]]) -> None:
        """The checkers of the module docstring."""
        at_offset = dict(final_log)
        offsets_of: dict[bytes, list[int]] = {}
        for offset, value in final_log:
            offsets_of.setdefault(value, []).append(offset)
        duplicated = {v: o for v, o in offsets_of.items() if len(o) > 1}
        assert not duplicated, f"{len(duplicated)} values are in the log twice, e.g. {list(duplicated.items())[:3]}"
        acked = self.acknowledged()
        lost = [s for s in acked if s.value not in offsets_of]
        assert not lost, f"{len(lost)} of {len(acked)} acknowledged records lost, e.g. {lost[:3]}"
        moved = [s for s in acked if offsets_of[s.value] != [s.offset]]
        assert not moved, f"{len(moved)} records acknowledged at another offset, e.g. {moved[:3]}"
        for sends in self.sends:
            offsets = [offsets_of[s.value][0] for s in sends if s.value in offsets_of]
            assert offsets == sorted(offsets), f"producer {sends[0].producer}'s records are out of send order"
        seen = [offset for _, offset, _ in self.consumed]
        first = seen[0] if seen else 0
        gaps = [(a, b) for a, b in itertools.pairwise(seen) if b != a + 1]
        assert not gaps, f"the tail consumer skipped or repeated offsets: {gaps[:5]} (from {first})"
        vanished = [(o, v) for _, o, v in self.consumed if at_offset.get(o) != v]
        assert not vanished, f"{len(vanished)} records were read and later gone, e.g. {vanished[:3]}"
        for address, lives in self.samples.by_broker.items():
            backwards = [(a, b) for marks in lives for a, b in itertools.pairwise(marks) if b[1] < a[1]]
            assert not backwards, f"{address}: the high-water mark moved backwards: {backwards[:3]}"


def _delivered(send: Send, error: object, message: object) -> None:
    """confluent-kafka's delivery report of ``send``."""
    if error is None:
        send.offset = message.offset()  # type: ignore[attr-defined]
        send.acked_at = time.time()
    else:
        send.error = str(error)
        send.failed_at = time.time()


def _longest_silence(moment: float, times: list[float], end: float) -> float | None:
    """The longest gap between ``moment``, the ``times`` after it and ``end`` (None: no time after
    ``moment``, nothing resumed)."""
    after = sorted(t for t in times if moment < t <= end)
    if not after:
        return None
    return max(b - a for a, b in itertools.pairwise([moment, *after, end]))
