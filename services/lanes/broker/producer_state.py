"""Idempotent-producer state of one partition (docs/architecture.md#the-broker), as a pure core.

A producer stamps each batch header with its producer id, epoch and the sequence number of the
batch's first record; sequences count records per partition, from 0, wrapping after 2^31-1. The
leader keeps, per producer, its epoch and the last five batches it appended, and decides for each
incoming batch:

- not idempotent (producer id -1): append;
- an older epoch than the producer's current one: INVALID_PRODUCER_EPOCH (a newer instance of the
  producer took over: this one is a zombie);
- a newer epoch: the producer restarted its sequences; the batch must start at 0;
- the same epoch: a batch equal to one of the last five (same first and last sequence) is a
  retry of something already appended: DUPLICATE, answered with the original offsets and not
  appended again; the next batch must start right after the last one's sequence; anything else is
  OUT_OF_ORDER_SEQUENCE_NUMBER (records would be lost or reordered);
- an unknown producer (no state, for example after its records were deleted) must start at
  sequence 0; otherwise UNKNOWN_PRODUCER_ID: re-initialise, unless earlier batches are still in
  flight (its first batch has not arrived yet), in which case the client retries, as it does for
  OUT_OF_ORDER_SEQUENCE_NUMBER with batches in flight.

Only batch headers are needed, never records: the state can be rebuilt by replaying the headers
of the log (``apply``), and is persisted as snapshots (``to_snapshot``/``from_snapshot``, Kafka's
``.snapshot`` files: the state after every batch below the snapshot's offset).

A producer that writes nothing for ``producer.id.expiration.ms`` (by the newest timestamp of its
last batch, as Kafka) is forgotten (``expire``): the table stays bounded by the producers that are
active, and a producer that comes back after that long starts over (UNKNOWN_PRODUCER_ID unless it
sends sequence 0; the client bumps its epoch, KIP-360).

Snapshot layout (big-endian)::

    version u16 (1) | crc32 u32 of everything after it | producers u32
    per producer: producer id i64 | epoch i16 | last timestamp ms i64 | batches u8
      per batch: first sequence i32 | last sequence i32 | first offset i64 | last offset i64
"""

from __future__ import annotations

import struct
import zlib
from collections import deque
from dataclasses import dataclass, field

from lanes.errors import ErrorCode
from lanes.protocol.records import MAX_CACHED_BATCHES, BatchHeader, next_sequence

NO_PRODUCER_ID = -1


@dataclass(frozen=True)
class CachedBatch:
    """One appended batch of a producer."""

    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass
class ProducerEntry:
    """A producer's epoch and its last appended batches (newest last)."""

    producer_id: int
    epoch: int
    #: the newest record timestamp of its last batch (-1 if none): when it was last active
    last_timestamp_ms: int = -1
    batches: deque[CachedBatch] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))


@dataclass(frozen=True)
class Verdict:
    """What to do with an incoming batch: append, or not (duplicate or error)."""

    error: ErrorCode = ErrorCode.NONE
    duplicate_of: CachedBatch | None = None
    message: str = ""

    @property
    def append(self) -> bool:
        return self.error is ErrorCode.NONE and self.duplicate_of is None


_APPEND = Verdict()

_SNAPSHOT_VERSION = 1
_SNAPSHOT_HEADER = struct.Struct(">HII")  # version, crc32 of the rest, producers
_SNAPSHOT_PRODUCER = struct.Struct(">qhqB")  # producer id, epoch, last timestamp, batches
_SNAPSHOT_BATCH = struct.Struct(">iiqq")  # first and last sequence, first and last offset


class SnapshotError(ValueError):
    """A snapshot that cannot be read (torn, corrupt, or of an unknown version)."""


class ProducerStateTable:
    """Producer id -> state, for one partition. Not thread-safe: the partition's owner serialises."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def get(self, producer_id: int) -> ProducerEntry | None:
        """A producer's state."""
        return self._producers.get(producer_id)

    def check(self, header: BatchHeader) -> Verdict:
        """The verdict for an incoming batch (see the module docstring)."""
        producer_id, epoch, first = header.producer_id, header.producer_epoch, header.base_sequence
        if producer_id == NO_PRODUCER_ID:
            return _APPEND
        last = next_sequence(first, header.records_count - 1)
        entry = self._producers.get(producer_id)
        if entry is None:
            if first == 0:
                return _APPEND
            return Verdict(
                ErrorCode.UNKNOWN_PRODUCER_ID,
                message=f"producer {producer_id} has no state here and sent sequence {first}: re-initialise it",
            )
        if epoch < entry.epoch:
            return Verdict(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                message=f"producer {producer_id} epoch {epoch} is fenced by epoch {entry.epoch}",
            )
        if epoch > entry.epoch:
            if first == 0:
                return _APPEND
            return Verdict(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                message=f"producer {producer_id} started epoch {epoch} at sequence {first}, not 0",
            )
        for cached in entry.batches:
            if cached.first_sequence == first and cached.last_sequence == last:
                return Verdict(duplicate_of=cached)
        expected = next_sequence(entry.batches[-1].last_sequence, 1) if entry.batches else 0
        if first != expected:
            return Verdict(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                message=f"producer {producer_id} sent sequence {first} where {expected} was expected",
            )
        return _APPEND

    def apply(self, header: BatchHeader) -> None:
        """Record an appended batch (also used to rebuild the table from the log's headers)."""
        if header.producer_id == NO_PRODUCER_ID:
            return
        entry = self._producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = ProducerEntry(header.producer_id, header.producer_epoch)
            self._producers[header.producer_id] = entry
        entry.last_timestamp_ms = max(entry.last_timestamp_ms, header.max_timestamp)
        entry.batches.append(
            CachedBatch(
                first_sequence=header.base_sequence,
                last_sequence=next_sequence(header.base_sequence, header.records_count - 1),
                first_offset=header.base_offset,
                last_offset=header.last_offset,
            )
        )

    def to_snapshot(self) -> bytes:
        """The table as snapshot bytes (layout in the module docstring)."""
        parts = []
        for entry in self._producers.values():
            parts.append(
                _SNAPSHOT_PRODUCER.pack(entry.producer_id, entry.epoch, entry.last_timestamp_ms, len(entry.batches))
            )
            parts.extend(
                _SNAPSHOT_BATCH.pack(b.first_sequence, b.last_sequence, b.first_offset, b.last_offset)
                for b in entry.batches
            )
        body = struct.pack(">I", len(self._producers)) + b"".join(parts)
        return struct.pack(">HI", _SNAPSHOT_VERSION, zlib.crc32(body)) + body

    @classmethod
    def from_snapshot(cls, data: bytes) -> ProducerStateTable:
        """A table from ``to_snapshot`` bytes; SnapshotError if they are not a whole, valid snapshot."""
        if len(data) < _SNAPSHOT_HEADER.size:
            raise SnapshotError(f"a snapshot of {len(data)} bytes is torn")
        version, crc, count = _SNAPSHOT_HEADER.unpack_from(data)
        if version != _SNAPSHOT_VERSION:
            raise SnapshotError(f"snapshot version {version} is unknown (this broker reads {_SNAPSHOT_VERSION})")
        if zlib.crc32(data[6:]) != crc:
            raise SnapshotError("the snapshot's checksum does not match: it is corrupt")
        table = cls()
        position = _SNAPSHOT_HEADER.size
        try:
            for _ in range(count):
                producer_id, epoch, last_timestamp_ms, batches = _SNAPSHOT_PRODUCER.unpack_from(data, position)
                position += _SNAPSHOT_PRODUCER.size
                entry = ProducerEntry(producer_id, epoch, last_timestamp_ms)
                for _ in range(batches):
                    entry.batches.append(CachedBatch(*_SNAPSHOT_BATCH.unpack_from(data, position)))
                    position += _SNAPSHOT_BATCH.size
                table._producers[producer_id] = entry
        except struct.error as exc:
            raise SnapshotError(f"the snapshot ends inside an entry: {exc}") from exc
        if position != len(data):
            raise SnapshotError(f"the snapshot has {len(data) - position} bytes after its last entry")
        return table

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers whose last batch is older than ``expiration_ms``; how many went."""
        expired = [pid for pid, entry in self._producers.items() if now_ms - entry.last_timestamp_ms >= expiration_ms]
        for producer_id in expired:
            del self._producers[producer_id]
        return len(expired)
