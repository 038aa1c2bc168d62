"""The leader-epoch cache of a partition: which epoch's leader wrote which offsets.

Entries ``(epoch, start_offset)``: epoch E's leader appended offsets from start_offset up to the
next entry's start offset (or the log end). Epochs and start offsets strictly increase. Persisted
in ``leader-epoch-checkpoint`` (lanes.storage.checkpoint format, written whole with fsync) so that
the file always knows the epoch of every batch on disk (recovery cuts a log at a batch whose epoch
it contradicts, lanes.storage.loader):

- a truncation (from the end or the start, or clearing) is written at once;
- a new epoch (``assign``) is only noted; the owning log writes it (``flush``) before appending
  the first batch after it, and when it closes. A leadership taken without a record written
  costs no write: a broker becoming leader of thousands of partitions on its event loop does not
  fsync thousands of files there (decision 0045). A crash may lose such an entry, and with it
  nothing but the knowledge that an epoch began with no record.

Replication uses it to answer OffsetForLeaderEpoch ("where does epoch E end?"), which is how a
follower finds the point where its log diverged from the new leader's and truncates there.
Not thread-safe: the owning ``PartitionLog`` serialises access.
"""

from __future__ import annotations

from pathlib import Path

from lanes.storage.checkpoint import read_checkpoint, write_checkpoint

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    """Epoch -> start offset entries; see the module docstring for when they reach the disk."""

    def __init__(self, path: Path) -> None:
        self._path = path
        loaded = read_checkpoint(path, 2)
        #: Whether the checkpoint was read intact: then it knows the epoch of every batch on disk;
        #: otherwise recovery rebuilds it from the batches.
        self.trusted = loaded is not None
        self._entries: list[tuple[int, int]] = [(e[0], e[1]) for e in loaded or []]
        self._unwritten = False  # entries were assigned since the file was last written

    @property
    def entries(self) -> list[tuple[int, int]]:
        """(epoch, start offset) pairs, oldest first."""
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or -1 when empty."""
        return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (ignored unless newer than the latest);
        written by the next ``flush``."""
        if epoch < 0 or (self._entries and epoch <= self._entries[-1][0]):
            return
        # A new epoch starting at or before an older epoch's start supersedes that entry.
        while self._entries and self._entries[-1][1] >= start_offset:
            self._entries.pop()
        self._entries.append((epoch, start_offset))
        self._unwritten = True

    def epoch_for(self, offset: int) -> int | None:
        """The epoch whose leader wrote ``offset``, or None when the cache does not cover it."""
        found = None
        for epoch, start in self._entries:
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
        if epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self.latest_epoch:
            return epoch, log_end_offset
        if epoch < self._entries[0][0]:
            return epoch, self._entries[0][1]
        found = UNDEFINED_EPOCH
        for index, (entry_epoch, _) in enumerate(self._entries):
            if entry_epoch > epoch:
                return found, self._entries[index][1]
            found = entry_epoch
        return found, log_end_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after ``end_offset`` (the log was truncated there)."""
        kept = [entry for entry in self._entries if entry[1] < end_offset]
        if kept != self._entries:
            self._entries = kept
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop wholly earlier epochs, clamp the first."""
        kept = [entry for entry in self._entries if entry[1] >= start_offset]
        earlier = [entry for entry in self._entries if entry[1] < start_offset]
        if earlier and (not kept or kept[0][1] > start_offset):
            kept.insert(0, (earlier[-1][0], start_offset))
        if kept != self._entries:
            self._entries = kept
            self._persist()

    def clear(self) -> None:
        """Forget every epoch (the log was emptied to start at a new offset)."""
        if self._entries:
            self._entries = []
            self._persist()

    @property
    def unwritten(self) -> bool:
        """Whether an epoch was assigned since the file was last written (``flush`` writes it)."""
        return self._unwritten

    def flush(self) -> None:
        """Write the entries if an epoch was assigned since they were last written (before a
        batch of that epoch is appended)."""
        if self._unwritten:
            self._persist()

    def _persist(self) -> None:
        write_checkpoint(self._path, [(epoch, offset) for epoch, offset in self._entries])
        self._unwritten = False
