"""One scan step over stored batches (lanes.search.batch_scan): the same matches as decoding
every record and filtering, whatever skips it takes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lanes.protocol.compression import Compression
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.search.batch_scan import scan_batches
from lanes.search.record_filter import RecordFilter, parse_condition


def log_of(batches: list[list[tuple[bytes, bytes, int]]], compression: Compression) -> bytes:
    parts = []
    offset = 0
    for batch in batches:
        records = [Record(offset + i, ts, key, value) for i, (key, value, ts) in enumerate(batch)]
        parts.append(encode_batch(records, base_offset=offset, compression=compression))
        offset += len(batch)
    return b"".join(parts)


words = st.sampled_from([b"alpha", b"beta", b"gamma", b"error", b"ok"])
records = st.tuples(words, words, st.integers(0, 100))
conditions = st.lists(
    st.sampled_from(["key=alpha", "value~err", "!value~ok", "key~a", "value", "value=beta"]), max_size=2
)


@settings(max_examples=300, deadline=None)
@given(
    batches=st.lists(st.lists(records, min_size=1, max_size=6), min_size=1, max_size=6),
    where=conditions,
    times=st.tuples(st.none() | st.integers(0, 60), st.none() | st.integers(61, 120)),
    bounds=st.tuples(st.integers(0, 40), st.integers(0, 40)),
    max_matches=st.integers(1, 8),
    compression=st.sampled_from([Compression.NONE, Compression.GZIP]),
)
def test_a_step_finds_what_decoding_everything_finds(  # noqa: PLR0917 - hypothesis' arguments
    batches: list, where: list[str], times: tuple, bounds: tuple[int, int], max_matches: int, compression: Compression
) -> None:
    buffer = log_of(batches, compression)
    record_filter = RecordFilter.of([parse_condition(c) for c in where], *times)
    start, end = min(bounds), max(bounds)
    everything = [r for b in decode_batches(buffer) for r in b.records if start <= r.offset < end]
    expected = [r for r in everything if record_filter.matches(r)]
    step = scan_batches(buffer, start, end, record_filter, max_matches)
    assert step.matches == expected[:max_matches]
    if len(expected) >= max_matches:
        assert step.full
        assert step.next_offset == expected[max_matches - 1].offset + 1
    else:
        total = sum(len(b) for b in batches)
        assert not step.full
        assert step.next_offset == max(start, min(end, total))


def test_batches_without_a_needle_or_out_of_time_are_skipped_undecoded() -> None:
    buffer = log_of(
        [[(b"k", b"nothing here", 10)] * 3, [(b"k", b"an error", 10)], [(b"k", b"error", 500)]], Compression.NONE
    )
    corrupt = bytearray(buffer)
    corrupt[70] ^= 0xFF  # a record byte of the first batch: decoding it would fail its CRC
    step = scan_batches(bytes(corrupt), 0, 5, RecordFilter.of([parse_condition("value~error")], None, 100), 10)
    assert [r.offset for r in step.matches] == [3]
    assert step.records == 5
    assert step.next_offset == 5
    assert step.bytes == len(buffer)
