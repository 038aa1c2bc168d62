"""The Producer against a real 3-broker cluster: placement, per-partition order, typed errors, the
bounded buffer, batching while a request is in flight, the async twin. Delivery while leaders are
killed: test_leader_kills.py."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Iterator

import pytest

import lanes
import lanes.aio
from lanes.cli.watch import scrape, total
from lanes.client import _loop
from lanes.errors import MessageTooLargeError, RequestTimedOutError, UnknownTopicOrPartitionError
from lanes.local.cluster import LocalCluster
from lanes.protocol.partitioner import partition_for_key
from lanes.protocol.records import decode_batches
from lanes.v1 import broker_pb2_grpc
from tests.integration.processes import client_channel, running_cluster
from tests.integration.test_broker_process import fetch


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One cluster for the module: each test writes topics of its own, and a leader it stops it
    resumes before it ends."""
    with running_cluster(tmp_path_factory.mktemp("producer") / "lanes", 3, session_timeout_ms=2000) as local:
        yield local


def read_partition(cluster: LocalCluster, topic: str, partition: int) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of a partition, from its current leader."""

    async def read() -> list[tuple[bytes | None, bytes | None]]:
        deadline = time.monotonic() + 30
        while True:
            leader = (
                lanes.Admin(str(cluster.describe()["bootstrap"])).describe_topic(topic).partitions[partition].leader
            )
            if leader in cluster.broker_processes:
                address = cluster.broker_processes[leader].address
                async with client_channel(address) as channel:
                    stub = broker_pb2_grpc.BrokerStub(channel)
                    records: list[tuple[bytes | None, bytes | None]] = []
                    offset = 0
                    while True:
                        part = (await stub.Fetch(fetch(topic, partition, offset))).topics[0].partitions[0]
                        if part.error.code:
                            break
                        batch = [r for b in decode_batches(part.records) for r in b.records if r.offset >= offset]
                        if not batch:
                            return records
                        records.extend((r.key, r.value) for r in batch)
                        offset = batch[-1].offset + 1
            assert time.monotonic() < deadline, f"could not read {topic}-{partition}"
            await asyncio.sleep(0.1)

    return asyncio.run(read())


def test_records_land_where_the_partitioner_says_in_send_order(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("orders", partitions=3, replication_factor=3)
    with lanes.Producer(bootstrap, linger_ms=2, batch_size=4096) as producer:
        futures = [producer.send("orders", b"value-%d" % i, key=b"key-%d" % (i % 10)) for i in range(3000)]
        # ~27 KiB of keyless records close at least 6 batches by size wherever they stick, so the
        # sticky partitioner (the next partition after each such batch) visits all 3 partitions
        keyless = [producer.send("orders", b"keyless-%d" % i) for i in range(1500)]
        # the batch path (issue #39): the same placement and order as send, one call for many
        batched = producer.send_batch(
            "orders", [b"value-%d" % i for i in range(3000, 4000)], [b"key-%d" % (i % 10) for i in range(3000, 4000)]
        )
        results = [f.result(timeout=60) for f in futures + keyless]
        batched_results = [f.result(timeout=60) for f in batched]
        with pytest.raises(ValueError, match="one key per value"):
            producer.send_batch("orders", [b"a", b"b"], [b"k"])
    for index, metadata in enumerate(results[:3000]):
        assert metadata.partition == partition_for_key(b"key-%d" % (index % 10), 3)
    for index, metadata in enumerate(batched_results, start=3000):
        assert metadata.partition == partition_for_key(b"key-%d" % (index % 10), 3)
    results += batched_results
    by_partition: dict[int, list[int]] = defaultdict(list)
    for metadata in results:
        by_partition[metadata.partition].append(metadata.offset)
    assert all(offsets == sorted(offsets) for offsets in by_partition.values()), "offsets follow send order"
    assert {m.partition for m in results[3000:4500]} == {0, 1, 2}, "keyless records spread over every partition"
    stored = {p: read_partition(cluster, "orders", p) for p in range(3)}
    assert sum(len(records) for records in stored.values()) == 5500
    for key_index in range(10):
        key = b"key-%d" % key_index
        values = [v for k, v in stored[partition_for_key(key, 3)] if k == key]
        assert values == [b"value-%d" % i for i in range(key_index, 4000, 10)], "one key's records in send order"


def test_a_send_waits_a_moment_for_a_topic_that_is_being_created(cluster: LocalCluster) -> None:
    """``create`` then ``send`` at once: the brokers may learn of the topic a moment after the
    controller answered; the producer asks again for ``unknown_topic_wait_ms`` instead of failing."""
    bootstrap = str(cluster.describe()["bootstrap"])
    creating = threading.Timer(0.5, lambda: lanes.Admin(bootstrap).create_topic("late", partitions=1))
    with lanes.Producer(bootstrap, unknown_topic_wait_ms=10_000) as producer:
        creating.start()
        try:
            assert producer.send("late", b"x").result(timeout=30).offset == 0
        finally:
            creating.join()


def test_errors_are_typed(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic(
        "small", partitions=1, replication_factor=1, config={"max.message.bytes": "2048"}
    )
    with lanes.Producer(bootstrap) as producer:
        with pytest.raises(UnknownTopicOrPartitionError, match="create it first"):
            producer.send("missing", b"x").result(timeout=30)
        with pytest.raises(MessageTooLargeError, match=r"max\.message\.bytes"):
            producer.send("small", b"x" * 10_000).result(timeout=30)


def test_the_async_producer_resolves_awaitable_futures(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("events", partitions=2, replication_factor=2)

    async def produce() -> list[lanes.RecordMetadata]:
        producer = lanes.aio.Producer(bootstrap, linger_ms=1)
        try:
            futures = [await producer.send("events", b"e%d" % i, key=b"k%d" % (i % 4)) for i in range(250)]
            futures += await producer.send_batch(
                "events", [b"e%d" % i for i in range(250, 500)], [b"k%d" % (i % 4) for i in range(250, 500)]
            )
            return list(await asyncio.gather(*(_awaited(f) for f in futures)))
        finally:
            await producer.close()

    written = asyncio.run(produce())
    assert len({(m.partition, m.offset) for m in written}) == 500
    for partition in (0, 1):
        offsets = [m.offset for m in written if m.partition == partition]
        assert offsets == list(range(len(offsets)))


async def _awaited(future: lanes.RecordFuture) -> lanes.RecordMetadata:
    return await future


def test_a_full_buffer_blocks_send_then_fails_it_and_loses_nothing_sent_before(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    admin = lanes.Admin(bootstrap)
    admin.create_topic("slow", partitions=1, replication_factor=1)
    leader = cluster.broker_processes[admin.describe_topic("slow").partitions[0].leader]
    with lanes.Producer(bootstrap, acks=1, enable_idempotence=False, buffer_memory=4096, max_block_ms=300) as producer:
        producer.send("slow", b"warm-up").result(timeout=30)  # metadata known, channel open
        leader.process.send_signal(signal.SIGSTOP)
        try:
            accepted = [producer.send("slow", b"v" * 500) for _ in range(7)]  # about 3.6 KiB buffered
            started = time.monotonic()
            refused = producer.send("slow", b"v" * 500)
            blocked_s = time.monotonic() - started
            with pytest.raises(RequestTimedOutError, match="buffer"):
                refused.result(timeout=0)
            assert blocked_s >= 0.25, "send blocked for max_block_ms before failing"
            batch = producer.send_batch("slow", [b"v" * 500] * 2)  # no room for either: both fail
            with pytest.raises(RequestTimedOutError, match="buffer"):
                batch[1].result(timeout=0)
        finally:
            leader.process.send_signal(signal.SIGCONT)
        offsets = [future.result(timeout=60).offset for future in accepted]
        # a batch larger than the buffer goes in as room is freed
        assert [f.result(timeout=60).offset for f in producer.send_batch("slow", [b"w" * 500] * 20)] == list(
            range(8, 28)
        )
    assert offsets == list(range(1, 8)), "what was accepted before the buffer filled is written, in order"


def test_records_sent_while_a_batch_is_in_flight_join_one_batch(cluster: LocalCluster) -> None:
    """Linger only makes a batch ready: while the partition's previous batch is in flight the
    open batch keeps growing, so a slow round trip gives bigger batches, not a queue of tiny ones."""
    bootstrap = str(cluster.describe()["bootstrap"])
    admin = lanes.Admin(bootstrap)
    admin.create_topic("grouped", partitions=1, replication_factor=1)
    leader = cluster.broker_processes[admin.describe_topic("grouped").partitions[0].leader]
    with lanes.Producer(bootstrap, acks=1, enable_idempotence=False, linger_ms=1) as producer:
        producer.send("grouped", b"warm-up").result(timeout=30)
        leader.process.send_signal(signal.SIGSTOP)
        try:
            stuck = producer.send("grouped", b"first")
            time.sleep(0.05)  # "first" is in flight to the stopped leader
            later = []
            for index in range(40):
                later.append(producer.send("grouped", b"later-%d" % index))
                time.sleep(0.003)  # every record outlives linger_ms on its own
        finally:
            leader.process.send_signal(signal.SIGCONT)
        assert stuck.result(timeout=30).offset == 1
        assert [f.result(timeout=30).offset for f in later] == list(range(2, 42))

    async def batch_sizes() -> list[int]:
        async with client_channel(leader.address) as channel:
            answer = await broker_pb2_grpc.BrokerStub(channel).Fetch(fetch("grouped", 0, 0))
        return [len(batch.records) for batch in decode_batches(answer.topics[0].partitions[0].records)]

    assert asyncio.run(batch_sizes()) == [1, 1, 40]


def test_records_of_the_wrong_type_are_refused_at_send(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("typed", partitions=1, replication_factor=1)
    with lanes.Producer(bootstrap) as producer:
        with pytest.raises(TypeError, match="value must be bytes"):
            producer.send("typed", "text")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="header"):
            producer.send("typed", b"v", headers={"h": "text"})  # type: ignore[dict-item]
        assert producer.send("typed", b"fine").result(timeout=30).offset == 0


def wait_in_flight(producer: lanes.Producer, topic: str, partition: int, timeout_s: float = 10) -> None:
    """Until the partition's sender has taken every record sent so far, so records sent after
    this cannot join its request: wait for the open batch to close (linger), then let the client
    loop run what was queued on it before (the sender's first step takes the closed batch)."""
    accumulator = producer._producer._accumulator
    key = (topic, partition)
    deadline = time.monotonic() + timeout_s
    while True:
        with accumulator.lock:
            if key in accumulator.sending and key not in accumulator.open:
                break
        assert time.monotonic() < deadline, f"{topic}-{partition} never closed its batch"
        time.sleep(0.001)
    _loop.run(asyncio.sleep(0))


def _stored_batch_sizes(address: str, topic: str) -> list[int]:
    async def sizes() -> list[int]:
        async with client_channel(address) as channel:
            answer = await broker_pb2_grpc.BrokerStub(channel).Fetch(fetch(topic, 0, 0))
        return [len(batch.records) for batch in decode_batches(answer.topics[0].partitions[0].records)]

    return asyncio.run(sizes())


def _queue_behind_a_stopped_leader(
    cluster: LocalCluster, producer: lanes.Producer, topic: str, values: list[bytes]
) -> tuple[lanes.RecordFuture, list[lanes.RecordFuture]]:
    """Send one record to the stopped leader (in flight), then ``values`` (queued behind it)."""
    leader = cluster.broker_processes[
        lanes.Admin(str(cluster.describe()["bootstrap"])).describe_topic(topic).partitions[0].leader
    ]
    producer.send(topic, b"warm-up").result(timeout=30)
    leader.process.send_signal(signal.SIGSTOP)
    try:
        stuck = producer.send(topic, b"first")
        wait_in_flight(producer, topic, 0)
        return stuck, [producer.send(topic, value) for value in values]
    finally:
        leader.process.send_signal(signal.SIGCONT)


def test_batches_queued_behind_a_request_go_out_as_one(cluster: LocalCluster) -> None:
    """The request grows with the backlog: batches closed by size while the partition's request
    was in flight leave together, as one record batch, up to max_request_size."""
    bootstrap = str(cluster.describe()["bootstrap"])
    admin = lanes.Admin(bootstrap)
    admin.create_topic("backlog", partitions=1, replication_factor=1)
    leader = cluster.broker_processes[admin.describe_topic("backlog").partitions[0].leader]
    values = [b"%04d" % i + b"v" * 996 for i in range(60)]
    with lanes.Producer(bootstrap, batch_size=2048, max_request_size=40_000) as producer:
        stuck, queued = _queue_behind_a_stopped_leader(cluster, producer, "backlog", values)
        assert stuck.result(timeout=30).offset == 1
        assert [f.result(timeout=30).offset for f in queued] == list(range(2, 62))
    sizes = _stored_batch_sizes(leader.address, "backlog")
    assert sizes[:2] == [1, 1]
    assert sum(sizes) == 62
    assert max(sizes) > 3, f"queued batches (3 records each) were not coalesced: {sizes}"
    assert all(size <= 40 for size in sizes), f"a request went over max_request_size: {sizes}"
    assert [v for _k, v in read_partition(cluster, "backlog", 0)][2:] == values


def test_a_producer_writing_many_partitions_sends_each_broker_few_requests(cluster: LocalCluster) -> None:
    """Batches of partitions led by one broker that are ready together go out as one request per
    broker (Kafka's drain), not one per partition: 120 partitions on 3 brokers, one record each,
    in far fewer ProduceStream requests than partitions, each record at offset 0 of its own."""

    def requests_answered() -> float:
        addresses = [str(broker["metrics"]) for broker in cluster.describe()["brokers"]]  # type: ignore[union-attr]
        samples, unreachable = scrape(addresses)
        assert not unreachable
        return total(samples, "lanes_rpc_duration_seconds_count", method="ProduceStream")

    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("spread", partitions=120, replication_factor=2)
    before = requests_answered()
    with lanes.Producer(bootstrap, linger_ms=20) as producer:
        futures = [producer.send("spread", b"to-%d" % partition, partition=partition) for partition in range(120)]
        placed = [(future.result(timeout=30).partition, future.result().offset) for future in futures]
    assert placed == [(partition, 0) for partition in range(120)]
    sent = requests_answered() - before
    assert sent <= 30, f"{sent} produce requests for 120 partitions of 3 brokers"
    assert read_partition(cluster, "spread", 77) == [(None, b"to-77")]


def test_a_coalesced_batch_too_large_for_the_topic_is_sent_batch_by_batch(cluster: LocalCluster) -> None:
    """A topic whose max.message.bytes is below max_request_size refuses the coalesced batch; the
    producer sends its batches one by one instead (renumbered: idempotence still holds)."""
    bootstrap = str(cluster.describe()["bootstrap"])
    admin = lanes.Admin(bootstrap)
    admin.create_topic("narrow", partitions=1, replication_factor=1, config={"max.message.bytes": "8000"})
    values = [b"%04d" % i + b"v" * 996 for i in range(30)]
    with lanes.Producer(bootstrap, batch_size=2048) as producer:
        stuck, queued = _queue_behind_a_stopped_leader(cluster, producer, "narrow", values)
        assert stuck.result(timeout=30).offset == 1
        assert [f.result(timeout=30).offset for f in queued] == list(range(2, 32))
    assert [v for _k, v in read_partition(cluster, "narrow", 0)][2:] == values


def test_a_refused_batch_leaves_no_gap_in_the_idempotent_sequence(cluster: LocalCluster) -> None:
    """A batch the broker refuses outright was never written: its sequence numbers are reused, so
    the next batch is not refused as out of order."""
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic(
        "strict", partitions=1, replication_factor=1, config={"max.message.bytes": "2048"}
    )
    with lanes.Producer(bootstrap) as producer:
        with pytest.raises(MessageTooLargeError):
            producer.send("strict", b"x" * 10_000).result(timeout=30)
        assert [producer.send("strict", b"ok-%d" % i).result(timeout=30).offset for i in range(3)] == [0, 1, 2]


def wait_taken(producer: lanes.Producer, topic: str, partition: int, timeout_s: float = 10) -> None:
    """Until the partition's sender has taken every closed batch into a request (sent it)."""
    accumulator = producer._producer._accumulator
    key = (topic, partition)
    deadline = time.monotonic() + timeout_s
    while True:
        with accumulator.lock:
            if not accumulator.queues.get(key):
                break
        assert time.monotonic() < deadline, f"{topic}-{partition}: the sender never took its batches"
        time.sleep(0.001)
    _loop.run(asyncio.sleep(0))


def wait_stream_given_up(producer: lanes.Producer, timeout_s: float = 10) -> None:
    """Until the producer gave up on a produce stream (an answer took longer than the request
    timeout), read on the client's loop, which owns the streams."""
    sender = producer._producer._sender

    async def given_up() -> bool:
        return any(stream.broken for stream in sender.streams.values())

    deadline = time.monotonic() + timeout_s
    while not _loop.run(given_up()):
        assert time.monotonic() < deadline, "the producer never gave up on its produce stream"
        time.sleep(0.01)


def _send_while_stopped(
    cluster: LocalCluster, producer: lanes.Producer, topic: str, batches: list[list[bytes]], window: int = 5
) -> list[list[lanes.RecordFuture]]:
    """Stop the leader; send each batch of values (each closes by size), the first ``window`` as
    a request each (the sender takes one before the next closes), the rest queued; resume the
    leader."""
    leader = cluster.broker_processes[
        lanes.Admin(str(cluster.describe()["bootstrap"])).describe_topic(topic).partitions[0].leader
    ]
    producer.send(topic, b"warm-up").result(timeout=30)
    leader.process.send_signal(signal.SIGSTOP)
    try:
        futures = []
        for index, values in enumerate(batches):
            futures.append([producer.send(topic, value) for value in values])
            if index < window:
                wait_taken(producer, topic, 0)
        return futures
    finally:
        leader.process.send_signal(signal.SIGCONT)


@pytest.mark.parametrize("in_flight", [1, 5])
def test_a_partition_keeps_its_window_of_requests_in_flight_in_order(cluster: LocalCluster, in_flight: int) -> None:
    """Up to max_in_flight_requests_per_partition requests of a partition are in flight at once
    (each batch closed while the leader is stopped leaves on its own); the rest wait and leave
    coalesced. The log holds them in send order."""
    bootstrap = str(cluster.describe()["bootstrap"])
    admin = lanes.Admin(bootstrap)
    topic = f"window-{in_flight}"
    admin.create_topic(topic, partitions=1, replication_factor=1)
    leader = cluster.broker_processes[admin.describe_topic(topic).partitions[0].leader]
    batches = [[b"%02d-%d" % (b, i) + b"v" * 996 for i in range(3)] for b in range(12)]  # 3 records close a batch
    with lanes.Producer(bootstrap, batch_size=2048, max_in_flight_requests_per_partition=in_flight) as producer:
        futures = _send_while_stopped(cluster, producer, topic, batches, in_flight)
        assert [f.result(timeout=30).offset for group in futures for f in group] == list(range(1, 37))
    assert _stored_batch_sizes(leader.address, topic) == [1] + [3] * in_flight + [36 - 3 * in_flight]
    assert [v for _k, v in read_partition(cluster, topic, 0)][1:] == [v for values in batches for v in values]


def test_a_request_refused_mid_window_leaves_no_gap_for_the_requests_behind_it(cluster: LocalCluster) -> None:
    """Idempotent producer, four requests in flight; the broker refuses the second (too large),
    so the third and fourth find a gap in the sequence (OUT_OF_ORDER_SEQUENCE_NUMBER). The producer
    renumbers and resends them: only the refused records are missing, the rest are in order."""
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("gap", partitions=1, replication_factor=1, config={"max.message.bytes": "8000"})
    batches = [[b"a-%d" % i + b"v" * 1000 for i in range(3)], [b"x" * 10_000]]
    batches += [[b"%s-%d" % (name, i) + b"v" * 1000 for i in range(3)] for name in (b"c", b"d")]
    with lanes.Producer(bootstrap, batch_size=2048) as producer:
        first, refused, third, fourth = _send_while_stopped(cluster, producer, "gap", batches)
        with pytest.raises(MessageTooLargeError):
            refused[0].result(timeout=30)
        assert [f.result(timeout=30).offset for f in first + third + fourth] == list(range(1, 10))
        assert producer.send("gap", b"after").result(timeout=30).offset == 10
    written = [v for _k, v in read_partition(cluster, "gap", 0)]
    assert written == [b"warm-up", *batches[0], *batches[2], *batches[3], b"after"]


def test_requests_whose_answers_are_lost_are_written_once(cluster: LocalCluster) -> None:
    """The leader stops longer than the request timeout with a window of requests in flight: the
    producer gives up on the stream and resends. The stopped broker still appends what it had
    received when it resumes; the resends are recognised as duplicates: each record once, in order."""
    bootstrap = str(cluster.describe()["bootstrap"])
    lanes.Admin(bootstrap).create_topic("lost", partitions=1, replication_factor=1)
    batches = [[b"%02d-%d" % (b, i) + b"v" * 996 for i in range(3)] for b in range(5)]
    with lanes.Producer(bootstrap, batch_size=2048, request_timeout_ms=500, retry_backoff_ms=20) as producer:
        leader = cluster.broker_processes[lanes.Admin(bootstrap).describe_topic("lost").partitions[0].leader]
        producer.send("lost", b"warm-up").result(timeout=30)
        leader.process.send_signal(signal.SIGSTOP)
        try:
            futures = []
            for values in batches:
                futures.extend(producer.send("lost", value) for value in values)
                wait_taken(producer, "lost", 0)
            wait_stream_given_up(producer)  # request timeout + grace passed: its requests are resent
        finally:
            leader.process.send_signal(signal.SIGCONT)
        assert [f.result(timeout=30).offset for f in futures] == list(range(1, 16))
    assert [v for _k, v in read_partition(cluster, "lost", 0)] == [b"warm-up"] + [v for vs in batches for v in vs]
