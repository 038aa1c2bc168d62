"""A fetch's sizes and wait are capped by the broker, the record bytes consumer fetches hold come
out of one budget (one user's out of its share), and a long-poll counts what arrived without
reading it, then reads once (issue #23: fetches asking for 2 GiB re-read a whole partition on
every append; issue #35: waiting fetches held the whole budget and starved other consumers)."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from lanes.broker import batched_reads, consumer_fetch
from lanes.broker.batched_reads import BatchedReads, LoopReads, NotLightError, SharedReads
from lanes.broker.consumer_fetch import ConsumerFetch
from lanes.broker.fetch_limits import MAX_WAIT_MS_CAP, FetchLimits, FetchMemory
from lanes.broker.partition import Partition
from lanes.errors import ErrorCode
from lanes.protocol.fetch_stream import answer_is_full
from lanes.protocol.records import decode_batches
from lanes.rpc.wire import wire_error
from lanes.runtime.broadcast import KeyedBroadcast
from lanes.storage import positions
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2
from tests.unit.test_partition import KEY, fill, lead, open_partition, produce


def test_sizes_and_wait_are_capped_and_min_bytes_is_within_reach() -> None:
    huge = FetchLimits.clamp(2**31 - 1, 2**31 - 1, 2**31 - 1, cap_bytes=1000)
    assert huge == FetchLimits(max_bytes=1000, min_bytes=1000, max_wait_ms=MAX_WAIT_MS_CAP)
    assert FetchLimits.clamp(0, 0, -5, cap_bytes=1000) == FetchLimits(1000, 1, 0)
    assert FetchLimits.clamp(500, 10, 200, cap_bytes=1000) == FetchLimits(500, 10, 200)


def test_fetch_memory_grants_what_is_left_and_holds_what_reads_took() -> None:
    memory = FetchMemory(100, holder_share=1.0)
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


def test_a_waiting_fetch_counts_what_arrived_without_reading_then_reads_once(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    lead(partition, 1, isr=[1, 2])  # the mark moves only as the test says
    fill(partition, end=40)  # 10 batches
    partition.log.update_high_watermark(partition.log.log_end_offset)
    fetch = ConsumerFetch(fetch_request(40), default_partition_max_bytes=1 << 20)

    def resolve(key: TopicPartition, epoch: int, offset: int) -> Partition | common_pb2.Error:
        return partition

    fetch.measure(resolve, SharedReads())
    assert fetch.available_bytes() == 0
    assert not fetch.satisfied(1)
    produce(partition, 7, 40)
    fetch.remeasure({KEY: partition})
    assert fetch.available_bytes() == 0  # appended, not yet committed
    size = partition.log.log_end_offset
    partition.log.update_high_watermark(size)
    fetch.remeasure({KEY: partition})
    arrived = fetch.available_bytes()
    assert arrived > 0
    assert fetch.satisfied(arrived)
    assert not fetch.satisfied(arrived + 1)
    assert not fetch.urgent
    assert fetch.read(resolve, 1 << 20, SharedReads()) == arrived  # what was counted is what is read
    fetched, sent = fetch.answer()
    response = fetched.message()
    offsets = [r.offset for b in decode_batches(response.topics[0].partitions[0].records) for r in b.records]
    assert offsets == list(range(40, 44))
    assert sent == {KEY.topic: (arrived, 4)}


def test_what_cannot_be_counted_without_reading_completes_the_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(positions, "RECENT_ENDS", 2)  # the log remembers its last 2-4 appends
    partition = open_partition(tmp_path)
    lead(partition, 1, isr=[1, 2])
    fill(partition, end=40)  # 10 batches of 4
    partition.log.update_high_watermark(4)
    fetch = ConsumerFetch(fetch_request(4), default_partition_max_bytes=1 << 20)
    fetch.measure(lambda *_: partition, SharedReads())
    assert not fetch.satisfied(1)
    partition.log.update_high_watermark(8)  # the end of the second batch: long forgotten
    fetch.remeasure({KEY: partition})
    assert fetch.urgent, "a high-water mark the log does not remember the position of: read"
    assert fetch.read(lambda *_: partition, 1 << 20, SharedReads()) > 0


def test_what_cannot_be_counted_is_granted_the_partitions_limit_not_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log reopened after a restart remembers no append's position: a consumer reading it from
    the start used to be granted one byte of fetch memory, and so got one batch per fetch."""
    monkeypatch.setattr(positions, "RECENT_ENDS", 2)
    partition = open_partition(tmp_path)
    lead(partition, 1, isr=[1, 2])
    fill(partition, end=40)  # 10 batches of 4
    partition.log.update_high_watermark(12)  # long forgotten
    fetch = ConsumerFetch(fetch_request(0), default_partition_max_bytes=1 << 20)
    fetch.measure(lambda *_: partition, SharedReads())
    assert fetch.urgent
    assert fetch.available_bytes() == 1 << 20, "as much as the partition may return"
    granted = min(1 << 20, fetch.available_bytes())  # as ConsumerFetches._read asks the fetch memory
    fetch.read(lambda *_: partition, granted, SharedReads())
    response = fetch.answer()[0].message()
    offsets = [r.offset for b in decode_batches(response.topics[0].partitions[0].records) for r in b.records]
    assert offsets == list(range(12))


def test_a_partition_that_moves_away_answers_its_error_at_once(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    lead(partition, 1)
    fill(partition, end=8)
    partition.log.update_high_watermark(partition.log.log_end_offset)
    gone = wire_error(ErrorCode.NOT_LEADER_OR_FOLLOWER, "moved")
    fetch = ConsumerFetch(fetch_request(0), default_partition_max_bytes=1 << 20)
    fetch.measure(lambda *_: gone, SharedReads())
    assert fetch.urgent
    assert fetch.read(lambda *_: partition, 1 << 20, SharedReads()) == 0, "a closed partition reads no more"
    assert fetch.answer()[0].message().topics[0].partitions[0].error.code == ErrorCode.NOT_LEADER_OR_FOLLOWER.value
    assert fetch.errors == [ErrorCode.NOT_LEADER_OR_FOLLOWER.value]


def test_the_partition_limit_holds_but_a_fetch_gets_one_whole_batch(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    lead(partition, 1)
    fill(partition, end=40)
    partition.log.update_high_watermark(partition.log.log_end_offset)
    fetch = ConsumerFetch(fetch_request(0, partition_max_bytes=1), default_partition_max_bytes=1 << 20)
    one_batch = fetch.read(lambda *_: partition, 1 << 20, SharedReads())
    assert one_batch > 1
    assert len(decode_batches(fetch.answer()[0].message().topics[0].partitions[0].records)) == 1


def test_one_trip_reads_identical_fetches_once(tmp_path: Path) -> None:
    partition = open_partition(tmp_path)
    lead(partition, 1)
    fill(partition, end=8)
    partition.log.update_high_watermark(partition.log.log_end_offset)
    shared = SharedReads()
    reads = []
    read = partition.log.read

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(args)
        return read(*args, **kwargs)

    partition.log.read = counted  # type: ignore[method-assign]
    fetches = [ConsumerFetch(fetch_request(0), default_partition_max_bytes=1 << 20) for _ in range(3)]
    for fetch in fetches:
        fetch.read(lambda *_: partition, 1 << 20, shared)
    assert len(reads) == 1, "one read for three identical fetches"
    answers = {fetch.answer()[0].message().topics[0].partitions[0].records for fetch in fetches}
    assert len(answers) == 1
    assert answers != {b""}


def test_one_holder_holds_at_most_its_share_of_the_fetch_memory() -> None:
    memory = FetchMemory(100, holder_share=0.5)
    assert memory.grant(80, "User:greedy") == 50
    assert memory.grant(10, "User:greedy") == 0
    assert memory.grant(80, "User:other") == 50
    memory.settle(50, 0, "User:greedy")
    assert memory.held_by("User:greedy") == 0
    assert memory.held_bytes == 50


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


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The worker-thread trips ``BatchedReads`` makes: the jobs in each, in order."""
    made: list[int] = []
    run_all = batched_reads._run_all

    def counted(jobs: list[Any]) -> list[tuple[bool, Any]]:
        made.append(len(jobs))
        return run_all(jobs)

    monkeypatch.setattr(batched_reads, "_run_all", counted)
    return made


def test_a_caught_up_fetch_reads_on_the_loop_and_any_other_runs_again_whole_in_a_trip(
    tmp_path: Path, trips: list[int]
) -> None:
    """Decisions 0042 and 0048: a fetch from where a recent append (or read) ended is measured
    and read on the event loop; one that is not is run again from the start off the loop, and
    answers the same as if it had gone there at once (a half-done run on the loop leaves nothing
    behind)."""
    partition = open_partition(tmp_path)
    lead(partition, 1)
    fill(partition, end=40)  # 10 batches of 4
    partition.log.update_high_watermark(partition.log.log_end_offset)

    def _answered(partition, offset: int, reads: Any) -> tuple[int, bytes]:
        fetch = ConsumerFetch(fetch_request(offset), default_partition_max_bytes=1 << 20)
        fetch.measure(lambda *_: partition, reads)
        read = fetch.read(lambda *_: partition, 1 << 20, reads)
        return read, fetch.answer()[0].message().topics[0].partitions[0].records

    caught_up = 36  # the start of the last batch: where the append before it ended
    assert _answered(partition, caught_up, LoopReads()) == _answered(partition, caught_up, SharedReads())
    with pytest.raises(NotLightError):
        _answered(partition, 2, LoopReads())  # inside a batch: an index lookup and a scan of headers

    async def both_ways() -> list[tuple[int, bytes]]:
        reads = BatchedReads()
        fetch = ConsumerFetch(fetch_request(caught_up), default_partition_max_bytes=1 << 20)
        await reads.run(lambda shared: fetch.measure(lambda *_: partition, shared), light=True)
        assert fetch.available_bytes() > 0
        assert trips == [], "measured on the loop"
        results = []
        for then in (None, 2):  # the second reads its first slot on the loop, meets the second, reads both again
            fetch = ConsumerFetch(fetch_request(caught_up), default_partition_max_bytes=1 << 20)
            if then is not None:
                fetch.slots.append(ConsumerFetch(fetch_request(then), 1 << 20).slots[0])
            read = await reads.run(partial(fetch.read, lambda *_: partition, 1 << 20), light=True)
            results.append((read, b"".join(slot.records for slot in fetch.slots)))
        return results

    (light_read, light_bytes), (mixed_read, mixed_bytes) = asyncio.run(both_ways())
    assert trips == [1], "the caught-up read on the loop, the mixed one in one trip"
    assert light_read == len(light_bytes) > 0
    assert mixed_read == len(mixed_bytes), "the run on the loop left no bytes counted twice"
    assert mixed_bytes == _answered(partition, caught_up, SharedReads())[1] + _answered(partition, 2, SharedReads())[1]


def test_one_turn_of_the_loop_reads_at_most_light_bytes_per_turn_the_rest_go_to_a_trip(
    trips: list[int],
) -> None:
    """Decision 0048: light reads copy from the page cache on the loop, at most
    ``LIGHT_BYTES_PER_TURN`` in one turn of it; a job that would read more waits for a trip (and a
    job larger than that never runs on the loop)."""
    on_loop: list[bool] = []
    budget = batched_reads.LIGHT_BYTES_PER_TURN

    def job(reads: Any) -> None:
        on_loop.append(isinstance(reads, LoopReads))

    async def woken_at_once() -> None:
        reads = BatchedReads()
        await asyncio.gather(*(reads.run(job, light=True, light_bytes=budget // 3) for _ in range(5)))
        await reads.run(job, light=True, light_bytes=budget + 1)  # a later turn, too large
        await reads.run(job, light=True, light_bytes=budget)  # a later turn: on the loop again

    asyncio.run(woken_at_once())
    assert on_loop == [True, True, True, False, False, False, True]
    assert sum(trips) == 3


def test_one_turn_of_the_loop_runs_only_a_few_light_jobs_the_rest_go_to_a_trip(
    trips: list[int],
) -> None:
    """Thousands of long-polls woken by one append: after ``LIGHT_RUNS_PER_TURN`` in one turn,
    the others share worker-thread trips (their results handed over a few per turn), so the
    loop's other work runs between them."""
    on_loop: list[bool] = []

    def job(reads: Any) -> None:
        on_loop.append(isinstance(reads, LoopReads))

    async def woken_at_once() -> None:
        reads = BatchedReads()
        await asyncio.gather(*(reads.run(job, light=True) for _ in range(100)))
        await reads.run(job, light=True)  # a later turn: on the loop again

    asyncio.run(woken_at_once())
    assert on_loop.count(True) == batched_reads.LIGHT_RUNS_PER_TURN + 1
    assert sum(trips) == 100 - batched_reads.LIGHT_RUNS_PER_TURN


def _answered(partition: Partition, request: broker_pb2.FetchRequest) -> ConsumerFetch:
    """``request`` measured and read against ``partition``, as a fetch woken with records is."""
    fetch = ConsumerFetch(request, default_partition_max_bytes=1 << 20)
    fetch.measure(lambda *_: partition, SharedReads())
    fetch.read(lambda *_: partition, 1 << 20, SharedReads())
    return fetch


def test_a_full_answer_reads_on_where_it_ended_and_a_short_or_failed_one_ends_the_stream(tmp_path: Path) -> None:
    """``ConsumerFetch.read_on`` (FetchStream): after an answer where a partition brought at
    least three quarters of its limit, the next request continues from after its last batch,
    without waiting, within what is left of the request's budget; after a short answer (caught
    up), an error, or with less than a partition's limit left, none."""
    partition = open_partition(tmp_path)
    lead(partition, 1)
    fill(partition, end=40)  # 10 batches of 4
    partition.log.update_high_watermark(partition.log.log_end_offset)
    batch_bytes = len(partition.log.read(0, 1).records)

    request = fetch_request(0, partition_max_bytes=3 * batch_bytes)
    request.max_wait_ms = 500
    full = _answered(partition, request)
    continued = full.read_on(request, 1 << 20)
    assert continued is not None
    assert continued.topics[0].partitions[0].fetch_offset == 12, "after the three batches read"
    assert continued.max_wait_ms == 0, "reads what is there, does not wait"
    assert continued.topics[0].partitions[0].partition_max_bytes == 3 * batch_bytes
    assert continued.max_bytes == (1 << 20) - 3 * batch_bytes, "the stream's answers share the request's budget"
    assert full.read_on(request, 3 * batch_bytes + batch_bytes // 2) is None, "less than a partition's limit left"

    short = _answered(partition, fetch_request(36, partition_max_bytes=3 * batch_bytes))  # the last batch only
    assert short.read_on(fetch_request(36, partition_max_bytes=3 * batch_bytes), 1 << 20) is None

    failed = ConsumerFetch(fetch_request(99, partition_max_bytes=3 * batch_bytes), 1 << 20)
    failed.measure(lambda *_: partition, SharedReads())
    assert failed.errors
    assert failed.read_on(fetch_request(99), 1 << 20) is None


def test_a_following_stream_long_polls_again_after_an_answer_with_records_and_ends_at_an_empty_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 0052: a stream that follows (``follow_wait_ms``: its consumer's wait) reads on
    after an answer that is not full but brought records, long-polling that long from where it
    ended, within what is left of the budget, also after a full answer read on without waiting;
    an empty answer, an error, or an answer of more than ``FOLLOW_AFTER_BYTES_AT_MOST`` (its
    memory is held while the next waits) still ends it."""
    partition = open_partition(tmp_path)
    lead(partition, 1)
    fill(partition, end=8)  # 2 batches of 4
    partition.log.update_high_watermark(partition.log.log_end_offset)
    batch_bytes = len(partition.log.read(0, 1).records)

    def following(offset: int, partition_max_bytes: int = 64 * batch_bytes) -> broker_pb2.FetchRequest:
        request = fetch_request(offset, partition_max_bytes=partition_max_bytes)
        request.max_wait_ms, request.follow = 500, True
        return request

    short = following(4)  # the last batch: not full, but records came
    continued = _answered(partition, short).read_on(short, 1 << 20, follow_wait_ms=500)
    assert continued is not None, "a caught-up consumer's stream goes on"
    assert continued.topics[0].partitions[0].fetch_offset == 8, "from where the answer ended"
    assert continued.max_wait_ms == 500, "long-polling for the next records"
    assert continued.max_bytes == (1 << 20) - batch_bytes, "the stream's answers share the request's budget"
    assert _answered(partition, short).read_on(short, 1 << 20) is None, "not following: one answer"
    tight = _answered(partition, short).read_on(short, 64 * batch_bytes + 1, follow_wait_ms=500)
    assert tight is not None, "less than a partition's limit left: a following stream still reads on"
    assert tight.max_bytes == 63 * batch_bytes + 1
    assert _answered(partition, short).read_on(short, batch_bytes, follow_wait_ms=500) is None, "nothing left"

    read_on_at_once = following(4)
    read_on_at_once.max_wait_ms = 0  # (a request continued after a full answer)
    after_full = _answered(partition, read_on_at_once).read_on(read_on_at_once, 1 << 20, follow_wait_ms=500)
    assert after_full is not None
    assert after_full.max_wait_ms == 500, "the wait the consumer asked for, not the read-on's"

    empty = following(8)  # at the end: the wait ended with nothing
    assert _answered(partition, empty).read_on(empty, 1 << 20, follow_wait_ms=500) is None, "an empty answer ends it"

    monkeypatch.setattr(consumer_fetch, "FOLLOW_AFTER_BYTES_AT_MOST", batch_bytes - 1)
    assert _answered(partition, short).read_on(short, 1 << 20, follow_wait_ms=500) is None, "a large answer ends it"

    full = following(0, partition_max_bytes=batch_bytes)
    read_on = _answered(partition, full).read_on(full, 1 << 20, follow_wait_ms=500)
    assert read_on is not None
    assert read_on.max_wait_ms == 0, "behind: reads on at once"

    failed = ConsumerFetch(following(99), 1 << 20)
    failed.measure(lambda *_: partition, SharedReads())
    assert failed.read_on(following(99), 1 << 20, follow_wait_ms=500) is None, "an error ends it"


def test_an_answer_is_full_when_a_partition_or_the_whole_answer_is_near_its_limit() -> None:
    """The one rule of decision 0050 both sides apply (broker: read on; consumer: the stream ends
    at an answer that is not full)."""
    assert answer_is_full([(0, 1000), (750, 1000)], 10_000), "one partition behind"
    assert not answer_is_full([(740, 1000), (740, 1000)], 10_000), "none near its limit, the answer far from its own"
    assert answer_is_full([(740, 1000), (740, 1000)], 1_900), "the answer near its max_bytes (the consumer's room)"
    assert not answer_is_full([], 1_000)
