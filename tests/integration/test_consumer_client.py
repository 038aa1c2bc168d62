"""The Consumer (free mode) against a real cluster: assign, seek, poll in order, positions,
offset lookups, pause/resume, auto_offset_reset, and a long poll that wakes up for new records."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lanes
from lanes.cli.watch import scrape, total
from lanes.client import _fetcher
from lanes.client.consumer import TopicPartition
from lanes.errors import ErrorCode, LanesError
from lanes.local.cluster import LocalCluster
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.v1.broker_pb2 import (
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchTopic,
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from lanes.v1.broker_pb2_grpc import BrokerStub
from lanes.v1.common_pb2 import ACKS_ALL
from tests.integration.processes import blocking_client_channel, running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("consumer") / "lanes", 2) as local:
        yield local


def poll_until(consumer: lanes.Consumer, count: int, timeout_s: float = 30) -> list[lanes.ConsumerRecord]:
    records: list[lanes.ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count:
        assert time.monotonic() < deadline, f"got {len(records)} of {count} records"
        records.extend(consumer.poll(timeout_ms=500))
    return records


def test_read_everything_in_order_with_positions_and_lookups(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("events", partitions=2, replication_factor=2)
    with lanes.Producer(bootstrap, batch_size=2048) as producer:
        futures = [producer.send("events", b"event-%04d" % i, key=b"k%d" % (i % 7)) for i in range(2000)]
        sent = [future.result(timeout=30) for future in futures]
    stamps = {(m.partition, m.offset): m.timestamp for m in sent}
    partitions = [TopicPartition("events", 0), TopicPartition("events", 1)]
    with lanes.Consumer(bootstrap, max_poll_records=300) as consumer:
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        records = poll_until(consumer, 2000)
        assert len(records) == 2000
        for partition in partitions:
            offsets = [r.offset for r in records if r.partition == partition.partition]
            assert offsets == list(range(len(offsets))), "every record once, in offset order"
            assert consumer.position(partition) == len(offsets)
        ends = consumer.end_offsets(partitions)
        assert ends == {p: consumer.position(p) for p in partitions}
        assert consumer.beginning_offsets(partitions) == dict.fromkeys(partitions, 0)
        middle = next(r for r in records if r.partition == 0 and r.offset == 100)
        found = consumer.offsets_for_times({partitions[0]: stamps[(0, 100)]})[partitions[0]]
        assert found is not None
        assert found[0] <= middle.offset, "the first record at or after that time"
        consumer.seek(partitions[1], 5)
        consumer.pause(partitions[0])
        again = poll_until(consumer, 10)
        assert {r.partition for r in again} == {1}, "a paused partition is not fetched"
        assert again[0].offset == 5


def test_latest_reset_and_a_long_poll_that_wakes_for_new_records(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("live", partitions=1, replication_factor=2)
    with lanes.Producer(bootstrap) as producer:
        producer.send("live", b"old").result(timeout=30)
        with lanes.Consumer(bootstrap, auto_offset_reset="latest", fetch_max_wait_ms=5000) as consumer:
            consumer.assign([TopicPartition("live", 0)])
            assert consumer.position(TopicPartition("live", 0)) == 1, "latest: after what exists"
            timer = threading.Timer(0.5, lambda: producer.send("live", b"new").result(timeout=30))
            timer.start()
            started = time.monotonic()
            records = poll_until(consumer, 1, timeout_s=20)
            timer.join()
            assert [r.value for r in records] == [b"new"]
            assert time.monotonic() - started < 10
    with pytest.raises(LanesError, match="group id is empty"):
        lanes.Consumer(bootstrap, group_id="")


def test_the_next_fetch_continues_where_the_buffer_ends(cluster: LocalCluster) -> None:
    """Polls smaller than a fetch leave records buffered; the consumer already fetches the next
    ones (from the end of its buffer, not from its position) while they are polled, so every
    record comes once, in order, and a seek drops what was read ahead."""
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("ahead", partitions=1, replication_factor=1)
    with lanes.Producer(bootstrap, batch_size=1024) as producer:
        for future in [producer.send("ahead", b"record-%04d" % i) for i in range(3000)]:
            future.result(timeout=30)
    partition = TopicPartition("ahead", 0)
    with lanes.Consumer(bootstrap, max_poll_records=70, max_partition_fetch_bytes=4096) as consumer:
        consumer.assign([partition])
        consumer.seek_to_beginning()
        first = poll_until(consumer, 1000)
        consumer.seek(partition, 500)
        rest = poll_until(consumer, 2500)
    assert [r.offset for r in first] == list(range(len(first)))
    assert [r.offset for r in rest] == list(range(500, 3000))
    assert [r.value for r in rest] == [b"record-%04d" % i for i in range(500, 3000)]


_LEFT_OPEN = """
import sys
import lanes

bootstrap, topic = sys.argv[1], sys.argv[2]
producer = lanes.Producer(bootstrap, linger_ms=60_000)  # nothing leaves before the exit
for index in range(5_000):
    producer.send(topic, b"left-open-%d" % index)
consumer = lanes.Consumer(bootstrap, group_id="left-open", auto_offset_reset="earliest")
consumer.subscribe([topic])
consumer.poll(timeout_ms=200)
lanes.Admin(bootstrap).list_topics()
print("exiting without close()", flush=True)
"""


def test_clients_left_open_deliver_and_exit_quietly(cluster: LocalCluster, tmp_path: Path) -> None:
    """Issue #39: a producer, consumer and admin never closed: at interpreter exit the producer
    delivers what it was given (as kafka-python's) and nothing is printed (no task destroyed
    pending, no traceback)."""
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("left-open", partitions=2, replication_factor=2)
    script = tmp_path / "left_open.py"
    script.write_text(_LEFT_OPEN)
    done = subprocess.run(
        [sys.executable, str(script), bootstrap, "left-open"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exiting without close()"
    assert done.stderr == "", done.stderr
    with lanes.Consumer(bootstrap) as consumer:
        ends = consumer.end_offsets([TopicPartition("left-open", p) for p in range(2)])
    assert sum(ends.values()) == 5_000


def test_a_backlog_is_read_through_fetch_streams_every_record_once_in_order(cluster: LocalCluster) -> None:
    """Decision 0050: a consumer behind reads through FetchStream calls (answers read on from where
    each ended, a cancel when its buffers are full, a seek that cancels a stream under way): every
    record once, in offset order, from where a seek put it."""
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("backlog", partitions=2, replication_factor=2)
    with lanes.Producer(bootstrap) as producer:
        for chunk in range(0, 6000, 40):  # batches of about 4 KiB (a request takes what waits: decision 0016)
            sent = [
                producer.send("backlog", b"%05d" % i + b"v" * 195, partition=i % 2) for i in range(chunk, chunk + 40)
            ]
            for future in sent:
                future.result(timeout=30)
    partitions = [TopicPartition("backlog", 0), TopicPartition("backlog", 1)]

    def streams_answered() -> float:
        samples, unreachable = scrape([str(broker["metrics"]) for broker in cluster.describe()["brokers"]])  # type: ignore[union-attr]
        assert not unreachable
        return total(samples, "lanes_rpc_duration_seconds_count", method="FetchStream")

    before = streams_answered()
    with lanes.Consumer(
        bootstrap, max_poll_records=100, max_partition_fetch_bytes=16 * 1024, fetch_max_bytes=512 * 1024
    ) as consumer:
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        first = poll_until(consumer, 2000)
        consumer.seek(partitions[0], 10)  # while a stream is under way
        rest = poll_until(consumer, 3000 - len([r for r in first if r.partition == 1]) + 2990)
    assert streams_answered() - before >= 20, "the backlog came through FetchStream answers"
    for number, partition in enumerate(partitions):
        read = [r for r in first + rest if r.partition == partition.partition]
        if number == 0:
            before_seek = [r.offset for r in first if r.partition == 0]
            assert before_seek == list(range(len(before_seek)))
            read = [r for r in rest if r.partition == 0]
            assert [r.offset for r in read] == list(range(10, 3000)), "from the seek on, once, in order"
        else:
            assert [r.offset for r in read] == list(range(3000)), "every record once, in order"
        assert all(r.value[:5] == b"%05d" % (r.offset * 2 + number) for r in read)


def _produce_one(stub: BrokerStub, topic: str, value: bytes) -> None:
    """One record, answered once the high-water mark covers it."""
    produced = stub.Produce(
        ProduceRequest(
            acks=ACKS_ALL,
            timeout_ms=5000,
            topics=[
                TopicProduceData(
                    topic=topic,
                    partitions=[
                        PartitionProduceData(
                            partition=0, records=encode_batch([Record(0, int(time.time() * 1000), None, value)])
                        )
                    ],
                )
            ],
        )
    )
    assert produced.topics[0].partitions[0].error.code == 0, produced


def test_a_following_fetch_stream_answers_each_record_as_it_is_written_until_nothing_comes(
    cluster: LocalCluster,
) -> None:
    """Decision 0052: a FetchStream that ``follow``s, at the end of the log, answers each record
    as it is written (answers that are not full do not end it: the broker long-polls again from
    where each ended), and ends with an empty answer once nothing came within ``max_wait_ms``."""
    bootstrap = str(cluster.describe()["bootstrap"])
    with lanes.Admin(bootstrap) as admin:
        admin.create_topic("followed", partitions=1, replication_factor=2)
    with lanes.Producer(bootstrap) as producer:  # once the leader serves (its retries wait for it)
        producer.send("followed", b"warm-up", partition=0).result(timeout=30)
    with lanes.Admin(bootstrap) as admin:
        leader_id = admin.describe_topic("followed").partitions[0].leader
        leader = next(f"{b.host}:{b.port}" for b in admin.describe_cluster().brokers if b.broker_id == leader_id)
    asked = FetchRequest(
        max_wait_ms=1500,
        min_bytes=1,
        max_bytes=10 * 1024 * 1024,
        follow=True,
        topics=[
            FetchTopic(
                topic="followed",
                partitions=[
                    FetchPartition(partition=0, fetch_offset=1, current_leader_epoch=-1, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )
    with blocking_client_channel(leader) as channel:
        stub = BrokerStub(channel)  # type: ignore[no-untyped-call]
        arrived: list[tuple[float, FetchPartitionResponse]] = []
        written: list[float] = []

        failures: list[BaseException] = []

        def read() -> None:
            try:
                for answer in stub.FetchStream(asked, timeout=30):
                    arrived.append((time.monotonic(), answer.topics[0].partitions[0]))
            except BaseException as exc:  # (raised below)
                failures.append(exc)

        reader = threading.Thread(target=read)
        reader.start()
        for number in range(5):
            time.sleep(0.2)
            written.append(time.monotonic())
            _produce_one(stub, "followed", b"record-%d" % number)
        reader.join(timeout=30)
        assert not reader.is_alive(), "the stream ended"
    assert not failures, failures
    with_records = [part for _, part in arrived if part.records]
    values = [record.value for part in with_records for b in decode_batches(part.records) for record in b.records]
    assert values == [b"record-%d" % number for number in range(5)], "each record once, in order"
    assert len(with_records) >= 3, "answers that were not full did not end the stream"
    assert arrived[-1][1].records == b"", "it ends with an answer that waited for nothing"
    assert arrived[-1][0] - written[-1] >= 1.2, "the last wait was a long-poll of max_wait_ms"


def test_a_caught_up_consumer_follows_through_fetch_streams_every_record_once_in_order(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consumer at the end of a partition reads what is written next through following
    FetchStream calls, several answers per call, never a unary Fetch: every record once, in
    order."""
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("tailed", partitions=1, replication_factor=2)
    calls, answers, unary = [0], [0], [0]
    fetch_from, take_answer, one = _fetcher.Fetcher._fetch_from, _fetcher.Fetcher._take_answer, _fetcher._one

    async def counted_call(self: _fetcher.Fetcher, *args: Any) -> None:
        calls[0] += 1
        await fetch_from(self, *args)

    def counted_answer(self: _fetcher.Fetcher, *args: Any) -> tuple[bool, list[int]]:
        answers[0] += 1
        return take_answer(self, *args)

    def counted_unary(call: Any) -> Any:
        unary[0] += 1
        return one(call)

    monkeypatch.setattr(_fetcher.Fetcher, "_fetch_from", counted_call)
    monkeypatch.setattr(_fetcher.Fetcher, "_take_answer", counted_answer)
    monkeypatch.setattr(_fetcher, "_one", counted_unary)
    with (
        lanes.Consumer(bootstrap, fetch_max_wait_ms=2000) as consumer,
        lanes.Producer(bootstrap, linger_ms=0) as producer,
    ):
        consumer.assign([TopicPartition("tailed", 0)])
        consumer.seek_to_end()
        assert consumer.poll(timeout_ms=300) == []
        read: list[lanes.ConsumerRecord] = []
        for number in range(200):
            producer.send("tailed", b"%03d" % number, partition=0)
            if number % 10 == 9:
                producer.flush()
                read.extend(consumer.poll(timeout_ms=0))
        read.extend(poll_until(consumer, 200 - len(read)))
    assert [r.value for r in read] == [b"%03d" % n for n in range(200)]
    assert unary[0] == 0, "no unary fetch"
    assert answers[0] > calls[0], f"several answers per call: {answers[0]} answers in {calls[0]} calls"


def test_a_fetch_stream_reads_on_while_its_answers_come_back_full(cluster: LocalCluster) -> None:
    """FetchStream on the leader: the first answer is Fetch's; while answers come back full the
    broker reads on from where each ended (every record once, in order), at most 8 answers; a
    caught-up stream is one long-poll, an error ends it."""
    bootstrap = str(cluster.describe()["bootstrap"])
    with lanes.Admin(bootstrap) as admin:
        admin.create_topic("streamed", partitions=1, replication_factor=2)
        leader_id = admin.describe_topic("streamed").partitions[0].leader
        leader = next(f"{b.host}:{b.port}" for b in admin.describe_cluster().brokers if b.broker_id == leader_id)

    def request(offset: int, partition_max_bytes: int, *, partition: int = 0, max_wait_ms: int = 0) -> FetchRequest:
        return FetchRequest(
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=10 * 1024 * 1024,
            topics=[
                FetchTopic(
                    topic="streamed",
                    partitions=[
                        FetchPartition(
                            partition=partition,
                            fetch_offset=offset,
                            current_leader_epoch=-1,
                            partition_max_bytes=partition_max_bytes,
                        )
                    ],
                )
            ],
        )

    with blocking_client_channel(leader) as channel:
        stub = BrokerStub(channel)  # type: ignore[no-untyped-call]
        for first in range(0, 400, 10):  # 40 batches of 10 records of about 1 KB
            batch = encode_batch(
                [Record(i, int(time.time() * 1000), None, b"%04d" % (first + i) + b"v" * 996) for i in range(10)]
            )
            produced = stub.Produce(
                ProduceRequest(
                    acks=ACKS_ALL,  # (the high-water mark covers them when answered)
                    timeout_ms=5000,
                    topics=[
                        TopicProduceData(
                            topic="streamed", partitions=[PartitionProduceData(partition=0, records=batch)]
                        )
                    ],
                )
            )
            assert produced.topics[0].partitions[0].error.code == 0, produced

        def answers_of(asked: FetchRequest) -> list[FetchPartitionResponse]:
            return [answer.topics[0].partitions[0] for answer in stub.FetchStream(asked)]

        backlog = answers_of(request(0, 64 * 1024))
        assert 1 < len(backlog) < 8
        values = [record.value[:4] for part in backlog for b in decode_batches(part.records) for record in b.records]
        assert values == [b"%04d" % i for i in range(400)], "every record once, in order, across the answers"
        assert all(len(part.records) >= 48 * 1024 for part in backlog[:-1]), "read on only after a full answer"
        assert len(backlog[-1].records) < 48 * 1024, "the stream ends after one that is not full"

        capped = answers_of(request(0, 12 * 1024))  # one batch each, full
        assert len(capped) == 8, "at most 8 answers"
        ends = [decode_batches(part.records)[-1].records[-1].offset for part in capped]
        assert ends == sorted(ends)

        started = time.monotonic()
        caught_up = answers_of(request(400, 64 * 1024, max_wait_ms=300))
        assert [part.records for part in caught_up] == [b""], "caught up: one long-poll"
        assert time.monotonic() - started >= 0.25, "it waited for records, as Fetch does"

        refused = answers_of(request(0, 64 * 1024, partition=7))
        assert [part.error.code for part in refused] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
