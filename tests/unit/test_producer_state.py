"""Idempotent-producer state: duplicates answered with the original offsets, gaps and zombies
refused, and a producer's records appended exactly once, in order, whatever the retries."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lanes.broker.producer_state import ProducerStateTable, SnapshotError, next_sequence
from lanes.errors import ErrorCode
from lanes.protocol.records import BatchHeader


def header(producer_id: int, epoch: int, sequence: int, records: int, base_offset: int = 0) -> BatchHeader:
    return BatchHeader(base_offset, 100, 0, 2, 0, 0, records - 1, 0, 0, producer_id, epoch, sequence, records)


def append(table: ProducerStateTable, batch: BatchHeader, log_end: int) -> tuple[BatchHeader, int]:
    placed = batch._replace(base_offset=log_end)
    table.apply(placed)
    return placed, placed.next_offset


def test_retries_of_any_of_the_last_five_batches_are_duplicates() -> None:
    table = ProducerStateTable()
    end = 0
    placed = []
    for sequence in range(0, 30, 5):
        batch = header(7, 0, sequence, 5)
        assert table.check(batch).append
        done, end = append(table, batch, end)
        placed.append(done)
    for older in placed[-5:]:
        verdict = table.check(header(7, 0, older.base_sequence, 5))
        assert verdict.duplicate_of is not None
        assert (verdict.duplicate_of.first_offset, verdict.duplicate_of.last_offset) == (
            older.base_offset,
            older.last_offset,
        )
    too_old = table.check(header(7, 0, placed[0].base_sequence, 5))
    assert too_old.error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, "beyond the five cached batches"


def test_gaps_zombies_and_unknown_producers_are_refused() -> None:
    table = ProducerStateTable()
    append(table, header(1, 3, 0, 4), 0)
    assert table.check(header(1, 3, 5, 1)).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, "sequence 4 is missing"
    assert table.check(header(1, 2, 4, 1)).error is ErrorCode.INVALID_PRODUCER_EPOCH
    assert table.check(header(1, 4, 9, 1)).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, "a new epoch starts at 0"
    assert table.check(header(1, 4, 0, 1)).append
    assert table.check(header(2, 0, 17, 1)).error is ErrorCode.UNKNOWN_PRODUCER_ID
    assert table.check(header(-1, -1, -1, 3)).append, "non-idempotent batches are not tracked"


def test_sequences_wrap_after_2_pow_31() -> None:
    table = ProducerStateTable()
    top = 2**31 - 2
    table.apply(header(1, 0, top, 2, base_offset=10))
    assert next_sequence(top, 2) == 0
    assert table.check(header(1, 0, 0, 3)).append


def test_the_table_survives_a_snapshot() -> None:
    table = ProducerStateTable()
    end = 0
    for sequence in range(0, 12, 3):
        _, end = append(table, header(9, 1, sequence, 3), end)
    restored = ProducerStateTable.from_snapshot(table.to_snapshot())
    assert restored.check(header(9, 1, 9, 3)).duplicate_of is not None
    assert restored.check(header(9, 1, 12, 3)).append
    assert restored.to_snapshot() == table.to_snapshot()


def test_a_torn_or_corrupt_snapshot_is_refused() -> None:
    table = ProducerStateTable()
    append(table, header(9, 1, 0, 3), 0)
    data = table.to_snapshot()
    for bad in (data[:-1], data[:3], data[:-8] + bytes(8), data + b"x", b"\x00\x09" + data[2:]):
        with pytest.raises(SnapshotError):
            ProducerStateTable.from_snapshot(bad)


def test_idle_producers_expire_by_their_last_batch_timestamp() -> None:
    table = ProducerStateTable()
    table.apply(header(1, 0, 0, 1)._replace(max_timestamp=1_000))
    table.apply(header(2, 0, 0, 1)._replace(max_timestamp=1_000))
    table.apply(header(2, 0, 1, 1, base_offset=1)._replace(max_timestamp=5_000))
    assert table.expire(now_ms=6_000, expiration_ms=5_000) == 1
    assert table.get(1) is None
    assert table.get(2) is not None
    assert table.check(header(1, 0, 1, 1)).error is ErrorCode.UNKNOWN_PRODUCER_ID, "an expired producer starts over"


@given(seed=st.integers(0, 2**32), batches=st.integers(1, 40))
def test_whatever_the_retries_each_record_is_appended_exactly_once_in_order(seed: int, batches: int) -> None:
    """A producer sends batches with up to five in flight; the network duplicates, drops and
    reorders sends; the producer resends what was not acknowledged. Checker: the log holds every
    sequence once, in order."""
    rng = random.Random(seed)
    table = ProducerStateTable()
    plan = []
    sequence = 0
    for _ in range(batches):
        size = rng.randint(1, 4)
        plan.append(header(5, 0, sequence, size))
        sequence += size
    acknowledged = [False] * len(plan)
    log: list[int] = []
    end = 0
    while not all(acknowledged):
        first_unacked = acknowledged.index(False)
        window = list(range(first_unacked, min(first_unacked + 5, len(plan))))
        sends = [i for i in window if not acknowledged[i]]
        rng.shuffle(sends)  # reordering
        sends += rng.sample(sends, k=rng.randint(0, len(sends)))  # duplicates
        for index in sends:
            if rng.random() < 0.2:
                continue  # lost
            verdict = table.check(plan[index])
            if verdict.append:
                placed, end = append(table, plan[index], end)
                log.extend(range(placed.base_sequence, placed.base_sequence + placed.records_count))
                acknowledged[index] = True
            elif verdict.duplicate_of is not None:
                acknowledged[index] = True
            else:
                # Earlier batches are still in flight: the client retries (the first batch may not
                # have arrived yet, so the producer is still unknown here).
                assert verdict.error in {ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID}
    assert log == list(range(sequence)), "every record once, in send order"
