"""The controller's durable metadata log, with snapshots.

Layout, under the controller's data directory::

    metadata/                        a PartitionLog (lanes.storage): each MetadataRecord is the value
                                     of one record; metadata offsets are log offsets; every append
                                     is fsynced before it returns (flush.messages=1)
    snapshot-<offset:020d>.bin       the state as of <offset> (inclusive), as RecordBatch v2 bytes
                                     whose record values are the records of MetadataImage.to_records()

A decision's records are appended as one batch: all or nothing, also across a crash (recovery
drops a torn batch whole). ``snapshot`` writes the state atomically, then lets the log drop what
the snapshot covers, so the log stays bounded. ``open`` loads the newest intact snapshot and
replays the records after it. Not thread-safe: the controller's event loop owns it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lanes.clock import Clock
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
_CONTROLLER_EPOCH = 0  # one active controller in v1; a Raft quorum would stamp its term here


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

    def load(self) -> MetadataImage:
        """The state: the newest intact snapshot, then every record after it."""
        state = MetadataImage()
        snapshot_offset = -1
        for offset, path in reversed(self._snapshots()):
            try:
                records = _decode(path.read_bytes())
            except (OSError, LanesError):
                continue  # a damaged snapshot: an older one (or the full log) serves
            state = MetadataImage.from_snapshot(records, offset)
            snapshot_offset = offset
            break
        if snapshot_offset + 1 < self.start_offset:
            raise LanesError(
                f"the metadata log starts at {self.start_offset} but no snapshot covers the offsets before it"
            )
        while chunk := self.read(state.last_offset + 1):
            for offset, record in chunk:
                state.apply(offset, record)
        return state

    def append(self, records: Sequence[metadata_pb2.MetadataRecord]) -> int:
        """Append ``records`` atomically and durably; return the offset of the first."""
        if not records:
            return self.end_offset
        now = self._clock.now_ms()
        batch = encode_batch(
            [Record(index, now, None, record.SerializeToString()) for index, record in enumerate(records)]
        )
        info = self._log.append_as_leader(batch, leader_epoch=_CONTROLLER_EPOCH)
        self._log.update_high_watermark(self._log.log_end_offset)
        return info.first_offset

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
        """Write ``state`` as a snapshot. The previous snapshot stays, in case this one is ever
        found damaged; older ones go, and the log keeps only what follows the previous one."""
        path = self.directory / f"{SNAPSHOT_PREFIX}{state.last_offset:020d}{SNAPSHOT_SUFFIX}"
        write_atomically(path, _encode(state.to_records()))
        older = [(offset, p) for offset, p in self._snapshots() if offset < state.last_offset]
        for _, stale in older[:-1]:
            stale.unlink()
        fsync_directory(self.directory)
        keep_from = older[-1][0] + 1 if older else 0
        if keep_from > self.start_offset:
            self._log.delete_records_before(keep_from)
            self._log.apply_retention()
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
