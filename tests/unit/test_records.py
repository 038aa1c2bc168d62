"""RecordBatch v2 codec: round trips, the C fast path against the reference, validation,
corruption, patching. Every record-level test runs against both section codecs."""

from __future__ import annotations

import array
import gc
import os
import struct
from typing import NamedTuple

import pytest
from crc32c import crc32c
from hypothesis import assume, given
from hypothesis import strategies as st

from lanes.errors import CorruptRecordError, ErrorCode, LanesError, MessageTooLargeError, UnsupportedCompressionError
from lanes.protocol import _records_py, records
from lanes.protocol.compression import Compression
from lanes.protocol.records import (
    ATTRIBUTES_POSITION,
    HEADER_BYTES,
    PYTHON_CODEC,
    BatchCodec,
    Record,
    TimestampType,
    assign_offsets,
    patch_batch,
    read_header,
    stamp_log_append_time,
    validate_batch,
    validate_batches,
)
from tests.unit.strategies import compressions, contiguous_record_lists, record_lists

try:
    from lanes.protocol import _records_c
except ImportError:  # pragma: no cover
    _records_c = None  # type: ignore[assignment]

C_CODEC = BatchCodec(_records_c) if _records_c is not None else None
CODECS = [pytest.param(PYTHON_CODEC, id="python"), pytest.param(C_CODEC, id="c")]


@pytest.fixture(params=CODECS, scope="module")
def codec(request: pytest.FixtureRequest) -> BatchCodec:
    if request.param is None:
        pytest.skip("the C extension is not built")
    return request.param  # type: ignore[no-any-return]


def test_c_extension_is_built_and_used() -> None:
    """CI must exercise the fast path; set LANES_ALLOW_PURE_PYTHON=1 where no compiler exists."""
    if os.environ.get("LANES_ALLOW_PURE_PYTHON"):
        pytest.skip("pure-Python codec explicitly allowed")
    assert records.IMPLEMENTATION == "c"


# ---------------------------------------------------------------------------------------------
# round trips


@given(batch=record_lists(), compression=compressions, base_offset=st.integers(0, 2**40))
def test_round_trip_preserves_every_record(
    codec: BatchCodec, batch: list[Record], compression: Compression, base_offset: int
) -> None:
    shifted = [r._replace(offset=r.offset + base_offset) for r in batch]
    encoded = codec.encode(shifted, base_offset=base_offset, compression=compression, partition_leader_epoch=7)
    decoded = codec.decode(encoded)
    assert decoded.records == shifted
    header = decoded.header
    assert header.base_offset == base_offset
    assert header.records_count == len(batch)
    assert header.last_offset == shifted[-1].offset
    assert header.base_timestamp == batch[0].timestamp
    assert header.max_timestamp == max(-1, *(r.timestamp for r in batch))
    assert header.compression is compression
    assert header.partition_leader_epoch == 7
    assert header.size_bytes == len(encoded)


@given(batch=contiguous_record_lists(), compression=compressions)
def test_header_fields_round_trip(codec: BatchCodec, batch: list[Record], compression: Compression) -> None:
    encoded = codec.encode(
        batch,
        compression=compression,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        producer_id=123456789,
        producer_epoch=3,
        base_sequence=42,
        is_transactional=True,
    )
    header = validate_batch(encoded, producer_batch=True, whole_buffer=True)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (123456789, 3, 42)
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert header.is_transactional
    assert not header.is_control
    assert codec.decode(encoded).records == batch


@given(runs=st.lists(contiguous_record_lists(), min_size=1, max_size=5), compression=compressions)
def test_runs_encode_as_their_renumbered_concatenation(
    codec: BatchCodec, runs: list[list[Record]], compression: Compression
) -> None:
    """The producer's coalescing: runs numbered from 0 each are byte for byte the batch of all
    their records numbered one after another."""
    renumbered = [record._replace(offset=index) for index, record in enumerate(r for run in runs for r in run)]
    settings = {"compression": compression, "producer_id": 9, "producer_epoch": 1, "base_sequence": 5}
    assert codec.encode_runs(runs, **settings) == codec.encode(renumbered, **settings)  # type: ignore[arg-type]
    assert codec.decode(codec.encode_runs(runs)).records == renumbered


class _Tagged(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    topic: str
    epoch: int


@given(batch=record_lists(), compression=compressions)
def test_decode_builds_the_callers_record_type_with_the_batch_fields(
    codec: BatchCodec, batch: list[Record], compression: Compression
) -> None:
    """A consumer's records come out of the codec whole: the five record fields, then what the
    trailer derives from the batch header."""
    encoded = codec.encode(batch, compression=compression, partition_leader_epoch=4)
    decoded = codec.decode(encoded, record_type=_Tagged, trailer=lambda header: ("t", header.partition_leader_epoch))
    assert decoded.records == [_Tagged(*record, "t", 4) for record in batch]
    assert all(type(record) is _Tagged for record in decoded.records)


@pytest.mark.skipif(_records_c is None, reason="the C codec is not built")
def test_c_decoded_records_of_values_only_are_left_to_reference_counting() -> None:
    """The cyclic collector does not walk records that cannot be in a cycle (values only in the
    trailer); records whose trailer holds a container stay tracked."""
    assert C_CODEC is not None
    encoded = C_CODEC.encode([Record(0, 1, b"k", b"v", (("h", b"x"),)), Record(1, 2, None, None)])
    plain = C_CODEC.decode(encoded, record_type=_Tagged, trailer=lambda header: ("t", 4)).records
    assert not any(gc.is_tracked(record) for record in plain)
    boxed = C_CODEC.decode(encoded, record_type=_Tagged, trailer=lambda header: ("t", [])).records
    assert all(gc.is_tracked(record) for record in boxed)


def test_null_and_empty_keys_values_and_headers_are_distinct(codec: BatchCodec) -> None:
    batch = [
        Record(0, 1, None, None),
        Record(1, 2, b"", b""),
        Record(2, 3, b"k", None, (("", None), ("h", b""), ("h", b"x"), ("ünï", b"\x00"))),
    ]
    assert codec.decode(codec.encode(batch)).records == batch


def test_known_bytes_pin_the_format(codec: BatchCodec) -> None:
    """A batch pinned byte for byte (CRC included), so a format regression cannot hide."""
    batch = [
        Record(0, 1_700_000_000_000, b"key", b"value", (("h", b"v"),)),
        Record(1, 1_700_000_000_005, None, b""),
    ]
    encoded = codec.encode(batch, base_offset=0, partition_leader_epoch=0)
    expected = bytes.fromhex(
        "0000000000000000"  # baseOffset
        "0000004b"  # batchLength: 75
        "00000000"  # partitionLeaderEpoch
        "02"  # magic
        "c0021d3b"  # crc (identical to kafka-python's for the same records)
        "0000"  # attributes
        "00000001"  # lastOffsetDelta
        "0000018bcfe56800"  # baseTimestamp
        "0000018bcfe56805"  # maxTimestamp
        "ffffffffffffffff"  # producerId
        "ffff"  # producerEpoch
        "ffffffff"  # baseSequence
        "00000002"  # recordsCount
        "24 00 00 00 06 6b6579 0a 76616c7565 02 02 68 02 76"  # record 0: length 18, key, value, 1 header
        "0c 00 0a 02 01 00 00"  # record 1: length 6, timestamp +5, offset +1, null key, empty value
    )
    assert encoded == expected


# ---------------------------------------------------------------------------------------------
# the C fast path against the reference


@given(batch=record_lists(max_records=40), base_offset=st.integers(0, 2**50))
def test_c_encoder_produces_the_reference_bytes(batch: list[Record], base_offset: int) -> None:
    if _records_c is None:
        pytest.skip("the C extension is not built")
    shifted = [r._replace(offset=r.offset + base_offset) for r in batch]
    base_timestamp = batch[0].timestamp
    assert _records_c.encode_records(shifted, base_offset, base_timestamp) == _records_py.encode_records(
        shifted, base_offset, base_timestamp
    )


@given(
    batch=record_lists(),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.integers(0, 10_000),
)
def test_c_and_reference_decoders_agree_on_damaged_sections(
    batch: list[Record], edits: list[tuple[int, int]], cut: int
) -> None:
    """Differential fuzz of the record parser: scribble into the section, fix the CRC so the
    parser is reached, and require identical results or identical errors."""
    if _records_c is None:
        pytest.skip("the C extension is not built")
    encoded = bytearray(PYTHON_CODEC.encode(batch))
    section_length = len(encoded) - HEADER_BYTES
    for position, value in edits:
        encoded[HEADER_BYTES + position % section_length] = value
    if cut % 3 == 0:  # sometimes also truncate the section (and fix the length)
        del encoded[HEADER_BYTES + cut % section_length :]
        struct.pack_into(">i", encoded, 8, len(encoded) - 12)
    struct.pack_into(">I", encoded, 17, crc32c(bytes(encoded[ATTRIBUTES_POSITION:])))
    outcomes = []
    for codec in (PYTHON_CODEC, C_CODEC):
        assert codec is not None
        try:
            outcomes.append(("ok", codec.decode(bytes(encoded)).records))
        except CorruptRecordError as exc:
            outcomes.append(("error", str(exc)))
        try:  # the produce-time check agrees too, and never passes what decoding refuses
            header = validate_batch(bytes(encoded))
            codec.check_produced(bytes(encoded), [header], require_keys=True)
            outcomes.append(("checked", None))
        except (CorruptRecordError, LanesError) as exc:
            outcomes.append(("refused", str(exc)))
    assert outcomes[:2] == outcomes[2:]
    if outcomes[0][0] == "error":
        assert outcomes[1][0] == "refused"


# ---------------------------------------------------------------------------------------------
# encoding refuses what it cannot write


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        ([Record(1, 0, None, None), Record(1, 0, None, None)], ValueError, "not after the previous"),
        ([Record(0, 0, None, None), Record(2**31, 0, None, None)], ValueError, "2^31-1"),
        ([Record(0, 0, "text", None)], TypeError, "key must be bytes"),  # type: ignore[list-item]
        ([Record(0, 0, None, array.array("b", [1]))], TypeError, "value must be bytes"),  # type: ignore[list-item]
        ([Record(0, 0, None, memoryview(b"abcd")[::2])], TypeError, "value must be bytes"),
        ([Record(0, 0, None, None, (("h", "text"),))], TypeError, "header value"),  # type: ignore[list-item]
        ([Record(0, 0, None, None, ((1, b""),))], TypeError, "headers must be"),  # type: ignore[list-item]
        ([(0, 0, None)], TypeError, "must be a Record"),  # type: ignore[list-item]
        ([Record(0, 0.5, None, None)], TypeError, "timestamp must be an int"),  # type: ignore[arg-type]
        ([Record(-1, 0, None, None)], ValueError, "below the base offset"),
        (
            [Record(0, -(2**62), None, None), Record(1, 2**62, None, None)],
            ValueError,
            "too far from the base",
        ),
    ],
)
def test_encode_rejects_bad_records(codec: BatchCodec, bad: list[Record], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message.replace("^", r"\^")):
        codec.encode(bad)


def test_encode_rejects_empty_batches(codec: BatchCodec) -> None:
    with pytest.raises(ValueError, match="at least one record"):
        codec.encode([])


def test_encode_accepts_bytes_like_values(codec: BatchCodec) -> None:
    batch = [Record(0, 5, bytearray(b"k"), memoryview(b"value"), (("h", bytearray(b"x")),))]
    assert codec.decode(codec.encode(batch)).records == [Record(0, 5, b"k", b"value", (("h", b"x"),))]


# ---------------------------------------------------------------------------------------------
# validation and corruption: every class of damage is rejected before anything is used


@st.composite
def valid_batches(draw: st.DrawFn) -> bytes:
    base_offset = draw(st.integers(0, 2**40))
    return PYTHON_CODEC.encode(
        [r._replace(offset=r.offset + base_offset) for r in draw(contiguous_record_lists(max_records=8))],
        base_offset=base_offset,
        partition_leader_epoch=draw(st.integers(0, 2**20)),
        compression=draw(compressions),
    )


def _validate_in_context(damaged: bytes | bytearray, original: bytes) -> None:
    """Validate as the log does: the whole buffer is the batch and the context knows the
    offset and epoch the batch must carry."""
    header = read_header(original)
    validate_batch(
        damaged,
        whole_buffer=True,
        expected_base_offset=header.base_offset,
        expected_leader_epoch=header.partition_leader_epoch,
    )


@given(batch=valid_batches(), data=st.data())
def test_truncation_at_any_byte_is_rejected(batch: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(batch) - 1), label="cut")
    with pytest.raises(CorruptRecordError, match="truncated"):
        validate_batch(batch[:cut])
    with pytest.raises(CorruptRecordError):
        records.decode_batch(batch[:cut])


@given(batch=valid_batches(), data=st.data())
def test_any_single_bit_flip_is_rejected(batch: bytes, data: st.DataObject) -> None:
    bit = data.draw(st.integers(0, len(batch) * 8 - 1), label="bit")
    damaged = bytearray(batch)
    damaged[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(CorruptRecordError):
        _validate_in_context(damaged, batch)


def test_every_single_bit_flip_of_a_batch_is_rejected_exhaustively() -> None:
    batch = PYTHON_CODEC.encode(
        [Record(1234 + i, 1000 + i, b"k%d" % i, b"v" * i, (("h", b"x"),)) for i in range(5)],
        base_offset=1234,
        partition_leader_epoch=9,
        compression=Compression.GZIP,
    )
    for bit in range(len(batch) * 8):
        damaged = bytearray(batch)
        damaged[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(CorruptRecordError):
            _validate_in_context(damaged, batch)


@given(batch=valid_batches(), magic=st.integers(0, 255))
def test_wrong_magic_is_rejected_with_its_position(batch: bytes, magic: int) -> None:
    assume(magic != 2)
    damaged = bytearray(batch)
    damaged[16] = magic
    with pytest.raises(CorruptRecordError, match=f"wrong magic byte {magic} at byte 16"):
        validate_batch(damaged)


@given(batch=valid_batches(), delta=st.integers(-100, 100), trailing=st.binary(min_size=1, max_size=20))
def test_length_mismatches_are_rejected(batch: bytes, delta: int, trailing: bytes) -> None:
    assume(delta != 0)
    damaged = bytearray(batch)
    struct.pack_into(">i", damaged, 8, len(batch) - 12 + delta)
    with pytest.raises(CorruptRecordError):
        validate_batch(damaged, whole_buffer=True)
    with pytest.raises(CorruptRecordError, match="length mismatch"):
        validate_batch(batch + trailing, whole_buffer=True)
    with pytest.raises(CorruptRecordError):
        validate_batches(batch + trailing)


def test_crc_error_names_the_stored_and_computed_values() -> None:
    batch = bytearray(PYTHON_CODEC.encode([Record(0, 0, b"k", b"v")]))
    batch[-1] ^= 0xFF
    with pytest.raises(
        CorruptRecordError,
        match=r"batch at byte 0: CRC mismatch: the header says 0x[0-9a-f]{8}, bytes 21\.\.\d+ give 0x",
    ):
        validate_batch(batch)


def test_unknown_compression_codec_is_rejected() -> None:
    batch = bytearray(PYTHON_CODEC.encode([Record(0, 0, b"k", b"v")]))
    struct.pack_into(">h", batch, 21, 5)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    with pytest.raises(UnsupportedCompressionError, match="codec 5"):
        validate_batch(batch)


def test_oversized_batches_are_refused_with_message_too_large() -> None:
    batch = PYTHON_CODEC.encode([Record(0, 0, None, b"x" * 2000)])
    with pytest.raises(MessageTooLargeError, match=r"max\.message\.bytes"):
        validate_batch(batch, max_batch_bytes=1024)
    assert validate_batch(batch, max_batch_bytes=len(batch)).size_bytes == len(batch)


def test_producer_batches_must_have_contiguous_offsets() -> None:
    gapped = PYTHON_CODEC.encode([Record(0, 0, None, b"a"), Record(5, 0, None, b"b")])
    validate_batch(gapped)  # legal after compaction
    with pytest.raises(CorruptRecordError, match="contiguous"):
        validate_batch(gapped, producer_batch=True)


@pytest.mark.parametrize("codec", [PYTHON_CODEC, C_CODEC], ids=["python", "c"])
def test_produced_records_are_checked_one_by_one(codec: BatchCodec | None) -> None:
    """Kafka's LogValidator: offsets inside a batch are 0, 1, 2, ... even where the header's
    count agrees, and a compacted topic needs a key on every record (``check_produced``)."""
    if codec is None:
        pytest.skip("the C extension is not built")
    inner_gap = bytearray(PYTHON_CODEC.encode([Record(0, 0, b"k", b"a"), Record(2, 0, b"k", b"b")]))
    struct.pack_into(">i", inner_gap, 23, 1)  # lastOffsetDelta says 0..1
    struct.pack_into(">I", inner_gap, 17, crc32c(bytes(inner_gap[ATTRIBUTES_POSITION:])))
    headers = records.validate_batches(bytes(inner_gap), producer_batch=True)  # the header alone passes
    with pytest.raises(LanesError, match="offset delta 2 is not 1") as raised:
        codec.check_produced(bytes(inner_gap), headers, require_keys=False)
    assert raised.value.code is ErrorCode.INVALID_RECORD
    keyless = PYTHON_CODEC.encode([Record(0, 0, b"k", b"a"), Record(1, 0, None, b"b")], compression=Compression.GZIP)
    headers = records.validate_batches(keyless, producer_batch=True)
    codec.check_produced(keyless, headers, require_keys=False)
    with pytest.raises(LanesError, match=r"record 1 .* has no key"):
        codec.check_produced(keyless, headers, require_keys=True)


def test_impossible_record_counts_are_rejected() -> None:
    batch = bytearray(PYTHON_CODEC.encode([Record(0, 0, None, b"a")]))
    struct.pack_into(">i", batch, 57, 1_000_000)
    struct.pack_into(">i", batch, 23, 999_999)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    with pytest.raises(CorruptRecordError, match="cannot fit"):
        validate_batch(batch)


def test_validate_batches_returns_every_header_in_order() -> None:
    batches = [PYTHON_CODEC.encode([Record(j, 0, None, b"v") for j in range(n)]) for n in (1, 3, 2)]
    headers = validate_batches(b"".join(batches), producer_batch=True)
    assert [h.records_count for h in headers] == [1, 3, 2]
    with pytest.raises(CorruptRecordError, match="empty"):
        validate_batches(b"")


# ---------------------------------------------------------------------------------------------
# the broker path: patch offsets and epochs in place, CRC untouched


def test_assign_offsets_patches_each_batch_without_touching_the_crc(codec: BatchCodec) -> None:
    batches = [codec.encode([Record(j, 10 * j, b"k", b"v") for j in range(n)]) for n in (3, 1, 4)]
    buffer = bytearray(b"".join(batches))
    headers = validate_batches(buffer, producer_batch=True)
    patched = assign_offsets(buffer, headers, first_offset=100, partition_leader_epoch=5)
    assert [h.base_offset for h in patched] == [100, 103, 104]
    assert patched[-1].next_offset == 108
    decoded = codec.decode_all(bytes(buffer))
    assert [b.header.base_offset for b in decoded] == [100, 103, 104]
    assert [r.offset for b in decoded for r in b.records] == list(range(100, 108))
    assert {b.header.partition_leader_epoch for b in decoded} == {5}
    assert [b.header.crc for b in decoded] == [h.crc for h in headers]


def test_patch_batch_refuses_offsets_out_of_range() -> None:
    buffer = bytearray(PYTHON_CODEC.encode([Record(0, 0, None, b"v")]))
    with pytest.raises(ValueError, match="out of range"):
        patch_batch(buffer, 0, base_offset=-5, partition_leader_epoch=0)


def test_log_append_time_stamps_max_timestamp_and_keeps_the_batch_valid(codec: BatchCodec) -> None:
    batches = [codec.encode([Record(j, 10 * j, b"k", b"v") for j in range(n)]) for n in (2, 3)]
    buffer = bytearray(b"".join(batches))
    headers = validate_batches(buffer)
    patched = stamp_log_append_time(buffer, headers, 1_800_000_000_000)
    revalidated = validate_batches(buffer)
    assert revalidated == patched
    for header in revalidated:
        assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
        assert header.max_timestamp == 1_800_000_000_000
    assert [r.value for b in codec.decode_all(bytes(buffer)) for r in b.records] == [b"v"] * 5


def test_compaction_options_keep_the_offset_range_and_stamp_a_delete_horizon(codec: BatchCodec) -> None:
    kept = [Record(10, 1000, b"a", None), Record(12, 1500, b"b", b"v")]
    encoded = codec.encode(kept, base_offset=10, last_offset_delta=4, delete_horizon_ms=9_000)
    batch = codec.decode(encoded)
    assert batch.records == kept, "record timestamps survive the horizon in baseTimestamp"
    assert batch.header.next_offset == 15
    assert batch.header.has_delete_horizon
    assert batch.header.base_timestamp == 9_000
    with pytest.raises(ValueError, match="below the last record"):
        codec.encode(kept, base_offset=10, last_offset_delta=1)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (bytes([0x08, 0x00, 0x00, 0x00, 0x80]), "key length varint is truncated"),
        (bytes([0x0A, 0x00, 0x00, 0x00, 0x01, 0x80]), "value length varint is truncated"),
    ],
)
def test_a_truncated_length_names_its_field_in_both_codecs(section: bytes, message: str) -> None:
    """The C parser joins a field's name and " length" only when it raises (it read both lengths
    of every record with a formatted label before: 8% of a 1 KiB consumer's time)."""
    for codec in (_records_py, _records_c):
        if codec is None:
            continue
        with pytest.raises(ValueError, match=message):
            codec.check_records(section, 1, 0, False)
