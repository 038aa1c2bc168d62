"""``files.overwrite_small``: a small file that grows is written over in place (no rename, which
ext4 answers with a writeback), anything else is replaced whole; and what a machine crash may
leave of an overwritten leader-epoch checkpoint is never trusted."""

from __future__ import annotations

import os
from pathlib import Path

from lanes.storage.checkpoint import write_checkpoint
from lanes.storage.epochs import LeaderEpochCache
from lanes.storage.files import OVERWRITE_MAX_BYTES, overwrite_small


def test_a_small_file_that_grows_is_written_over_in_place(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    overwrite_small(path, b"0\n1\n0 0\n")  # (created)
    inode = path.stat().st_ino
    overwrite_small(path, b"0\n2\n0 0\n1 10\n")
    assert path.read_bytes() == b"0\n2\n0 0\n1 10\n"
    assert path.stat().st_ino == inode  # the same file: no rename
    assert os.listdir(tmp_path) == ["checkpoint"]


def test_a_shorter_or_larger_content_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    overwrite_small(path, b"0\n2\n0 0\n1 10\n")
    inode = path.stat().st_ino
    overwrite_small(path, b"0\n1\n0 0\n")
    assert path.read_bytes() == b"0\n1\n0 0\n"  # no stale tail of the longer content
    assert path.stat().st_ino != inode
    large = b"x" * (OVERWRITE_MAX_BYTES + 1)
    inode = path.stat().st_ino
    overwrite_small(path, large)
    assert path.read_bytes() == large
    assert path.stat().st_ino != inode
    assert os.listdir(tmp_path) == ["checkpoint"]


def test_an_overwrite_cut_at_the_old_length_by_a_machine_crash_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    cases = [
        ([(0, 0), (1, 10)], [(0, 0), (1, 10), (2, 20)]),  # an entry more
        ([(e, e * 10) for e in range(9)], [(e, e * 10) for e in range(10)]),  # the count gains a digit
        ([(0, 0), (8, 50), (9, 100)], [(0, 0), (8, 50), (9, 100), (10, 1000)]),
    ]
    for old, new in cases:
        write_checkpoint(path, old, durable=False)
        old_size = path.stat().st_size
        write_checkpoint(path, new, durable=False)
        new_size = path.stat().st_size
        assert LeaderEpochCache(path).entries == new
        os.truncate(path, old_size)  # the data reached the disk, the new size did not
        assert not LeaderEpochCache(path).trusted, (old, new)
        write_checkpoint(path, old, durable=False)
        os.truncate(path, new_size)  # the new size reached the disk, the data did not (zeros)
        assert not LeaderEpochCache(path).trusted, (old, new)


def test_entries_that_do_not_increase_are_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    for entries in ([(0, 0), (1, 10), (2, 5)], [(0, 0), (2, 10), (1, 20)], [(1, 10), (1, 20)]):
        write_checkpoint(path, entries)
        assert not LeaderEpochCache(path).trusted
    write_checkpoint(path, [(0, 0), (1, 10), (5, 11)])
    assert LeaderEpochCache(path).trusted


def test_a_replaced_last_epoch_cut_by_a_machine_crash_is_not_trusted(tmp_path: Path) -> None:
    """The review's case: a new epoch at the same start offset replaces the last entry (the count
    stays, the file grows); the new data with the old length parsed as increasing but wrong
    entries ([(1, 5), (100, 10)]) until a file must end with its last line's newline."""
    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochCache(path)
    cache.assign(1, 0)
    cache.save()
    cache.assign(9, 100)  # led at the log end 100, nothing produced yet
    cache.truncate_from_start(5)  # written durably: "1 5", "9 100"
    old_size = path.stat().st_size
    cache.assign(100, 100)  # replaces (9, 100): same count, two characters longer
    cache.save()
    assert LeaderEpochCache(path).entries == [(1, 5), (100, 100)]
    os.truncate(path, old_size)  # the data reached the disk, the new size did not
    assert not LeaderEpochCache(path).trusted
