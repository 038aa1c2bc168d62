"""Small checkpoint files of a partition directory, written atomically.

Format (text, like Kafka's checkpoint files)::

    0              <- format version
    N              <- number of entries
    <entry>        <- N lines of space-separated integers

A checkpoint is replaced whole (write a temporary file, fsync, rename, fsync the directory), so a
crash leaves the old or the new version. A missing or malformed checkpoint reads as ``None``: each
caller has a safe fallback (recover everything, rebuild from the log).
"""

from __future__ import annotations

from pathlib import Path

from lanes.storage.files import write_atomically

VERSION = 0


def write_checkpoint(path: Path, entries: list[tuple[int, ...]]) -> None:
    """Replace the checkpoint at ``path`` with ``entries``."""
    lines = [str(VERSION), str(len(entries)), *(" ".join(str(v) for v in entry) for entry in entries)]
    write_atomically(path, ("\n".join(lines) + "\n").encode())


def read_checkpoint(path: Path, width: int) -> list[tuple[int, ...]] | None:
    """The entries at ``path`` (each ``width`` integers), or None if missing or malformed."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    try:
        if int(lines[0]) != VERSION or int(lines[1]) != len(lines) - 2:
            return None
        entries = [tuple(int(v) for v in line.split()) for line in lines[2:]]
    except (ValueError, IndexError):
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
