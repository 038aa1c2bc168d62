"""The controller's durable metadata log (the Raft log of the quorum), with snapshots.

Layout, under the controller's data directory::

    metadata/                        a PartitionLog (lanes.storage): each MetadataRecord is the value
                                     of one record; metadata offsets are log offsets; the Raft
                                     epoch of each entry is its batch's partition leader epoch;
                                     every append is fsynced before it returns (flush.messages=1)
    snapshot-<offset:020d>.bin       the committed state as of <offset> (inclusive): RecordBatch v2
                                     bytes, first a control batch whose one record is a
                                     MetadataSnapshotHeader (the snapshot id, end = <offset> + 1,
                                     and the quorum epochs below it), then batches whose record
                                     values are MetadataImage.to_records()
    snapshot-<offset:020d>.partial   a snapshot being received from the leader (KIP-630)

A configuration entry (KIP-853's VotersRecord: from here on, these are the voters) is a control
batch of its own whose one record's value is a RaftVoterSet; ``read`` hands it to images as an
empty MetadataRecord (a no-op), and snapshot headers name the voters in force at their end.

``MetadataLog`` is the ``RaftLog`` the core (``lanes.controller.raft``) replicates: a decision's
records are one ``append`` and so one batch per epoch, all or nothing also across a crash
(recovery drops a torn batch whole), and ``entries`` hands out whole batches, so a follower
stores whole decisions too. An entry with an empty value is the Raft leader-change entry (an
empty ``MetadataRecord``, a no-op for the image).

Snapshots: only committed state is ever snapshotted, so ``load_snapshot`` is safe to apply before
the quorum says what is committed. Two are kept; adopting a new one drops the log below the one
before it (``start_offset``), so a follower a little behind still catches up from the log and
one further behind (or with an emptied directory) is sent the newest snapshot. Invariant: the
log starts at 0 or at or below the newest snapshot's end, and the newest snapshot's header knows
the epoch of every offset below it (lineage checks for offsets the log no longer holds).
A snapshot file without a header (written before snapshot transfer existed, when the log was
never trimmed) is ignored.

Not thread-safe: the controller's event loop owns it; ``write_snapshot`` alone may run in a
worker thread (it touches only its own new file).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import DecodeError

from lanes.clock import Clock
from lanes.controller.raft import Entry, SnapshotId, Voter
from lanes.controller.raft_wire import voters_from_wire, voters_to_wire
from lanes.errors import LanesError
from lanes.metadata.image import MetadataImage
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.storage.files import fsync_directory, write_atomically
from lanes.storage.log import LogConfig, PartitionLog
from lanes.v1 import controller_pb2, metadata_pb2

SNAPSHOT_PREFIX = "snapshot-"
SNAPSHOT_SUFFIX = ".bin"
PARTIAL_SUFFIX = ".partial"
SNAPSHOTS_KEPT = 2
_LOG_CONFIG = LogConfig.from_topic_configs(
    {"flush.messages": "1", "segment.bytes": str(64 * 1024 * 1024), "retention.ms": "-1", "retention.bytes": "-1"}
)
_READ_BYTES = 1024 * 1024


@dataclass(frozen=True)
class _Snapshot:
    id: SnapshotId
    path: Path
    #: (epoch, first offset) of every quorum epoch below the snapshot's end, oldest first
    epochs: tuple[tuple[int, int], ...]
    #: the voters as of its end (None: the quorum the controllers were started with)
    voters: tuple[Voter, ...] | None = None


class MetadataLog:
    """Append-only, durable MetadataRecords plus snapshots; rebuilds the MetadataImage."""

    def __init__(self, directory: Path, clock: Clock) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._log = PartitionLog.open(directory / "metadata", _LOG_CONFIG, clock=clock)
        self._log.update_high_watermark(self._log.log_end_offset)
        self._snapshots: list[_Snapshot] = []  # intact ones, oldest first
        for path in self._snapshot_files(SNAPSHOT_SUFFIX):
            found = _read_snapshot(path)
            if found is not None:
                self._snapshots.append(_Snapshot(found[0].id, path, found[0].epochs, found[0].voters))
        for partial in self._snapshot_files(PARTIAL_SUFFIX):
            partial.unlink()  # a transfer the process did not finish
        for stale in directory.glob(f"{SNAPSHOT_PREFIX}*{SNAPSHOT_SUFFIX}.tmp"):
            stale.unlink()  # a snapshot write the process did not finish
        latest = self.latest_snapshot
        if latest is not None and (
            latest.end_offset > self.end_offset or self.epoch_at(latest.end_offset - 1) != latest.epoch
        ):
            # installed, but the process stopped before the log was emptied to start at its end
            # (the log is shorter, or its entry there is of another epoch: a divergent tail)
            self._log.truncate_fully_and_start_at(latest.end_offset)
        if self.start_offset > 0 and (latest is None or latest.end_offset < self.start_offset):
            raise LanesError(
                f"the metadata log starts at {self.start_offset} but no intact snapshot covers the offsets before it"
            )
        self._receiving: tuple[SnapshotId, Path] | None = None

    @property
    def end_offset(self) -> int:
        """The offset the next record gets."""
        return self._log.log_end_offset

    @property
    def start_offset(self) -> int:
        """The first offset still in the log (earlier ones live only in a snapshot)."""
        return self._log.log_start_offset

    def load_snapshot(self) -> MetadataImage:
        """The newest intact snapshot's state (an empty image when there is none)."""
        for snapshot in reversed(self._snapshots):
            if snapshot.id.end_offset < self.start_offset:
                break  # the log does not reach back to it
            try:
                found = _read_snapshot(snapshot.path)
            except OSError:
                found = None
            if found is not None:
                return MetadataImage.from_snapshot(found[1], snapshot.id.end_offset - 1)
        if self.start_offset > 0:
            raise LanesError(f"no intact snapshot covers the metadata offsets below {self.start_offset}")
        return MetadataImage()

    # -----------------------------------------------------------------------------------------
    # the RaftLog protocol

    @property
    def last_epoch(self) -> int:
        """The epoch of the last entry (0: none)."""
        return self.epoch_at(self.end_offset - 1)

    def epoch_at(self, offset: int) -> int:
        """The epoch of the entry at ``offset``, also below the log start (0: none)."""
        found = 0
        for epoch, start in self._epoch_starts():
            if start > offset:
                break
            found = epoch
        return found if 0 <= offset < self.end_offset else 0

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """The largest epoch at or below ``epoch`` and where it ends ((0, 0): nothing)."""
        found = (0, 0)
        starts = self._epoch_starts()
        for index, (entry_epoch, _) in enumerate(starts):
            if entry_epoch > epoch:
                break
            end = starts[index + 1][1] if index + 1 < len(starts) else self.end_offset
            found = (entry_epoch, end)
        return found

    def _epoch_starts(self) -> list[tuple[int, int]]:
        """(epoch, first offset) of every epoch of the log, those below its start included (from
        the newest snapshot's header), oldest first."""
        start = self.start_offset
        known = [pair for pair in self._snapshots[-1].epochs if pair[1] < start] if self._snapshots else []
        newest_known = known[-1][0] if known else -1
        # the cache's first entry may be an epoch begun below the start (clamped to it)
        cached = [(epoch, offset) for epoch, offset in self._log.epochs.entries if epoch > newest_known]
        return known + cached

    def entries(self, start: int, max_count: int) -> list[Entry]:
        """Entries from ``start``: whole batches while they fit ``max_count`` (the first whole,
        even when larger), so a follower appends whole decisions."""
        found: list[Entry] = []
        offset = max(start, self.start_offset)
        while offset < self.end_offset and len(found) < max_count:
            result = self._log.read(offset, _READ_BYTES)
            if not result.records:
                break
            for batch in decode_batches(result.records):
                epoch = batch.header.partition_leader_epoch
                last = batch.records[-1].offset if batch.records else -1
                if batch.header.is_control:  # a configuration entry, alone in its batch
                    voters = voters_from_wire(controller_pb2.RaftVoterSet.FromString(batch.records[0].value or b""))
                    kept = [Entry(epoch, b"", True, voters)] if batch.records[0].offset >= offset else []
                else:
                    kept = [Entry(epoch, r.value or b"", r.offset == last) for r in batch.records if r.offset >= offset]
                if found and len(found) + len(kept) > max_count:
                    return found
                found.extend(kept)
            offset = result.next_offset
        return found

    def append(self, entries: Sequence[Entry]) -> None:
        """Append ``entries`` durably, one batch per write (``Entry.ends_write``: a leader's
        decision keeps its bounds on every follower, so a truncation at a write boundary cuts
        exactly there), all in one append."""
        now = self._clock.now_ms()
        buffers = []
        offset = self.end_offset
        for items in _writes(entries):
            if items[0].voters is not None:  # a configuration entry: a control batch of its own
                value = voters_to_wire(items[0].voters).SerializeToString()
                batch = encode_batch(
                    [Record(offset, now, None, value)],
                    base_offset=offset,
                    partition_leader_epoch=items[0].epoch,
                    is_control=True,
                )
            else:
                records = [Record(offset + index, now, None, entry.data) for index, entry in enumerate(items)]
                batch = encode_batch(records, base_offset=offset, partition_leader_epoch=items[0].epoch)
            buffers.append(batch)
            offset += len(items)
        if buffers:
            self._log.append_as_follower(b"".join(buffers))
            self._log.update_high_watermark(self._log.log_end_offset)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries from ``offset`` on (they diverge from the leader's log)."""
        if offset < self.start_offset:
            raise LanesError(f"truncating the metadata log to {offset}, below its start {self.start_offset}")
        self._log.truncate_to(offset)

    @property
    def latest_snapshot(self) -> SnapshotId | None:
        """The newest intact snapshot's id."""
        return self._snapshots[-1].id if self._snapshots else None

    @property
    def snapshot_voters(self) -> tuple[Voter, ...] | None:
        """The voters as of the newest snapshot's end (None: none recorded)."""
        return self._snapshots[-1].voters if self._snapshots else None

    def read_snapshot(self, snapshot: SnapshotId, position: int, max_bytes: int) -> tuple[bytes, int] | None:
        """Up to ``max_bytes`` of a snapshot file from ``position``, and its size (None: not held)."""
        path = next((s.path for s in self._snapshots if s.id == snapshot), None)
        if path is None or position < 0:
            return None
        try:
            with path.open("rb") as file:
                size = os.fstat(file.fileno()).st_size
                file.seek(position)
                return file.read(max(0, min(max_bytes, size - position))), size
        except FileNotFoundError:
            return None

    def write_snapshot_chunk(self, snapshot: SnapshotId, position: int, data: bytes) -> None:
        """Store a chunk of the leader's snapshot (position 0 starts the file afresh)."""
        path = self._snapshot_path(snapshot, PARTIAL_SUFFIX)
        if position == 0 or self._receiving != (snapshot, path):
            if self._receiving is not None:
                self._receiving[1].unlink(missing_ok=True)
            path.write_bytes(b"")
            self._receiving = (snapshot, path)
        with path.open("r+b") as file:
            if os.fstat(file.fileno()).st_size < position:
                raise LanesError(f"snapshot chunk at {position} does not follow what {path.name} holds")
            file.truncate(position)  # what a failed write of this chunk may have left
            file.seek(position)
            file.write(data)

    def install_snapshot(self, snapshot: SnapshotId) -> bool:
        """The received snapshot becomes the only one and the log empties to start at its end
        (the snapshot made durable first: a crash in between is finished at the next open)."""
        receiving, self._receiving = self._receiving, None
        if receiving is None or receiving[0] != snapshot:
            return False
        partial = receiving[1]
        found = _read_snapshot(partial)
        if found is None or found[0].id != snapshot:
            partial.unlink(missing_ok=True)
            return False
        with partial.open("rb") as file:
            os.fsync(file.fileno())
        path = self._snapshot_path(snapshot, SNAPSHOT_SUFFIX)
        os.replace(partial, path)
        fsync_directory(self.directory)
        self._log.truncate_fully_and_start_at(snapshot.end_offset)
        self._log.update_high_watermark(snapshot.end_offset)
        for older in self._snapshots:
            if older.path != path:
                older.path.unlink(missing_ok=True)
        self._snapshots = [_Snapshot(snapshot, path, found[0].epochs, found[0].voters)]
        fsync_directory(self.directory)
        return True

    # -----------------------------------------------------------------------------------------
    # the state machine's snapshots

    def read(self, from_offset: int, max_records: int = 10_000) -> list[tuple[int, metadata_pb2.MetadataRecord]]:
        """Up to ``max_records`` (offset, record) pairs from ``from_offset`` on (whole batches);
        below the log start is an error (those records live only in a snapshot)."""
        if from_offset < self.start_offset:
            raise LanesError(f"metadata offset {from_offset} is below the log start {self.start_offset}")
        found: list[tuple[int, metadata_pb2.MetadataRecord]] = []
        offset = from_offset
        while offset < self.end_offset and len(found) < max_records:
            result = self._log.read(offset, 1024 * 1024)
            if not result.records:
                break
            for batch in decode_batches(result.records):
                for record in batch.records:
                    if record.offset >= offset:  # a configuration entry is a no-op for images
                        value = b"" if batch.header.is_control else record.value or b""
                        found.append((record.offset, metadata_pb2.MetadataRecord.FromString(value)))
            offset = result.next_offset
        return found

    def snapshot_header(
        self, end_offset: int, voters: tuple[Voter, ...] | None = None
    ) -> controller_pb2.MetadataSnapshotHeader:
        """The header of a snapshot of every entry below ``end_offset`` (held, committed), with
        the voters in force there."""
        if not self.start_offset < end_offset <= self.end_offset:
            raise LanesError(f"no snapshot at {end_offset}: the log holds {self.start_offset}..{self.end_offset}")
        header = controller_pb2.MetadataSnapshotHeader(
            id=controller_pb2.RaftSnapshotId(end_offset=end_offset, epoch=self.epoch_at(end_offset - 1)),
            epochs=[
                controller_pb2.QuorumEpochStart(epoch=epoch, start_offset=start)
                for epoch, start in self._epoch_starts()
                if start < end_offset
            ],
        )
        if voters is not None:
            header.voters.CopyFrom(voters_to_wire(voters))
        return header

    def write_snapshot(
        self, header: controller_pb2.MetadataSnapshotHeader, records: Sequence[metadata_pb2.MetadataRecord]
    ) -> Path:
        """Write a snapshot file, durably (safe in a worker thread: it touches only that file);
        ``adopt_snapshot`` makes it the newest."""
        path = self._snapshot_path(SnapshotId(header.id.end_offset, header.id.epoch), SNAPSHOT_SUFFIX)
        write_atomically(path, _encode(header, records))
        return path

    def adopt_snapshot(
        self, header: controller_pb2.MetadataSnapshotHeader, path: Path, in_transfer: Collection[SnapshotId] = ()
    ) -> None:
        """Make a written snapshot the newest, drop the log below the one before it and older
        snapshots (``SNAPSHOTS_KEPT`` stay), except snapshots ``in_transfer`` to followers and
        the log from the oldest of them on."""
        snapshot = _Snapshot(
            SnapshotId(header.id.end_offset, header.id.epoch),
            path,
            tuple((e.epoch, e.start_offset) for e in header.epochs),
            voters_from_wire(header.voters) if header.HasField("voters") else None,
        )
        if self._snapshots and snapshot.id.end_offset <= self._snapshots[-1].id.end_offset:
            return
        self._snapshots.append(snapshot)
        newest = self._snapshots[-SNAPSHOTS_KEPT:]
        kept = [s for s in self._snapshots if s in newest or s.id in in_transfer]
        if len(newest) == SNAPSHOTS_KEPT:  # the log reaches back to the oldest kept snapshot
            self._log.delete_records_before(max(kept[0].id.end_offset, self.start_offset))
        for stale in self._snapshots:
            if stale not in kept:
                stale.path.unlink(missing_ok=True)
        self._snapshots = kept
        fsync_directory(self.directory)

    def snapshot(self, state: MetadataImage, voters: tuple[Voter, ...] | None = None) -> Path:
        """Snapshot ``state`` (committed, applied from this log) at once, on the calling thread."""
        header = self.snapshot_header(state.last_offset + 1, voters)
        path = self.write_snapshot(header, state.to_records())
        self.adopt_snapshot(header, path)
        return path

    def close(self) -> None:
        """Close the log cleanly."""
        self._log.close()

    def _snapshot_path(self, snapshot: SnapshotId, suffix: str) -> Path:
        return self.directory / f"{SNAPSHOT_PREFIX}{snapshot.end_offset - 1:020d}{suffix}"

    def _snapshot_files(self, suffix: str) -> list[Path]:
        found = []
        for path in self.directory.glob(f"{SNAPSHOT_PREFIX}*{suffix}"):
            digits = path.name[len(SNAPSHOT_PREFIX) : -len(suffix)]
            if digits.isdigit():
                found.append((int(digits), path))
        return [path for _, path in sorted(found)]


def _writes(entries: Sequence[Entry]) -> list[list[Entry]]:
    """``entries`` cut after each entry that ends a write, where the epoch changes, and around
    configuration entries (each is a write of its own)."""
    writes: list[list[Entry]] = []
    current: list[Entry] = []
    for entry in entries:
        if current and (current[-1].epoch != entry.epoch or entry.voters is not None):
            writes.append(current)
            current = []
        current.append(entry)
        if entry.ends_write:
            writes.append(current)
            current = []
    if current:
        writes.append(current)
    return writes


def _encode(header: controller_pb2.MetadataSnapshotHeader, records: Sequence[metadata_pb2.MetadataRecord]) -> bytes:
    parts = [encode_batch([Record(0, 0, None, header.SerializeToString())], is_control=True)]
    if records:
        parts.append(
            encode_batch([Record(index, 0, None, record.SerializeToString()) for index, record in enumerate(records)])
        )
    return b"".join(parts)


def _read_snapshot(
    path: Path,
) -> tuple[_Header, list[metadata_pb2.MetadataRecord]] | None:
    """A snapshot file's header and records; None when it is damaged or has no header."""
    try:
        batches = decode_batches(path.read_bytes())
        if not batches or not batches[0].header.is_control or len(batches[0].records) != 1:
            return None
        header = controller_pb2.MetadataSnapshotHeader.FromString(batches[0].records[0].value or b"")
        records = [
            metadata_pb2.MetadataRecord.FromString(record.value or b"")
            for batch in batches[1:]
            for record in batch.records
        ]
    except (OSError, LanesError, DecodeError):
        return None
    snapshot = SnapshotId(header.id.end_offset, header.id.epoch)
    if snapshot.end_offset <= 0:
        return None
    voters = voters_from_wire(header.voters) if header.HasField("voters") else None
    return _Header(snapshot, tuple((e.epoch, e.start_offset) for e in header.epochs), voters), records


@dataclass(frozen=True)
class _Header:
    id: SnapshotId
    epochs: tuple[tuple[int, int], ...]
    voters: tuple[Voter, ...] | None
