"""A full disk, for real: a 1 MiB tmpfs mounted by the test. Appends fail with a clear error,
the log stays consistent and readable, and appends succeed again once space is freed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes.clock import ManualClock
from lanes.errors import StorageError
from lanes.protocol.records import Record
from lanes.storage.log import PartitionLog
from tests.unit.log_helpers import assert_indexes_agree_with_a_full_scan, config, producer_batch, read_all


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_a_full_disk_fails_appends_cleanly_and_they_resume_when_space_frees(small_filesystem: Path) -> None:
    filler = small_filesystem / "filler"
    filler.write_bytes(b"\0" * 256 * 1024)
    clock = ManualClock()
    log = PartitionLog.open(
        small_filesystem / "orders-0", config(segment_bytes=200_000, index_interval_bytes=512), clock=clock
    )
    acknowledged: list[Record] = []
    failure = None
    for index in range(1000):
        values = [b"%06d" % index + b"." * 3000, b"%06d" % index + b"-" * 2000]
        end_before = log.log_end_offset
        try:
            info = log.append_as_leader(producer_batch(values, clock.now_ms()), leader_epoch=0)
        except StorageError as exc:
            failure = exc
            assert log.log_end_offset == end_before, "a failed append assigns no offsets"
            break
        acknowledged.extend(Record(info.first_offset + i, clock.now_ms(), None, v) for i, v in enumerate(values))
    assert failure is not None, "the disk never filled up"
    assert "the disk is full" in str(failure)
    assert failure.retriable
    # Consistent and readable: every acknowledged record, nothing else, indexes intact.
    assert read_all(log) == acknowledged
    assert_indexes_agree_with_a_full_scan(log)
    with pytest.raises(StorageError):  # still full: still refused, still consistent
        log.append_as_leader(producer_batch([b"x" * 5000], clock.now_ms()), leader_epoch=0)
    assert read_all(log) == acknowledged

    filler.unlink()  # space frees up
    info = log.append_as_leader(producer_batch([b"after"], clock.now_ms()), leader_epoch=0)
    assert info.first_offset == acknowledged[-1].offset + 1
    log.close()
    reopened = PartitionLog.open(small_filesystem / "orders-0", log.config, clock=clock)
    assert reopened.recovered_bytes_cut == 0
    assert [r.value for r in read_all(reopened)] == [r.value for r in acknowledged] + [b"after"]
