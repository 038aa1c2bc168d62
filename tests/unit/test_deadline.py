"""The retry/deadline helper on a manual clock: attempts are paced, capped by the deadline, and
stop once it has passed; nothing here sleeps for real."""

from __future__ import annotations

import asyncio
import math

from hypothesis import given
from hypothesis import strategies as st

from lanes.clock import ManualClock
from lanes.deadline import Backoff, Deadline, attempts, attempts_blocking


def _advancing(clock: ManualClock, pauses: list[float]):  # type: ignore[no-untyped-def]
    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        # a real sleep of any positive time moves the clock: rounding 0.0000000000000004 s (a
        # deadline of 3 ms is at 3.0000000000000004 ms) down to 0 ms looped forever and took a
        # test worker to 23 GB, once Hypothesis had found the example
        clock.advance(math.ceil(seconds * 1000))

    return sleep


def test_a_deadline_counts_down_on_its_clock() -> None:
    clock = ManualClock()
    deadline = Deadline(2.5, clock)
    assert deadline.remaining_s() == 2.5
    assert not deadline.expired()
    clock.advance(2_000)
    assert deadline.remaining_s() == 0.5
    clock.advance(500)
    assert deadline.expired()
    assert deadline.remaining_s() == 0
    assert Deadline.at_monotonic_ms(clock.monotonic_ms() + 10, clock).remaining_s() == 0.01


@given(timeout_ms=st.integers(0, 5_000), pause_ms=st.integers(1, 1_000), work_ms=st.integers(0, 700))
def test_attempts_are_paced_and_never_start_after_the_deadline(timeout_ms: int, pause_ms: int, work_ms: int) -> None:
    clock = ManualClock()
    pauses: list[float] = []
    deadline = Deadline(timeout_ms / 1000, clock)
    started_at = []
    for _ in attempts_blocking(deadline, pause_ms / 1000, sleep=_advancing(clock, pauses)):
        started_at.append(clock.monotonic_ms())
        clock.advance(work_ms)  # the attempt itself takes time
    assert started_at[0] == 0, "the first attempt is at once"
    assert all(at <= timeout_ms for at in started_at), "no attempt after the deadline"
    assert all(0 <= p <= pause_ms / 1000 for p in pauses), "pauses never exceed pause_s"
    assert deadline.expired(), "the iteration ends only once the deadline has passed"


def test_async_attempts_stop_when_the_caller_succeeds() -> None:
    clock = ManualClock()
    pauses: list[float] = []
    advance = _advancing(clock, pauses)

    async def sleep(seconds: float) -> None:
        advance(seconds)

    async def run() -> int:
        async for attempt in attempts(Deadline(10, clock), 0.25, sleep=sleep):
            if attempt == 3:
                return attempt
        raise AssertionError("the deadline was not reached")

    assert asyncio.run(run()) == 3
    assert pauses == [0.25, 0.25, 0.25]


def test_backoff_doubles_up_to_its_cap_and_starts_over_after_a_success() -> None:
    pauses: list[float] = []

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)

    async def run() -> None:
        backoff = Backoff(0.05, 0.3, sleep=sleep)
        for _ in range(4):
            await backoff.pause()
        backoff.reset()
        await backoff.pause()

    asyncio.run(run())
    assert pauses == [0.05, 0.1, 0.2, 0.3, 0.05]
