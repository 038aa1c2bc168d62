"""Records between Lanes and Spark, as Arrow: a task reads an offset range into Arrow record batches
with the schema of Spark's Kafka source, and writes Arrow record batches of rows as records.

Rows of a read: ``key`` binary, ``value`` binary, ``topic`` string, ``partition`` int, ``offset``
long, ``timestamp`` timestamp, ``timestampType`` int (0 create time, 1 log append time), and
``headers`` array<struct<key string, value binary>> with ``includeHeaders``.

Columns of a write: ``value`` (binary or string, required), ``key`` (binary or string),
``topic`` (string, else the ``topic`` option), ``partition`` (int, else by key), ``headers``
(array<struct<key string, value binary or string>>). Any other column is an error.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import lanes
from lanes import ConsumerRecord, TopicPartition
from lanes.deadline import Deadline
from lanes.errors import OffsetOutOfRangeError
from lanes_spark.options import LanesOptionError, ReadOptions, WriteOptions
from lanes_spark.planning import OffsetRange

_log = logging.getLogger("lanes_spark")

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
ROWS_PER_BATCH = 10_000
WRITE_COLUMNS = {"key", "value", "topic", "partition", "headers"}


class LanesDataLossError(RuntimeError):
    """Records a query was to read were deleted first (retention or compaction)."""


def read_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(
            pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])))
        )
    return pa.schema(fields)


def data_loss_message(topic: str, partition: int, start: int, log_start: int) -> str:
    return (
        f"records {start}..{log_start - 1} of {topic}/{partition} were deleted (retention or compaction) before "
        "this query read them. Set failOnDataLoss=false to skip what is gone and go on, or restart the query "
        "from startingOffsets that still exist."
    )


def read_range(options: ReadOptions, piece: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The records of ``piece`` as Arrow record batches, in offset order. Records deleted before
    they were read fail the task (``failOnDataLoss``) or are skipped with a warning."""
    schema = arrow_schema(options.include_headers)
    partition = TopicPartition(piece.topic, piece.partition)
    with lanes.Consumer(
        options.bootstrap,
        auto_offset_reset="none",
        enable_auto_commit=False,
        max_poll_records=ROWS_PER_BATCH,
        **options.access.client_settings(),
    ) as consumer:
        consumer.assign([partition])
        consumer.seek(partition, piece.start)
        position = piece.start  # kept here: after OFFSET_OUT_OF_RANGE the consumer has none
        stalled_after = Deadline(options.poll_timeout_ms / 1000)  # renewed whenever records arrive
        while position < piece.end:
            try:
                records = consumer.poll(timeout_ms=500)
            except OffsetOutOfRangeError:
                log_start = consumer.beginning_offsets([partition])[partition]
                if log_start <= position:
                    raise
                message = data_loss_message(piece.topic, piece.partition, position, log_start)
                if options.fail_on_data_loss:
                    raise LanesDataLossError(message) from None
                _log.warning("%s (failOnDataLoss=false: skipping)", message)
                position = min(log_start, piece.end)
                consumer.seek(partition, position)
                continue
            if records:
                position = max(position, records[-1].offset + 1)
            # records come in offset order: only the ends of the range need trimming
            first = bisect.bisect_left(records, piece.start, key=_offset)
            wanted = records[first : bisect.bisect_left(records, piece.end, lo=first, key=_offset)]
            if wanted:
                stalled_after = Deadline(options.poll_timeout_ms / 1000)
                yield _batch(wanted, schema, options.include_headers)
            elif records:
                stalled_after = Deadline(options.poll_timeout_ms / 1000)
            elif stalled_after.expired():
                raise TimeoutError(
                    f"{piece.topic}/{piece.partition}: records {position}..{piece.end - 1} did not arrive within "
                    f"pollTimeoutMs={options.poll_timeout_ms}; is the partition's leader up?"
                )
            else:
                position = max(position, consumer.position(partition))  # past a compacted gap


def _offset(record: ConsumerRecord) -> int:
    return record.offset


def _batch(records: list[ConsumerRecord], schema: pa.Schema, include_headers: bool) -> pa.RecordBatch:
    offsets, stamps, keys, values, headers, topics, partitions, stamp_types, _epochs = zip(*records, strict=True)
    columns = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.array(topics, pa.string()),
        pa.array(partitions, pa.int32()),
        pa.array(offsets, pa.int64()),
        pa.array(stamps, pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC")),
        pa.array(stamp_types, pa.int32()),
    ]
    if include_headers:
        columns.append(
            pa.array([[{"key": k, "value": v} for k, v in h] for h in headers], schema.field("headers").type)
        )
    return pa.RecordBatch.from_arrays(columns, schema=schema)


@dataclass
class WriteCount:
    """What one task wrote (its commit message)."""

    records: int


def check_write_columns(names: list[str], options: WriteOptions) -> None:
    """Refuse a DataFrame the sink cannot write, before any task starts."""
    unknown = sorted(set(names) - WRITE_COLUMNS)
    if unknown:
        raise ValueError(
            f"cannot write column(s) {', '.join(unknown)} to Lanes: the columns are value (required), key, topic, "
            "partition and headers; select or rename before writing"
        )
    if "value" not in names:
        raise ValueError("a DataFrame written to Lanes needs a value column (binary or string)")
    if "topic" not in names and options.topic is None:
        raise ValueError("set the topic option, or give the DataFrame a topic column")


def write_batches(options: WriteOptions, batches: Iterator[pa.RecordBatch]) -> WriteCount:
    """Send every row of ``batches`` (columns checked on the driver: ``check_write_columns``) and
    wait until all are acknowledged (``acks``); raise the first failure. Idempotent producer:
    retries inside the task write each record once."""
    written = 0
    with lanes.Producer(
        options.bootstrap,
        acks=options.acks,
        compression_type=options.compression,
        linger_ms=options.linger_ms,
        enable_idempotence=options.acks == "all",
        **options.access.client_settings(),
    ) as producer:
        futures = []
        for batch in batches:
            columns = batch.to_pydict()
            count = batch.num_rows
            topics = columns.get("topic") or [options.topic] * count
            keys = columns.get("key") or [None] * count
            partitions = columns.get("partition") or [None] * count
            headers = columns.get("headers") or [None] * count
            for topic, key, value, partition, row_headers in zip(
                topics, keys, columns["value"], partitions, headers, strict=True
            ):
                target = topic or options.topic
                if not target:
                    raise LanesOptionError("a row has no topic: give the topic option or a topic in every row")
                futures.append(
                    producer.send(
                        target,
                        _bytes(value),
                        _bytes(key),
                        partition=partition,
                        headers=[(h["key"], _bytes(h["value"])) for h in row_headers] if row_headers else None,
                    )
                )
            written += count
        producer.flush()
        for future in futures:
            future.result()
    return WriteCount(written)


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)
