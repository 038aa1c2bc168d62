"""A consumer's commits go one request at a time, in the order they were made: the ones made
while a request is in flight wait and go together as the next (a partition's later offset
replacing its earlier one), and each caller learns the outcome of the request that carried its
offsets (the partitions the coordinator refused fail only the commits that named them). The
coordinator is replaced by a recorder of requests (``_send_commit``), whose answers the test
releases."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from lanes.client.consumer import AsyncConsumer, CommitFailedError
from lanes.errors import ErrorCode, LanesError
from lanes.topic_partition import TopicPartition

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


class Coordinator:
    """Records each commit request; each waits until the test answers it."""

    def __init__(self) -> None:
        self.requests: list[dict[TopicPartition, object]] = []
        self.answers: asyncio.Queue[Exception | dict[TopicPartition, Exception] | None] = asyncio.Queue()
        self.in_flight = 0

    async def send(self, entries: Mapping[TopicPartition, object]) -> dict[TopicPartition, Exception]:
        self.in_flight += 1
        assert self.in_flight == 1, "one request at a time"
        self.requests.append(dict(entries))
        answer = await self.answers.get()
        self.in_flight -= 1
        if isinstance(answer, Exception):
            raise answer
        return answer or {}


def consumer_with(coordinator: Coordinator) -> AsyncConsumer:
    consumer = AsyncConsumer("127.0.0.1:1", group_id="g", enable_auto_commit=False)
    consumer._send_commit = coordinator.send  # type: ignore[method-assign]
    return consumer


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_commits_made_while_one_is_in_flight_go_together_next_in_order() -> None:
    async def scenario() -> None:
        coordinator = Coordinator()
        consumer = consumer_with(coordinator)
        outcomes: list[tuple[dict[TopicPartition, object], object]] = []
        callback = lambda offsets, error: outcomes.append((dict(offsets), error))  # noqa: E731
        await consumer.commit({A: 1}, asynchronous=True, callback=callback)
        await settle()
        for offset in (2, 3, 4):
            await consumer.commit({A: offset}, asynchronous=True, callback=callback)
        await consumer.commit({B: 7}, asynchronous=True, callback=callback)
        await settle()
        assert coordinator.requests == [{A: 1}], "the others wait for the first"
        await coordinator.answers.put(None)
        await settle()
        assert coordinator.requests == [{A: 1}, {A: 4, B: 7}]
        synchronous = asyncio.ensure_future(consumer.commit({A: 5}))
        await settle()
        await coordinator.answers.put(None)
        await settle()
        assert coordinator.requests[-1] == {A: 5}, "a synchronous commit waits its turn too"
        await coordinator.answers.put(None)
        await synchronous
        assert [offsets for offsets, _ in outcomes] == [{A: 1}, {A: 2}, {A: 3}, {A: 4}, {B: 7}]
        assert all(error is None for _, error in outcomes)

    asyncio.run(scenario())


def test_every_commit_a_failed_request_carried_learns_the_failure_and_the_next_goes_on() -> None:
    async def scenario() -> None:
        coordinator = Coordinator()
        consumer = consumer_with(coordinator)
        first = asyncio.ensure_future(consumer.commit({A: 1}))
        await settle()
        second = asyncio.ensure_future(consumer.commit({A: 2}))
        third = asyncio.ensure_future(consumer.commit({B: 3}))
        await settle()
        await coordinator.answers.put(None)
        await settle()
        await coordinator.answers.put(CommitFailedError("fenced", ErrorCode.FENCED_MEMBER_EPOCH))
        await first
        for waiting in (second, third):
            with pytest.raises(CommitFailedError, match="fenced"):
                await waiting
        later = asyncio.ensure_future(consumer.commit({A: 9}))
        await settle()
        await coordinator.answers.put(None)
        await later
        assert coordinator.requests == [{A: 1}, {A: 2, B: 3}, {A: 9}]

    asyncio.run(scenario())


def test_a_caller_that_stops_waiting_stops_neither_its_commit_nor_the_others() -> None:
    """As with Kafka's commitSync timing out: the commit may still be made."""

    async def scenario() -> None:
        coordinator = Coordinator()
        consumer = consumer_with(coordinator)
        first = asyncio.ensure_future(consumer.commit({A: 1}))
        await settle()
        impatient = asyncio.ensure_future(consumer.commit({A: 2}))
        patient = asyncio.ensure_future(consumer.commit({B: 2}))
        await settle()
        impatient.cancel()
        await coordinator.answers.put(None)
        await coordinator.answers.put(None)
        await first
        await patient
        assert coordinator.requests == [{A: 1}, {A: 2, B: 2}]
        assert impatient.cancelled()

    asyncio.run(scenario())


def test_a_partition_the_coordinator_refused_fails_only_the_commits_that_named_it() -> None:
    async def scenario() -> None:
        coordinator = Coordinator()
        consumer = consumer_with(coordinator)
        first = asyncio.ensure_future(consumer.commit({A: 1}))
        await settle()
        bad = asyncio.ensure_future(consumer.commit({A: (2, "x" * 10)}))
        good = asyncio.ensure_future(consumer.commit({B: 3}))
        await settle()
        await coordinator.answers.put(None)
        await settle()
        too_large = LanesError("metadata too large", ErrorCode.OFFSET_METADATA_TOO_LARGE)
        await coordinator.answers.put({A: too_large})
        await first
        with pytest.raises(LanesError, match="metadata too large"):
            await bad
        await good

    asyncio.run(scenario())


def test_an_asynchronous_commit_then_a_synchronous_one_keep_their_order() -> None:
    async def scenario() -> None:
        coordinator = Coordinator()
        consumer = consumer_with(coordinator)
        await consumer.commit({A: 10}, asynchronous=True)
        synchronous = asyncio.ensure_future(consumer.commit({A: 5}))
        await settle()
        await coordinator.answers.put(None)
        await settle()
        await coordinator.answers.put(None)
        await synchronous
        assert [request[A] for request in coordinator.requests][-1] == 5, "the later commit is the last word"

    asyncio.run(scenario())


def test_offsets_that_are_not_offsets_are_refused_to_their_committer_before_anything_is_queued() -> None:
    async def scenario() -> None:
        coordinator = Coordinator()
        consumer = consumer_with(coordinator)
        for bad in ({A: "5"}, {A: (1, 2)}, {A: True}):
            with pytest.raises(LanesError, match="not an offset"):
                await consumer.commit(bad, asynchronous=True)  # type: ignore[arg-type]
        assert coordinator.requests == []

    asyncio.run(scenario())


def test_commits_not_yet_sent_for_lost_partitions_fail_and_the_others_go() -> None:
    async def scenario() -> None:
        coordinator = Coordinator()
        consumer = consumer_with(coordinator)
        first = asyncio.ensure_future(consumer.commit({A: 1}))
        await settle()
        stale = asyncio.ensure_future(consumer.commit({A: 2}))
        other = asyncio.ensure_future(consumer.commit({B: 2}))
        await settle()
        consumer._fail_waiting_commits({A})
        with pytest.raises(CommitFailedError, match="lost before the commit was sent"):
            await stale
        await coordinator.answers.put(None)
        await coordinator.answers.put(None)
        await first
        await other
        assert coordinator.requests == [{A: 1}, {B: 2}]

    asyncio.run(scenario())
