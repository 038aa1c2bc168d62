"""A sender blocked on a full producer buffer (``RecordAccumulator.wait_for_room_blocking``):
True once room is released, False when its deadline passes first (it said True then too)."""

from __future__ import annotations

import random
import threading
from typing import Any

from lanes.client._accumulator import RecordAccumulator
from lanes.clock import ManualClock
from lanes.deadline import Deadline
from lanes.protocol.partitioner import Partitioner


class _NoSender:
    def __getattr__(self, name: str) -> Any:
        return lambda *_args: None


def full_accumulator() -> RecordAccumulator:
    accumulator = RecordAccumulator(
        batch_size=1024,
        max_request_size=1024,
        linger_s=0.0,
        buffer_memory=100,
        partitioner=Partitioner(random.Random(1)),
        partition_counts={"t": 1},
        signals=_NoSender(),
        on_loop=lambda call, batch: call(batch),
        clock=ManualClock(),
    )
    accumulator.append("t", b"x" * 80, None, 0, (), 1, 100, 1)  # what batches hold, until they are sent
    return accumulator


def test_a_blocked_sender_learns_whether_room_came_or_its_deadline_passed() -> None:
    accumulator = full_accumulator()
    assert not accumulator.wait_for_room_blocking(50, Deadline(0.05)), "no room came: the deadline passed"
    releasing = threading.Timer(0.05, accumulator.release, args=(100,))
    releasing.start()
    try:
        assert accumulator.wait_for_room_blocking(50, Deadline(10)), "room was released"
    finally:
        releasing.join()
