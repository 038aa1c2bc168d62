"""RecordFuture: one batch outcome resolves every record's future, from any thread or loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from lanes.client._record_future import BatchOutcome, RecordFuture, RecordMetadata
from lanes.errors import NotEnoughReplicasError


def futures_of(outcome: BatchOutcome, count: int) -> list[RecordFuture]:
    return [RecordFuture(outcome, "orders", 2, index, 1_000 + index) for index in range(count)]


def test_each_record_gets_base_offset_plus_its_index() -> None:
    outcome = BatchOutcome()
    futures = futures_of(outcome, 3)
    assert not any(f.done() for f in futures)
    outcome.complete(40)
    assert [f.result(0) for f in futures] == [
        RecordMetadata("orders", 2, 40, 1_000),
        RecordMetadata("orders", 2, 41, 1_001),
        RecordMetadata("orders", 2, 42, 1_002),
    ]


def test_log_append_time_replaces_the_create_time() -> None:
    outcome = BatchOutcome()
    (future,) = futures_of(outcome, 1)
    outcome.complete(7, log_append_time_ms=99)
    assert future.result(0).timestamp == 99


def test_an_unacknowledged_record_has_offset_minus_one() -> None:
    outcome = BatchOutcome()
    (future,) = futures_of(outcome, 1)
    outcome.complete(-1)
    assert future.result(0).offset == -1


def test_a_failed_batch_raises_its_typed_error_for_every_record() -> None:
    outcome = BatchOutcome()
    futures = futures_of(outcome, 2)
    outcome.fail(NotEnoughReplicasError("only 1 in sync"))
    for future in futures:
        assert isinstance(future.exception(0), NotEnoughReplicasError)
        with pytest.raises(NotEnoughReplicasError, match="only 1 in sync"):
            future.result(0)


def test_only_the_first_completion_counts() -> None:
    outcome = BatchOutcome()
    (future,) = futures_of(outcome, 1)
    outcome.complete(5)
    outcome.fail(NotEnoughReplicasError("late"))
    outcome.complete(9)
    assert future.result(0).offset == 5


def test_result_times_out_while_pending() -> None:
    (future,) = futures_of(BatchOutcome(), 1)
    with pytest.raises(TimeoutError, match="orders-2"):
        future.result(timeout=0.01)


def test_callbacks_run_once_whether_added_before_or_after_completion() -> None:
    outcome = BatchOutcome()
    early, late = futures_of(outcome, 2)
    seen: list[int] = []
    early.add_done_callback(lambda f: seen.append(f.result(0).offset))
    outcome.complete(10)
    late.add_done_callback(lambda f: seen.append(f.result(0).offset))
    assert seen == [10, 11]


def test_a_thread_waiting_on_result_wakes_when_another_thread_completes() -> None:
    outcome = BatchOutcome()
    (future,) = futures_of(outcome, 1)
    results: list[RecordMetadata] = []
    waiter = threading.Thread(target=lambda: results.append(future.result(timeout=10)))
    waiter.start()
    outcome.complete(3)
    waiter.join(10)
    assert results == [RecordMetadata("orders", 2, 3, 1_000)]


def test_await_from_a_loop_completed_by_another_thread() -> None:
    outcome = BatchOutcome()
    futures = futures_of(outcome, 2)

    async def main() -> list[RecordMetadata]:
        threading.Timer(0.05, outcome.complete, args=(100,)).start()
        return list(await asyncio.gather(*(asyncio.ensure_future(_awaited(f)) for f in futures)))

    assert [m.offset for m in asyncio.run(main())] == [100, 101]


def test_await_of_a_completed_future_returns_at_once() -> None:
    outcome = BatchOutcome()
    (future,) = futures_of(outcome, 1)
    outcome.complete(1)
    assert asyncio.run(_awaited(future)).offset == 1


def test_a_future_failed_before_batching() -> None:
    future = RecordFuture.failed(NotEnoughReplicasError("x"), "orders")
    assert future.done()
    assert not future.cancel()
    with pytest.raises(NotEnoughReplicasError):
        future.result(0)


async def _awaited(future: RecordFuture) -> RecordMetadata:
    return await future
