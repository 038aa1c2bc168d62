"""Log compaction: keep the latest record per key (cleanup.policy=compact or compact,delete).

A pass over one log, holding its maintenance lock (retention and truncation wait, or interrupt
it through ``PartitionLog.cleaner_abort``; appends and reads go on):

1. The cleanable range is every inactive segment below the *first uncleanable offset*: the active
   segment's base, the high-water mark (records above it may still be truncated, and a value
   must never be dropped for a newer one that could vanish), or the first segment with records
   younger than ``min.compaction.lag.ms``, whichever comes first.
   Segments from ``cleaner-offset-checkpoint`` (the first dirty offset) on are *dirty*; the pass
   runs when dirty bytes / cleanable bytes >= ``min.cleanable.dirty.ratio`` (or a dirty record is
   older than ``max.compaction.lag.ms``).
2. Build key -> latest offset over the dirty segments.
3. Rewrite each cleanable segment into ``<base>.log.cleaned``: a record is kept unless a later
   record has its key; a tombstone (null value) is kept until its batch's delete horizon
   (stamped the first time compaction keeps it, at now + ``delete.retention.ms``; KIP-534).
   Batches keep their base offset and offset range (so offsets never move and producer
   sequences stay trackable); a batch left empty disappears; an untouched batch is copied as is.
4. Fsync the copy and swap it in (``PartitionLog.replace_segment``: crash-safe, see there), then
   advance the checkpoint to the first uncleanable offset.

Crash safety: until a ``.cleaned`` file becomes ``.swap`` nothing in the log has changed (recovery
deletes ``.cleaned`` files); a ``.swap`` file is complete and recovery finishes the swap. Either
way every latest value survives. Compaction decodes records in Python (with the C codec): it is
background work, never on the append or read path.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from lanes.clock import Clock
from lanes.protocol.records import BatchHeader, Record, decode_batch, encode_batch
from lanes.storage.checkpoint import read_offset, write_offset
from lanes.storage.files import pread_exact, pwrite_all
from lanes.storage.loader import CLEANED_SUFFIX
from lanes.storage.log import PartitionLog
from lanes.storage.segment import LogSegment

CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
_log = logging.getLogger(__name__)


def _no_fault(step: str) -> None:
    """Fault-injection hook: tests pass a function that raises at a named step."""


@dataclass(frozen=True)
class CleanResult:
    """What a compaction pass did."""

    segments_rewritten: int
    records_read: int
    records_kept: int
    bytes_before: int
    bytes_after: int
    first_uncleanable_offset: int


@dataclass(frozen=True)
class _Range:
    cleanable: list[LogSegment]
    dirty: list[LogSegment]
    first_dirty_offset: int
    first_uncleanable_offset: int


class LogCleaner:
    """Compacts logs, one pass at a time. ``fault`` is called at each crash-relevant step."""

    def __init__(self, clock: Clock, *, fault: Callable[[str], None] = _no_fault) -> None:
        self._clock = clock
        self._fault = fault

    # -----------------------------------------------------------------------------------------
    # what to clean

    def _range(self, log: PartitionLog) -> _Range:
        segments = log.segments()
        config = log.config
        first_uncleanable = min(segments[-1].base_offset, log.high_watermark)
        horizon = self._clock.now_ms() - config.min_compaction_lag_ms
        for segment in segments[:-1]:
            if segment.max_timestamp > horizon:
                first_uncleanable = min(first_uncleanable, segment.base_offset)
                break
        cleanable = [s for s in segments[:-1] if s.next_offset <= first_uncleanable]
        checkpoint = read_offset(log.directory / CLEANER_CHECKPOINT_FILE)
        first_dirty = max(log.log_start_offset, checkpoint if checkpoint is not None else 0)
        dirty = [s for s in cleanable if s.next_offset > first_dirty]
        return _Range(cleanable, dirty, first_dirty, first_uncleanable)

    def dirty_ratio(self, log: PartitionLog) -> float:
        """Dirty bytes / cleanable bytes (0 when nothing is cleanable)."""
        cleanable_range = self._range(log)
        total = sum(s.size_bytes for s in cleanable_range.cleanable)
        dirty = sum(s.size_bytes for s in cleanable_range.dirty)
        return dirty / total if total else 0.0

    def _due(self, log: PartitionLog, cleanable_range: _Range) -> bool:
        if not cleanable_range.dirty:
            return False
        if self.dirty_ratio(log) >= log.config.min_cleanable_dirty_ratio:
            return True
        oldest = cleanable_range.dirty[0].first_batch_timestamp()
        return oldest is not None and self._clock.now_ms() - oldest > log.config.max_compaction_lag_ms

    # -----------------------------------------------------------------------------------------
    # cleaning

    def clean(self, log: PartitionLog, *, force: bool = False) -> CleanResult | None:
        """Compact ``log`` if it is due (or ``force``); None when there was nothing to do or a
        truncation interrupted the pass."""
        if not log.config.compact:
            return None
        with log.maintenance_lock:
            cleanable_range = self._range(log)
            if not cleanable_range.cleanable or not (force or self._due(log, cleanable_range)):
                return None
            latest = self._latest_offsets(cleanable_range.dirty, log)
            if latest is None:
                return None
            now = self._clock.now_ms()
            read = kept = before = after = rewritten = 0
            for segment in cleanable_range.cleanable:
                if log.cleaner_abort.is_set():
                    return None
                cleaned_path = segment.log_path.with_name(segment.log_path.name + CLEANED_SUFFIX)
                segment_read, segment_kept, changed = self._rewrite(segment, cleaned_path, latest, log, now)
                read += segment_read
                kept += segment_kept
                before += segment.size_bytes
                if not changed:
                    cleaned_path.unlink()
                    after += segment.size_bytes
                    continue
                self._fault("cleaned-written")
                replacement = log.replace_segment(segment, cleaned_path, self._fault)
                self._fault("swapped")
                after += replacement.size_bytes if replacement is not None else 0
                rewritten += 1
            write_offset(log.directory / CLEANER_CHECKPOINT_FILE, cleanable_range.first_uncleanable_offset)
            return CleanResult(rewritten, read, kept, before, after, cleanable_range.first_uncleanable_offset)

    def _latest_offsets(self, dirty: list[LogSegment], log: PartitionLog) -> dict[bytes, int] | None:
        latest: dict[bytes, int] = {}
        for segment in dirty:
            for _, batch_bytes in _batches(segment):
                if log.cleaner_abort.is_set():
                    return None
                for record in decode_batch(batch_bytes).records:
                    if record.key is not None:
                        latest[record.key] = record.offset
        return latest

    def _rewrite(
        self,
        segment: LogSegment,
        cleaned_path: os.PathLike[str],
        latest: dict[bytes, int],
        log: PartitionLog,
        now_ms: int,
    ) -> tuple[int, int, bool]:
        """Write the compacted copy of ``segment``; return (records read, records kept, changed)."""
        read = kept = 0
        changed = False
        fd = os.open(cleaned_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            position = 0
            for header, batch_bytes in _batches(segment):
                batch = decode_batch(batch_bytes)
                retained = [r for r in batch.records if _keep(r, header, latest, now_ms)]
                read += len(batch.records)
                kept += len(retained)
                output = batch_bytes
                needs_horizon = not header.has_delete_horizon and any(r.value is None for r in retained)
                if len(retained) != len(batch.records) or needs_horizon:
                    changed = True
                    output = _reencode(header, retained, now_ms + log.config.delete_retention_ms) if retained else b""
                if output:
                    pwrite_all(fd, output, position)
                    position += len(output)
            os.fsync(fd)
        finally:
            os.close(fd)
        return read, kept, changed


def _keep(record: Record, header: BatchHeader, latest: dict[bytes, int], now_ms: int) -> bool:
    superseded = record.key is not None and latest.get(record.key, record.offset) > record.offset
    expired_tombstone = record.value is None and header.has_delete_horizon and header.base_timestamp <= now_ms
    return not (superseded or expired_tombstone)


def _reencode(header: BatchHeader, retained: list[Record], new_horizon_ms: int) -> bytes:
    """The retained records as a batch with the original's offset range and header fields."""
    has_tombstones = any(r.value is None for r in retained)
    if header.has_delete_horizon:
        horizon: int | None = header.base_timestamp
    else:
        horizon = new_horizon_ms if has_tombstones else None
    return encode_batch(
        retained,
        base_offset=header.base_offset,
        compression=header.compression,
        timestamp_type=header.timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
        last_offset_delta=header.last_offset_delta,
        delete_horizon_ms=horizon,
    )


def _batches(segment: LogSegment) -> Iterator[tuple[BatchHeader, bytes]]:
    """Each batch of an inactive (immutable) segment, with its bytes."""
    headers = list(segment.batch_headers(0))
    with segment.lease() as fd:
        for position, header in headers:
            yield header, pread_exact(fd, header.size_bytes, position)


class CleanerThread:
    """Runs compaction in the background over the logs ``logs()`` returns, every ``interval_s``."""

    def __init__(
        self, cleaner: LogCleaner, logs: Callable[[], Iterable[PartitionLog]], *, interval_s: float = 15.0
    ) -> None:
        self._cleaner = cleaner
        self._logs = logs
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lanes-log-cleaner", daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the current pass."""
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            for log in list(self._logs()):
                if self._stop.is_set():
                    return
                try:
                    self._cleaner.clean(log)
                except Exception:  # one log's failure must not stop compaction of the others
                    _log.exception("compaction of %s failed", log.directory)
            self._stop.wait(self._interval_s)
