"""The controller's durable metadata log (the Raft log of the quorum), with snapshots.

Layout, under the controller's data directory::

    metadata/                        a PartitionLog (lanes.storage): each MetadataRecord is the value
                                     of one record; metadata offsets are log offsets; the Raft
                                     epoch of each entry is its batch's partition leader epoch;
                                     every append is fsynced before it returns (flush.messages=1)
    snapshot-<offset:020d>.bin       the committed state as of <offset> (inclusive), as RecordBatch
                                     v2 bytes whose record values are MetadataImage.to_records()

``MetadataLog`` is the ``RaftLog`` the core (``lanes.controller.raft``) replicates: a decision's
records are one ``append`` and so one batch per epoch, all or nothing also across a crash
(recovery drops a torn batch whole), and ``entries`` hands out whole batches, so a follower
stores whole decisions too. An entry with an empty value is the Raft leader-change entry (an
empty ``MetadataRecord``, a no-op for the image).

Snapshots only speed up loading: the log keeps every entry (a voter that lost its directory
catches up from offset 0; snapshot transfer, KIP-630, is not built yet). Only committed state is
ever snapshotted, so ``load_snapshot`` is safe to apply before the quorum says what is committed.
Not thread-safe: the controller's event loop owns it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lanes.clock import Clock
from lanes.controller.raft import Entry
from lanes.errors import LanesError
from lanes.metadata.image import MetadataImage
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.storage.files import fsync_directory, write_atomically
from lanes.storage.log import LogConfig, PartitionLog
from lanes.v1 import metadata_pb2

SNAPSHOT_PREFIX = "snapshot-"
SNAPSHOT_SUFFIX = ".bin"
_LOG_CONFIG = LogConfig.from_topic_configs(
    {"flush.messages": "1", "segment.bytes": str(64 * 1024 * 1024), "retention.ms": "-1", "retention.bytes": "-1"}
)
_READ_BYTES = 1024 * 1024


class MetadataLog:
    """Append-only, durable MetadataRecords plus snapshots; rebuilds the MetadataImage."""

    def __init__(self, directory: Path, clock: Clock) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._log = PartitionLog.open(directory / "metadata", _LOG_CONFIG, clock=clock)
        self._log.update_high_watermark(self._log.log_end_offset)

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
        for offset, path in reversed(self._snapshots()):
            try:
                records = _decode(path.read_bytes())
            except (OSError, LanesError):
                continue  # a damaged snapshot: an older one (or the full log) serves
            return MetadataImage.from_snapshot(records, offset)
        if self.start_offset > 0:
            raise LanesError(
                f"the metadata log starts at {self.start_offset} but no snapshot covers the offsets before it"
            )
        return MetadataImage()

    # -----------------------------------------------------------------------------------------
    # the RaftLog protocol

    @property
    def last_epoch(self) -> int:
        """The epoch of the last entry (0: none)."""
        return max(self._log.epochs.latest_epoch, 0)

    def epoch_at(self, offset: int) -> int:
        return max(self._log.epochs.epoch_for(offset) or 0, 0)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """The largest epoch at or below ``epoch`` and where it ends ((0, 0): nothing)."""
        found, end = self._log.epochs.end_offset_for(epoch, self.end_offset)
        return (0, 0) if found < 0 else (found, end)

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
            records = [Record(offset + index, now, None, entry.data) for index, entry in enumerate(items)]
            buffers.append(encode_batch(records, base_offset=offset, partition_leader_epoch=items[0].epoch))
            offset += len(items)
        if buffers:
            self._log.append_as_follower(b"".join(buffers))
            self._log.update_high_watermark(self._log.log_end_offset)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries from ``offset`` on (they diverge from the leader's log)."""
        self._log.truncate_to(offset)

    def read(self, from_offset: int, max_records: int = 10_000) -> list[tuple[int, metadata_pb2.MetadataRecord]]:
        """Up to ``max_records`` (offset, record) pairs from ``from_offset`` on (whole batches)."""
        found: list[tuple[int, metadata_pb2.MetadataRecord]] = []
        offset = max(from_offset, self.start_offset)
        while offset < self.end_offset and len(found) < max_records:
            result = self._log.read(offset, 1024 * 1024)
            if not result.records:
                break
            for batch in decode_batches(result.records):
                for record in batch.records:
                    if record.offset >= offset:
                        found.append((record.offset, metadata_pb2.MetadataRecord.FromString(record.value or b"")))
            offset = result.next_offset
        return found

    def snapshot(self, state: MetadataImage) -> Path:
        """Write ``state`` (committed) as a snapshot (``snapshot_records``)."""
        return self.snapshot_records(state.to_records(), state.last_offset)

    def snapshot_records(self, records: Sequence[metadata_pb2.MetadataRecord], last_offset: int) -> Path:
        """Write the committed state as of ``last_offset`` as a snapshot; the previous one stays,
        in case this one is ever found damaged, older ones go. The log keeps everything (see the
        module docstring). Safe in a worker thread: it touches only snapshot files."""
        path = self.directory / f"{SNAPSHOT_PREFIX}{last_offset:020d}{SNAPSHOT_SUFFIX}"
        write_atomically(path, _encode(records))
        older = [p for offset, p in self._snapshots() if offset < last_offset]
        for stale in older[:-1]:
            stale.unlink()
        fsync_directory(self.directory)
        return path

    def close(self) -> None:
        """Close the log cleanly."""
        self._log.close()

    def _snapshots(self) -> list[tuple[int, Path]]:
        found = []
        for path in self.directory.glob(f"{SNAPSHOT_PREFIX}*{SNAPSHOT_SUFFIX}"):
            digits = path.name[len(SNAPSHOT_PREFIX) : -len(SNAPSHOT_SUFFIX)]
            if digits.isdigit():
                found.append((int(digits), path))
        return sorted(found)


def _writes(entries: Sequence[Entry]) -> list[list[Entry]]:
    """``entries`` cut after each entry that ends a write, and where the epoch changes."""
    writes: list[list[Entry]] = []
    current: list[Entry] = []
    for entry in entries:
        if current and current[-1].epoch != entry.epoch:
            writes.append(current)
            current = []
        current.append(entry)
        if entry.ends_write:
            writes.append(current)
            current = []
    if current:
        writes.append(current)
    return writes


def _encode(records: Sequence[metadata_pb2.MetadataRecord]) -> bytes:
    if not records:
        return b""
    return encode_batch([Record(index, 0, None, record.SerializeToString()) for index, record in enumerate(records)])


def _decode(data: bytes) -> list[metadata_pb2.MetadataRecord]:
    return [
        metadata_pb2.MetadataRecord.FromString(record.value or b"")
        for batch in decode_batches(data)
        for record in batch.records
    ]
