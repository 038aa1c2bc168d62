"""A log segment: one file of concatenated record batches, with its two sparse indexes.

On-disk layout, in the partition directory::

    <baseOffset:020d>.log         whole RecordBatch v2 batches, back to back, offsets increasing
    <baseOffset:020d>.index       offset index (see lanes.storage.index)
    <baseOffset:020d>.timeindex   time index

Invariants: every batch in the file has ``baseOffset >= the segment's base offset``, offsets
increase from batch to batch (gaps are allowed: compaction removes whole batches), and
``lastOffset - base offset`` fits in 31 bits. The file holds only batches that passed
validation; after a crash its tail may be torn, which ``recover`` finds and cuts.

Not thread-safe: the owning ``PartitionLog`` serialises access.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import NamedTuple

from lanes.errors import LanesError
from lanes.protocol.records import (
    HEADER,
    HEADER_BYTES,
    LOG_OVERHEAD_BYTES,
    MIN_BATCH_LENGTH,
    BatchHeader,
    validate_batch,
)
from lanes.storage.files import FileCache, pread_cached, pread_exact, pwritev_all, size_or_zero, storage_error
from lanes.storage.index import OffsetIndex, TimeIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
#: Largest distance between a segment's base offset and any offset in it.
MAX_RELATIVE_OFFSET = 2**31 - 1
_SCAN_CHUNK_BYTES = 64 * 1024
_RECOVERY_CHUNK_BYTES = 8 * 1024 * 1024
#: where recent reads ended, remembered per segment (consumers of a few groups, followers)
READ_ENDS = 8


class SegmentRead(NamedTuple):
    """Batches read from one segment: their bytes, the offset after the last one (the offset
    asked for when none), the records in them (from their headers), and ``past_end``: the
    segment holds no batch at or after the offset (a log's read goes on to the next segment;
    otherwise an empty read means a limit stopped it, and nothing later may be returned)."""

    records: bytes
    next_offset: int
    records_count: int
    past_end: bool


def segment_stem(base_offset: int) -> str:
    """The file name stem of the segment starting at ``base_offset``."""
    return f"{base_offset:020d}"


class LogSegment:
    """One segment file and its indexes."""

    def __init__(self, directory: Path, base_offset: int, files: FileCache, index_interval_bytes: int) -> None:
        stem = segment_stem(base_offset)
        self.directory = directory
        self.base_offset = base_offset
        self.log_path = directory / f"{stem}{LOG_SUFFIX}"
        self.index = OffsetIndex(directory / f"{stem}{INDEX_SUFFIX}", base_offset, files)
        self.time_index = TimeIndex(directory / f"{stem}{TIME_INDEX_SUFFIX}", base_offset, files)
        self.index_interval_bytes = index_interval_bytes
        self._files = files
        self.size_bytes = size_or_zero(self.log_path)
        # Tail state, computed lazily from the last index entry (see _load_tail).
        self._tail_loaded = False
        self._next_offset = base_offset
        self._max_timestamp = -1
        self._offset_of_max_timestamp = base_offset
        self._bytes_since_index = 0
        self._first_batch_timestamp: int | None = None
        # offset -> position where the last ``READ_ENDS`` reads ended, oldest first: consumers and
        # followers read on sequentially, so their next reads start there (no index lookup)
        self._read_ends: dict[int, int] = {}

    @classmethod
    def create(cls, directory: Path, base_offset: int, files: FileCache, index_interval_bytes: int) -> LogSegment:
        """A new, empty segment (its files exist on return)."""
        segment = cls(directory, base_offset, files, index_interval_bytes)
        with files.lease(segment.log_path, create=True):
            pass
        segment.index.reset()
        segment.time_index.reset()
        segment._tail_loaded = True
        return segment

    # -----------------------------------------------------------------------------------------
    # state

    @property
    def next_offset(self) -> int:
        """The offset after the last batch (the base offset when empty)."""
        self._load_tail()
        return self._next_offset

    @property
    def max_timestamp(self) -> int:
        """Largest record timestamp in the segment (-1 when empty)."""
        self._load_tail()
        return self._max_timestamp

    @property
    def first_batch_timestamp_known(self) -> bool:
        """Whether ``first_batch_timestamp`` answers without reading the file."""
        return self._first_batch_timestamp is not None or not self.size_bytes

    def first_batch_timestamp(self) -> int | None:
        """Largest timestamp of the first batch (what segment.ms measures from), None when empty."""
        if self._first_batch_timestamp is None and self.size_bytes:
            for _, header in self.batch_headers(0):
                self._first_batch_timestamp = header.max_timestamp
                break
        return self._first_batch_timestamp

    def _load_tail(self) -> None:
        if self._tail_loaded:
            return
        last_indexed_offset, position = self.index.lookup(self.base_offset + MAX_RELATIVE_OFFSET)
        self._next_offset = max(self.base_offset, last_indexed_offset + 1)
        self._max_timestamp = -1
        self._offset_of_max_timestamp = self.base_offset
        last_time_entry = self.time_index.last()
        if last_time_entry is not None:
            self._max_timestamp = last_time_entry[0]
            self._offset_of_max_timestamp = self.base_offset + last_time_entry[1]
        self._bytes_since_index = 0
        for batch_position, header in self.batch_headers(position):
            if batch_position == 0 and self._first_batch_timestamp is None:
                self._first_batch_timestamp = header.max_timestamp  # (no read of its own later)
            self._next_offset = header.next_offset
            if header.max_timestamp > self._max_timestamp:
                self._max_timestamp = header.max_timestamp
                self._offset_of_max_timestamp = header.last_offset
            self._bytes_since_index = batch_position + header.size_bytes - position
        self._tail_loaded = True

    # -----------------------------------------------------------------------------------------
    # append

    def append(self, data: Sequence[bytes | bytearray | memoryview], headers: Sequence[BatchHeader]) -> None:
        """Append validated, offset-assigned batches: ``data`` is their bytes as a list of
        buffers, written with one vectored write; ``headers`` describe them in order.

        On any write error the segment is cut back to its previous state and a StorageError is
        raised: nothing partial stays on disk.
        """
        self._load_tail()
        start = self.size_bytes
        index_entries, time_entries = self.index.entries, self.time_index.entries
        saved = (
            self._next_offset,
            self._max_timestamp,
            self._offset_of_max_timestamp,
            self._bytes_since_index,
            self._first_batch_timestamp,
        )
        position = start
        try:
            with self._files.lease(self.log_path, create=True) as fd:
                pwritev_all(fd, data, start)
            for header in headers:
                self._index_batch(header, position)
                position += header.size_bytes
        except OSError as exc:
            self._undo_append(start, index_entries, time_entries)
            (
                self._next_offset,
                self._max_timestamp,
                self._offset_of_max_timestamp,
                self._bytes_since_index,
                self._first_batch_timestamp,
            ) = saved
            raise storage_error("appending to", self.log_path, exc) from exc
        self.size_bytes = position

    def _undo_append(self, size_bytes: int, index_entries: int, time_entries: int) -> None:
        try:
            with self._files.lease(self.log_path) as fd:
                os.ftruncate(fd, size_bytes)
            self.index.truncate_entries(index_entries)
            self.time_index.truncate_entries(time_entries)
        except OSError as exc:  # cannot even cut back: recovery will, on the next open
            raise storage_error("cutting back a failed append to", self.log_path, exc) from exc

    def close_for_appends(self) -> None:
        """The segment stops being active: index its end in the time index (for retention)."""
        self._load_tail()
        if self._max_timestamp >= 0:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)

    # -----------------------------------------------------------------------------------------
    # read

    def batch_headers(self, position: int, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from ``position`` to ``end`` (default: end of file).

        Reads headers in chunks; batch bodies larger than a chunk are skipped, not read. Stops at a
        torn tail (a header or body running past ``end``).
        """
        end = self.size_bytes if end is None else end
        with self._files.lease(self.log_path) as fd:
            chunk = b""
            chunk_start = position
            while position + HEADER_BYTES <= end:
                if position + HEADER_BYTES > chunk_start + len(chunk):
                    chunk_start = position
                    chunk = pread_exact(fd, min(_SCAN_CHUNK_BYTES, end - position), position)
                    if len(chunk) < HEADER_BYTES:
                        return
                header = BatchHeader._make(HEADER.unpack_from(chunk, position - chunk_start))
                if header.batch_length < MIN_BATCH_LENGTH or position + header.size_bytes > end:
                    return
                yield position, header
                position += header.size_bytes

    def position_of(self, offset: int) -> int:
        """Position of the first batch whose last offset is >= ``offset`` (size_bytes if none)."""
        known = self._read_ends.get(offset)
        if known is not None:
            return known
        _, position = self.index.lookup(offset)
        for batch_position, header in self.batch_headers(position):
            if header.last_offset >= offset:
                return batch_position
        return self.size_bytes

    def read(
        self,
        offset: int,
        max_bytes: int,
        upper_bound_offset: int | None,
        min_one_batch: bool,
        position: int | None = None,
    ) -> SegmentRead:
        """Whole batches from the one containing ``offset``: at most ``max_bytes`` (except one
        batch when ``min_one_batch``), only batches ending below ``upper_bound_offset``.
        ``position``: where that batch starts, when the caller knows it (else the index and the
        batch headers tell)."""
        if position is None:
            position = self.position_of(offset)
        with self._files.lease(self.log_path) as fd:
            found = self._read_at(
                fd, offset, max_bytes, upper_bound_offset, min_one_batch, position=position, cached=False
            )
        assert found is not None  # (only a cached read declines)
        return found

    def read_cached(
        self, offset: int, max_bytes: int, upper_bound_offset: int | None, min_one_batch: bool, position: int
    ) -> SegmentRead | None:
        """``read`` from ``position`` (the batch holding ``offset``), only when it waits for nothing
        and reads no more than asked: the file is open already, every byte it reads is in the page
        cache (``pread_cached``) and a first batch larger than ``max_bytes`` is not to be
        returned. None otherwise (nothing read; ``read`` would)."""
        with self._files.lease_if_open(self.log_path) as fd:
            if fd is None:
                return None
            return self._read_at(
                fd, offset, max_bytes, upper_bound_offset, min_one_batch, position=position, cached=True
            )

    def _read_at(
        self,
        fd: int,
        offset: int,
        max_bytes: int,
        upper_bound_offset: int | None,
        min_one_batch: bool,
        *,
        position: int,
        cached: bool,
    ) -> SegmentRead | None:
        available = self.size_bytes - position
        if available <= 0:
            return SegmentRead(b"", offset, 0, past_end=True)
        size = min(max(max_bytes, HEADER_BYTES), available)
        if cached and size < available:  # the first batch may not fit: its header says, before a copy
            head = pread_cached(fd, HEADER_BYTES, position)
            if head is None:
                return None
            if BatchHeader._make(HEADER.unpack_from(head)).size_bytes > size:
                return None if min_one_batch else SegmentRead(b"", offset, 0, past_end=False)
        chunk = pread_cached(fd, size, position) if cached else pread_exact(fd, size, position)
        if chunk is None:
            return None
        taken = 0
        records = 0
        next_offset = offset
        while taken + HEADER_BYTES <= len(chunk):
            header = BatchHeader._make(HEADER.unpack_from(chunk, taken))
            if upper_bound_offset is not None and header.last_offset >= upper_bound_offset:
                break
            if taken + header.size_bytes > len(chunk):
                if taken == 0 and min_one_batch:  # a first batch larger than max_bytes
                    if cached:
                        return None
                    chunk = pread_exact(fd, header.size_bytes, position)
                    taken, next_offset, records = len(chunk), header.next_offset, header.records_count
                break
            taken += header.size_bytes
            records += header.records_count
            next_offset = header.next_offset
        if taken:
            self._note_read_end(next_offset, position + taken)
        # the chunk itself (no copy) when all of it was taken
        return SegmentRead(chunk[:taken], next_offset, records, past_end=False)

    def _note_read_end(self, offset: int, position: int) -> None:
        ends = self._read_ends
        if offset not in ends and len(ends) >= READ_ENDS:
            del ends[next(iter(ends))]  # the oldest
        ends[offset] = position

    def read_end_position(self, offset: int) -> int | None:
        """Where ``offset``'s batch starts when a recent read ended there (no I/O), else None."""
        return self._read_ends.get(offset)

    # -----------------------------------------------------------------------------------------
    # recovery and truncation

    def recover(
        self, start_offset: int, accept: Callable[[BatchHeader], bool] | None = None, *, contiguous: bool = False
    ) -> tuple[int, int]:
        """Validate every batch, rebuild both indexes, cut the file at the first invalid batch.

        A batch is invalid if it fails validation (torn, bit-flipped, wrong magic, bad CRC),
        breaks the offset order (``baseOffset`` below ``start_offset`` or the previous batch's
        end, or not equal to it when ``contiguous``; too far from the segment's base), or is
        refused by ``accept`` (the log checks leader epochs). Size limits are not applied:
        lowering max.message.bytes must never make recovery cut valid data. Returns (bytes cut,
        next offset).
        """
        self.index.reset()
        self.time_index.reset()
        self._tail_loaded = True
        self._next_offset = max(self.base_offset, start_offset)
        self._max_timestamp = -1
        self._offset_of_max_timestamp = self.base_offset
        self._bytes_since_index = 0
        self._first_batch_timestamp = None
        self._read_ends = {}
        file_size = self.log_path.stat().st_size
        position = 0  # file position of the next batch
        chunk, chunk_start = b"", 0
        with self._files.lease(self.log_path) as fd:
            while position < file_size:
                relative = position - chunk_start
                if relative + LOG_OVERHEAD_BYTES > len(chunk):
                    chunk_start, relative = position, 0
                    chunk = pread_exact(fd, min(_RECOVERY_CHUNK_BYTES, file_size - position), position)
                    if len(chunk) < LOG_OVERHEAD_BYTES:
                        break  # a torn tail shorter than the length field
                batch_bytes = LOG_OVERHEAD_BYTES + int.from_bytes(
                    chunk[relative + 8 : relative + 12], "big", signed=True
                )
                if batch_bytes < HEADER_BYTES or position + batch_bytes > file_size:
                    break  # torn, or a damaged length
                if relative + batch_bytes > len(chunk):  # the batch runs past this chunk
                    chunk_start, relative = position, 0
                    chunk = pread_exact(
                        fd, max(min(_RECOVERY_CHUNK_BYTES, file_size - position), batch_bytes), position
                    )
                try:
                    header = validate_batch(chunk, relative)
                except LanesError:
                    break
                if not self._in_order(header, contiguous) or (accept is not None and not accept(header)):
                    break
                self._index_batch(header, position)
                position += batch_bytes
        return self._cut(position), self._next_offset

    def _in_order(self, header: BatchHeader, contiguous: bool) -> bool:
        follows = header.base_offset == self._next_offset if contiguous else header.base_offset >= self._next_offset
        return follows and header.last_offset - self.base_offset <= MAX_RELATIVE_OFFSET

    def _index_batch(self, header: BatchHeader, position: int) -> None:
        """Account for the batch at ``position`` (appended or recovered): a sparse index entry
        every index.interval.bytes, the largest timestamp, the first batch's time, the end."""
        if self._bytes_since_index > self.index_interval_bytes:
            self.index.append(header.last_offset, position)
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_index = 0
        if header.max_timestamp > self._max_timestamp:
            self._max_timestamp = header.max_timestamp
            self._offset_of_max_timestamp = header.last_offset
        if position == 0:
            self._first_batch_timestamp = header.max_timestamp
        self._bytes_since_index += header.size_bytes
        self._next_offset = header.next_offset

    def _cut(self, size_bytes: int) -> int:
        file_size = self.log_path.stat().st_size
        if size_bytes < file_size:
            with self._files.lease(self.log_path) as fd:
                os.ftruncate(fd, size_bytes)
        self.size_bytes = size_bytes
        return file_size - size_bytes

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; return the new next offset."""
        position = self.position_of(offset)
        self._read_ends = {}
        if position < self.size_bytes:
            with self._files.lease(self.log_path) as fd:
                os.ftruncate(fd, position)
            self.size_bytes = position
        self.index.truncate_to_position(position)
        self.time_index.truncate_to_offset(offset)
        self._tail_loaded = False
        if position == 0:
            self._first_batch_timestamp = None
        return self.next_offset

    def indexes_plausible(self) -> bool:
        """Whether both index files existed when the segment was opened (for a non-empty
        segment), looked intact and point inside the log file (a log's open asks, before
        anything is written to the segment)."""
        if self.size_bytes and (self.index.size_at_open is None or self.time_index.size_at_open is None):
            return False
        if not (self.index.plausible_at_open() and self.time_index.plausible_at_open()):
            return False
        last = self.index.last()
        return last is None or last[1] < self.size_bytes

    # -----------------------------------------------------------------------------------------
    # files

    def lease(self) -> AbstractContextManager[int]:
        """A descriptor of the log file, valid inside the ``with`` block."""
        return self._files.lease(self.log_path)

    def paths(self) -> list[Path]:
        """The segment's files."""
        return [self.log_path, self.index.path, self.time_index.path]

    def flush(self, *, include_indexes: bool = True) -> None:
        """Fsync the log file, and the indexes unless told not to: indexes are derived data,
        rebuilt by recovery for every segment from the recovery point on, so the per-append
        flush of the active segment skips them; a rolled segment's are flushed at the roll."""
        with self._files.lease(self.log_path) as fd:
            os.fdatasync(fd)
        if include_indexes:
            self.index.flush()
            self.time_index.flush()

    def release_files(self) -> None:
        """Close the segment's descriptors (before renaming or deleting its files)."""
        for path in self.paths():
            self._files.forget(path)

    def delete(self) -> None:
        """Delete the segment's files."""
        self.release_files()
        for path in self.paths():
            path.unlink(missing_ok=True)
