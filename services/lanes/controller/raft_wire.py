"""Raft messages (``lanes.controller.raft``) to and from their wire form (``RaftMessage`` in
controller.proto), field for field. Pure."""

from __future__ import annotations

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
from lanes.v1 import controller_pb2


def to_wire(message: Message) -> controller_pb2.RaftMessage:
    """The wire form of ``message``."""
    wire = controller_pb2.RaftMessage(sender=message.sender, to=message.to, epoch=message.epoch)
    if isinstance(message, VoteRequest):
        wire.vote_request.CopyFrom(
            controller_pb2.RaftVoteRequest(
                last_epoch=message.last_epoch, end_offset=message.end_offset, pre_vote=message.pre_vote
            )
        )
    elif isinstance(message, VoteResponse):
        wire.vote_response.CopyFrom(
            controller_pb2.RaftVoteResponse(granted=message.granted, pre_vote=message.pre_vote, leader=message.leader)
        )
    elif isinstance(message, BeginEpoch):
        wire.begin_epoch.SetInParent()
    elif isinstance(message, EndEpoch):
        wire.end_epoch.SetInParent()
    elif isinstance(message, FetchRequest):
        wire.fetch_request.CopyFrom(
            controller_pb2.RaftFetchRequest(
                fetch_offset=message.fetch_offset, last_fetched_epoch=message.last_fetched_epoch
            )
        )
    elif isinstance(message, FetchSnapshotRequest):
        wire.fetch_snapshot_request.CopyFrom(
            controller_pb2.RaftFetchSnapshotRequest(snapshot=_snapshot_id(message.snapshot), position=message.position)
        )
    elif isinstance(message, FetchSnapshotResponse):
        wire.fetch_snapshot_response.CopyFrom(
            controller_pb2.RaftFetchSnapshotResponse(
                leader=message.leader,
                snapshot=_snapshot_id(message.snapshot),
                position=message.position,
                data=message.data,
                size=message.size,
                high_watermark=message.high_watermark,
            )
        )
    else:
        response = controller_pb2.RaftFetchResponse(
            leader=message.leader,
            fetch_offset=message.fetch_offset,
            entries=[entry_to_wire(e) for e in message.entries],
            high_watermark=message.high_watermark,
            last_fetched_epoch=message.last_fetched_epoch,
        )
        if message.snapshot is not None:
            response.snapshot.CopyFrom(_snapshot_id(message.snapshot))
        if message.diverging is not None:
            response.has_diverging = True
            response.diverging_epoch, response.diverging_end_offset = message.diverging
        wire.fetch_response.CopyFrom(response)
    return wire


def from_wire(wire: controller_pb2.RaftMessage) -> Message | None:
    """The message ``wire`` carries (None: none of the known kinds)."""
    kind = wire.WhichOneof("message")
    if kind == "vote_request":
        v = wire.vote_request
        return VoteRequest(wire.sender, wire.to, wire.epoch, v.last_epoch, v.end_offset, v.pre_vote)
    if kind == "vote_response":
        r = wire.vote_response
        return VoteResponse(wire.sender, wire.to, wire.epoch, r.granted, r.pre_vote, r.leader)
    if kind == "begin_epoch":
        return BeginEpoch(wire.sender, wire.to, wire.epoch)
    if kind == "end_epoch":
        return EndEpoch(wire.sender, wire.to, wire.epoch)
    if kind == "fetch_request":
        f = wire.fetch_request
        return FetchRequest(wire.sender, wire.to, wire.epoch, f.fetch_offset, f.last_fetched_epoch)
    if kind == "fetch_response":
        a = wire.fetch_response
        return FetchResponse(
            wire.sender,
            wire.to,
            wire.epoch,
            a.leader,
            a.fetch_offset,
            entries=tuple(entry_from_wire(e) for e in a.entries),
            diverging=(a.diverging_epoch, a.diverging_end_offset) if a.has_diverging else None,
            high_watermark=a.high_watermark,
            snapshot=SnapshotId(a.snapshot.end_offset, a.snapshot.epoch) if a.HasField("snapshot") else None,
            last_fetched_epoch=a.last_fetched_epoch,
        )
    if kind == "fetch_snapshot_request":
        q = wire.fetch_snapshot_request
        snapshot = SnapshotId(q.snapshot.end_offset, q.snapshot.epoch)
        return FetchSnapshotRequest(wire.sender, wire.to, wire.epoch, snapshot, q.position)
    if kind == "fetch_snapshot_response":
        c = wire.fetch_snapshot_response
        snapshot = SnapshotId(c.snapshot.end_offset, c.snapshot.epoch)
        return FetchSnapshotResponse(
            wire.sender, wire.to, wire.epoch, c.leader, snapshot, c.position, c.data, c.size, c.high_watermark
        )
    return None


def entry_to_wire(entry: Entry) -> controller_pb2.RaftEntry:
    wire = controller_pb2.RaftEntry(epoch=entry.epoch, data=entry.data, continues_write=not entry.ends_write)
    if entry.voters is not None:
        wire.voters.CopyFrom(voters_to_wire(entry.voters))
    return wire


def entry_from_wire(wire: controller_pb2.RaftEntry) -> Entry:
    voters = voters_from_wire(wire.voters) if wire.HasField("voters") else None
    return Entry(wire.epoch, wire.data, not wire.continues_write, voters)


def voters_to_wire(voters: tuple[Voter, ...]) -> controller_pb2.RaftVoterSet:
    return controller_pb2.RaftVoterSet(
        voters=[controller_pb2.RaftVoter(node_id=v.node_id, address=v.address) for v in voters]
    )


def voters_from_wire(wire: controller_pb2.RaftVoterSet) -> tuple[Voter, ...]:
    return tuple(Voter(v.node_id, v.address) for v in wire.voters)


def _snapshot_id(snapshot: SnapshotId) -> controller_pb2.RaftSnapshotId:
    return controller_pb2.RaftSnapshotId(end_offset=snapshot.end_offset, epoch=snapshot.epoch)
