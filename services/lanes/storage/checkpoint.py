"""Small checkpoint files, written atomically, and the stores of a log's offsets.

Format (text, like Kafka's checkpoint files)::

    0              <- format version
    N              <- number of entries
    <entry>        <- N lines of space-separated integers

A checkpoint is replaced whole (write a temporary file, fsync, rename, fsync the directory), so a
crash leaves the old or the new version. A missing or malformed checkpoint reads as ``None``: each
caller has a safe fallback (recover everything, rebuild from the log).

A log's offsets (recovery point, log start, high-water mark) live in an ``OffsetStore``: a log
opened on its own keeps them in three files of its directory (``PartitionFiles``); a broker's
``LogManager`` keeps those of all its logs in three files of the data directory
(``DataDirectoryOffsets``, as Kafka does), written only when they changed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lanes.storage.files import overwrite_small, read_small, write_atomically

VERSION = 0


def _write_entries(path: Path, entries: list[str], *, durable: bool = True, in_place_only: bool = False) -> bool:
    """Replace the checkpoint at ``path``: the version, the count, one line per entry. With
    ``in_place_only`` (not ``durable``): False, nothing written, unless it can be written over
    in place (``overwrite_small``)."""
    lines = [str(VERSION), str(len(entries)), *entries]
    data = ("\n".join(lines) + "\n").encode()
    if durable:
        write_atomically(path, data)
        return True
    return overwrite_small(path, data, in_place_only=in_place_only)


def _read_entries(path: Path) -> list[list[str]] | None:
    """The entries at ``path``, each split into its words; None if missing or malformed."""
    try:
        text = read_small(path).decode()
    except FileNotFoundError:
        return None
    if not text.endswith("\n"):  # every writer ends with one: a file a machine crash cut does not
        return None
    lines = text.splitlines()
    try:
        if int(lines[0]) != VERSION or int(lines[1]) != len(lines) - 2:
            return None
    except (ValueError, IndexError):
        return None
    return [line.split() for line in lines[2:]]


def write_checkpoint(
    path: Path, entries: list[tuple[int, ...]], *, durable: bool = True, in_place_only: bool = False
) -> bool:
    """Replace the checkpoint at ``path`` with ``entries`` (``durable``: with fsync); whether it
    was written (False only with ``in_place_only``: see ``_write_entries``)."""
    return _write_entries(
        path, [" ".join(str(v) for v in entry) for entry in entries], durable=durable, in_place_only=in_place_only
    )


def read_checkpoint(path: Path, width: int) -> list[tuple[int, ...]] | None:
    """The entries at ``path`` (each ``width`` integers), or None if missing or malformed."""
    found = _read_entries(path)
    if found is None:
        return None
    try:
        entries = [tuple(int(v) for v in words) for words in found]
    except ValueError:
        return None
    if any(len(entry) != width for entry in entries):
        return None
    return entries


def read_offset(path: Path) -> int | None:
    """A single-offset checkpoint (recovery point, log start, cleaner position)."""
    entries = read_checkpoint(path, 1)
    return entries[0][0] if entries and len(entries) == 1 else None


def write_offset(path: Path, offset: int) -> None:
    """Write a single-offset checkpoint."""
    write_checkpoint(path, [(offset,)])


# ---------------------------------------------------------------------------------------------
# where a log's offsets are kept


@dataclass(frozen=True)
class LogOffsets:
    """What a log checkpoints: every offset below ``recovery_point`` is fsynced (recovery scans
    from there), the log start offset, and the last high-water mark set. None: not known."""

    recovery_point: int | None = None
    log_start_offset: int | None = None
    high_watermark: int | None = None


class OffsetStore(Protocol):
    """Keeps the ``LogOffsets`` of logs, by directory. ``save`` may only remember them (written
    later, in one go); ``urgent`` writes them before it returns (a truncation lowered the recovery
    point: an older, higher one would skip checking records written since)."""

    def load(self, directory: Path) -> LogOffsets: ...

    def save(self, directory: Path, offsets: LogOffsets, *, urgent: bool = False) -> None: ...


RECOVERY_POINT_FILE = "recovery-point-checkpoint"
HIGH_WATERMARK_FILE = "high-watermark-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"


class PartitionFiles:
    """One file per offset in the log's own directory (a log opened on its own, e.g. the
    controller's metadata log). Every ``save`` writes (three atomic writes)."""

    def load(self, directory: Path) -> LogOffsets:
        return LogOffsets(
            recovery_point=read_offset(directory / RECOVERY_POINT_FILE),
            log_start_offset=read_offset(directory / LOG_START_FILE),
            high_watermark=read_offset(directory / HIGH_WATERMARK_FILE),
        )

    def save(self, directory: Path, offsets: LogOffsets, *, urgent: bool = False) -> None:
        for name, value in (
            (RECOVERY_POINT_FILE, offsets.recovery_point),
            (LOG_START_FILE, offsets.log_start_offset),
            (HIGH_WATERMARK_FILE, offsets.high_watermark),
        ):
            if value is not None:
                write_offset(directory / name, value)


#: the files of a data directory (Kafka's names), each ``<log directory name> <offset>`` per line
DATA_DIRECTORY_FILES = (
    ("recovery_point", "recovery-point-offset-checkpoint"),
    ("log_start_offset", "log-start-offset-checkpoint"),
    ("high_watermark", "replication-offset-checkpoint"),
)


class DataDirectoryOffsets:
    """The offsets of every log of a data directory in three files at its top, as Kafka keeps
    them: ``save`` only remembers; ``flush`` writes the files whose content changed (an idle
    broker writes nothing), ``urgent`` saves flush at once. A log directory the files do not
    name falls back to its own per-partition files (the layout before this store). Thread-safe."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._lock = threading.Lock()
        self._legacy = PartitionFiles()
        self._values: dict[str, dict[str, int]] = {field: {} for field, _ in DATA_DIRECTORY_FILES}
        for field, name in DATA_DIRECTORY_FILES:
            self._values[field] = _read_named_offsets(data_dir / name) or {}
        self._written = {field: dict(values) for field, values in self._values.items()}

    def load(self, directory: Path) -> LogOffsets:
        with self._lock:
            found = {field: self._values[field].get(directory.name) for field, _ in DATA_DIRECTORY_FILES}
        if all(value is None for value in found.values()):
            return self._legacy.load(directory)
        return LogOffsets(**found)

    def save(self, directory: Path, offsets: LogOffsets, *, urgent: bool = False) -> None:
        name = directory.name  # (every log's, at every maintenance pass: a path's name is not free)
        with self._lock:
            for field, _ in DATA_DIRECTORY_FILES:
                value = getattr(offsets, field)
                if value is not None:
                    self._values[field][name] = value
        if urgent:
            self.flush()

    def forget(self, directory: Path) -> None:
        """The log was deleted: its entries go (at the next flush)."""
        with self._lock:
            for values in self._values.values():
                values.pop(directory.name, None)

    def flush(self) -> int:
        """Write every file whose content changed since it was last written; how many were."""
        written = 0
        with self._lock:
            for field, name in DATA_DIRECTORY_FILES:
                values = self._values[field]
                if values != self._written[field]:
                    _write_named_offsets(self.data_dir / name, values)
                    self._written[field] = dict(values)
                    written += 1
        return written


def _write_named_offsets(path: Path, offsets: dict[str, int]) -> None:
    _write_entries(path, [f"{name} {offset}" for name, offset in sorted(offsets.items())])


def _read_named_offsets(path: Path) -> dict[str, int] | None:
    found = _read_entries(path)
    if found is None:
        return None
    try:
        return {name: int(offset) for name, offset in found}
    except ValueError:
        return None
