"""Log engine benchmarks (run by `make bench`; prints numbers, asserts nothing about time).

- append throughput (MB/s, records/s) for 100-byte and 1 KiB records in 1,000-record batches,
  next to the raw sequential write throughput of the same bytes to the same filesystem, without
  fsync and with an fsync per batch (flush.messages=1 against write+fdatasync per batch);
- read throughput from a cold page cache (pages dropped with posix_fadvise) and a warm one;
- recovery time of a 1 GiB log after an unclean stop;
- memory and open files with 10,000 partitions.
Each throughput figure is the median of 3 runs, with the spread.
"""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from lanes.clock import SystemClock
from lanes.protocol.records import Record, encode_batch
from lanes.storage.log import LogConfig, PartitionLog
from lanes.storage.manager import LogManager
from tests.perf.peers.limits import raw_write_mb_s

RECORDS_PER_BATCH = 1_000
RUNS = 3
MiB = 1024 * 1024


def _batch(value_bytes: int) -> bytes:
    value = os.urandom(value_bytes)
    return encode_batch([Record(i, 1_700_000_000_000, None, value) for i in range(RECORDS_PER_BATCH)])


def _median(figures: list[float]) -> tuple[float, float, float]:
    return statistics.median(figures), min(figures), max(figures)


def _fmt(label: str, figures: tuple[float, float, float], unit: str) -> str:
    median, low, high = figures
    if not unit:  # a ratio
        return f"  {label:<46} {median:>10.2f} {'':<10} (spread {low:.2f}..{high:.2f})"
    return f"  {label:<46} {median:>10,.1f} {unit:<10} (spread {low:,.1f}..{high:,.1f})"


def _log_append_mb_s(directory: Path, batch: bytes, batches: int, overrides: dict[str, str]) -> float:
    log = PartitionLog.open(directory / "bench-0", LogConfig.from_topic_configs(overrides), clock=SystemClock())
    start = time.perf_counter()
    for _ in range(batches):
        log.append_as_leader(batch, leader_epoch=0)
    elapsed = time.perf_counter() - start
    log.delete()
    return len(batch) * batches / elapsed / MiB


def _paired(raw: Callable[[], float], ours: Callable[[], float]) -> tuple[list[float], list[float], list[float]]:
    """Raw and log runs interleaved (raw, log, raw, log, ...) so both see the same machine state;
    returns raw figures, log figures and per-pair ratios."""
    raws, logs = [], []
    for _ in range(RUNS):
        raws.append(raw())
        logs.append(ours())
    return raws, logs, [log / raw_figure for log, raw_figure in zip(logs, raws, strict=True)]


def test_append_throughput_against_raw_writes() -> None:
    lines = [f"log append benchmark (median of {RUNS} interleaved runs), same filesystem as the raw writes"]
    with tempfile.TemporaryDirectory(dir=os.environ.get("LANES_BENCH_DIR")) as tmp:
        directory = Path(tmp)
        for value_bytes, total_mb, fsync_batches in ((100, 200, 600), (1024, 400, 200)):
            batch = _batch(value_bytes)
            batches = total_mb * MiB // len(batch)
            raw, ours, ratio = _paired(
                lambda b=batch, n=batches: raw_write_mb_s(directory, b, n, fsync=False),
                lambda b=batch, n=batches: _log_append_mb_s(directory, b, n, {}),
            )
            raw_sync, ours_sync, ratio_sync = _paired(
                lambda b=batch, n=fsync_batches: raw_write_mb_s(directory, b, n, fsync=True),
                lambda b=batch, n=fsync_batches: _log_append_mb_s(directory, b, n, {"flush.messages": "1"}),
            )
            records_per_mb = MiB / len(batch) * RECORDS_PER_BATCH
            lines += [
                f"{value_bytes}-byte records, {len(batch):,}-byte batches of {RECORDS_PER_BATCH}:",
                _fmt("raw sequential write, no fsync", _median(raw), "MB/s"),
                _fmt("log append, no fsync", _median(ours), "MB/s")
                + f"  = {_median(ours)[0] * records_per_mb:,.0f} records/s",
                _fmt("ratio log / raw (aim >= 0.8)", _median(ratio), ""),
                _fmt("raw write + fdatasync per batch", _median(raw_sync), "MB/s"),
                _fmt("log append, flush.messages=1", _median(ours_sync), "MB/s")
                + f"  = {_median(ours_sync)[0] * records_per_mb:,.0f} records/s",
                _fmt("ratio log / raw (aim >= 0.8)", _median(ratio_sync), ""),
            ]
    print("\n" + "\n".join(lines))


def _read_all_mb_s(log: PartitionLog, max_bytes: int) -> float:
    offset = log.log_start_offset
    total = 0
    start = time.perf_counter()
    while offset < log.log_end_offset:
        result = log.read(offset, max_bytes)
        total += len(result.records)
        offset = result.next_offset
    return total / (time.perf_counter() - start) / MiB


def _drop_page_cache(log: PartitionLog) -> None:
    for segment in log.segments():
        for path in segment.paths():
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def test_read_throughput_cold_and_warm() -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("LANES_BENCH_DIR")) as tmp:
        log = PartitionLog.open(
            Path(tmp) / "bench-0", LogConfig.from_topic_configs({"segment.bytes": str(64 * MiB)}), clock=SystemClock()
        )
        batch = _batch(100)
        for _ in range(300 * MiB // len(batch)):
            log.append_as_leader(batch, leader_epoch=0)
        cold, warm = [], []
        for _ in range(RUNS):
            _drop_page_cache(log)
            cold.append(_read_all_mb_s(log, MiB))
            warm.append(_read_all_mb_s(log, MiB))
        log.close()
    cold_line = _fmt("cold page cache", _median(cold), "MB/s")
    warm_line = _fmt("warm page cache", _median(warm), "MB/s")
    print(f"\nlog read benchmark (fetches of 1 MiB over 300 MiB):\n{cold_line}\n{warm_line}")


def test_recovery_time_of_a_1_gib_log_after_an_unclean_stop() -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("LANES_BENCH_DIR")) as tmp:
        directory = Path(tmp) / "bench-0"
        config = LogConfig.from_topic_configs(
            {"segment.bytes": str(256 * MiB), "flush.messages": "9223372036854775807"}
        )
        log = PartitionLog.open(directory, config, clock=SystemClock())
        batch = _batch(1024)
        while log.size_bytes < 1024 * MiB:
            log.append_as_leader(batch, leader_epoch=0)
        size = log.size_bytes
        for segment in log.segments():
            segment.release_files()  # crash: no flush, no checkpoints, no clean-shutdown marker
        (directory / "recovery-point-checkpoint").unlink(missing_ok=True)  # worst case: recover it all
        start = time.perf_counter()
        recovered = PartitionLog.open(directory, config, clock=SystemClock())
        elapsed = time.perf_counter() - start
        assert recovered.log_end_offset == log.log_end_offset
        recovered.close()
    print(
        f"\nrecovery of a {size / MiB:,.0f} MiB log after an unclean stop (full rescan): {elapsed:.2f} s "
        f"= {size / MiB / elapsed:,.0f} MB/s"
    )


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_memory_and_open_files_with_10000_partitions() -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("LANES_BENCH_DIR")) as tmp:
        rss_before, fds_before = _rss_kib(), len(os.listdir("/proc/self/fd"))
        manager = LogManager(Path(tmp), clock=SystemClock(), max_open_files=512)
        config = LogConfig.from_topic_configs({})
        batch = encode_batch([Record(0, 1_700_000_000_000, None, b"x" * 100)])
        start = time.perf_counter()
        for partition in range(10_000):
            manager.open_log("many", partition, config).append_as_leader(batch, leader_epoch=0)
        created = time.perf_counter() - start
        rss_open, fds_open = _rss_kib(), len(os.listdir("/proc/self/fd"))
        manager.close()
        start = time.perf_counter()
        restarted = LogManager(Path(tmp), clock=SystemClock(), max_open_files=512)
        for topic, partition in restarted.discover():
            restarted.open_log(topic, partition, config)
        reopened = time.perf_counter() - start
        fds_reopened = len(os.listdir("/proc/self/fd"))
        restarted.close()
    print(
        "\n10,000 partitions (one small append each), file cache of 512 descriptors:\n"
        f"  create + append: {created:.1f} s; clean restart, open all: {reopened:.1f} s\n"
        f"  open descriptors: +{fds_open - fds_before} while open, +{fds_reopened - fds_before} after the restart\n"
        f"  memory: +{(rss_open - rss_before) / 1024:,.1f} MiB RSS "
        f"({(rss_open - rss_before) / 10_000:,.2f} KiB per partition)"
    )


def test_group_commit_shares_fsyncs_between_concurrent_appenders() -> None:
    """flush.messages=1 with several appending threads: each append returns durable, and the
    appends that arrive while an fsync runs share the next one."""
    calls = 0
    real_fdatasync = os.fdatasync

    def counting_fdatasync(fd: int) -> None:
        nonlocal calls
        calls += 1
        real_fdatasync(fd)

    with tempfile.TemporaryDirectory(dir=os.environ.get("LANES_BENCH_DIR")) as tmp:
        log = PartitionLog.open(
            Path(tmp) / "bench-0", LogConfig.from_topic_configs({"flush.messages": "1"}), clock=SystemClock()
        )
        batch = _batch(100)
        threads, per_thread = 4, 150

        def appender() -> None:
            for _ in range(per_thread):
                log.append_as_leader(batch, leader_epoch=0)

        workers = [threading.Thread(target=appender) for _ in range(threads)]
        with mock.patch("os.fdatasync", counting_fdatasync):
            start = time.perf_counter()
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            elapsed = time.perf_counter() - start
        appends = threads * per_thread
        assert log.recovery_point == log.log_end_offset
        log.close()
    print(
        f"\ngroup commit: {threads} threads x {per_thread} appends with flush.messages=1: {appends} appends, "
        f"{calls} fdatasyncs ({appends / calls:.1f} appends per fsync), "
        f"{appends * RECORDS_PER_BATCH / elapsed:,.0f} records/s"
    )
