"""Sparse, sorted index files of a segment: offset -> position and timestamp -> offset.

On-disk layout (big-endian, fixed-size entries appended in order, no header)::

    <baseOffset:020d>.index       entries of 8 bytes:  relativeOffset u32, position u32
    <baseOffset:020d>.timeindex   entries of 12 bytes: timestamp i64, relativeOffset u32

``relativeOffset`` is an offset minus the segment's base offset. An offset index entry
(lastOffset of a batch, position of that batch) is written every ``index.interval.bytes`` of log;
a time index entry (largest timestamp so far, the last offset of the batch that reached it) is
written at the same points when the largest timestamp grew. Both are sorted by their first field.

Indexes are derived data: a missing or implausible index file is rebuilt from the segment. Lookups
read single entries with ``pread`` in a binary search: O(log n) and no memory held, whatever the
size of the log; descriptors come from the shared ``FileCache``.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

from lanes.storage.files import FileCache, pread_exact, pwrite_all

_MAX_FIELD = 2**64  # sorts after any second field, for bisecting on the first


class SortedIndex:
    """Fixed-size entries sorted by their first field; appended, truncated, searched.

    Appended entries are buffered in memory and written in groups of ``PENDING_ENTRIES_MAX``
    (and by ``flush``): an index is derived data, so entries lost in a crash are rebuilt by
    recovery, and the append path saves a system call per entry. Lookups see buffered entries.
    """

    ENTRY = struct.Struct(">II")
    PENDING_ENTRIES_MAX = 256

    def __init__(self, path: Path, base_offset: int, files: FileCache) -> None:
        self.path = path
        self.base_offset = base_offset
        self._files = files
        try:
            size: int | None = os.stat(path).st_size
        except FileNotFoundError:
            size = None
        #: the file's size when the index was opened, None when there was no file (what
        #: ``plausible_at_open`` checks: one ``stat`` per index file at a log's open)
        self.size_at_open = size
        self._written = (size or 0) // self.ENTRY.size
        self._pending: list[tuple[int, ...]] = []
        self._last: tuple[int, ...] | None = None  # cached last entry (appends read it)

    @property
    def entries(self) -> int:
        """Number of entries, buffered ones included."""
        return self._written + len(self._pending)

    def entry(self, index: int) -> tuple[int, ...]:
        """Entry number ``index`` (0-based)."""
        if index >= self._written:
            return self._pending[index - self._written]
        with self._files.lease(self.path) as fd:
            raw = pread_exact(fd, self.ENTRY.size, index * self.ENTRY.size)
        return self.ENTRY.unpack(raw)

    def last(self) -> tuple[int, ...] | None:
        """The last entry, or None when empty."""
        if self._last is None and self.entries:
            self._last = self.entry(self.entries - 1)
        return self._last

    def floor(self, key: int) -> tuple[int, ...] | None:
        """The entry with the largest first field <= ``key``, or None."""
        pending = self._pending
        if pending and pending[0][0] <= key:
            return pending[bisect.bisect_right(pending, (key, _MAX_FIELD)) - 1]
        low, high = 0, self._written - 1
        found = None
        if high < 0:
            return None
        with self._files.lease(self.path) as fd:
            while low <= high:
                middle = (low + high) // 2
                entry = self.ENTRY.unpack(pread_exact(fd, self.ENTRY.size, middle * self.ENTRY.size))
                if entry[0] <= key:
                    found = entry
                    low = middle + 1
                else:
                    high = middle - 1
        return found

    def append_entry(self, *fields: int) -> None:
        """Append one entry (callers keep the order)."""
        self._pending.append(fields)
        self._last = fields
        if len(self._pending) >= self.PENDING_ENTRIES_MAX:
            self._write_pending()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        data = b"".join(self.ENTRY.pack(*fields) for fields in self._pending)
        with self._files.lease(self.path, create=True) as fd:
            pwrite_all(fd, data, self._written * self.ENTRY.size)
        self._written += len(self._pending)
        self._pending = []

    def truncate_entries(self, count: int) -> None:
        """Keep the first ``count`` entries."""
        if count >= self.entries:
            return
        if count >= self._written:
            del self._pending[count - self._written :]
        else:
            self._pending = []
            with self._files.lease(self.path, create=True) as fd:
                os.ftruncate(fd, count * self.ENTRY.size)
            self._written = count
        self._last = None

    def flush(self) -> None:
        """Write buffered entries and fsync the index file."""
        self._write_pending()
        if self._written or self.path.exists():
            with self._files.lease(self.path, create=True) as fd:
                os.fsync(fd)

    def reset(self) -> None:
        """Drop every entry (before a rebuild); the file exists, empty, afterwards."""
        with self._files.lease(self.path, create=True) as fd:
            os.ftruncate(fd, 0)
        self._written = 0
        self._pending = []
        self._last = None

    def plausible_at_open(self) -> bool:
        """Whether the file as it was opened is a whole number of entries, sorted at the end (a
        log's open asks, before anything is written to the index)."""
        if (self.size_at_open or 0) % self.ENTRY.size:
            return False
        if self.entries >= 2:
            return self.entry(self.entries - 2)[0] < self.entry(self.entries - 1)[0]
        return True


class OffsetIndex(SortedIndex):
    """relativeOffset u32 -> position u32: where the batch ending at that offset starts."""

    ENTRY = struct.Struct(">II")

    def lookup(self, offset: int) -> tuple[int, int]:
        """(last offset, position) of an indexed batch at or before ``offset``; (base - 1, 0) if none."""
        entry = self.floor(offset - self.base_offset)
        if entry is None:
            return self.base_offset - 1, 0
        return self.base_offset + entry[0], entry[1]

    def append(self, last_offset: int, position: int) -> None:
        """Index the batch ending at ``last_offset``, which starts at ``position``."""
        self.append_entry(last_offset - self.base_offset, position)

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at ``position`` or beyond."""
        keep = self.entries
        while keep and self.entry(keep - 1)[1] >= position:
            keep -= 1
        self.truncate_entries(keep)


class TimeIndex(SortedIndex):
    """timestamp i64 -> relativeOffset u32: the last offset of the batch that reached that timestamp."""

    ENTRY = struct.Struct(">qI")

    def lookup(self, timestamp_ms: int) -> int | None:
        """The offset indexed for the largest timestamp <= ``timestamp_ms``, or None."""
        entry = self.floor(timestamp_ms)
        return None if entry is None else self.base_offset + entry[1]

    def last_timestamp(self) -> int | None:
        """The largest indexed timestamp, or None when empty."""
        last = self.last()
        return None if last is None else last[0]

    def maybe_append(self, timestamp_ms: int, offset: int) -> None:
        """Index ``timestamp_ms`` at ``offset`` if it is larger than every indexed timestamp."""
        last = self.last_timestamp()
        if last is None or timestamp_ms > last:
            self.append_entry(timestamp_ms, offset - self.base_offset)

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        keep = self.entries
        while keep and self.base_offset + self.entry(keep - 1)[1] >= offset:
            keep -= 1
        self.truncate_entries(keep)
