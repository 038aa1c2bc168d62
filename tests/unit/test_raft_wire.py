"""Every Raft message survives its wire form (``RaftMessage``) field for field."""

from __future__ import annotations

import pytest

from lanes.controller.raft import (
    BeginEpoch,
    EndEpoch,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    SnapshotId,
    Voter,
    VoteRequest,
    VoteResponse,
)
from lanes.controller.raft_wire import from_wire, to_wire
from lanes.v1 import controller_pb2

MESSAGES: list[Message] = [
    VoteRequest(1, 2, 7, 6, 120, pre_vote=True),
    VoteResponse(2, 1, 7, granted=False, pre_vote=False, leader=3),
    BeginEpoch(1, 2, 7),
    EndEpoch(1, 2, 7),
    FetchRequest(2, 1, 7, 99, 6),
    FetchResponse(
        1,
        2,
        7,
        1,
        99,
        entries=(Entry(7, b"a", False), Entry(7, b"b", voters=(Voter(1, "h:1"),))),
        high_watermark=98,
        last_fetched_epoch=6,
    ),
    FetchResponse(1, 2, 7, 1, 99, diverging=(5, 80), high_watermark=98),
    FetchResponse(1, 2, 7, 1, 10, snapshot=SnapshotId(90, 6), high_watermark=98),
    FetchSnapshotRequest(2, 1, 7, SnapshotId(90, 6), 4096),
    FetchSnapshotResponse(1, 2, 7, 1, SnapshotId(90, 6), 4096, b"\x00chunk", 9000, 98),
    FetchSnapshotResponse(1, 2, 7, 1, SnapshotId(90, 6), 0),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_a_message_round_trips(message: Message) -> None:
    wire = controller_pb2.RaftMessage.FromString(to_wire(message).SerializeToString())
    assert from_wire(wire) == message
