"""Opening a partition's log directory (Kafka's ``LogLoader``): finishing or discarding an
interrupted compaction, recovery after an unclean stop, and the offsets the log starts with.

Recovery scans from the segment holding the recovery point and cuts the log at the first batch
that is invalid or whose leader epoch the epoch cache contradicts; segments after the cut are
deleted. A lost or damaged epoch cache is rebuilt from the batch headers (decision 0045).
Indexes are derived data: any that look damaged are rebuilt. After recovery everything left is
validated, so it is flushed and becomes the new recovery point. The loader runs once, in the
thread that opens the log, before the ``PartitionLog`` it builds is shared.

The files of a log directory are listed in ``lanes.storage.log``; their names are defined here.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lanes.protocol.records import BatchHeader
from lanes.storage.checkpoint import LogOffsets
from lanes.storage.epochs import LeaderEpochCache
from lanes.storage.files import FileCache, fsync_directory, fsync_file
from lanes.storage.segment import LOG_SUFFIX, LogSegment

LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
CLEAN_SHUTDOWN_FILE = ".clean-shutdown"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"


@dataclass(frozen=True)
class LoadedLog:
    """A log directory as opened: its segments (at least one; the last is active) and offsets."""

    segments: list[LogSegment]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    recovery_point: int
    recovered_bytes_cut: int  # bytes recovery cut off (for logs and tests)
    checkpoints_stale: bool  # recovery changed the log: write the checkpoints again
    #: the directory's file names as listed at the start (after finishing an interrupted
    #: compaction): those of files the loader does not own (producer snapshots, legacy offset
    #: files) are still there, so their owners need no listing of their own
    names: frozenset[str]


class LogLoader:
    """Loads one log directory (use once: ``LogLoader(...).load()``)."""

    def __init__(
        self,
        directory: Path,
        *,
        files: FileCache,
        epochs: LeaderEpochCache,
        index_interval_bytes: int,
        compact: bool,
        clean_shutdown: bool | None,
        stored: LogOffsets,
    ) -> None:
        """``clean_shutdown``: whether the last stop was clean, when the caller keeps that
        knowledge (a LogManager, for its whole data directory); None uses the log's own marker."""
        self.directory = directory
        self.epochs = epochs
        self._files = files
        self._index_interval_bytes = index_interval_bytes
        self._compact = compact
        self._clean_shutdown = clean_shutdown
        self._stored = stored  # the offsets last checkpointed (any may be unknown)
        self._segments: list[LogSegment] = []
        self._recovered_bytes_cut = 0

    def load(self) -> LoadedLog:
        """Open the directory's segments, recovering them if the last stop was unclean."""
        names = self._finish_interrupted_compaction(os.listdir(self.directory))  # one listing serves all below
        marker = self.directory / CLEAN_SHUTDOWN_FILE
        clean = CLEAN_SHUTDOWN_FILE in names if self._clean_shutdown is None else self._clean_shutdown
        bases = sorted(_bases_with_suffix(names, LOG_SUFFIX))
        interval = self._index_interval_bytes
        self._segments = [LogSegment(self.directory, base, self._files, interval) for base in bases]
        self._remove_orphan_indexes(set(bases), names)
        stored_start = self._stored.log_start_offset
        recovery_point = self._stored.recovery_point if clean else None
        recovered: set[int] = set()
        if clean and self._clean_shutdown is None:  # the log's own marker
            marker.unlink()
            fsync_directory(self.directory)  # a crash from now on must be seen as unclean
        if not self.epochs.trusted:  # a lost or damaged checkpoint: learn what recovery does not scan
            scanned_from = len(self._segments) if clean else self._first_to_recover(self._stored.recovery_point or 0)
            self._learn_epochs(self._segments[:scanned_from], stored_start or 0)
        if not clean:
            recovery_from = self._stored.recovery_point or 0
            recovered = self._recover(recovery_from, stored_start or 0)
        for segment in self._segments:  # indexes are derived: rebuild any that a crash damaged
            if segment.base_offset not in recovered and not segment.indexes_plausible():
                segment.recover(segment.base_offset)
                segment.flush()  # the rebuilt indexes on disk (a closed segment's are not written again)
        fresh = not self._segments
        if fresh:
            base = stored_start or 0
            self._segments = [LogSegment.create(self.directory, base, self._files, interval)]
            fsync_directory(self.directory)
        log_end_offset = self._segments[-1].next_offset
        first_base = self._segments[0].base_offset
        start = first_base if stored_start is None else max(stored_start, first_base)
        log_start_offset = min(start, log_end_offset)
        stored_high_watermark = self._stored.high_watermark or 0
        self.epochs.truncate_from_end(log_end_offset)
        if recovery_point is None:  # after recovery everything left is validated: make it durable
            for segment in self._segments:
                segment.flush()
            if not clean and self.epochs.trusted and self.epochs.latest_epoch >= 0:
                fsync_file(self.directory / LEADER_EPOCH_FILE)  # as read: maybe saved without fsync
            recovery_point = log_end_offset
        self.epochs.save(durable=True)  # what was learnt (decision 0045)
        return LoadedLog(
            segments=self._segments,
            log_start_offset=log_start_offset,
            log_end_offset=log_end_offset,
            high_watermark=min(max(stored_high_watermark, log_start_offset), log_end_offset),
            recovery_point=min(recovery_point, log_end_offset),
            recovered_bytes_cut=self._recovered_bytes_cut,
            checkpoints_stale=not clean and not fresh,  # recovery changed what the checkpoints describe
            names=frozenset(names),
        )

    def _first_to_recover(self, recovery_point: int) -> int:
        """The index of the segment holding ``recovery_point``, where recovery starts."""
        return max(0, bisect.bisect_right([s.base_offset for s in self._segments], recovery_point) - 1)

    def _learn_epochs(self, segments: list[LogSegment], log_start_offset: int) -> None:
        """A lost or damaged epoch checkpoint: learn the epochs of ``segments`` (valid ones: below
        the recovery point, or all after a clean stop) from their batch headers."""
        for segment in segments:
            for _, header in segment.batch_headers(0):
                if header.last_offset >= log_start_offset:
                    self.epochs.assign(header.partition_leader_epoch, max(header.base_offset, log_start_offset))

    def _recover(self, recovery_point: int, log_start_offset: int) -> set[int]:
        """Scan segments from the one holding ``recovery_point``; cut at the first invalid batch.

        Returns the base offsets of the segments scanned.
        """
        first = self._first_to_recover(recovery_point)
        expected = self._segments[first - 1].next_offset if first else 0
        scanned = set()

        previous_epoch = -1

        def epoch_matches(header: BatchHeader) -> bool:
            """The epoch cache is written before the data, so an intact cache knows the epoch of
            every readable batch exactly. Batches below the log start (awaiting retention) and a
            lost cache allow only a check that epochs never decrease; a lost cache is rebuilt."""
            nonlocal previous_epoch
            epoch = header.partition_leader_epoch
            epochs = self.epochs
            if epochs.trusted and header.last_offset >= log_start_offset:
                known = epochs.epoch_for(header.base_offset)
                if known is None:  # straddles the log start: the first entry was clamped to it
                    known = epochs.entries[0][0] if epochs.entries else None
                if epoch != known:
                    return False
            elif epoch < previous_epoch:
                return False
            elif not epochs.trusted and header.last_offset >= log_start_offset:
                epochs.assign(epoch, max(header.base_offset, log_start_offset))
            previous_epoch = epoch
            return True

        for position in range(first, len(self._segments)):
            segment = self._segments[position]
            start = max(expected, segment.base_offset)
            cut, expected = segment.recover(start, epoch_matches, contiguous=not self._compact)
            scanned.add(segment.base_offset)
            self._recovered_bytes_cut += cut
            if cut:
                for later in self._segments[position + 1 :]:
                    self._recovered_bytes_cut += later.size_bytes
                    later.delete()
                del self._segments[position + 1 :]
                break
        # An empty segment after a non-empty one at the same offset is harmless; an empty active
        # segment whose base precedes the previous segment's end is not: drop such leftovers.
        while (
            len(self._segments) > 1
            and self._segments[-1].size_bytes == 0
            and (self._segments[-1].base_offset < self._segments[-2].next_offset)
        ):
            self._segments.pop().delete()
        return scanned

    def _finish_interrupted_compaction(self, names: list[str]) -> list[str]:
        """Complete swaps that were committed (``.swap`` files), discard unfinished cleanings;
        the directory's ``names`` after that."""
        changed = False
        for name in names:
            if name.endswith(CLEANED_SUFFIX) or name.endswith(".tmp"):
                (self.directory / name).unlink()
                changed = True
        for name in sorted(name for name in names if name.endswith(LOG_SUFFIX + SWAP_SUFFIX)):
            stem = name[: -len(LOG_SUFFIX + SWAP_SUFFIX)]
            for suffix in (".index", ".timeindex"):
                (self.directory / f"{stem}{suffix}").unlink(missing_ok=True)  # derived: rebuilt
            (self.directory / name).replace(self.directory / f"{stem}{LOG_SUFFIX}")
            changed = True
        if not changed:
            return names
        fsync_directory(self.directory)
        return os.listdir(self.directory)

    def _remove_orphan_indexes(self, bases: set[int], names: list[str]) -> None:
        for name in names:
            stem, _, suffix = name.partition(".")
            if suffix in ("index", "timeindex") and stem.isdigit() and int(stem) not in bases:
                (self.directory / name).unlink()


def swap_in_compacted(
    old: LogSegment, cleaned_log: Path, files: FileCache, index_interval_bytes: int, step: Callable[[str], None]
) -> LogSegment | None:
    """Put a compacted copy of ``old`` (same base offset, a fsynced ``.cleaned`` file) in its
    place on disk; the new segment, or None when the copy is empty (the segment is deleted). The
    caller holds the log's lock and puts the result in its segment list.

    Commit order, crash-safe: rename the copy to ``.swap`` (the commit point: recovery completes
    any swap it finds), drop ``old``'s indexes (derived data), rename the swap over the old log
    file, rebuild the indexes. ``step`` (tests) is called after each step and may raise to
    simulate a crash there."""
    directory = old.log_path.parent
    old.release_files()
    if cleaned_log.stat().st_size == 0:
        cleaned_log.unlink()
        old.delete()
        fsync_directory(directory)
        return None
    swap = old.log_path.with_name(old.log_path.name + SWAP_SUFFIX)
    cleaned_log.replace(swap)
    fsync_directory(directory)
    step("swap-committed")
    old.index.path.unlink(missing_ok=True)
    old.time_index.path.unlink(missing_ok=True)
    step("indexes-dropped")
    swap.replace(old.log_path)
    fsync_directory(directory)
    step("log-replaced")
    replacement = LogSegment(directory, old.base_offset, files, index_interval_bytes)
    replacement.recover(old.base_offset)
    replacement.close_for_appends()
    replacement.flush()
    return replacement


def _bases_with_suffix(names: list[str], suffix: str) -> list[int]:
    """The base offsets of the files named ``<digits><suffix>`` among ``names``."""
    return [int(name[: -len(suffix)]) for name in names if name.endswith(suffix) and name[: -len(suffix)].isdigit()]
