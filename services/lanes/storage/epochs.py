"""The leader-epoch cache of a partition: which epoch's leader wrote which offsets.

Entries ``(epoch, start_offset)``: epoch E's leader appended offsets from start_offset up to the
next entry's start offset (or the log end). Epochs and start offsets strictly increase. Persisted
in ``leader-epoch-checkpoint`` (lanes.storage.checkpoint format, replaced whole; a file that
only gained an epoch is written over in place, ``files.overwrite_small``) so that the file
always knows the epoch of every batch on disk (recovery cuts a log at a batch whose epoch it
contradicts, lanes.storage.loader), and knows it durably below the log's recovery point:

- a truncation (from the end or the start, or clearing) is written at once, with fsync;
- a new epoch (``assign``) is only noted: no I/O, so a broker taking over thousands of partitions
  on its event loop writes nothing there. The owning log saves it (``save()``: written, no fsync)
  before appending the first batch after it, and makes what was saved durable (``sync_saved()``:
  an fsync) before its recovery point passes that batch (a flush, a roll) and when it closes
  (decision 0045). An epoch with no record is never written (nothing needs it after a restart).

So a process crash always finds the epochs of the batches on disk; a machine crash may lose the
newest epochs with the unflushed batches that carry them (recovery cuts those, which a machine
crash may lose anyway: replication is the durability), never an epoch below the recovery point.

Replication uses it to answer OffsetForLeaderEpoch ("where does epoch E end?"), which is how a
follower finds the point where its log diverged from the new leader's and truncates there.

Thread safety: ``Partition.make_leader`` assigns on the broker's event loop holding only the
partition's lock, while the log's worker threads truncate it (retention, a follower's truncation)
and flush it; so the entries and change counts have a lock of their own, never held across I/O,
and writes of the file are serialised by a second one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

from lanes.storage.checkpoint import read_checkpoint, write_checkpoint
from lanes.storage.files import fsync_file

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


def _increasing(entries: list[tuple[int, ...]]) -> bool:
    """Whether epochs and start offsets both strictly increase, as every cache writes them."""
    return all(a[0] < b[0] and a[1] < b[1] for a, b in pairwise(entries))


class LeaderEpochCache:
    """Epoch -> start offset entries; see the module docstring for when they reach the disk."""

    def __init__(self, path: Path) -> None:
        self._path = path
        loaded = read_checkpoint(path, 2)
        if loaded is not None and not _increasing(loaded):
            loaded = None  # (well-formed but not what any cache writes: not to be trusted)
        #: Whether the checkpoint was read intact: then it knows the epoch of every batch on disk;
        #: otherwise recovery rebuilds it from the batches.
        self.trusted = loaded is not None
        self._lock = threading.Lock()  # the entries and the counts; never held across I/O
        self._file_lock = threading.Lock()  # one writer of the file at a time
        self._entries: list[tuple[int, int]] = [(e[0], e[1]) for e in loaded or []]
        # Changes made to the entries; of which the file holds; of which durably (the counts only
        # grow: writes are serialised by the file lock).
        self._changes = self._saved_changes = self._durable_changes = 0

    @property
    def entries(self) -> list[tuple[int, int]]:
        """(epoch, start offset) pairs, oldest first."""
        with self._lock:
            return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or -1 when empty."""
        with self._lock:
            return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (ignored unless newer than the latest);
        written by the next ``save``. No I/O: safe on an event loop."""
        with self._lock:
            entries = self._entries
            if epoch < 0 or (entries and epoch <= entries[-1][0]):
                return
            # A new epoch starting at or before an older epoch's start supersedes that entry.
            while entries and entries[-1][1] >= start_offset:
                entries.pop()
            entries.append((epoch, start_offset))
            self._changes += 1

    def epoch_for(self, offset: int) -> int | None:
        """The epoch whose leader wrote ``offset``, or None when the cache does not cover it."""
        found = None
        for epoch, start in self.entries:
            if start > offset:
                break
            found = epoch
        return found

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= ``epoch``, the offset where it ends), as Kafka's cache answers.

        The end of an epoch is the start offset of the next larger epoch, or the log end for the
        latest one. An epoch older than every cached one ends where the oldest cached one starts
        (answered with the epoch asked: nothing of it is here). (-1, -1) when no epoch is asked
        or nothing is cached.
        """
        with self._lock:  # (read in place: a leader asks this for every partition of every follower fetch)
            entries = self._entries
            if epoch == UNDEFINED_EPOCH or not entries:
                return UNDEFINED_EPOCH, UNDEFINED_OFFSET
            if epoch == entries[-1][0]:
                return epoch, log_end_offset
            if epoch < entries[0][0]:
                return epoch, entries[0][1]
            found = UNDEFINED_EPOCH
            for index, (entry_epoch, _) in enumerate(entries):
                if entry_epoch > epoch:
                    return found, entries[index][1]
                found = entry_epoch
            return found, log_end_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after ``end_offset`` (the log was truncated there);
        written at once."""
        self._replace(lambda entries: [entry for entry in entries if entry[1] < end_offset])

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop wholly earlier epochs, clamp the first;
        written at once."""

        def truncated(entries: list[tuple[int, int]]) -> list[tuple[int, int]]:
            kept = [entry for entry in entries if entry[1] >= start_offset]
            earlier = [entry for entry in entries if entry[1] < start_offset]
            if earlier and (not kept or kept[0][1] > start_offset):
                kept.insert(0, (earlier[-1][0], start_offset))
            return kept

        self._replace(truncated)

    def clear(self) -> None:
        """Forget every epoch (the log was emptied to start at a new offset); written at once."""
        self._replace(lambda entries: [])

    @property
    def unsaved(self) -> bool:
        """Whether the entries changed since the file was last written (``save`` writes them)."""
        with self._lock:
            return self._behind(durable=False)

    def save(self, *, durable: bool = False, wait: bool = True) -> bool:
        """Write the entries if they changed since last written (before a batch of a new epoch is
        appended); ``durable``: with fsync (truncations, epochs recovery learnt). An ``assign``
        made while the file is written stays unsaved (a count of changes, not a flag, says what
        the file holds). With ``wait=False`` (an event loop's append, decision 0054): False,
        nothing written, when another thread writes the file (maybe with an fsync) at that moment
        or the file cannot be written over in place (larger than a sector: a rename, which ext4
        answers with a writeback); True when the file holds the entries."""
        with self._lock:
            if not self._behind(durable=durable):
                return True  # (the common case, on the loop too: never waits for a write under way)
        if not self._file_lock.acquire(blocking=wait):
            return False
        try:
            with self._lock:
                if not self._behind(durable=durable):
                    return True
                changes, entries = self._changes, list(self._entries)
            pairs: list[tuple[int, ...]] = [(epoch, offset) for epoch, offset in entries]
            if not write_checkpoint(self._path, pairs, durable=durable, in_place_only=not wait):
                return False
            with self._lock:
                self._saved_changes = changes
                if durable:
                    self._durable_changes = changes
            return True
        finally:
            self._file_lock.release()

    def sync_saved(self) -> None:
        """Make durable what was saved: the epochs of every batch appended so far (each was saved
        before its first batch). An epoch noted with no record yet waits for its first batch
        (before a flush or a roll moves the recovery point; at close it is simply not written:
        no batch carries it)."""
        with self._lock:
            if self._saved_changes == self._durable_changes:
                return  # (the common case: never waits for a write under way)
        with self._file_lock:
            with self._lock:
                saved = self._saved_changes
                if saved == self._durable_changes:
                    return
            fsync_file(self._path)
            with self._lock:
                self._durable_changes = saved

    def _behind(self, *, durable: bool) -> bool:
        """Whether the file (made durable, with ``durable``) lacks changes (under ``_lock``)."""
        return self._changes != (self._durable_changes if durable else self._saved_changes)

    def _replace(self, change: Callable[[list[tuple[int, int]]], list[tuple[int, int]]]) -> None:
        """Apply a truncation and write it, if it changed anything."""
        with self._lock:
            kept = change(self._entries)
            if kept == self._entries:
                return
            self._entries = kept
            self._changes += 1
        self.save(durable=True)
