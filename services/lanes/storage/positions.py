"""Where offsets are in a log's files, so a waiting fetch can tell how many bytes arrived for it
without reading them (Kafka's ``LogOffsetMetadata`` and ``DelayedFetch.tryComplete``).

A ``LogPosition`` is an offset with the segment and byte position of the batch holding it. A log
remembers the end position of its most recent appends (``RecentEnds``); the high-water mark is
always the end of some batch (every replica appends whole batches), so the bytes between a
fetch's position and the mark are a subtraction, or a sum over the segments in between, with no
I/O. When the end is no longer remembered (many appends since, a truncation, a compaction or a
retention pass replaced the segments), the answer is None, and a waiting fetch completes: it
reads what is there, as Kafka completes a delayed fetch whose segment rolled.

Thread-safety: ``RecentEnds`` is written under its log's lock and read from any thread without
it; ``note`` and ``cut_after`` replace the one list reference a reader takes (one atomic read).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import NamedTuple

from lanes.storage.segment import LogSegment

#: appends whose end positions a log remembers (a waiting fetch at a mark older than that reads)
RECENT_ENDS = 1024


class LogPosition(NamedTuple):
    """``offset``, in ``segment`` at byte ``position`` (the start of the batch holding it, or the
    segment's end for the log end offset)."""

    offset: int
    segment: LogSegment
    position: int


class RecentEnds:
    """(next offset, segment, end position) of the last ``RECENT_ENDS``-odd appends, in order."""

    __slots__ = ("_ends",)

    def __init__(self) -> None:
        self._ends: list[LogPosition] = []

    def note(self, end: LogPosition) -> None:
        """An append ended at ``end`` (under the log's lock)."""
        if len(self._ends) >= 2 * RECENT_ENDS:
            self._ends = self._ends[-RECENT_ENDS:]
        self._ends.append(end)  # in place: a reader holding the list sees it or not, whole

    def cut_after(self, offset: int) -> None:
        """The log was truncated to ``offset``: ends beyond it are gone (under the log's lock)."""
        self._ends = [end for end in self._ends if end.offset <= offset]

    def forget(self) -> None:
        """Segments were rewritten or the log restarted: nothing remembered holds."""
        self._ends = []

    def find(self, offset: int) -> LogPosition | None:
        """The remembered end at ``offset``, if any."""
        ends = self._ends
        index = bisect.bisect_left(ends, offset, key=lambda end: end.offset)
        if index < len(ends) and ends[index].offset == offset:
            return ends[index]
        return None


def bytes_between(start: LogPosition, end: LogPosition, segments: Sequence[LogSegment]) -> int | None:
    """Bytes of the batches from ``start`` to ``end`` across ``segments`` (the log's, in order);
    None when either segment is no longer among them or ``end`` comes first."""
    if end.offset <= start.offset:
        return 0
    if start.segment is end.segment:
        return max(0, end.position - start.position)
    first = _index_of(segments, start.segment)
    last = _index_of(segments, end.segment)
    if first is None or last is None or last < first:
        return None
    between = sum(segment.size_bytes for segment in segments[first + 1 : last])
    return max(0, start.segment.size_bytes - start.position) + between + end.position


def _index_of(segments: Sequence[LogSegment], wanted: LogSegment) -> int | None:
    for index, segment in enumerate(segments):
        if segment is wanted:
            return index
    return None
