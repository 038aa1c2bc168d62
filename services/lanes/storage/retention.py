"""Which segments retention deletes (Kafka's ``UnifiedLog.deleteOldSegments`` predicates): pure,
over the segments, the log's configs and the time. Never the active segment, never a segment
reaching the high-water mark, always a prefix of the log."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lanes.storage.segment import LogSegment

if TYPE_CHECKING:
    from lanes.storage.log import LogConfig


def segments_below_start(segments: Sequence[LogSegment], log_start_offset: int) -> list[LogSegment]:
    """The segments wholly below ``log_start_offset`` (DeleteRecords moved it past them)."""
    doomed = []
    for segment, following in itertools.pairwise(segments):
        if following.base_offset <= log_start_offset:
            doomed.append(segment)
        else:
            break
    return doomed


def retention_candidates(
    segments: Sequence[LogSegment], config: LogConfig, high_watermark: int, now_ms: int, *, already: int
) -> list[LogSegment]:
    """A prefix of the non-active segments below the high-water mark that retention.ms or
    retention.bytes expires (at least the first ``already``)."""
    inactive = [s for s in segments[:-1] if s.next_offset <= high_watermark]
    count = already
    if config.retention_ms >= 0:
        while count < len(inactive) and 0 <= inactive[count].max_timestamp < now_ms - config.retention_ms:
            count += 1
    if config.retention_bytes >= 0:
        excess = sum(segment.size_bytes for segment in segments[count:]) - config.retention_bytes
        while count < len(inactive) and excess - inactive[count].size_bytes >= 0:
            excess -= inactive[count].size_bytes
            count += 1
    return inactive[:count]
