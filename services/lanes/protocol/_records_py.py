"""Pure-Python records-section codec: the reference for the C fast path (``_records_c.c``).

Both modules implement the same three functions with the same results and errors; the test
suite runs every codec test against both and compares them on random input. The section
layout is described in ``lanes.protocol.records``.

``encode_records(records, base_offset, base_timestamp) -> (section, max_timestamp, last_offset_delta)``
    ``records`` is a sequence of ``Record`` tuples ``(offset, timestamp, key, value, headers)``.
    Offsets must be strictly increasing and at least ``base_offset``. Raises ValueError or
    TypeError for records that cannot be encoded.
``check_records(section, count, base_timestamp, require_keys) -> None``
    Checks ``count`` records filling ``section`` as a producer must write them, without building
    records (the broker's validation of every produced batch, Kafka's LogValidator): everything
    ``decode_records`` checks, offset deltas 0, 1, 2, ..., and with ``require_keys`` a key on
    every record. Raises ValueError as ``decode_records`` does.
``decode_records(section, count, base_offset, base_timestamp, record_type, trailer=()) -> list[record_type]``
    Parses exactly ``count`` records filling ``section`` exactly. Each record is
    ``record_type(offset, timestamp, key, value, headers, *trailer)``: ``trailer`` holds fields
    common to the batch (a consumer's topic, partition, ...), so a record is built once, in C
    on the fast path. Raises ValueError naming the record index, the byte position within the
    section and what is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def _varint(value: int) -> bytes:
    """Zigzag + LEB128 encoding of a signed integer (Kafka's varint/varlong)."""
    unsigned = (value << 1) ^ (value >> 63)
    out = bytearray()
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


def _as_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray) or (isinstance(value, memoryview) and value.c_contiguous):
        return bytes(value)
    raise TypeError(f"{what} must be bytes or None, not {type(value).__name__}")


def _int_field(value: Any, what: str) -> int:
    if not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{what} {value} does not fit in 64 bits")
    return value


def encode_records(records: Sequence[Any], base_offset: int, base_timestamp: int) -> tuple[bytes, int, int]:
    """Encode the records section; see the module docstring."""
    parts: list[bytes] = []
    max_timestamp = -1
    previous_delta = -1
    for index, record in enumerate(records):
        if not isinstance(record, tuple) or len(record) < 5:
            raise TypeError(f"record {index} must be a Record (offset, timestamp, key, value, headers)")
        offset = _int_field(record[0], f"record {index} offset")
        timestamp = _int_field(record[1], f"record {index} timestamp")
        offset_delta = offset - base_offset
        if offset_delta < 0:
            raise ValueError(f"record {index} offset {offset} is below the base offset {base_offset}")
        if offset_delta <= previous_delta:
            raise ValueError(f"record {index} offset {offset} is not after the previous record's")
        if offset_delta > _INT32_MAX:
            raise ValueError(f"record {index} offset {offset} is more than 2^31-1 after the base offset")
        timestamp_delta = timestamp - base_timestamp
        if not _INT64_MIN <= timestamp_delta <= _INT64_MAX:
            raise ValueError(f"record {index} timestamp {timestamp} is too far from the base timestamp")
        previous_delta = offset_delta
        max_timestamp = max(max_timestamp, timestamp)
        body = [b"\x00", _varint(timestamp_delta), _varint(offset_delta)]
        for what, field in (("key", record[2]), ("value", record[3])):
            if field is None:
                body.append(_varint(-1))
            else:
                data = _as_bytes(field, f"record {index} {what}")
                body.append(_varint(len(data)))
                body.append(data)
        headers = record[4]
        try:
            header_list = list(headers)
        except TypeError:
            raise TypeError(f"record {index} headers must be a sequence of (str, bytes | None) pairs") from None
        body.append(_varint(len(header_list)))
        for header in header_list:
            if not isinstance(header, tuple) or len(header) != 2 or not isinstance(header[0], str):
                raise TypeError(f"record {index} headers must be a sequence of (str, bytes | None) pairs")
            header_key = header[0].encode("utf-8")
            body.append(_varint(len(header_key)))
            body.append(header_key)
            if header[1] is None:
                body.append(_varint(-1))
            else:
                header_value = _as_bytes(header[1], f"record {index} header value")
                body.append(_varint(len(header_value)))
                body.append(header_value)
        encoded = b"".join(body)
        if len(encoded) > _INT32_MAX:
            raise ValueError(f"record {index} is larger than 2 GiB")
        parts.append(_varint(len(encoded)))
        parts.append(encoded)
    return b"".join(parts), max_timestamp, previous_delta


class _Reader:
    """Cursor over a records section; every read checks bounds and raises ValueError."""

    __slots__ = ("data", "end", "index", "position", "record_start")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0
        self.end = len(data)
        self.index = 0
        self.record_start = 0

    def fail(self, message: str) -> ValueError:
        return ValueError(f"record {self.index} at byte {self.record_start} of the records section: {message}")

    def varint(self, what: str, max_bytes: int) -> int:
        data = self.data
        result = 0
        shift = 0
        for index in range(max_bytes):
            if self.position >= self.end:
                raise self.fail(f"{what} varint is truncated")
            byte = data[self.position]
            self.position += 1
            if index == 9 and byte & 0x7E:  # the tenth byte may only carry bit 63
                raise self.fail(f"{what} varint does not fit in 64 bits")
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                value = (result >> 1) ^ -(result & 1)
                if max_bytes == 5 and not _INT32_MIN <= value <= _INT32_MAX:
                    raise self.fail(f"{what} varint does not fit in 32 bits")
                return value
            shift += 7
        raise self.fail(f"{what} varint is longer than {max_bytes} bytes")

    def blob(self, what: str, nullable: bool) -> bytes | None:
        length = self.varint(f"{what} length", 5)
        if length == -1 and nullable:
            return None
        if length < 0:
            raise self.fail(f"{what} length {length} is negative")
        if self.position + length > self.end:
            raise self.fail(f"{what} of {length} bytes overruns the record")
        value = self.data[self.position : self.position + length]
        self.position += length
        return value


def decode_records(  # noqa: PLR0917 - the C fast path's positional signature
    section: bytes | memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    record_type: Any,
    trailer: tuple[Any, ...] = (),
) -> list[Any]:
    """Decode the records section; see the module docstring."""
    return _walk(section, count, base_offset, base_timestamp, record_type, trailer, check=False, require_keys=False)


def check_records(section: bytes | memoryview, count: int, base_timestamp: int, require_keys: bool) -> None:
    """Check the records section as a producer must write it; see the module docstring."""
    if count < 0 or count > len(section) // 7 + 1:
        raise ValueError(f"records count {count} does not fit a {len(section)}-byte records section")
    _walk(section, count, 0, base_timestamp, lambda *fields: None, (), check=True, require_keys=require_keys)


def _walk(  # noqa: PLR0917 - decode_records' positional signature, plus the checks
    section: bytes | memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    record_type: Any,
    trailer: tuple[Any, ...],
    *,
    check: bool,
    require_keys: bool,
) -> list[Any]:
    reader = _Reader(bytes(section))
    total = reader.end
    records = []
    for index in range(count):
        reader.index = index
        reader.record_start = reader.position
        reader.end = total
        if reader.position >= total:
            raise reader.fail(f"missing: the batch header counts {count} records, the section holds {index}")
        length = reader.varint("length", 5)
        if length < 0 or reader.position + length > total:
            raise reader.fail(f"length {length} overruns the records section")
        reader.end = reader.position + length
        if reader.position >= reader.end:
            raise reader.fail("attributes byte is missing")
        reader.position += 1  # record attributes: unused in v2
        timestamp_delta = reader.varint("timestamp delta", 10)
        offset_delta = reader.varint("offset delta", 5)
        if offset_delta < 0:
            raise reader.fail(f"offset delta {offset_delta} is negative")
        if check and offset_delta != index:
            raise reader.fail(f"offset delta {offset_delta} is not {index}: a producer's offsets are contiguous")
        offset = base_offset + offset_delta
        if offset > _INT64_MAX:
            raise reader.fail("offset delta overflows the base offset")
        timestamp = base_timestamp + timestamp_delta
        if not _INT64_MIN <= timestamp <= _INT64_MAX:
            raise reader.fail("timestamp delta overflows the base timestamp")
        key = reader.blob("key", nullable=True)
        if require_keys and key is None:
            raise reader.fail("has no key: a compacted topic (cleanup.policy=compact) needs one on every record")
        value = reader.blob("value", nullable=True)
        header_count = reader.varint("header count", 5)
        if header_count < 0:
            raise reader.fail(f"header count {header_count} is negative")
        if header_count > (reader.end - reader.position) // 2 + 1:
            raise reader.fail("header count exceeds what the record can hold")
        headers = []
        for _ in range(header_count):
            raw_key = reader.blob("header key", nullable=False) or b""
            try:
                header_key = raw_key.decode("utf-8")
            except UnicodeDecodeError:
                raise reader.fail("header key is not valid UTF-8") from None
            headers.append((header_key, reader.blob("header value", nullable=True)))
        if reader.position != reader.end:
            raise reader.fail(f"length says {length} bytes but the fields end {reader.end - reader.position} early")
        records.append(
            record_type(
                offset,
                timestamp,
                key,
                value,
                tuple(headers),
                *trailer,
            )
        )
    if reader.position != total:
        reader.index = count
        reader.record_start = reader.position
        raise reader.fail(f"{total - reader.position} bytes follow the last of the {count} records")
    return records
