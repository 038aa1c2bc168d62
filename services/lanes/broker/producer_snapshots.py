"""Producer-state snapshot files of one partition directory (Kafka's ``.snapshot`` files).

Layout: ``<offset:020d>.snapshot`` next to the segments, each holding
``ProducerStateTable.to_snapshot()`` of the state after every batch below ``offset`` (always a
batch boundary: a log end at some moment). A replica loads the newest readable snapshot at or
below its log end and replays only the batch headers after it, instead of the whole log.

When they are written and dropped (by the ``Partition`` that owns the directory):

- at each segment roll (the state below the new segment's base) and at a clean close (at the log
  end: the next start replays nothing);
- a truncation drops those above the new log end; a full truncation drops them all;
- retention keeps the newest snapshot at or below the log start (its producers outlive their
  deleted batches, as Kafka's do until they expire) and drops the older ones.

Files are written whole (a temporary file renamed) but not fsynced: a snapshot only saves replay
work, so one lost or torn by a crash (its checksum fails) is skipped and deleted when read, and
the state is rebuilt from an older one or the log; this keeps rolls and a clean stop of thousands
of partitions cheap. Not thread-safe: the owning partition's lock serialises every call.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from lanes.broker.producer_state import ProducerStateTable, SnapshotError
from lanes.storage.files import write_atomically
from lanes.storage.log import PartitionLog

_log = logging.getLogger(__name__)
SNAPSHOT_SUFFIX = ".snapshot"


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


class ProducerSnapshots:
    """The snapshot files of one partition directory; their offsets are listed once, at open."""

    def __init__(self, directory: Path, names: Iterable[str] | None = None) -> None:
        """``names``: the directory's file names, when the caller just listed it (else listed here)."""
        self.directory = directory
        listed = os.listdir(directory) if names is None else names
        stems = (name[: -len(SNAPSHOT_SUFFIX)] for name in listed if name.endswith(SNAPSHOT_SUFFIX))
        self._offsets = sorted(int(stem) for stem in stems if stem.isdigit())

    @property
    def offsets(self) -> list[int]:
        """The offsets of the snapshots on disk, oldest first."""
        return list(self._offsets)

    def write(self, offset: int, table: ProducerStateTable, *, durable: bool = False) -> None:
        """Store ``table`` as the state below ``offset``; ``durable``: fsynced (the snapshots of
        rolls: once retention deleted the segments below one, it is the only record of their
        producers)."""
        path = snapshot_path(self.directory, offset)
        temporary = path.with_name(path.name + ".tmp")  # an open's recovery removes leftovers
        if durable:
            write_atomically(path, table.to_snapshot())
        else:
            temporary.write_bytes(table.to_snapshot())
            os.replace(temporary, path)
        if offset not in self._offsets:
            self._offsets.append(offset)
            self._offsets.sort()

    def load(self, log: PartitionLog) -> ProducerStateTable:
        """The state after every batch of ``log``: the newest readable snapshot at or below its
        end (those above it, left by an unclean stop whose recovery cut the log, are deleted),
        then the headers of every batch after it."""
        self.delete_above(log.log_end_offset)
        for offset in reversed(list(self._offsets)):  # (entries removed on the way)
            try:
                table = ProducerStateTable.from_snapshot(snapshot_path(self.directory, offset).read_bytes())
            except FileNotFoundError:  # listed, and gone since (a listing taken at the log's open)
                self._offsets.remove(offset)
                continue
            except SnapshotError as exc:  # torn or corrupt: it never becomes readable
                _log.warning("%s: deleting producer snapshot %d: %s", self.directory.name, offset, exc)
                self._delete([offset])
                continue
            replay(log, table, offset)
            return table
        table = ProducerStateTable()
        replay(log, table, 0)
        return table

    def delete_above(self, offset: int) -> None:
        """Drop the snapshots of states beyond ``offset`` (the log was cut there)."""
        self._delete([o for o in self._offsets if o > offset])

    def delete_all(self) -> None:
        self._delete(list(self._offsets))

    def retain_from(self, log_start_offset: int) -> None:
        """Drop the snapshots older than the newest one at or below ``log_start_offset``."""
        below = [o for o in self._offsets if o <= log_start_offset]
        self._delete(below[:-1])

    def _delete(self, doomed: list[int]) -> None:
        if not doomed:
            return
        for offset in doomed:
            snapshot_path(self.directory, offset).unlink(missing_ok=True)
            self._offsets.remove(offset)


def replay(log: PartitionLog, table: ProducerStateTable, from_offset: int) -> None:
    """Apply the headers of every batch of ``log`` at or after ``from_offset`` (a batch
    boundary) to ``table``; no record is parsed (``PartitionLog.scan_batch_headers`` keeps
    compaction from swapping segments meanwhile)."""
    log.scan_batch_headers(from_offset, table.apply)
