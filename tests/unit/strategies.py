"""Hypothesis strategies for records and batches, shared by the codec tests."""

from __future__ import annotations

from hypothesis import strategies as st

from lanes.protocol.compression import Compression
from lanes.protocol.records import Record

blobs = st.none() | st.binary(max_size=300)
header_lists = st.lists(st.tuples(st.text(max_size=20), st.none() | st.binary(max_size=40)), max_size=4).map(tuple)
timestamps = st.integers(min_value=-(2**61), max_value=2**61)
compressions = st.sampled_from(list(Compression))


@st.composite
def record_lists(draw: st.DrawFn, base_offset: int = 0, max_records: int = 25) -> list[Record]:
    """Records with strictly increasing offsets from ``base_offset`` (gaps allowed)."""
    count = draw(st.integers(min_value=1, max_value=max_records))
    gaps = draw(st.lists(st.integers(min_value=1, max_value=1000), min_size=count, max_size=count))
    records = []
    offset = base_offset
    for index in range(count):
        if index:
            offset += gaps[index]
        records.append(Record(offset, draw(timestamps), draw(blobs), draw(blobs), draw(header_lists)))
    return records


@st.composite
def contiguous_record_lists(draw: st.DrawFn, max_records: int = 25) -> list[Record]:
    """Records as a producer builds them: offsets 0, 1, 2, ..."""
    count = draw(st.integers(min_value=1, max_value=max_records))
    return [Record(i, draw(timestamps), draw(blobs), draw(blobs), draw(header_lists)) for i in range(count)]
