"""``LanesDataSource``: Lanes topics for Spark through PySpark's Python Data Source API.

    from lanes_spark import LanesDataSource
    spark.dataSource.register(LanesDataSource)
    spark.read.format("lanes").option("bootstrap", "b:9092").option("subscribe", "prices").load()

Reading (batch and streaming): one Spark task per offset range of a partition (``minPartitions``
splits large ranges), records as Arrow batches. A stream's offsets are
``{"topic": {"partition": offset}}`` in Spark's checkpoint; a restarted query goes on from its last
committed micro-batch, neither skipping nor repeating any. Partitions added to a subscribed topic
(or topics matching ``subscribePattern``) are read from their start. Only records below the
high-water mark are read (those every in-sync replica has).

Writing (batch and streaming): each task sends its rows with an idempotent producer and waits
for every acknowledgement before reporting success. Delivery is **at least once**: a Spark task
that fails after some of its records were acknowledged is run again and sends them again (the
producer's idempotence removes duplicates only within one producer, i.e. one task attempt);
records of a task that failed are not withdrawn (Lanes has no transactions). Deduplicate
downstream by key or by a unique id when exactly once matters.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from lanes_spark.cluster import LanesOffsets
from lanes_spark.options import (
    ReadOptions,
    WriteOptions,
    read_options,
    write_options,
)
from lanes_spark.planning import OffsetRange, Offsets, admit, from_checkpoint, lost, ranges, resolve, to_checkpoint
from lanes_spark.records import (
    LanesDataLossError,
    check_write_columns,
    data_loss_message,
    read_range,
    read_schema,
    write_batches,
)

_log = logging.getLogger("lanes_spark")


class LanesDataSource(DataSource):
    """The ``lanes`` format (see the module docstring and docs/spark.md for the options)."""

    @classmethod
    def name(cls) -> str:
        return "lanes"

    def schema(self) -> StructType:
        include_headers = str(self.options.get("includeHeaders", "false")).lower() == "true"
        return read_schema(include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return LanesBatchReader(read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return LanesStreamReader(read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> LanesBatchWriter:
        options = write_options(self.options)
        check_write_columns(schema.fieldNames(), options)
        return LanesBatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> LanesStreamWriter:
        options = write_options(self.options)
        check_write_columns(schema.fieldNames(), options)
        return LanesStreamWriter(options)


@dataclass
class RangePartition(InputPartition):
    """One Spark task's work: the records ``[start, end)`` of one partition."""

    topic: str
    partition: int
    start: int
    end: int


def _piece(partition: InputPartition) -> OffsetRange:
    assert isinstance(partition, RangePartition), partition
    return OffsetRange(partition.topic, partition.partition, partition.start, partition.end)


def _partitions(pieces: Sequence[OffsetRange]) -> list[RangePartition]:
    return [RangePartition(p.topic, p.partition, p.start, p.end) for p in pieces]


def _checked_start(options: ReadOptions, start: Offsets, earliest: Offsets) -> Offsets:
    """``start`` with data loss handled: fail with a clear message, or move up to the log start."""
    gone = lost(start, earliest)
    if gone and options.fail_on_data_loss:
        (topic, partition), (offset, log_start) = sorted(gone.items())[0]
        raise LanesDataLossError(data_loss_message(topic, partition, offset, log_start))
    for (topic, partition), (offset, log_start) in gone.items():
        _log.warning("%s (failOnDataLoss=false: skipping)", data_loss_message(topic, partition, offset, log_start))
    return {p: max(offset, earliest.get(p, offset)) for p, offset in start.items()}


class LanesBatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> list[RangePartition]:
        lookups = LanesOffsets(self.options)
        try:
            partitions = lookups.partitions()
            earliest, latest = lookups.earliest(partitions), lookups.latest(partitions)
            if self.options.starting_timestamp_ms is not None:
                start = lookups.at_time(partitions, self.options.starting_timestamp_ms)
            else:
                start = resolve(self.options.starting, partitions, earliest, latest)
            end = resolve(self.options.ending, partitions, earliest, latest)
        finally:
            lookups.close()
        start = _checked_start(self.options, start, earliest)
        end = {p: min(offset, latest[p]) for p, offset in end.items()}
        return _partitions(ranges(start, end, self.options.min_partitions))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.options, _piece(partition))


class LanesStreamReader(DataSourceStreamReader):
    """Micro-batches over the partitions' offsets. Runs on the driver (planning, commits) and,
    pickled, in tasks (``read``); the cluster connection is the driver's only."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._lookups: LanesOffsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "_lookups": None}

    @property
    def lookups(self) -> LanesOffsets:
        if self._lookups is None:
            self._lookups = LanesOffsets(self.options)
        return self._lookups

    def initialOffset(self) -> dict[str, dict[str, int]]:
        partitions = self.lookups.partitions()
        earliest, latest = self.lookups.earliest(partitions), self.lookups.latest(partitions)
        if self.options.starting_timestamp_ms is not None:
            start = self.lookups.at_time(partitions, self.options.starting_timestamp_ms)
        else:
            start = resolve(self.options.starting, partitions, earliest, latest)
        return to_checkpoint(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_records_per_trigger is not None:
            return ReadMaxRows(self.options.max_records_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, dict[str, int]], limit: ReadLimit) -> dict[str, dict[str, int]]:
        partitions = self.lookups.partitions()
        latest = self.lookups.latest(partitions)
        begin = from_checkpoint(start)
        new = [p for p in partitions if p not in begin]
        if new:  # partitions added since the last batch: read from their start
            begin.update(self.lookups.earliest(new))
            _log.info("new partitions to read: %s", new)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return to_checkpoint(admit(begin, latest, max_rows))

    def partitions(self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]) -> list[RangePartition]:
        begin, finish = from_checkpoint(start), from_checkpoint(end)
        new = [p for p in finish if p not in begin]
        if new:
            begin.update(self.lookups.earliest(new))
        earliest = self.lookups.earliest(sorted(finish))
        begin = _checked_start(self.options, begin, earliest)
        return _partitions(ranges(begin, finish, self.options.min_partitions))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.options, _piece(partition))

    def commit(self, end: dict[str, dict[str, int]]) -> None:
        if self.options.group_id:
            self.lookups.commit(self.options.group_id, from_checkpoint(end))

    def stop(self) -> None:
        if self._lookups is not None:
            self._lookups.close()
            self._lookups = None


class LanesBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return _Written(write_batches(self.options, iterator).records)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _log.info("wrote %d records to Lanes", sum(m.records for m in messages if isinstance(m, _Written)))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _log.warning(
            "the write failed; %d records of the tasks that succeeded stay in Lanes (at-least-once sink)",
            sum(m.records for m in messages if isinstance(m, _Written)),
        )


class LanesStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return _Written(write_batches(self.options, iterator).records)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log.info(
            "micro-batch %d: wrote %d records", batchId, sum(m.records for m in messages if isinstance(m, _Written))
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log.warning("micro-batch %d failed; records already acknowledged stay (at-least-once sink)", batchId)


@dataclass
class _Written(WriterCommitMessage):
    records: int
