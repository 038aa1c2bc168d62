"""One step of a scan: the records of a run of whole batches (as a log read returns them) that a
``RecordFilter`` keeps, between a start and an end offset.

A batch is decoded only when it may hold a match: batches wholly outside the offsets or the
filter's time range (the batch's newest record is older than its start) are skipped, and so is an
uncompressed batch whose bytes lack one of the filter's ``needles`` (a substring search in place,
no copy, no record built). Control batches (transaction markers) hold no user records.

Pure: bytes in, records out; no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lanes.protocol.compression import Compression
from lanes.protocol.records import HEADER_BYTES, Record, TimestampType, decode_batch, read_header
from lanes.search.record_filter import RecordFilter


@dataclass
class ScanStep:
    """What one step found and how far it came. ``next_offset``: where the next step starts;
    ``records`` and ``bytes``: what it went through (skipped batches count: they were read)."""

    next_offset: int
    matches: list[Record] = field(default_factory=list)
    records: int = 0
    bytes: int = 0
    #: the match limit was reached (``next_offset`` is after the last match)
    full: bool = False


def scan_batches(
    buffer: bytes, start_offset: int, end_offset: int, record_filter: RecordFilter, max_matches: int
) -> ScanStep:
    """The matches among records ``start_offset <= offset < end_offset`` of the batches filling
    ``buffer``, at most ``max_matches`` (> 0) of them."""
    step = ScanStep(next_offset=start_offset)
    needles = record_filter.needles
    position = 0
    while position < len(buffer):
        header = read_header(buffer, position)
        end = position + header.size_bytes
        if header.base_offset >= end_offset:
            break
        step.bytes += header.size_bytes
        step.next_offset = min(max(step.next_offset, header.next_offset), end_offset)
        if header.next_offset <= start_offset or header.is_control:
            position = end
            continue
        if not record_filter.may_follow(header.max_timestamp) or (
            header.compression is Compression.NONE
            and any(buffer.find(needle, position + HEADER_BYTES, end) < 0 for needle in needles)
        ):
            step.records += header.records_count
            position = end
            continue
        decoded = decode_batch(buffer, position).records
        if header.timestamp_type is TimestampType.LOG_APPEND_TIME:  # the broker's time, as consumers see it
            decoded = [record._replace(timestamp=header.max_timestamp) for record in decoded]
        for record in decoded:
            if not start_offset <= record.offset < end_offset:
                continue
            step.records += 1
            if record_filter.matches(record):
                step.matches.append(record)
                if len(step.matches) == max_matches:
                    step.next_offset = record.offset + 1
                    step.full = True
                    return step
        position = end
    return step
