"""The purgatory's park loop (``lanes.broker.purgatory``): an attempt now, again when a key
moves, and at the deadline either one more attempt or, with ``unchanged``, the answer of the
last attempt when nothing moved since it (an idle follower's fetch: one pass, not two)."""

from __future__ import annotations

import asyncio

import pytest

from lanes.broker.purgatory import Purgatory
from lanes.deadline import Deadline
from lanes.topic_partition import TopicPartition

KEY = TopicPartition("t", 0)
OTHER = TopicPartition("t", 1)


class NeverAnswers:
    """An attempt that finds nothing to answer, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> str | None:
        self.calls += 1
        return None


def test_a_wait_that_reaches_its_deadline_with_nothing_moved_answers_unchanged_without_another_attempt() -> None:
    async def scenario() -> tuple[str | None, int, int]:
        purgatory = Purgatory()
        attempt = NeverAnswers()
        answer = await purgatory.park([KEY], attempt, Deadline(0.05), unchanged=lambda: "as found")
        return answer, attempt.calls, purgatory.waiting_keys()

    assert asyncio.run(scenario()) == ("as found", 1, 0)


def test_a_move_before_the_deadline_makes_another_attempt() -> None:
    async def scenario() -> tuple[str | None, int]:
        purgatory = Purgatory()
        attempts = 0

        async def attempt() -> str | None:
            nonlocal attempts
            attempts += 1
            return "answered" if attempts == 2 else None

        parked = asyncio.create_task(purgatory.park([KEY], attempt, Deadline(5), unchanged=lambda: "as found"))
        while purgatory.waiting_keys() == 0:
            await asyncio.sleep(0.001)
        purgatory.moved(OTHER)  # not one of its keys: sleeps on
        await asyncio.sleep(0.01)
        assert not parked.done()
        purgatory.moved(KEY)
        return await asyncio.wait_for(parked, 5), attempts

    assert asyncio.run(scenario()) == ("answered", 2)


def test_without_unchanged_the_deadline_gets_one_more_attempt() -> None:
    async def scenario() -> tuple[str | None, int]:
        purgatory = Purgatory()
        attempts = 0
        deadline = Deadline(0.05)

        async def attempt() -> str | None:
            nonlocal attempts
            attempts += 1
            return "at the deadline" if deadline.expired() else None

        return await purgatory.park([KEY], attempt, deadline), attempts

    assert asyncio.run(scenario()) == ("at the deadline", 2)


def test_unchanged_is_refused_with_rechecks_whose_condition_no_key_announces() -> None:
    async def scenario() -> None:
        await Purgatory().park([KEY], NeverAnswers(), Deadline(0.2), recheck_s=0.02, unchanged=lambda: "as found")

    with pytest.raises(ValueError, match="rechecks"):
        asyncio.run(scenario())


def test_a_move_during_the_pass_gets_one_more_attempt_not_the_earlier_finding() -> None:
    async def scenario() -> tuple[str | None, int]:
        purgatory = Purgatory()
        deadline = Deadline(0.05)
        attempts = 0

        async def attempt() -> str | None:
            nonlocal attempts
            attempts += 1
            if attempts == 1:
                purgatory.moved(KEY)  # (during the pass, as an append would)
                return None
            return "read again"

        return await purgatory.park([KEY], attempt, deadline, unchanged=lambda: "as found"), attempts

    assert asyncio.run(scenario()) == ("read again", 2)
