"""A partition's log: ordered segments with appends, reads, recovery, retention and truncation.

Directory layout (one directory per partition replica)::

    <baseOffset:020d>.log/.index/.timeindex   segments (lanes.storage.segment)
    recovery-point-checkpoint     every offset below it is fsynced; recovery scans from there
    high-watermark-checkpoint     the last high-water mark the broker set (see below)
    log-start-offset-checkpoint   the log start offset (low-water mark)
    leader-epoch-checkpoint       epoch -> start offset (lanes.storage.epochs)
    cleaner-offset-checkpoint     first offset compaction has not processed (lanes.storage.cleaner)
    .clean-shutdown               written by close(); removed on open (absent = unclean stop);
                                  a LogManager keeps one marker for its whole data directory instead
    *.cleaned, *.swap             compaction in progress (lanes.storage.cleaner)

Invariants:

- segments are sorted by base offset and do not overlap; the last one is active (appends go
  there); offsets strictly increase through the log (gaps only where compaction removed batches);
- ``log_start_offset <= high_watermark <= log_end_offset`` and ``recovery_point <= log_end_offset``;
- the high-water mark is set by replication (the end of what every in-sync replica has); only
  records above it can ever be truncated, so compaction and retention never act on or beyond it
  (otherwise compaction could drop a value superseded by a record that a truncation then removes);
- only validated batches reach disk; after an unclean stop, recovery rescans every segment from
  the one holding the recovery point and cuts the log at the first invalid batch.

Thread-safety: every public method is thread-safe. One lock guards the segment list and the
offsets; ``flush`` fsyncs outside it, so appends continue while a flush runs and concurrent
flushes share one fsync (group commit). Maintenance that rewrites or drops segments (retention,
truncation, compaction) is serialised by a second lock; a truncation interrupts a compaction
in progress instead of waiting for it.
"""

from __future__ import annotations

import bisect
import functools
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, overload

from lanes.clock import Clock
from lanes.errors import (
    CorruptRecordError,
    OffsetOutOfRangeError,
    StorageError,
)
from lanes.invariants import InvariantError
from lanes.protocol.records import (
    BatchHeader,
    TimestampType,
    assign_offsets_vectored,
    decode_batch,
    decode_batches,
    stamp_log_append_time,
    validate_batches,
)
from lanes.storage.checkpoint import LogOffsets, OffsetStore, PartitionFiles
from lanes.storage.epochs import LeaderEpochCache
from lanes.storage.files import FileCache, fsync_directory, storage_error
from lanes.storage.loader import (
    CLEAN_SHUTDOWN_FILE,
    LEADER_EPOCH_FILE,
    LogLoader,
    swap_in_compacted,
)
from lanes.storage.positions import LogPosition, RecentEnds, bytes_between
from lanes.storage.produce_validation import validate_produce
from lanes.storage.retention import retention_candidates, segments_below_start
from lanes.storage.segment import MAX_RELATIVE_OFFSET, LogSegment, SegmentRead
from lanes.topic_configs import topic_config_values

_T = TypeVar("_T")


@dataclass(frozen=True)
class LogConfig:
    """The topic configs the log engine obeys (Kafka names in ``from_topic_configs``)."""

    segment_bytes: int
    segment_ms: int
    index_interval_bytes: int
    max_message_bytes: int
    flush_messages: int
    flush_ms: int
    retention_ms: int
    retention_bytes: int
    compact: bool
    delete: bool
    delete_retention_ms: int
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    min_cleanable_dirty_ratio: float
    log_append_time: bool
    timestamp_after_max_ms: int = 60 * 60 * 1000

    @classmethod
    def from_topic_configs(cls, overrides: Mapping[str, str] | None = None) -> LogConfig:
        """Defaults overridden by topic config text, validated (InvalidConfigError)."""
        values = topic_config_values(overrides)
        policy = set(values["cleanup.policy"])
        return cls(
            segment_bytes=values["segment.bytes"],
            segment_ms=values["segment.ms"],
            index_interval_bytes=values["index.interval.bytes"],
            max_message_bytes=values["max.message.bytes"],
            flush_messages=values["flush.messages"],
            flush_ms=values["flush.ms"],
            retention_ms=values["retention.ms"],
            retention_bytes=values["retention.bytes"],
            compact="compact" in policy,
            delete="delete" in policy,
            delete_retention_ms=values["delete.retention.ms"],
            min_compaction_lag_ms=values["min.compaction.lag.ms"],
            max_compaction_lag_ms=values["max.compaction.lag.ms"],
            min_cleanable_dirty_ratio=values["min.cleanable.dirty.ratio"],
            log_append_time=values["message.timestamp.type"] == "LogAppendTime",
            timestamp_after_max_ms=values["message.timestamp.after.max.ms"],
        )


@dataclass(frozen=True)
class AppendInfo:
    """What an append wrote."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    records: int
    size_bytes: int
    headers: tuple[BatchHeader, ...] = ()  # the batches as written (offsets and epoch assigned)


@dataclass(frozen=True)
class ReadResult:
    """Whole batches read, and the log's bounds at the time of the read."""

    records: bytes
    next_offset: int
    log_start_offset: int
    log_end_offset: int
    records_count: int = 0  # records in the batches read (from their headers)


@dataclass(frozen=True)
class TimestampOffset:
    """The first record at or after a timestamp."""

    offset: int
    timestamp_ms: int
    leader_epoch: int


class PartitionLog:
    """One partition replica's log. Open with ``PartitionLog.open``."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        files: FileCache,
        *,
        own_marker: bool = True,
        offsets: OffsetStore | None = None,
    ) -> None:
        self.directory = directory
        self._own_marker = own_marker
        self._offsets: OffsetStore = offsets if offsets is not None else PartitionFiles()
        self._config = config
        self._clock = clock
        self._files = files
        self._lock = threading.RLock()
        self._maintenance_lock = threading.Lock()
        self._flush_condition = threading.Condition()
        self._flushing = False
        self.cleaner_abort = threading.Event()
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._recent_ends = RecentEnds()  # where recent appends ended (lanes.storage.positions)
        self._log_start_offset = 0
        self._log_end_offset = 0
        self._high_watermark = 0
        self._recovery_point = 0
        self._durable_offset = 0
        self._unflushed_records = 0
        self._first_unflushed_ms: int | None = None
        self._active_since_ms = clock.monotonic_ms()  # when the active segment started (or was opened)
        self._closed = False
        self.epochs = LeaderEpochCache(directory / LEADER_EPOCH_FILE)
        #: Bytes the last open's recovery cut off (for logs and tests).
        self.recovered_bytes_cut = 0
        #: The directory's file names when ``open`` listed it (``LoadedLog.names``), for a first
        #: look at files the log does not own right after the open; None once taken
        #: (``take_names_at_open``): later it would be out of date, and it is not kept for life.
        self.names_at_open: frozenset[str] | None = None
        #: Called with the seconds each fsync pass of ``flush`` took (metrics), if set.
        self.on_flush_s: Callable[[float], None] | None = None

    # -----------------------------------------------------------------------------------------
    # opening (recovery: lanes.storage.loader)

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        clock: Clock,
        files: FileCache | None = None,
        clean_shutdown: bool | None = None,
        offsets: OffsetStore | None = None,
    ) -> PartitionLog:
        """Open the log in ``directory`` (created if missing), recovering after an unclean stop.

        ``clean_shutdown``: whether the last stop was clean, when the caller keeps that knowledge
        (a LogManager, for its whole data directory); None uses the log's own marker file.
        ``offsets``: where the recovery point, log start and high-water mark are kept (a
        LogManager's data-directory files); by default, files in ``directory``.
        """
        if not directory.is_dir():  # (one stat where the directory exists, as after a restart)
            directory.mkdir(parents=True, exist_ok=True)
        store = offsets if offsets is not None else PartitionFiles()
        log = cls(directory, config, clock, files or FileCache(), own_marker=clean_shutdown is None, offsets=store)
        loaded = LogLoader(
            directory,
            files=log._files,
            epochs=log.epochs,
            index_interval_bytes=config.index_interval_bytes,
            compact=config.compact,
            clean_shutdown=clean_shutdown,
            stored=store.load(directory),
        ).load()
        with log._lock:
            log._segments = loaded.segments
            log._bases = [segment.base_offset for segment in loaded.segments]
            log._log_start_offset = loaded.log_start_offset
            log._log_end_offset = loaded.log_end_offset
            log._high_watermark = loaded.high_watermark
            log._recovery_point = log._durable_offset = loaded.recovery_point
            log.recovered_bytes_cut = loaded.recovered_bytes_cut
            log.names_at_open = loaded.names
            if loaded.checkpoints_stale:
                log._write_checkpoints()
        return log

    # -----------------------------------------------------------------------------------------
    # state

    @property
    def config(self) -> LogConfig:
        """The configs in force."""
        return self._config

    @property
    def log_start_offset(self) -> int:
        """The first offset that may be read (the low-water mark)."""
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record will get."""
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        """End of the records every in-sync replica has (consumers read below it)."""
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> int:
        """Set the high-water mark (a follower, from its leader's), clamped to [log start, log end];
        return the value set. Persisted by ``checkpoint`` and ``close``."""
        with self._lock:
            self._high_watermark = min(max(offset, self._log_start_offset), self._log_end_offset)
            return self._high_watermark

    def maybe_increment_high_watermark(self, offset: int) -> int:
        """The leader's update: the high-water mark only moves forward (to ``offset``, clamped to
        the log end); return it."""
        with self._lock:
            self._high_watermark = min(max(offset, self._high_watermark, self._log_start_offset), self._log_end_offset)
            if not self._log_start_offset <= self._high_watermark <= self._log_end_offset:
                raise InvariantError(
                    f"{self.directory.name}: high-water mark {self._high_watermark} outside the log "
                    f"{self._log_start_offset}..{self._log_end_offset}"
                )
            return self._high_watermark

    @property
    def recovery_point(self) -> int:
        """Every offset below this is fsynced."""
        return self._durable_offset

    @property
    def size_bytes(self) -> int:
        """Bytes of all segments, read without the log's lock (like the offsets above): callers
        on an event loop (DescribeLogs, metrics) must not wait for a checkpoint's or a cleaner's
        fsyncs, which hold it. A segment rolled or deleted meanwhile may be counted or not."""
        return sum(segment.size_bytes for segment in list(self._segments))  # list(): one atomic copy

    @property
    def active_segment_base_offset(self) -> int:
        """The base offset of the active segment (it changes when the log rolls or is cut)."""
        return self._bases[-1]

    @property
    def segment_count(self) -> int:
        """Number of segments."""
        return len(self._segments)

    def segments(self) -> list[LogSegment]:
        """A snapshot of the segment list (the last is active)."""
        with self._lock:
            return list(self._segments)

    def update_config(self, config: LogConfig) -> None:
        """Apply changed topic configs (they take effect on the next append or maintenance)."""
        with self._lock:
            self._config = config

    # -----------------------------------------------------------------------------------------
    # appends

    def validate_produce(self, data: bytes | bytearray) -> list[BatchHeader]:
        """Check one produce request's data for this partition against this log's configs and
        clock (``lanes.storage.produce_validation``); its batch's header."""
        return validate_produce(data, self._config, self._clock.now_ms())

    @overload
    def append_as_leader(
        self, data: bytes | bytearray, leader_epoch: int, *, validated: Sequence[BatchHeader] | None = None
    ) -> AppendInfo: ...

    @overload
    def append_as_leader(
        self, data: bytes | bytearray, leader_epoch: int, *, validated: Sequence[BatchHeader] | None = None, wait: bool
    ) -> AppendInfo | None: ...

    def append_as_leader(
        self,
        data: bytes | bytearray,
        leader_epoch: int,
        *,
        validated: Sequence[BatchHeader] | None = None,
        wait: bool = True,
    ) -> AppendInfo | None:
        """Validate producer batches, give them offsets and ``leader_epoch``, append them.

        ``validated``: the headers ``validate_produce(data)`` returned, when the caller already
        validated (the broker does, to check idempotent producers first). Raises what
        ``validate_produce`` raises (nothing written), and StorageError when the disk fails
        (nothing is written, the log stays readable). With ``wait=False``: None, nothing done,
        when another thread holds the log (the broker's event loop never waits for one), or when
        a new epoch's checkpoint cannot be written at once in place (``LeaderEpochCache.save``).
        """
        headers = list(validated) if validated is not None else self.validate_produce(data)
        if not self._lock.acquire(blocking=wait):
            return None
        try:
            self._check_open()
            first_offset = self._log_end_offset
            append_time = -1
            if self._config.log_append_time:  # rewrites CRC-covered bytes: a copy and new CRCs
                append_time = self._clock.now_ms()
                data = bytearray(data)
                headers = stamp_log_append_time(data, headers, append_time)
            # No copy of the batches: a new 16-byte prefix per batch, the rest written from `data`.
            headers, buffers = assign_offsets_vectored(
                data, headers, first_offset=first_offset, partition_leader_epoch=leader_epoch
            )
            self.epochs.assign(leader_epoch, first_offset)
            # before the data: recovery relies on it (an in-place write of a small file, also on
            # the loop; not while another thread writes it there: the append then goes to a thread)
            if not self._epochs_to_disk(functools.partial(self.epochs.save, wait=wait)):
                return None
            self._append_locked(buffers, headers, len(data))
            info = self._append_info(headers, append_time, len(data))
        finally:
            self._lock.release()
        self._maybe_flush_by_count()
        return info

    def append_as_follower(self, data: bytes | bytearray) -> AppendInfo:
        """Append batches replicated from the leader, offsets and epochs as the leader gave them."""
        headers = validate_batches(data)
        with self._lock:
            self._check_open()
            expected = self._log_end_offset
            for header in headers:
                if header.base_offset < expected:
                    raise CorruptRecordError(
                        f"replicated batch at offset {header.base_offset} is below the log end offset {expected}: "
                        "truncate the follower first"
                    )
                expected = header.next_offset
            for header in headers:
                self.epochs.assign(header.partition_leader_epoch, header.base_offset)
            self._epochs_to_disk(self.epochs.save)  # before the data: recovery relies on it
            self._append_locked([data], headers, len(data))
            info = self._append_info(headers, -1, len(data))
        self._maybe_flush_by_count()
        return info

    @staticmethod
    def _append_info(headers: Sequence[BatchHeader], append_time: int, size_bytes: int) -> AppendInfo:
        return AppendInfo(
            first_offset=headers[0].base_offset,
            last_offset=headers[-1].last_offset,
            max_timestamp=max(header.max_timestamp for header in headers),
            log_append_time_ms=append_time,
            records=sum(header.records_count for header in headers),
            size_bytes=size_bytes,
            headers=tuple(headers),
        )

    def _append_locked(
        self, buffers: Sequence[bytes | bytearray | memoryview], headers: Sequence[BatchHeader], size_bytes: int
    ) -> None:
        segment = self._maybe_roll(size_bytes, headers)
        segment.append(buffers, headers)
        self._log_end_offset = headers[-1].next_offset
        self._recent_ends.note(LogPosition(self._log_end_offset, segment, segment.size_bytes))
        self._unflushed_records += sum(header.records_count for header in headers)
        if self._first_unflushed_ms is None:
            self._first_unflushed_ms = self._clock.monotonic_ms()

    def _maybe_roll(self, incoming_bytes: int, headers: Sequence[BatchHeader]) -> LogSegment:
        """Roll when ``_roll_due`` for these batches (their offsets assigned)."""
        max_timestamp = max(header.max_timestamp for header in headers)
        if self._roll_due(incoming_bytes, max_timestamp, headers[-1].last_offset):
            return self._roll_locked()
        return self._segments[-1]

    def _roll_due(self, incoming_bytes: int, max_timestamp: int, last_offset: int) -> bool:
        """Whether batches ending at ``last_offset`` need a new segment: the active one is full,
        spans more than segment.ms, or offsets would overflow its index. As in Kafka, segment.ms
        compares the incoming batch's timestamp with the segment's first batch's, and falls back
        to the segment's age on the broker's clock when records carry no timestamps."""
        active = self._segments[-1]
        config = self._config
        first_timestamp = active.first_batch_timestamp()
        if first_timestamp is not None and first_timestamp >= 0:
            waited_ms = max_timestamp - first_timestamp
        else:
            waited_ms = self._clock.monotonic_ms() - self._active_since_ms
        full = active.size_bytes > 0 and active.size_bytes + incoming_bytes > config.segment_bytes
        old = waited_ms > config.segment_ms
        overflow = last_offset - active.base_offset > MAX_RELATIVE_OFFSET
        return bool(active.size_bytes) and (full or old or overflow)

    def take_names_at_open(self) -> frozenset[str] | None:
        """``names_at_open``, once (None afterwards: the caller lists the directory itself)."""
        names, self.names_at_open = self.names_at_open, None
        return names

    def prepare_for_appends(self) -> None:
        """Read, now, what the next append as leader would otherwise read first: the active
        segment's first batch timestamp (unknown after a restart; ``segment.ms`` measures from
        it). Worker thread; the broker calls it for the partitions a metadata pass made it lead.
        Writes nothing: the epoch of a new leadership is still written by its first append (an
        epoch written ahead, of a partition that then receives nothing, would cost an fsync at
        the clean stop and a durable rewrite at the next open, which drops it: decision 0054).
        Raises StorageError when the log is closed or the disk fails."""
        with self._lock:
            self._check_open()
            try:
                self._segments[-1].first_batch_timestamp()
            except OSError as exc:
                raise storage_error("reading the active segment's first batch in", self.directory, exc) from exc

    def append_is_light(self, incoming_bytes: int, headers: Sequence[BatchHeader]) -> bool:
        """Whether appending these validated producer batches would write to the page cache only:
        no segment roll (which fsyncs the full segment), no fsync by flush.messages, no read of
        the active segment's first batch (after a restart, segment.ms needs its timestamp). The
        first append of a leadership writes its epoch checkpoint over the old one in place first
        (a page-cache write of at most a sector, decision 0054), unless another thread writes that
        file at the moment or it outgrew a sector: then the append is not made (``wait=False``
        returns None) and goes to a thread. Such an append
        takes microseconds; the broker runs it on its event loop (decision 0041). False also
        while another thread holds the log."""
        records = sum(header.records_count for header in headers)
        if not self._lock.acquire(blocking=False):
            return False  # another thread holds the log: the append waits for it in a thread
        try:
            if self._config.log_append_time:
                max_timestamp = self._clock.now_ms()
            else:
                max_timestamp = max(header.max_timestamp for header in headers)
            last_offset = self._log_end_offset + records - 1
            return (
                self._segments[-1].first_batch_timestamp_known  # (else a read: in a thread)
                and not self._roll_due(incoming_bytes, max_timestamp, last_offset)
                and self._unflushed_records + records < self._config.flush_messages
            )  # (the first append of a leadership writes its epoch in place: decision 0054)
        finally:
            self._lock.release()

    def _roll_locked(self) -> LogSegment:
        active = self._segments[-1]
        try:
            active.close_for_appends()
            active.flush()
            self.epochs.sync_saved()  # before the recovery point passes their batches
            segment = LogSegment.create(
                self.directory, self._log_end_offset, self._files, self._config.index_interval_bytes
            )
            fsync_directory(self.directory)
        except OSError as exc:
            raise storage_error("rolling a new segment in", self.directory, exc) from exc
        self._segments.append(segment)
        self._bases.append(segment.base_offset)
        self._active_since_ms = self._clock.monotonic_ms()
        self._note_durable(segment.base_offset)
        return segment

    def roll(self) -> None:
        """Start a new active segment now (if the active one holds anything)."""
        with self._lock:
            self._check_open()
            if self._segments[-1].size_bytes:
                self._roll_locked()

    # -----------------------------------------------------------------------------------------
    # flushing (group commit)

    def flush(self, up_to_offset: int | None = None) -> None:
        """Make every record below ``up_to_offset`` (default: all) durable with fsync.

        Concurrent callers share fsyncs: while one runs, later callers wait and return at once
        if it covered them.
        """
        target = self._log_end_offset if up_to_offset is None else up_to_offset
        with self._flush_condition:
            while True:
                if self._durable_offset >= target:
                    return
                if not self._flushing:
                    self._flushing = True
                    break
                self._flush_condition.wait()
        flushed_to = None
        try:
            with self._lock:
                end = self._log_end_offset
                segments = [s for s in self._segments if s.next_offset > self._durable_offset]
                self._unflushed_records = 0
                self._first_unflushed_ms = None
            started_s = time.perf_counter()
            for segment in segments:  # rolled segments' indexes were flushed at the roll
                segment.flush(include_indexes=False)
            self.epochs.sync_saved()  # before the recovery point passes their batches
            if self.on_flush_s is not None and segments:
                self.on_flush_s(time.perf_counter() - started_s)
            flushed_to = end
        except OSError as exc:
            raise storage_error("flushing", self.directory, exc) from exc
        finally:
            with self._flush_condition:
                self._flushing = False
                if flushed_to is not None:
                    self._note_durable(flushed_to)
                self._flush_condition.notify_all()

    def _note_durable(self, offset: int) -> None:
        with self._flush_condition:
            self._durable_offset = max(self._durable_offset, min(offset, self._log_end_offset))

    def _maybe_flush_by_count(self) -> None:
        if self._unflushed_records >= self._config.flush_messages:
            self.flush()

    def maybe_flush_by_time(self) -> bool:
        """Flush if the oldest unflushed append is older than flush.ms; return whether it did."""
        first = self._first_unflushed_ms
        if first is not None and self._clock.monotonic_ms() - first >= self._config.flush_ms:
            self.flush()
            return True
        return False

    # -----------------------------------------------------------------------------------------
    # reads

    @overload
    def read(
        self, offset: int, max_bytes: int, *, upper_bound_offset: int | None = None, min_one_batch: bool = True
    ) -> ReadResult: ...

    @overload
    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        upper_bound_offset: int | None = None,
        min_one_batch: bool = True,
        wait: bool,
    ) -> ReadResult | None: ...

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        upper_bound_offset: int | None = None,
        min_one_batch: bool = True,
        wait: bool = True,
    ) -> ReadResult | None:
        """Whole batches from the one containing ``offset`` (it may start before ``offset``).

        At most ``max_bytes`` unless the first batch alone is larger (then it alone, when
        ``min_one_batch``); only batches whose last offset is below ``upper_bound_offset`` (the
        high-water mark). OffsetOutOfRangeError outside [log start, log end].

        With ``wait=False`` (the broker's event loop): None, nothing read, unless the read is
        light: no other thread holds the log, ``offset``'s position is known without I/O
        (``known_position``: a segment's start, where a recent append or read ended), the
        batches are in that segment, the first is at most ``max_bytes`` (a light read never
        reads more) and every byte read is in the page cache (``LogSegment.read_cached``). What
        it reads then is one ``preadv2`` that waits for no disk.
        """
        if not wait:
            return self._read_light(offset, max_bytes, upper_bound_offset, min_one_batch)
        with self._lock:
            self._check_open()
            if not self._log_start_offset <= offset <= self._log_end_offset:
                raise OffsetOutOfRangeError(
                    f"offset {offset} is outside the log's range {self._log_start_offset}..{self._log_end_offset}"
                )
            position = max(0, bisect.bisect_right(self._bases, offset) - 1)
            for segment in self._segments[position:]:
                start = max(offset, segment.base_offset)
                found = segment.read(start, max_bytes, upper_bound_offset, min_one_batch)
                if found.records:
                    return self._read_result(found)
                if not found.past_end:
                    break  # a bound stopped it before the first batch: nothing after it may be returned
                if upper_bound_offset is not None and segment.next_offset >= upper_bound_offset:
                    break
            return ReadResult(b"", offset, self._log_start_offset, self._log_end_offset)

    def _read_light(
        self, offset: int, max_bytes: int, upper_bound_offset: int | None, min_one_batch: bool
    ) -> ReadResult | None:
        if not self._lock.acquire(blocking=False):
            return None
        try:  # under the lock: no truncation or new segment between finding the position and reading
            start = self._known_position(offset)
            if start is None:
                return None
            found = start.segment.read_cached(offset, max_bytes, upper_bound_offset, min_one_batch, start.position)
            if found is None or (found.past_end and start.segment is not self._segments[-1]):
                return None  # not all cached, or the batches are in the next segment: a read that waits
            return self._read_result(found)  # (nothing read: its next offset is ``offset``)
        finally:
            self._lock.release()

    def _read_result(self, found: SegmentRead) -> ReadResult:
        return ReadResult(
            found.records, found.next_offset, self._log_start_offset, self._log_end_offset, found.records_count
        )

    def _known_position(self, offset: int) -> LogPosition | None:
        """Where ``offset``'s batch starts when that is known without I/O (under the lock): a
        segment's base offset, where a recent append or read ended. None otherwise, or when
        ``offset`` is outside the log or the log is closed."""
        if self._closed or not self._log_start_offset <= offset <= self._log_end_offset:
            return None
        segment = self._segments[max(0, bisect.bisect_right(self._bases, offset) - 1)]
        if offset == segment.base_offset:
            return LogPosition(offset, segment, 0)
        position = segment.read_end_position(offset)
        if position is not None:
            return LogPosition(offset, segment, position)
        appended = self._recent_ends.find(offset)
        return appended if appended is not None and appended.segment is segment else None

    def position(self, offset: int) -> LogPosition:
        """Where a read from ``offset`` starts (the batch holding it; the log end's segment end
        for the log end offset): index lookups and batch headers, so in a worker thread.
        OffsetOutOfRangeError outside [log start, log end]."""
        with self._lock:
            self._check_open()
            if not self._log_start_offset <= offset <= self._log_end_offset:
                raise OffsetOutOfRangeError(
                    f"offset {offset} is outside the log's range {self._log_start_offset}..{self._log_end_offset}"
                )
            segment = self._segments[max(0, bisect.bisect_right(self._bases, offset) - 1)]
            return LogPosition(offset, segment, segment.position_of(offset))

    def known_position(self, offset: int) -> LogPosition | None:
        """``position`` when it is known without I/O and no other thread holds the log (so on an
        event loop): ``offset`` is a segment's base offset, or where a recent append or read
        ended (a consumer or follower caught up, or reading on sequentially). None otherwise."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._known_position(offset)
        finally:
            self._lock.release()

    def bytes_until(self, start: LogPosition, end_offset: int) -> int | None:
        """Bytes of the batches from ``start`` up to ``end_offset`` (the high-water mark), without
        reading them and without the lock, so on an event loop; None when that is not known
        cheaply (``lanes.storage.positions``: the caller reads instead)."""
        if end_offset <= start.offset:
            return 0
        end = self._recent_ends.find(end_offset)
        if end is None:
            return None
        return bytes_between(start, end, list(self._segments))  # list(): one atomic copy

    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampOffset | None:
        """The first record with a timestamp >= ``timestamp_ms``, or None if there is none."""
        with self._lock:
            self._check_open()
            for segment in self._segments:
                if segment.max_timestamp < timestamp_ms:
                    continue
                indexed = segment.time_index.lookup(timestamp_ms)
                start = max(self._log_start_offset, segment.base_offset if indexed is None else indexed)
                position = segment.position_of(start)
                for _, header in segment.batch_headers(position):
                    if header.max_timestamp < timestamp_ms:
                        continue
                    found = _first_record_at(segment, header, timestamp_ms, self._log_start_offset)
                    if found is not None:
                        return found
            return None

    def record_time_at(self, offset: int, max_bytes: int = 1 << 16) -> TimestampOffset | None:
        """The first record at or after ``offset`` below the high-water mark, with its timestamp
        (the batch's for LOG_APPEND_TIME), read from the batches holding it (``max_bytes`` unless
        one batch is larger); None when there is none. OffsetOutOfRangeError outside the log."""
        read = self.read(offset, max_bytes, upper_bound_offset=self.high_watermark)
        for batch in decode_batches(read.records):
            log_append_time = batch.header.timestamp_type is TimestampType.LOG_APPEND_TIME
            for record in batch.records:
                if record.offset >= offset:
                    timestamp = batch.header.max_timestamp if log_append_time else record.timestamp
                    return TimestampOffset(record.offset, timestamp, batch.header.partition_leader_epoch)
        return None

    def scan_batch_headers(self, from_offset: int, visit: Callable[[BatchHeader], None]) -> None:
        """Call ``visit`` with the header of every batch whose base offset is at or after
        ``from_offset``, oldest first (a compaction under way is interrupted and waited for: no
        segment is swapped mid-scan). Appends may run meanwhile; the scan ends where the log
        ended when it began."""
        self.cleaner_abort.set()
        with self._maintenance_lock:
            self.cleaner_abort.clear()
            end = self._log_end_offset
            for segment in self.segments():
                if segment.next_offset <= from_offset or segment.base_offset >= end:
                    continue
                position = segment.position_of(from_offset) if segment.base_offset < from_offset else 0
                for _, header in segment.batch_headers(position):
                    if header.base_offset >= end:
                        break
                    if header.base_offset >= from_offset:
                        visit(header)

    # -----------------------------------------------------------------------------------------
    # truncation, retention, deletion

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset`` (a follower diverged from its
        leader); return the new log end offset (``offset`` when it falls between batches)."""
        self.cleaner_abort.set()
        with self._maintenance_lock, self._lock:
            self.cleaner_abort.clear()
            self._check_open()
            if offset >= self._log_end_offset:
                # Nothing to remove, but an epoch may start at the log end with no record of its
                # own (this broker led it and wrote nothing): it goes, or the leader would find
                # this log diverged on every fetch (Kafka's truncateTo does the same).
                self.epochs.truncate_from_end(self._log_end_offset)
                return self._log_end_offset
            if offset <= self._log_start_offset or offset <= self._segments[0].base_offset:
                self._truncate_fully_locked(max(offset, 0))
                return self._log_end_offset
            while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
                self._segments.pop().delete()
                self._bases.pop()
            try:
                self._log_end_offset = self._segments[-1].truncate_to(offset)
            except OSError as exc:
                raise storage_error("truncating", self.directory, exc) from exc
            self._recent_ends.cut_after(self._log_end_offset)
            if self._log_end_offset < self._log_start_offset:  # the cut batch straddled the log start
                self._truncate_fully_locked(self._log_start_offset)
            else:
                self._after_truncation()
            return self._log_end_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete everything; the log restarts empty at ``offset`` (a follower that fell behind
        the leader's log start). The epoch cache empties too (Kafka's ``clearAndFlush``): none of
        the epochs it knew describes what this log will hold."""
        self.cleaner_abort.set()
        with self._maintenance_lock, self._lock:
            self.cleaner_abort.clear()
            self._check_open()
            self._truncate_fully_locked(offset)
            self.epochs.clear()

    def _truncate_fully_locked(self, offset: int) -> None:
        for segment in self._segments:
            segment.delete()
        self._segments = [LogSegment.create(self.directory, offset, self._files, self._config.index_interval_bytes)]
        self._bases = [offset]
        self._recent_ends.forget()
        fsync_directory(self.directory)
        self._log_end_offset = offset
        self._log_start_offset = offset
        self._high_watermark = offset
        self.epochs.truncate_from_end(offset)
        self._after_truncation()

    def _after_truncation(self) -> None:
        self._durable_offset = min(self._durable_offset, self._log_end_offset)
        self._log_start_offset = min(self._log_start_offset, self._log_end_offset)
        self._high_watermark = min(self._high_watermark, self._log_end_offset)
        self.epochs.truncate_from_end(self._log_end_offset)
        self._write_checkpoints(urgent=True)

    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset to ``offset`` (DeleteRecords); return the new log start.

        Segments wholly below it are deleted; the rest stay on disk until retention removes them.
        """
        with self._maintenance_lock, self._lock:
            self._check_open()
            if offset > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"cannot delete records before {offset}: only records below the high-water mark "
                    f"{self._high_watermark} can be deleted"
                )
            if offset > self._log_start_offset:
                self._log_start_offset = offset
                self.epochs.truncate_from_start(offset)
                self._delete_segments_locked(segments_below_start(self._segments, self._log_start_offset))
                self._write_checkpoints(urgent=True)
            return self._log_start_offset

    def apply_retention(self) -> int:
        """Delete old non-active segments by retention.ms and retention.bytes (cleanup.policy
        includes delete); return how many were deleted."""
        with self._maintenance_lock, self._lock:
            self._check_open()
            doomed = segments_below_start(self._segments, self._log_start_offset)
            if self._config.delete:
                doomed = retention_candidates(
                    self._segments, self._config, self._high_watermark, self._clock.now_ms(), already=len(doomed)
                )
            if doomed:
                self._delete_segments_locked(doomed)
                self._write_checkpoints()
            return len(doomed)

    def _delete_segments_locked(self, doomed: Sequence[LogSegment]) -> None:
        """Delete a prefix of the segments (never the active one); advance the log start."""
        if not doomed:
            return
        if len(doomed) >= len(self._segments) or any(a is not b for a, b in zip(doomed, self._segments, strict=False)):
            raise RuntimeError("only a prefix of the inactive segments can be deleted")
        del self._segments[: len(doomed)]
        del self._bases[: len(doomed)]
        for segment in doomed:
            segment.delete()
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
        self.epochs.truncate_from_start(self._log_start_offset)

    # -----------------------------------------------------------------------------------------
    # compaction support (lanes.storage.cleaner)

    @property
    def maintenance_lock(self) -> threading.Lock:
        """Held by whoever rewrites or drops segments (retention, truncation, compaction)."""
        return self._maintenance_lock

    def replace_segment(
        self, old: LogSegment, cleaned_log: Path, fault: Callable[[str], None] | None = None
    ) -> LogSegment | None:
        """Swap a compacted copy in for ``old`` (same base offset) under the log lock.

        ``cleaned_log`` is a fsynced ``.cleaned`` file. Commit order, crash-safe: rename it to
        ``.swap`` (the commit point: recovery completes any swap it finds), drop ``old``'s
        indexes (derived data), rename the swap over the old log file, rebuild the indexes. An
        empty compacted copy deletes the segment instead. Returns the new segment, or None.
        ``fault`` (tests) is called after each step and may raise to simulate a crash there.
        """
        with self._lock:
            self._check_open()
            position = next(i for i, segment in enumerate(self._segments) if segment is old)
            if position == len(self._segments) - 1:
                raise RuntimeError("the active segment is never compacted")
            replacement = swap_in_compacted(
                old, cleaned_log, self._files, self._config.index_interval_bytes, fault or (lambda name: None)
            )
            if replacement is None:
                del self._segments[position]
                del self._bases[position]
            else:
                self._segments[position] = replacement
            self._recent_ends.forget()  # positions in the old segment no longer hold
            return replacement

    # -----------------------------------------------------------------------------------------
    # lifecycle

    def checkpoint(self) -> None:
        """Persist the recovery point and log start offset (the broker calls this periodically)."""
        with self._lock:
            self._check_open()
            self._write_checkpoints()

    def _epochs_to_disk(self, write: Callable[[], _T]) -> _T:
        """``epochs.save`` or ``epochs.sync_saved`` (decision 0045), a disk failure as StorageError."""
        try:
            return write()
        except OSError as exc:
            raise storage_error("writing the leader-epoch checkpoint in", self.directory, exc) from exc

    def _write_checkpoints(self, *, urgent: bool = False) -> None:
        """Hand the offsets to the store (``OffsetStore``: ``urgent`` after a truncation lowered
        the recovery point, or DeleteRecords raised the log start)."""
        offsets = LogOffsets(self._durable_offset, self._log_start_offset, self._high_watermark)
        try:
            self._offsets.save(self.directory, offsets, urgent=urgent)
        except OSError as exc:
            raise storage_error("writing checkpoints in", self.directory, exc) from exc

    def close(self) -> None:
        """Flush, checkpoint, mark the shutdown clean and release the files."""
        if self._closed:
            return
        self.flush()
        with self._maintenance_lock, self._lock:
            self._segments[-1].flush()  # with its indexes: a clean restart trusts them
            self._epochs_to_disk(self.epochs.sync_saved)  # a clean restart trusts it without a scan
            self._write_checkpoints()
            if self._own_marker:
                (self.directory / CLEAN_SHUTDOWN_FILE).touch()
                fsync_directory(self.directory)
            for segment in self._segments:
                segment.release_files()
            self._closed = True

    def delete(self) -> None:
        """Delete the whole log from disk (its topic was deleted)."""
        self.cleaner_abort.set()
        with self._maintenance_lock, self._lock:
            for segment in self._segments:
                segment.release_files()
            self._closed = True
            shutil.rmtree(self.directory, ignore_errors=True)

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"the log in {self.directory} is closed")


def _first_record_at(
    segment: LogSegment, header: BatchHeader, timestamp_ms: int, log_start_offset: int
) -> TimestampOffset | None:
    """The first record of the batch ``header`` names with a timestamp >= ``timestamp_ms``."""
    data = segment.read(header.base_offset, header.size_bytes, None, True).records
    batch = decode_batch(data)
    log_append_time = batch.header.timestamp_type is TimestampType.LOG_APPEND_TIME
    for record in batch.records:
        timestamp = batch.header.max_timestamp if log_append_time else record.timestamp
        if timestamp >= timestamp_ms and record.offset >= log_start_offset:
            return TimestampOffset(record.offset, timestamp, batch.header.partition_leader_epoch)
    return None
