"""The storage's bounded file-descriptor cache: never more than its bound once leases end, a
leased descriptor is never closed under its user, and threads racing to open the same files
neither leak nor share a closed descriptor (opening and closing happen outside its lock)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from lanes.storage.files import FileCache


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_bound_holds_and_a_leased_descriptor_stays_open(tmp_path: Path) -> None:
    cache = FileCache(max_open_files=3)
    paths = [tmp_path / f"f{n}" for n in range(8)]
    with cache.lease(paths[0], create=True) as held:
        for path in paths[1:]:
            with cache.lease(path, create=True) as fd:
                os.pwrite(fd, path.name.encode(), 0)
            assert cache.open_count() <= 3
        os.fstat(held)  # still open: leased while the others came and went
        os.pwrite(held, b"f0", 0)
    assert [p.read_bytes() for p in paths] == [p.name.encode() for p in paths]
    cache.close()
    assert cache.open_count() == 0


def test_threads_racing_over_more_files_than_the_bound_leak_nothing(tmp_path: Path) -> None:
    paths = [tmp_path / f"f{n}" for n in range(20)]
    for path in paths:
        path.write_bytes(b"")
    before = _open_descriptors()
    cache = FileCache(max_open_files=5)
    failures: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for n in range(300):
                path = paths[(seed * 7 + n * (seed + 1)) % len(paths)]
                with cache.lease(path) as fd:
                    os.pwrite(fd, b"x", 0)  # a descriptor closed under us would raise EBADF
                    assert os.path.samefile(f"/proc/self/fd/{fd}", path)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[0]
    assert cache.open_count() <= 5
    cache.close()
    assert _open_descriptors() == before


def test_a_path_being_opened_cannot_be_forgotten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The review's race: a lease opens outside the lock while another thread forgets the path
    (before deleting the file); had ``forget`` passed, the lease would cache a descriptor of the
    deleted file and a segment created again at that path would write into it."""
    cache = FileCache(max_open_files=4)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"")
    real_open = os.open
    refused: list[str] = []

    def open_while_forgotten(name: object, *args: object, **kwargs: object) -> int:
        fd = real_open(name, *args, **kwargs)  # type: ignore[arg-type]
        try:
            cache.forget(path)  # as LogSegment.delete does, from another thread
        except RuntimeError as exc:
            refused.append(str(exc))
        return fd

    monkeypatch.setattr("lanes.storage.files.os.open", open_while_forgotten)
    with cache.lease(path) as fd:
        os.pwrite(fd, b"x", 0)
    monkeypatch.undo()
    assert refused, "forget refuses a path a lease is opening"
    cache.forget(path)  # once the lease ended, forgotten
    assert cache.open_count() == 0
