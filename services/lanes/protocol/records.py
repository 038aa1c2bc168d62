"""Kafka RecordBatch v2: encode, decode, validate and patch record batches.

Byte layout (big-endian; positions relative to the batch start)::

    pos  size  field                 notes
      0     8  baseOffset            offset of the first record; assigned by the leader
      8     4  batchLength           bytes after this field: total size = batchLength + 12
     12     4  partitionLeaderEpoch  epoch of the leader that appended it; assigned by the leader
     16     1  magic                 2
     17     4  crc                   CRC-32C (Castagnoli) of bytes 21 .. end, as uint32
     21     2  attributes            bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4,
                                     4 zstd), bit 3 timestamp type (0 CreateTime, 1 LogAppendTime),
                                     bit 4 transactional, bit 5 control, bit 6 delete horizon set
     23     4  lastOffsetDelta       offset of the last record minus baseOffset
     27     8  baseTimestamp         timestamp of the first record (ms)
     35     8  maxTimestamp          largest record timestamp (ms)
     43     8  producerId            -1 when not idempotent
     51     2  producerEpoch         -1 when not idempotent
     53     4  baseSequence          sequence of the first record; -1 when not idempotent
     57     4  recordsCount          number of records
     61     ..  records              the records section, compressed as a whole when a codec is set

Each record in the (decompressed) records section; varints are zigzag + LEB128, as Kafka's::

    length          varint   bytes of the record after this field
    attributes      int8     unused, 0
    timestampDelta  varlong  timestamp - baseTimestamp
    offsetDelta     varint   offset - baseOffset
    keyLength       varint   -1 for a null key
    key             bytes
    valueLength     varint   -1 for a null value (a tombstone)
    value           bytes
    headerCount     varint
    headers         headerKeyLength varint, headerKey UTF-8, headerValueLength varint (-1 null),
                    headerValue bytes; repeated headerCount times

Invariants and what guards them:

- The CRC covers attributes .. end, so ``baseOffset``, ``batchLength``, ``partitionLeaderEpoch``
  and ``magic`` may be rewritten without recomputing it: the broker assigns offsets and epochs
  by patching 12 bytes in place (``patch_batch``), whatever the batch's size.
- Validation (``validate_batch``) reads only the 61-byte header and runs the CRC in C: its
  cost per record is that of CRC-32C over the bytes, never Python work per record. It rejects
  truncation, length mismatches, a wrong magic byte, a bad CRC, an unknown codec, impossible
  counts, and with ``expected_base_offset`` / ``expected_leader_epoch`` the two fields outside
  the CRC, so every single-bit flip anywhere in a batch is caught.
- A produced batch's records are also checked (``check_produced_records``, Kafka's
  LogValidator), in C and without building them: the one pass over records on the append path.
- Decoding (``decode_batch``) validates first, then parses records with the C fast path
  (``_records_c``), falling back to the pure-Python reference (``_records_py``) when the
  extension is not built. Both are tested against each other and against kafka-python.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from enum import IntEnum
from types import ModuleType
from typing import Any, NamedTuple, Protocol

from crc32c import crc32c

from lanes.errors import (
    CorruptRecordError,
    ErrorCode,
    LanesError,
    MessageTooLargeError,
    UnsupportedCompressionError,
)
from lanes.protocol import _records_py
from lanes.protocol.compression import Compression, compress, decompress

_fast_section_codec: ModuleType | None
try:
    from lanes.protocol import _records_c as _fast_section_codec
except ImportError:  # pragma: no cover - exercised only where the extension cannot be built
    _fast_section_codec = None

MAGIC = 2
#: The batch header: every field from baseOffset to recordsCount.
HEADER = struct.Struct(">qiiBIhiqqqhii")
HEADER_BYTES = HEADER.size  # 61
#: baseOffset + batchLength: the bytes not counted by batchLength.
LOG_OVERHEAD_BYTES = 12
#: The smallest legal batchLength: the header after batchLength, with no records.
MIN_BATCH_LENGTH = HEADER_BYTES - LOG_OVERHEAD_BYTES  # 49
BASE_OFFSET_POSITION = 0
BATCH_LENGTH_POSITION = 8
LEADER_EPOCH_POSITION = 12
MAGIC_POSITION = 16
CRC_POSITION = 17
ATTRIBUTES_POSITION = 21
MAX_TIMESTAMP_POSITION = 35
#: The smallest encoded record: seven one-byte fields.
MIN_RECORD_BYTES = 7

#: The batches an idempotent producer may have in flight per partition: the leader remembers this
#: many of a producer's last batches to recognise retries of them (duplicates).
MAX_CACHED_BATCHES = 5
#: a batch header's producer epoch is a signed 16-bit field
MAX_PRODUCER_EPOCH = 2**15 - 1
_SEQUENCE_LIMIT = 2**31

_COMPRESSION_MASK = 0x07
_LARGEST_CODEC = max(Compression)
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_DELETE_HORIZON_BIT = 0x40
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_BASE_OFFSET_MAX = _INT64_MAX - _INT32_MAX
_OFFSET_AND_EPOCH = struct.Struct(">q")
_PREFIX = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch
_EPOCH = struct.Struct(">i")
_ATTRIBUTES = struct.Struct(">h")
_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")

Headers = tuple[tuple[str, bytes | None], ...]


class TimestampType(IntEnum):
    """Bit 3 of the attributes: who set the record timestamps."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class Record(NamedTuple):
    """One record: its absolute offset, timestamp (ms), key, value and headers.

    For encoding, ``offset`` is absolute and must be strictly increasing within a batch and
    at least the batch's base offset; a producer uses 0, 1, 2, ... with base offset 0.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()


class BatchHeader(NamedTuple):
    """The 61-byte batch header, field for field (see the layout at the top of the module)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> Compression:
        """The codec of the records section."""
        return Compression(self.attributes & _COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        """CreateTime or LogAppendTime."""
        return TimestampType.LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        """Whether the batch belongs to a transaction."""
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        """Whether the batch holds control records (transaction markers)."""
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        """Whether baseTimestamp holds the compaction delete horizon."""
        return bool(self.attributes & _DELETE_HORIZON_BIT)

    @property
    def size_bytes(self) -> int:
        """Total bytes of the batch."""
        return self.batch_length + LOG_OVERHEAD_BYTES

    @property
    def last_offset(self) -> int:
        """Offset of the last record."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset after this batch."""
        return self.base_offset + self.last_offset_delta + 1


class RecordBatch(NamedTuple):
    """A decoded batch: its header and its records."""

    header: BatchHeader
    records: list[Record]  # or of the record_type it was decoded with


class SectionCodec(Protocol):
    """The records-section codec: ``_records_c`` or ``_records_py`` (same contract)."""

    def encode_records(
        self, records: Sequence[Record], base_offset: int, base_timestamp: int, /
    ) -> tuple[bytes, int, int]: ...

    def decode_records(  # noqa: PLR0917 - the C fast path's positional signature
        self,
        section: bytes | memoryview,
        count: int,
        base_offset: int,
        base_timestamp: int,
        record_type: type,
        trailer: tuple[Any, ...] = (),
        /,
    ) -> list[Any]: ...

    def check_records(
        self, section: bytes | memoryview, count: int, base_timestamp: int, require_keys: bool, /
    ) -> None: ...


# ---------------------------------------------------------------------------------------------
# header-level operations: cost per batch, independent of the number of records


def next_sequence(sequence: int, records: int) -> int:
    """The producer sequence after ``records`` records starting at ``sequence`` (wraps at 2^31)."""
    return (sequence + records) % _SEQUENCE_LIMIT


def _corrupt(position: int, message: str) -> CorruptRecordError:
    return CorruptRecordError(f"batch at byte {position}: {message}")


def read_header(buffer: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Parse the header of the batch at ``position``; check only that its bytes are present."""
    available = len(buffer) - position
    if available < LOG_OVERHEAD_BYTES:
        raise _corrupt(
            position,
            f"truncated: {available} bytes, fewer than the {LOG_OVERHEAD_BYTES} of baseOffset and batchLength",
        )
    if available < HEADER_BYTES:
        raise _corrupt(position, f"truncated: {available} bytes, fewer than the {HEADER_BYTES}-byte batch header")
    return BatchHeader._make(HEADER.unpack_from(buffer, position))


def validate_batch(
    buffer: bytes | bytearray | memoryview,
    position: int = 0,
    *,
    max_batch_bytes: int | None = None,
    expected_base_offset: int | None = None,
    expected_leader_epoch: int | None = None,
    producer_batch: bool = False,
    whole_buffer: bool = False,
) -> BatchHeader:
    """Check the batch at ``position`` and return its header; raise before anything is used.

    - ``max_batch_bytes``: refuse larger batches with MessageTooLargeError (max.message.bytes).
    - ``expected_base_offset`` / ``expected_leader_epoch``: the values the context knows (the
      log's next offset, the leader-epoch cache), checking the fields the CRC does not cover.
    - ``producer_batch``: a batch as a producer sends it: at least one record, offsets
      contiguous (lastOffsetDelta = recordsCount - 1).
    - ``whole_buffer``: the batch must end exactly at the end of ``buffer``.
    """
    header = read_header(buffer, position)
    end = position + LOG_OVERHEAD_BYTES + header.batch_length
    if header.batch_length < MIN_BATCH_LENGTH:
        raise _corrupt(
            position,
            f"batchLength {header.batch_length} at byte {position + BATCH_LENGTH_POSITION} is below "
            f"the {MIN_BATCH_LENGTH} bytes of a header without records",
        )
    if max_batch_bytes is not None and header.size_bytes > max_batch_bytes:
        raise MessageTooLargeError(
            f"batch at byte {position} is {header.size_bytes} bytes, more than the limit of {max_batch_bytes} "
            "(max.message.bytes): send smaller batches or raise the topic's max.message.bytes"
        )
    if end > len(buffer):
        raise _corrupt(
            position,
            f"truncated: batchLength says {header.size_bytes} bytes in all, only {len(buffer) - position} remain",
        )
    if whole_buffer and end != len(buffer):
        raise _corrupt(
            position,
            f"length mismatch: batchLength says {header.size_bytes} bytes, the buffer holds {len(buffer) - position}",
        )
    if header.magic != MAGIC:
        raise _corrupt(
            position,
            f"wrong magic byte {header.magic} at byte {position + MAGIC_POSITION}: "
            f"only RecordBatch v2 (magic {MAGIC}) is supported",
        )
    view = memoryview(buffer)[position + ATTRIBUTES_POSITION : end]
    computed = crc32c(view)
    if computed != header.crc:
        raise _corrupt(
            position,
            f"CRC mismatch: the header says {header.crc:#010x}, bytes {position + ATTRIBUTES_POSITION}.."
            f"{end - 1} give {computed:#010x}",
        )
    codec = header.attributes & _COMPRESSION_MASK
    if codec > _LARGEST_CODEC:
        raise UnsupportedCompressionError(
            f"batch at byte {position}: compression codec {codec} in the attributes is unknown; "
            "use none, gzip, snappy, lz4 or zstd"
        )
    _check_counts(header, position, end, producer_batch)
    if expected_base_offset is not None and header.base_offset != expected_base_offset:
        raise _corrupt(position, f"baseOffset {header.base_offset} is not the expected {expected_base_offset}")
    if expected_leader_epoch is not None and header.partition_leader_epoch != expected_leader_epoch:
        raise _corrupt(
            position,
            f"partitionLeaderEpoch {header.partition_leader_epoch} is not the expected {expected_leader_epoch}",
        )
    return header


def _check_counts(header: BatchHeader, position: int, end: int, producer_batch: bool) -> None:
    count = header.records_count
    if count < 0:
        raise _corrupt(position, f"recordsCount {count} is negative")
    if header.last_offset_delta < 0:
        raise _corrupt(position, f"lastOffsetDelta {header.last_offset_delta} is negative")
    if not 0 <= header.base_offset <= _BASE_OFFSET_MAX:
        raise _corrupt(position, f"baseOffset {header.base_offset} is out of range")
    if count and header.last_offset_delta < count - 1:
        raise _corrupt(
            position,
            f"lastOffsetDelta {header.last_offset_delta} is too small for {count} records with distinct offsets",
        )
    section_bytes = end - position - HEADER_BYTES
    if header.compression is Compression.NONE and count * MIN_RECORD_BYTES > section_bytes:
        raise _corrupt(
            position,
            f"recordsCount {count} cannot fit in a {section_bytes}-byte uncompressed records section",
        )
    if producer_batch:
        if count == 0:
            raise _corrupt(position, "a produced batch must hold at least one record")
        if header.last_offset_delta != count - 1:
            raise _corrupt(
                position,
                f"lastOffsetDelta {header.last_offset_delta} does not match recordsCount {count}: "
                "a producer's offsets are contiguous from 0",
            )


def validate_batches(
    buffer: bytes | bytearray | memoryview,
    *,
    max_batch_bytes: int | None = None,
    producer_batch: bool = False,
) -> list[BatchHeader]:
    """Validate concatenated batches filling ``buffer`` exactly; return their headers in order.

    Used by the broker on produce. The work is per batch: header parse and CRC-32C in C.
    """
    if not buffer:
        raise CorruptRecordError("no record batches: the records field is empty")
    headers = []
    position = 0
    while position < len(buffer):
        header = validate_batch(buffer, position, max_batch_bytes=max_batch_bytes, producer_batch=producer_batch)
        headers.append(header)
        position += header.size_bytes
    return headers


def patch_batch(
    buffer: bytearray | memoryview, position: int, *, base_offset: int, partition_leader_epoch: int
) -> None:
    """Set baseOffset and partitionLeaderEpoch of the batch at ``position`` in place.

    Neither field is covered by the CRC, so the batch stays valid; the cost is 12 bytes.
    """
    if not 0 <= base_offset <= _BASE_OFFSET_MAX:
        raise ValueError(f"base offset {base_offset} is out of range")
    _OFFSET_AND_EPOCH.pack_into(buffer, position + BASE_OFFSET_POSITION, base_offset)
    _EPOCH.pack_into(buffer, position + LEADER_EPOCH_POSITION, partition_leader_epoch)


def _assigned(headers: Sequence[BatchHeader], first_offset: int, partition_leader_epoch: int) -> list[BatchHeader]:
    """``headers`` as they read once given consecutive offsets from ``first_offset``."""
    if not 0 <= first_offset <= _BASE_OFFSET_MAX:
        raise ValueError(f"base offset {first_offset} is out of range")
    patched = []
    next_offset = first_offset
    for header in headers:
        patched.append(header._replace(base_offset=next_offset, partition_leader_epoch=partition_leader_epoch))
        next_offset += header.last_offset_delta + 1
    return patched


def assign_offsets(
    buffer: bytearray | memoryview,
    headers: Sequence[BatchHeader],
    *,
    first_offset: int,
    partition_leader_epoch: int,
) -> list[BatchHeader]:
    """Give the validated, concatenated batches in ``buffer`` consecutive offsets from
    ``first_offset`` and the leader's epoch, in place; return their headers as patched.

    ``headers`` are ``validate_batches(buffer)``'s result; the new log end offset is the last
    returned header's ``next_offset``. Work is per batch, not per record.
    """
    patched = _assigned(headers, first_offset, partition_leader_epoch)
    position = 0
    for header in patched:
        patch_batch(buffer, position, base_offset=header.base_offset, partition_leader_epoch=partition_leader_epoch)
        position += header.size_bytes
    return patched


def assign_offsets_vectored(
    data: bytes | bytearray | memoryview,
    headers: Sequence[BatchHeader],
    *,
    first_offset: int,
    partition_leader_epoch: int,
) -> tuple[list[BatchHeader], list[bytes | memoryview]]:
    """``assign_offsets`` without copying or changing ``data``: returns the patched headers and
    the batches as buffers for vectored I/O (per batch, a new 16-byte prefix holding baseOffset,
    batchLength and partitionLeaderEpoch, then a view of the rest of the original bytes)."""
    patched = _assigned(headers, first_offset, partition_leader_epoch)
    view = memoryview(data)
    buffers: list[bytes | memoryview] = []
    position = 0
    for header in patched:
        buffers.append(_PREFIX.pack(header.base_offset, header.batch_length, partition_leader_epoch))
        buffers.append(view[position + MAGIC_POSITION : position + header.size_bytes])
        position += header.size_bytes
    return patched, buffers


def stamp_log_append_time(
    buffer: bytearray | memoryview, headers: Sequence[BatchHeader], timestamp_ms: int
) -> list[BatchHeader]:
    """Mark each batch LogAppendTime with ``timestamp_ms`` as its maxTimestamp (the timestamp of
    every record in it, for consumers) and recompute its CRC; return the patched headers.

    Used for topics with message.timestamp.type=LogAppendTime. One CRC-32C per batch, in C.
    """
    position = 0
    patched = []
    for header in headers:
        attributes = header.attributes | _TIMESTAMP_TYPE_BIT
        _ATTRIBUTES.pack_into(buffer, position + ATTRIBUTES_POSITION, attributes)
        _TIMESTAMP.pack_into(buffer, position + MAX_TIMESTAMP_POSITION, timestamp_ms)
        end = position + header.size_bytes
        crc = crc32c(memoryview(buffer)[position + ATTRIBUTES_POSITION : end])
        _CRC.pack_into(buffer, position + CRC_POSITION, crc)
        patched.append(header._replace(attributes=attributes, max_timestamp=timestamp_ms, crc=crc))
        position = end
    return patched


# ---------------------------------------------------------------------------------------------
# record-level operations: encode and decode, with a swappable records-section codec


class BatchCodec:
    """Encodes and decodes whole batches with a given records-section codec."""

    def __init__(self, section_codec: SectionCodec) -> None:
        self._section = section_codec

    def encode(
        self,
        records: Sequence[Record],
        *,
        base_offset: int = 0,
        compression: Compression = Compression.NONE,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        partition_leader_epoch: int = -1,
        is_transactional: bool = False,
        is_control: bool = False,
        last_offset_delta: int | None = None,
        delete_horizon_ms: int | None = None,
    ) -> bytes:
        """Encode ``records`` (at least one) as one batch; see ``Record`` for offsets.

        Compaction's options: ``last_offset_delta`` keeps a batch's original offset range when
        records were removed from its end; ``delete_horizon_ms`` marks when its tombstones may go
        (stored as baseTimestamp with attribute bit 6, record timestamps unchanged; KIP-534).
        """
        if not records:
            raise ValueError("a record batch needs at least one record")
        return self.encode_runs(
            [records],
            base_offset=base_offset,
            compression=compression,
            timestamp_type=timestamp_type,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            partition_leader_epoch=partition_leader_epoch,
            is_transactional=is_transactional,
            is_control=is_control,
            last_offset_delta=last_offset_delta,
            delete_horizon_ms=delete_horizon_ms,
        )

    def encode_runs(
        self,
        runs: Sequence[Sequence[Record]],
        *,
        base_offset: int = 0,
        compression: Compression = Compression.NONE,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        partition_leader_epoch: int = -1,
        is_transactional: bool = False,
        is_control: bool = False,
        last_offset_delta: int | None = None,
        delete_horizon_ms: int | None = None,
    ) -> bytes:
        """Encode several runs of records as one batch. Each run is numbered as if it were a
        batch of its own at ``base_offset`` (the producer numbers each of its batches from 0) and
        is placed right after the previous run's last offset, so batches queued for one partition
        become one batch without touching a record in Python. ``encode`` is the one-run case."""
        runs = [run for run in runs if run]
        if not runs:
            raise ValueError("a record batch needs at least one record")
        base_timestamp = runs[0][0][1] if delete_horizon_ms is None else delete_horizon_ms
        if not isinstance(base_timestamp, int):
            raise TypeError(f"record 0 timestamp must be an int, not {type(base_timestamp).__name__}")
        sections: list[bytes] = []
        max_timestamp = -1
        shift = 0  # where the current run's offset deltas start
        count = 0
        for run in runs:
            section, run_max_timestamp, run_last_delta = self._section.encode_records(
                run, base_offset - shift, base_timestamp
            )
            sections.append(section)
            max_timestamp = max(max_timestamp, run_max_timestamp)
            records_last_delta = run_last_delta
            shift = run_last_delta + 1
            count += len(run)
        if last_offset_delta is None:
            last_offset_delta = records_last_delta
        elif last_offset_delta < records_last_delta:
            raise ValueError(f"last_offset_delta {last_offset_delta} is below the last record's {records_last_delta}")
        # uncompressed, the sections are the payload as they are: one copy, in the final join
        payload = sections if compression is Compression.NONE else [compress(compression, b"".join(sections))]
        attributes = (
            int(compression)
            | (_TIMESTAMP_TYPE_BIT if timestamp_type is TimestampType.LOG_APPEND_TIME else 0)
            | (_TRANSACTIONAL_BIT if is_transactional else 0)
            | (_CONTROL_BIT if is_control else 0)
            | (_DELETE_HORIZON_BIT if delete_horizon_ms is not None else 0)
        )
        tail = _HEADER_TAIL.pack(
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
        crc = crc32c(tail)
        for part in payload:
            crc = crc32c(part, crc)
        batch_length = HEADER_BYTES - LOG_OVERHEAD_BYTES + sum(len(part) for part in payload)
        head = _HEADER_HEAD.pack(base_offset, batch_length, partition_leader_epoch, MAGIC, crc)
        return b"".join((head, tail, *payload))

    def decode(
        self,
        buffer: bytes | bytearray | memoryview,
        position: int = 0,
        *,
        record_type: type[tuple[Any, ...]] = Record,
        trailer: Callable[[BatchHeader], tuple[Any, ...]] | None = None,
    ) -> RecordBatch:
        """Validate and decode the batch at ``position``. Records are ``record_type`` tuples:
        ``(offset, timestamp, key, value, headers)`` followed by ``trailer(header)``, fields the
        caller derives once per batch."""
        header = validate_batch(buffer, position)
        return self.decode_checked(buffer, position, header, record_type=record_type, trailer=trailer)

    def decode_checked(
        self,
        buffer: bytes | bytearray | memoryview,
        position: int,
        header: BatchHeader,
        *,
        record_type: type[tuple[Any, ...]] = Record,
        trailer: Callable[[BatchHeader], tuple[Any, ...]] | None = None,
    ) -> RecordBatch:
        """``decode`` of a batch ``validate_batch`` checked already (``header`` is what it
        returned): the records section is decoded without reading the header or the CRC again."""
        raw = memoryview(buffer)[position + HEADER_BYTES : position + header.size_bytes]
        section = raw if header.compression is Compression.NONE else decompress(header.compression, bytes(raw))
        count = header.records_count
        if count > len(section) // MIN_RECORD_BYTES + 1:
            raise _corrupt(position, f"recordsCount {count} cannot fit in a {len(section)}-byte records section")
        try:
            records = self._section.decode_records(
                section,
                count,
                header.base_offset,
                header.base_timestamp,
                record_type,
                () if trailer is None else trailer(header),
            )
        except ValueError as exc:
            raise _corrupt(position, str(exc)) from exc
        return RecordBatch(header, records)

    def check_produced(
        self, buffer: bytes | bytearray | memoryview, headers: Sequence[BatchHeader], *, require_keys: bool
    ) -> None:
        """Check every record of ``validate_batches(buffer)``'s batches as a producer must write
        them (Kafka's LogValidator), inflating compressed ones within ``MAX_DECOMPRESSED_BYTES``:
        each record parses, offset deltas run 0, 1, 2, ..., header keys are UTF-8 and, with
        ``require_keys`` (a compacted topic), every record has a key, timestamps fit 64 bits.
        In C, without building records. Raises LanesError INVALID_RECORD naming the batch and record, or
        MessageTooLargeError for a batch that inflates beyond the bound."""
        position = 0
        view = memoryview(buffer)
        for header in headers:
            raw = view[position + HEADER_BYTES : position + header.size_bytes]
            section = raw if header.compression is Compression.NONE else decompress(header.compression, bytes(raw))
            try:
                self._section.check_records(section, header.records_count, header.base_timestamp, require_keys)
            except ValueError as exc:
                raise LanesError(f"batch at byte {position}: {exc}", ErrorCode.INVALID_RECORD) from exc
            position += header.size_bytes

    def decode_all(
        self,
        buffer: bytes | bytearray | memoryview,
        *,
        record_type: type[tuple[Any, ...]] = Record,
        trailer: Callable[[BatchHeader], tuple[Any, ...]] | None = None,
    ) -> list[RecordBatch]:
        """Validate and decode every batch of a concatenation filling ``buffer`` (see ``decode``)."""
        batches = []
        position = 0
        while position < len(buffer):
            batch = self.decode(buffer, position, record_type=record_type, trailer=trailer)
            batches.append(batch)
            position += batch.header.size_bytes
        return batches


_HEADER_HEAD = struct.Struct(">qiiBI")  # baseOffset .. crc
_HEADER_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordsCount

#: Name of the records-section implementation in use: "c" or "python".
IMPLEMENTATION = "c" if _fast_section_codec is not None else "python"
PYTHON_CODEC = BatchCodec(_records_py)
DEFAULT_CODEC = BatchCodec(_fast_section_codec) if _fast_section_codec is not None else PYTHON_CODEC

encode_batch = DEFAULT_CODEC.encode
encode_runs = DEFAULT_CODEC.encode_runs
decode_batch = DEFAULT_CODEC.decode
decode_batches = DEFAULT_CODEC.decode_all
decode_checked_batch = DEFAULT_CODEC.decode_checked
check_produced_records = DEFAULT_CODEC.check_produced
