"""A partition's fetch buffer (``_Buffered``) and the fetcher's polls over several of them:
fetched batches are checked whole when they arrive and stay wire bytes until a poll takes their
records; what polls take is exactly what decoding every fetch at once gave, in order, from each
fetch's start; the count and the next fetch's offset come from the checked batch headers; a
record section that does not decode raises at the take that reaches it, after the records before
it were returned; polls take from every partition with records in turn."""

from __future__ import annotations

import asyncio
import random
import struct
from typing import cast

import pytest
from crc32c import crc32c

from lanes.client._cluster import ClusterView
from lanes.client._fetcher import ConsumerRecord, Fetcher, _Buffered
from lanes.clock import SystemClock
from lanes.errors import CorruptRecordError
from lanes.protocol.records import (
    BatchHeader,
    Record,
    TimestampType,
    decode_batches,
    encode_batch,
    read_header,
    stamp_log_append_time,
)
from lanes.topic_partition import TopicPartition


def batch(first: int, count: int, *, step: int = 1, epoch: int = 3, **options: object) -> bytes:
    records = [Record(first + i * step, 1_000 + i, b"k%d" % (first + i * step), b"v" * 10) for i in range(count)]
    return encode_batch(records, base_offset=first, partition_leader_epoch=epoch, **options)  # type: ignore[arg-type]


def with_bad_record(data: bytes) -> bytes:
    """``data`` (one batch) with its first record's length varint made to overrun the section,
    and a CRC that matches: it passes the batch checks and fails decoding."""
    broken = bytearray(data)
    broken[61] = 0x7E  # zigzag 63: longer than the record
    struct.pack_into(">I", broken, 17, crc32c(bytes(broken[21:])))
    return bytes(broken)


def expected(data: bytes, start: int) -> list[ConsumerRecord]:
    def trailer(header: BatchHeader) -> tuple[str, int, TimestampType, int]:
        return ("t", 2, header.timestamp_type, header.partition_leader_epoch)

    records: list[ConsumerRecord] = []
    for decoded in decode_batches(data, record_type=ConsumerRecord, trailer=trailer):
        records.extend(r for r in decoded.records if r.offset >= start)  # type: ignore[misc]
    return records


def test_polls_take_what_decoding_each_fetch_gives_in_order_over_random_fetches_and_poll_sizes() -> None:
    rng = random.Random(7)
    for _ in range(50):
        buffered = _Buffered("t", 2, 0)
        wanted: list[ConsumerRecord] = []
        taken: list[ConsumerRecord] = []
        offset = 0
        for _ in range(rng.randint(1, 4)):
            start = offset + rng.randint(0, 2)  # the first batch may begin before the fetch's start
            data = b"".join(batch(offset + 10 * i, rng.randint(1, 10)) for i in range(rng.randint(1, 5)))
            offset = decode_batches(data)[-1].header.next_offset
            buffered.add(data, start)
            wanted += expected(data, start)
            assert buffered.end_offset == offset
            taken += buffered.take(rng.randint(1, 7))
        assert len(buffered) >= len(wanted) - len(taken)
        while buffered:
            chunk = buffered.take(rng.randint(1, 7))
            assert chunk or not buffered
            taken += chunk
        assert taken == wanted
        assert len(buffered) == 0


def test_the_headers_count_the_records_and_nothing_is_decoded_before_a_take() -> None:
    buffered = _Buffered("t", 2, 0)
    assert buffered.add(batch(0, 5) + batch(5, 5), 3) == 7
    assert len(buffered) == 7
    assert buffered._decoded == []
    assert [r.offset for r in buffered.take(4)] == [3, 4, 5, 6]
    assert len(buffered) == 3


def test_a_compacted_batch_counts_its_offsets_until_decoded_then_exactly() -> None:
    buffered = _Buffered("t", 2, 0)
    buffered.add(batch(0, 3, step=4, last_offset_delta=9), 0)  # offsets 0, 4, 8 of 0..9
    assert len(buffered) == 3
    assert buffered.end_offset == 10
    assert [r.offset for r in buffered.take(10)] == [0, 4, 8]
    assert not buffered


def test_log_append_time_gives_every_record_the_brokers_time() -> None:
    data = bytearray(batch(0, 3))
    stamp_log_append_time(data, [read_header(data)], 99_000)
    buffered = _Buffered("t", 2, 0)
    buffered.add(bytes(data), 0)
    records = buffered.take(3)
    assert {(r.timestamp, r.timestamp_type) for r in records} == {(99_000, TimestampType.LOG_APPEND_TIME)}
    assert records[0][5:] == ("t", 2, TimestampType.LOG_APPEND_TIME, 3)


def test_records_before_a_section_that_does_not_decode_come_first_then_it_raises_at_each_take() -> None:
    buffered = _Buffered("t", 2, 0)
    buffered.add(batch(0, 2) + with_bad_record(batch(2, 2)), 0)
    assert [r.offset for r in buffered.take(5)] == [0, 1]
    for _ in range(2):
        with pytest.raises(CorruptRecordError, match="of the records section"):
            buffered.take(5)
    assert len(buffered) == 2


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: data[:-1], "truncated"),
        (lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]), "CRC"),
        (lambda data: data[:8] + struct.pack(">i", -100) + data[12:], "batchLength"),
    ],
)
def test_a_fetch_whose_batches_do_not_check_out_is_refused_whole_when_it_arrives(damage: object, message: str) -> None:
    buffered = _Buffered("t", 2, 0)
    with pytest.raises(CorruptRecordError, match=message):
        buffered.add(batch(0, 2) + damage(batch(2, 3)), 0)  # type: ignore[operator]
    assert not buffered
    assert buffered.end_offset == 0


def test_batches_whose_offsets_go_back_are_refused() -> None:
    with pytest.raises(CorruptRecordError, match="before the previous batch's end"):
        _Buffered("t", 2, 0).add(batch(10, 2) + batch(5, 2), 0)


def fetcher(max_poll_records: int) -> Fetcher:
    """A fetcher whose buffers the tests fill; ``_take`` reads no cluster."""
    return Fetcher(
        cast(ClusterView, None),
        group_id=None,
        auto_offset_reset="earliest",
        fetch_min_bytes=1,
        fetch_max_wait_ms=500,
        fetch_max_bytes=50 << 20,
        max_partition_fetch_bytes=1 << 20,
        max_poll_records=max_poll_records,
        request_timeout_s=30,
        clock=SystemClock(),
    )


def fill(fetcher: Fetcher, partition: int, data: bytes) -> TopicPartition:
    key = TopicPartition("t", partition)
    fetcher.positions[key] = 0
    fetcher._buffer[key] = _Buffered("t", partition, 0)
    fetcher._buffer[key].add(data, 0)
    return key


def test_polls_take_from_every_partition_with_records_in_turn() -> None:
    polls = fetcher(max_poll_records=10)
    for partition in range(4):
        fill(polls, partition, batch(0, 30))
    served = [{r.partition for r in polls._take()} for _ in range(4)]
    assert served == [{0}, {1}, {2}, {3}]
    assert {r.partition for r in polls._take()} == {0}


def test_a_partition_that_fails_to_decode_raises_from_the_next_poll_on_as_kafkas_consumer_does() -> None:
    polls = fetcher(max_poll_records=10)
    fill(polls, 0, batch(0, 5))
    bad = fill(polls, 1, with_bad_record(batch(0, 5)))
    later = fill(polls, 2, batch(0, 30))
    assert [r.partition for r in polls._take()] == [0] * 5, "partition 0's records, then 1 raised"
    for _ in range(2):  # until the application seeks past the batch
        with pytest.raises(CorruptRecordError, match="of the records section"):
            polls._take()
    assert polls.positions[bad] == 0
    assert len(polls._buffer[later]) == 30


def test_a_fetch_that_brought_records_starts_the_next_until_fetch_max_bytes_wait_and_an_empty_one_does_not() -> None:
    """The read-ahead (``_start_fetch``, ``_fetched``), with fetches that buffer what a broker's
    answers would: 30 records each, five times, then nothing (caught up)."""

    async def scenario() -> None:
        polls = fetcher(max_poll_records=30)
        size = len(batch(0, 30))
        polls._max_bytes = 3 * size  # three fetches may wait to be decoded
        key = TopicPartition("t", 0)
        polls.positions[key] = 0
        sizes: list[int] = []

        async def fetch(partitions: list[TopicPartition], max_wait_ms: int) -> None:
            polls._last_fetch_records = 0
            offset = polls._fetch_offset(key)
            data = batch(offset, 30) if len(sizes) < 5 else b""
            sizes.append(len(data))
            polls._buffer_fetched(key, offset, "t", data)

        async def settle() -> None:
            for _ in range(20):
                await asyncio.sleep(0)

        polls._fetch = fetch  # type: ignore[method-assign]
        polls._start_fetch(0)
        await settle()
        assert len(sizes) == 3, "each fetch started the next until three waited"
        assert [r.offset for r in polls._take()] == list(range(30))
        polls._start_fetch(0)  # as a poll does when it returns
        await settle()
        assert len(sizes) == 4
        assert len(polls._take()) + len(polls._take()) == 60
        polls._start_fetch(0)
        await settle()
        assert len(sizes) == 6
        assert sizes[-1] == 0, "the empty answer (caught up) started no other"
        assert polls._prefetch is not None
        assert polls._prefetch.done()

    asyncio.run(scenario())
