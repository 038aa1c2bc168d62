"""A fetch's sizes and wait are capped by the broker, the record bytes consumer fetches hold come
out of one budget, and a long-poll reads each byte once: what arrived since its last pass
(issue #23: fetches asking for 2 GiB re-read a whole partition on every append)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lanes.broker.consumer_fetch import ConsumerFetch
from lanes.broker.fetch_limits import MAX_WAIT_MS_CAP, FetchLimits, FetchMemory
from lanes.broker.partition import Partition
from lanes.errors import ErrorCode
from lanes.protocol.records import decode_batches
from lanes.rpc.wire import wire_error
from lanes.runtime.broadcast import KeyedBroadcast
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2
from tests.unit.test_partition import KEY, fill, lead, open_partition, produce


def test_sizes_and_wait_are_capped_and_min_bytes_is_within_reach() -> None:
    huge = FetchLimits.clamp(2**31 - 1, 2**31 - 1, 2**31 - 1, cap_bytes=1000)
    assert huge == FetchLimits(max_bytes=1000, min_bytes=1000, max_wait_ms=MAX_WAIT_MS_CAP)
    assert FetchLimits.clamp(0, 0, -5, cap_bytes=1000) == FetchLimits(1000, 1, 0)
    assert FetchLimits.clamp(500, 10, 200, cap_bytes=1000) == FetchLimits(500, 10, 200)


def test_fetch_memory_grants_what_is_left_and_holds_what_reads_took() -> None:
    memory = FetchMemory(100)
    assert memory.grant(60) == 60
    assert memory.grant(60) == 40
    assert memory.grant(1) == 0  # nothing left: the fetch reads nothing and waits
    memory.settle(40, 55)  # a first batch larger than the grant
    assert memory.held_bytes == 115
    memory.settle(60, 0)  # the fetches answered: all they held goes back
    memory.settle(55, 0)
    assert memory.held_bytes == 0
    assert memory.grant(1) == 1
    with pytest.raises(AssertionError, match="below zero"):
        memory.settle(2, 0)


def fetch_request(offset: int, partition_max_bytes: int = 0) -> broker_pb2.FetchRequest:
    return broker_pb2.FetchRequest(
        topics=[
            broker_pb2.FetchTopic(
                topic=KEY.topic,
                partitions=[
                    broker_pb2.FetchPartition(
                        partition=KEY.partition,
                        fetch_offset=offset,
                        current_leader_epoch=-1,
                        partition_max_bytes=partition_max_bytes,
                    )
                ],
            )
        ]
    )


def test_a_long_poll_reads_only_what_arrived_since_its_last_pass(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    lead(partition, 1, isr=[1, 2])  # the mark moves only as the test says
    fill(partition, end=40)  # 10 batches
    partition.log.update_high_watermark(partition.log.log_end_offset)
    fetch = ConsumerFetch(fetch_request(0), default_partition_max_bytes=1 << 20)

    def resolve(key: TopicPartition, epoch: int, offset: int) -> Partition | common_pb2.Error:
        return partition

    first = 0
    while read := fetch.read_pass(resolve, 1 << 20):  # a pass reads one segment (as Kafka's)
        first += read
    assert first == fetch.read_bytes > 0
    assert not fetch.moved({KEY: partition})
    produce(partition, 7, 40)
    assert not fetch.moved({KEY: partition})  # appended, not yet committed
    partition.log.update_high_watermark(partition.log.log_end_offset)
    assert fetch.moved({KEY: partition})
    second = fetch.read_pass(resolve, 1 << 20)
    assert 0 < second < first
    assert fetch.read_pass(resolve, 1 << 20) == 0  # nothing new: nothing read again
    response, sent = fetch.answer()
    offsets = [r.offset for b in decode_batches(response.topics[0].partitions[0].records) for r in b.records]
    assert offsets == list(range(44))
    assert sent == {KEY.topic: (first + second, 44)}


def test_a_partition_that_moves_away_keeps_what_it_read_and_answers_at_once(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    lead(partition, 1)
    fill(partition, end=8)
    partition.log.update_high_watermark(partition.log.log_end_offset)
    fetch = ConsumerFetch(fetch_request(0), default_partition_max_bytes=1 << 20)
    assert fetch.read_pass(lambda *_: partition, 1 << 20) > 0
    gone = wire_error(ErrorCode.NOT_LEADER_OR_FOLLOWER, "moved")
    assert fetch.read_pass(lambda *_: gone, 1 << 20) == 0
    assert fetch.urgent
    response, _ = fetch.answer()
    assert response.topics[0].partitions[0].error.code == ErrorCode.NONE.value
    assert response.topics[0].partitions[0].records
    fresh = ConsumerFetch(fetch_request(0), default_partition_max_bytes=1 << 20)
    fresh.read_pass(lambda *_: gone, 1 << 20)
    assert fresh.answer()[0].topics[0].partitions[0].error.code == ErrorCode.NOT_LEADER_OR_FOLLOWER.value
    assert fresh.errors == [ErrorCode.NOT_LEADER_OR_FOLLOWER.value]


def test_a_grant_of_nothing_reads_nothing_and_the_partition_limit_holds(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    lead(partition, 1)
    fill(partition, end=40)
    partition.log.update_high_watermark(partition.log.log_end_offset)
    fetch = ConsumerFetch(fetch_request(0, partition_max_bytes=1), default_partition_max_bytes=1 << 20)
    assert fetch.read_pass(lambda *_: partition, 0) == 0
    one_batch = fetch.read_pass(lambda *_: partition, 1 << 20)  # one whole batch, over the limit of 1
    assert one_batch > 1
    assert fetch.read_pass(lambda *_: partition, 1 << 20) == 0


def test_keyed_signals_wake_only_the_waiters_of_the_key_notified() -> None:
    asyncio.run(_keyed_signals())


async def _keyed_signals() -> None:
    signals: KeyedBroadcast[str] = KeyedBroadcast()
    a = signals.ticket(["a"])
    ab = signals.ticket(["a", "b"])
    b = signals.ticket(["b"])
    signals.notify("a")
    assert await a.wait(1)
    assert await ab.wait(1)
    assert not await b.wait(0.01)
    for ticket in (a, ab, b):
        ticket.close()
    assert signals.waiting_keys() == 0  # closed tickets leave nothing behind
    with signals.ticket(["c"]) as c:
        waiter = asyncio.ensure_future(c.wait(5))
        await asyncio.sleep(0)
        signals.notify_all()
        assert await waiter
    assert signals.waiting_keys() == 0
