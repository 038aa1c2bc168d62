"""The log the controllers' Raft core replicates (``RaftLog``: the driver's, the metadata log;
``MemoryRaftLog`` for tests and the simulation), with the snapshots that replace its prefix."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from lanes.controller.raft_messages import Entry, SnapshotId, Voter


class RaftLog(Protocol):
    """The log the core replicates (the driver's; an in-memory one for tests and the simulation),
    with the snapshots that replace its prefix.

    Invariants: ``start_offset`` is 0 or the end of a snapshot the log holds, and no later than
    ``latest_snapshot``'s end; ``epoch_at(start_offset - 1)`` answers from that snapshot, and
    ``last_epoch`` of a log empty from its start is that epoch."""

    @property
    def start_offset(self) -> int: ...

    @property
    def end_offset(self) -> int: ...

    @property
    def last_epoch(self) -> int: ...

    def epoch_at(self, offset: int) -> int: ...

    def entries(self, start: int, max_count: int) -> list[Entry]: ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]: ...

    def append(self, entries: Sequence[Entry]) -> None: ...

    def truncate_to(self, offset: int) -> None: ...

    @property
    def latest_snapshot(self) -> SnapshotId | None: ...

    @property
    def snapshot_voters(self) -> tuple[Voter, ...] | None:
        """The voters as of the latest snapshot's end (None: it records none, the quorum is the
        one the nodes were started with)."""

    def read_snapshot(self, snapshot: SnapshotId, position: int, max_bytes: int) -> tuple[bytes, int] | None:
        """Up to ``max_bytes`` of the snapshot's bytes from ``position``, and its whole size;
        None when this log does not hold that snapshot (any more)."""

    def write_snapshot_chunk(self, snapshot: SnapshotId, position: int, data: bytes) -> None:
        """Store a chunk of a snapshot being received (position 0 starts it afresh)."""

    def install_snapshot(self, snapshot: SnapshotId) -> bool:
        """Make the snapshot received whole the latest one and empty the log to start at its end
        (durably, snapshot first); False when what was received is damaged (it is dropped)."""


class MemoryRaftLog:
    """A ``RaftLog`` in a list (tests, the simulation): ``items[i]`` is the entry at offset
    ``start_offset + i``; snapshots are kept as bytes the state machine wrote (``add_snapshot``)."""

    def __init__(self, entries: Sequence[Entry] = ()) -> None:
        self.items: list[Entry] = list(entries)
        self.start_offset = 0
        #: snapshot -> its bytes: a first line naming the voters ("voters:1@a,2@b" or "voters:-"),
        #: then the state machine's bytes
        self.snapshots: dict[SnapshotId, bytes] = {}
        self.receiving: tuple[SnapshotId, bytearray] | None = None

    def copy(self) -> MemoryRaftLog:
        """What a crash keeps (every write here is durable when it returns)."""
        kept = MemoryRaftLog(self.items)
        kept.start_offset, kept.snapshots = self.start_offset, dict(self.snapshots)
        return kept

    @property
    def end_offset(self) -> int:
        return self.start_offset + len(self.items)

    @property
    def last_epoch(self) -> int:
        if self.items:
            return self.items[-1].epoch
        return self.epoch_at(self.start_offset - 1) if self.start_offset else 0

    def epoch_at(self, offset: int) -> int:
        if offset < self.start_offset:
            return next(s.epoch for s in self.snapshots if s.end_offset == offset + 1)
        return self.items[offset - self.start_offset].epoch

    def entries(self, start: int, max_count: int) -> list[Entry]:
        first = max(start - self.start_offset, 0)
        return self.items[first : first + max_count]

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """The largest epoch at or below ``epoch`` this log holds and where it ends; (0, 0) if none."""
        for index in range(len(self.items) - 1, -1, -1):
            if self.items[index].epoch <= epoch:
                return self.items[index].epoch, self.start_offset + index + 1
        if self.start_offset and self.epoch_at(self.start_offset - 1) <= epoch:
            return self.epoch_at(self.start_offset - 1), self.start_offset
        return 0, 0

    def append(self, entries: Sequence[Entry]) -> None:
        self.items.extend(entries)

    def truncate_to(self, offset: int) -> None:
        assert offset >= self.start_offset, f"truncating to {offset}, below the log start {self.start_offset}"
        del self.items[offset - self.start_offset :]

    @property
    def latest_snapshot(self) -> SnapshotId | None:
        return max(self.snapshots, key=lambda s: s.end_offset, default=None)

    @property
    def snapshot_voters(self) -> tuple[Voter, ...] | None:
        latest = self.latest_snapshot
        return None if latest is None else _split_snapshot(self.snapshots[latest])[0]

    def snapshot_state(self, snapshot: SnapshotId) -> bytes:
        """The state machine's bytes of a held snapshot."""
        return _split_snapshot(self.snapshots[snapshot])[1]

    def add_snapshot(self, data: bytes, end_offset: int, voters: tuple[Voter, ...] | None = None) -> SnapshotId:
        """The state machine's snapshot of everything below ``end_offset`` (committed, held),
        with the voters as of that offset."""
        snapshot = SnapshotId(end_offset, self.epoch_at(end_offset - 1))
        named = "-" if voters is None else ",".join(f"{v.node_id}@{v.address}" for v in voters)
        self.snapshots[snapshot] = f"voters:{named}\n".encode() + data
        return snapshot

    def trim_to(self, snapshot: SnapshotId, keep: Collection[SnapshotId] = ()) -> None:
        """Drop the entries below ``snapshot`` and the snapshots older than it, except the
        snapshots in ``keep`` (being transferred) and the entries from the oldest of them on."""
        kept = [s for s in keep if s in self.snapshots]
        floor = min([snapshot, *kept], key=lambda s: s.end_offset)
        if floor.end_offset > self.start_offset:
            del self.items[: floor.end_offset - self.start_offset]
            self.start_offset = floor.end_offset
        self.snapshots = {s: d for s, d in self.snapshots.items() if s.end_offset >= snapshot.end_offset or s in kept}

    def read_snapshot(self, snapshot: SnapshotId, position: int, max_bytes: int) -> tuple[bytes, int] | None:
        data = self.snapshots.get(snapshot)
        return None if data is None else (data[position : position + max_bytes], len(data))

    def write_snapshot_chunk(self, snapshot: SnapshotId, position: int, data: bytes) -> None:
        if position == 0 or self.receiving is None or self.receiving[0] != snapshot:
            self.receiving = (snapshot, bytearray())
        self.receiving[1].extend(data)

    def install_snapshot(self, snapshot: SnapshotId) -> bool:
        if self.receiving is None or self.receiving[0] != snapshot:
            return False
        self.snapshots = {snapshot: bytes(self.receiving[1])}
        self.receiving = None
        self.items, self.start_offset = [], snapshot.end_offset
        return True


def _split_snapshot(data: bytes) -> tuple[tuple[Voter, ...] | None, bytes]:
    line, _, state = data.partition(b"\n")
    named = line.decode().removeprefix("voters:")
    if named == "-":
        return None, state
    voters = []
    for item in named.split(","):
        node, _, address = item.partition("@")
        voters.append(Voter(int(node), address))
    return tuple(voters), state


def divergence(log: RaftLog, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
    """Where a follower's log at (``fetch_offset``, ``last_fetched_epoch``) leaves ``log``: the
    (epoch, end offset) it must truncate to, or None when the two agree up to ``fetch_offset``."""
    epoch, end = log.end_offset_for_epoch(last_fetched_epoch)
    return (epoch, end) if last_fetched_epoch > 0 and (end < fetch_offset or epoch < last_fetched_epoch) else None
