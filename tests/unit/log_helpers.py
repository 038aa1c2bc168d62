"""Helpers for log engine tests: configs, batches, full scans."""

from __future__ import annotations

from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.storage.log import LogConfig, PartitionLog


def config(**overrides: object) -> LogConfig:
    """A LogConfig from Kafka-named overrides given with underscores: segment_bytes=1000."""
    return LogConfig.from_topic_configs({name.replace("_", "."): str(value) for name, value in overrides.items()})


def producer_batch(values: list[bytes | None], timestamp_ms: int, keys: list[bytes | None] | None = None) -> bytes:
    """A producer's batch: offsets 0.., one timestamp, optional keys."""
    keys = keys if keys is not None else [None] * len(values)
    return encode_batch(
        [Record(i, timestamp_ms, key, value) for i, (key, value) in enumerate(zip(keys, values, strict=True))]
    )


def read_all(log: PartitionLog, start: int | None = None, max_bytes: int = 1 << 30) -> list[Record]:
    """Every record from ``start`` (default: log start) to the log end, via ``read``."""
    offset = log.log_start_offset if start is None else start
    records: list[Record] = []
    while offset < log.log_end_offset:
        result = log.read(offset, max_bytes)
        if not result.records:
            break
        records.extend(r for batch in decode_batches(result.records) for r in batch.records if r.offset >= offset)
        offset = result.next_offset
    return records


def assert_indexes_agree_with_a_full_scan(log: PartitionLog) -> None:
    """Every index entry points at a batch start whose last offset it names; lookups of every
    batch's offsets land on that batch."""
    for segment in log.segments():
        batches = list(segment.batch_headers(0))
        starts = {position: header for position, header in batches}
        for index in range(segment.index.entries):
            relative, position = segment.index.entry(index)
            assert position in starts, f"{segment.index.path}: entry {index} points inside a batch"
            assert starts[position].last_offset == segment.base_offset + relative
        previous = -1
        for index in range(segment.time_index.entries):
            timestamp, relative = segment.time_index.entry(index)
            assert timestamp > previous
            previous = timestamp
            assert segment.base_offset + relative in {h.last_offset for _, h in batches}
        for position, header in batches:
            assert segment.position_of(header.base_offset) == position
            assert segment.position_of(header.last_offset) == position
        assert segment.size_bytes == (batches[-1][0] + batches[-1][1].size_bytes if batches else 0)
