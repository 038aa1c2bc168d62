"""Codec throughput (run by `make bench`; prints numbers, asserts nothing about time).

Workload: batches of 1,000 records with 16-byte keys and 100-byte values. Reported:
- encode and decode in records/s, for the C fast path and the pure-Python reference;
- the broker path (validate header + CRC, patch offsets) in batches/s and its cost per record,
  which must not grow with the number of records in Python terms (it is one CRC in C);
- encode/decode with each compression codec.
Each figure is the median of 5 runs, with the spread (min..max).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

from lanes.protocol import records
from lanes.protocol.compression import Compression
from lanes.protocol.records import PYTHON_CODEC, BatchCodec, Record, assign_offsets, validate_batches

RECORDS_PER_BATCH = 1_000
VALUE_BYTES = 100
RUNS = 5


def _batch_records(count: int = RECORDS_PER_BATCH) -> list[Record]:
    value = os.urandom(VALUE_BYTES)
    return [Record(i, 1_700_000_000_000 + i, b"key-%012d" % i, value) for i in range(count)]


def _rate(work: Callable[[], object], units_per_call: int, min_seconds: float = 0.3) -> tuple[float, float, float]:
    """Median, min and max of ``units_per_call`` per second over RUNS timed loops."""
    rates = []
    for _ in range(RUNS):
        calls = 0
        start = time.perf_counter()
        while True:
            work()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        rates.append(calls * units_per_call / elapsed)
    return statistics.median(rates), min(rates), max(rates)


def _line(label: str, figures: tuple[float, float, float], unit: str) -> str:
    median, low, high = figures
    return f"{label:<52} {median:>14,.0f} {unit:<10} (spread {low:,.0f}..{high:,.0f})"


def test_codec_throughput() -> None:
    batch = _batch_records()
    codecs: list[tuple[str, BatchCodec]] = [("python", PYTHON_CODEC)]
    if records.IMPLEMENTATION == "c":
        codecs.insert(0, ("c", records.DEFAULT_CODEC))
    lines = [f"codec benchmark: batches of {RECORDS_PER_BATCH} records, {VALUE_BYTES}-byte values, median of {RUNS}"]
    for name, codec in codecs:
        encoded = codec.encode(batch)
        lines.append(
            _line(
                f"encode [{name}, none]",
                _rate(lambda c=codec: c.encode(batch), RECORDS_PER_BATCH),
                "records/s",
            )
        )
        lines.append(
            _line(
                f"decode [{name}, none]",
                _rate(lambda c=codec, e=encoded: c.decode(e), RECORDS_PER_BATCH),
                "records/s",
            )
        )

    fast = records.DEFAULT_CODEC
    for compression in [c for c in Compression if c is not Compression.NONE]:
        encoded = fast.encode(batch, compression=compression)
        lines.append(
            _line(
                f"encode [{records.IMPLEMENTATION}, {compression.name.lower()}]",
                _rate(lambda c=compression: fast.encode(batch, compression=c), RECORDS_PER_BATCH),
                "records/s",
            )
        )
        lines.append(
            _line(
                f"decode [{records.IMPLEMENTATION}, {compression.name.lower()}]",
                _rate(lambda e=encoded: fast.decode(e), RECORDS_PER_BATCH),
                "records/s",
            )
        )

    # The broker path: validate (header + CRC-32C) and assign offsets, per batch.
    for per_batch in (10, RECORDS_PER_BATCH, 10_000):
        payload = bytearray(fast.encode(_batch_records(per_batch)))

        def broker_path(p: bytearray = payload) -> None:
            headers = validate_batches(p, producer_batch=True, max_batch_bytes=2**30)
            assign_offsets(p, headers, first_offset=1_000_000, partition_leader_epoch=3)

        figures = _rate(broker_path, 1)
        per_record_ns = 1e9 / (figures[0] * per_batch)
        lines.append(
            _line(f"broker validate+patch [{per_batch} records/batch]", figures, "batches/s")
            + f"  = {figures[0] * per_batch:,.0f} records/s, {per_record_ns:.1f} ns/record"
        )
    print("\n" + "\n".join(lines))
