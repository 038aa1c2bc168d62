"""The ``lanes`` data source in a real local Spark (local[2]) against a real Lanes cluster: batch
and streaming reads, admission control, restarts from a checkpoint, new partitions, data loss,
group commits, and batch and streaming writes (issue #10's acceptance)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import lanes
from lanes.client import TopicPartition
from lanes.errors import LanesError
from lanes.v1 import broker_pb2, broker_pb2_grpc
from tests.e2e.cli import wait_for
from tests.integration.processes import blocking_client_channel
from tests.spark.access import access_options

pytestmark = pytest.mark.slow


def produce(bootstrap: str, topic: str, count: int, *, start: int = 0, partition: int | None = None) -> None:
    with lanes.Producer(bootstrap) as producer:
        for index in range(start, start + count):
            producer.send(
                topic,
                f"v{index}".encode(),
                f"k{index}".encode(),
                partition=partition,
                headers=[("n", str(index).encode()), ("source", b"test")],
            )
        producer.flush()


def everything(bootstrap: str, topic: str) -> list[lanes.ConsumerRecord]:
    """Every record of ``topic``, read with the client (the truth the data source is checked against)."""
    with lanes.Admin(bootstrap) as admin:
        partitions = [TopicPartition(topic, p.partition) for p in admin.describe_topic(topic).partitions]
    with lanes.Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign(partitions)
        ends = consumer.end_offsets(partitions)
        found: list[lanes.ConsumerRecord] = []
        wait_for(
            lambda: (found.extend(consumer.poll(200)), all(consumer.position(p) >= ends[p] for p in partitions))[1],
            f"all of {topic}",
        )
    return found


def reader(spark: Any, bootstrap: str, **options: str) -> Any:
    stream = spark.readStream.format("lanes").option("bootstrap", bootstrap).options(**access_options())
    for name, value in options.items():
        stream = stream.option(name, value)
    return stream.load()


class Batches:
    """A ``foreachBatch`` sink keeping each micro-batch's rows by batch id (a batch Spark runs
    again after a restart replaces its earlier run, as the contract of foreachBatch says)."""

    def __init__(self) -> None:
        self.by_id: dict[int, list[tuple[str, int, int]]] = {}
        self._lock = threading.Lock()

    def __call__(self, frame: Any, batch_id: int) -> None:
        rows = [(r.topic, r.partition, r.offset) for r in frame.select("topic", "partition", "offset").collect()]
        with self._lock:
            self.by_id[batch_id] = rows

    def records(self) -> list[tuple[str, int, int]]:
        return [row for rows in self.by_id.values() for row in rows]


def run(
    frame: Any,
    sink: Callable[[Any, int], None],
    checkpoint: Path,
    until: Callable[[], Any] | None = None,
    settled: Callable[[], bool] | None = None,
) -> Any:
    """Run a query until it has processed what is available; then ``until`` adds more, and the
    query runs until ``settled`` holds. ``processAllAvailable`` alone can return before data added
    just before it is seen: the trigger in flight looked the offsets up before the data was there
    and reports no new data."""
    query = frame.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)).start()
    try:
        query.processAllAvailable()
        if until is not None:
            until()
            query.processAllAvailable()

        def done() -> bool:
            if settled is None or settled():
                return True
            query.processAllAvailable()
            return False

        wait_for(done, "the query to process what was added")
        # stopped between triggers: a stop racing a foreachBatch callback has hung PySpark's
        # callback connection (the query's thread waited on it for good)
        wait_for(lambda: not query.status["isTriggerActive"], "the query to finish its trigger")
    finally:
        query.stop()
    return query


def test_a_batch_read_returns_exactly_the_range_with_every_column(spark: Any, bootstrap: str) -> None:
    lanes.Admin(bootstrap).create_topic("book", partitions=4, replication_factor=2)
    produce(bootstrap, "book", 400)
    truth = {(r.partition, r.offset): r for r in everything(bootstrap, "book")}
    starting = {"book": {"0": 10, "1": -2, "2": 5, "3": -2}}
    ending = {"book": {"0": 40, "1": 20, "2": -1, "3": -1}}
    frame = (
        spark.read.format("lanes")
        .option("bootstrap", bootstrap)
        .options(**access_options())
        .option("subscribe", "book")
        .option("startingOffsets", json.dumps(starting))
        .option("endingOffsets", json.dumps(ending))
        .option("includeHeaders", "true")
        .load()
    )
    rows = frame.collect()
    ends = {p: max(o for q, o in truth if q == p) + 1 for p in range(4)}
    wanted = {
        (p, o) for (p, o) in truth if {0: 10, 1: 0, 2: 5, 3: 0}[p] <= o < {0: 40, 1: 20, 2: ends[2], 3: ends[3]}[p]
    }
    assert sorted((r.partition, r.offset) for r in rows) == sorted(wanted)
    for row in rows:
        record = truth[(row.partition, row.offset)]
        assert (row.key, row.value, row.topic) == (record.key, record.value, "book")
        assert int(row.timestamp.timestamp() * 1000) == record.timestamp
        assert row.timestampType == 0
        assert [(h.key, h.value) for h in row.headers] == list(record.headers)
    assert frame.schema.fieldNames() == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
    ]  # fmt: skip


def test_min_partitions_splits_ranges_into_more_tasks(spark: Any, bootstrap: str) -> None:
    lanes.Admin(bootstrap).create_topic("wide", partitions=1, replication_factor=1)
    produce(bootstrap, "wide", 300)
    frame = (
        spark.read.format("lanes")
        .option("bootstrap", bootstrap)
        .options(**access_options())
        .option("subscribe", "wide")
        .option("startingOffsets", "earliest")
        .option("minPartitions", "6")
        .load()
    )
    assert frame.rdd.getNumPartitions() == 6
    assert sorted(r.offset for r in frame.select("offset").collect()) == list(range(300))


def test_a_stream_respects_the_limit_restarts_exactly_once_and_reads_new_partitions(
    spark: Any, bootstrap: str, tmp_path: Path
) -> None:
    admin = lanes.Admin(bootstrap)
    admin.create_topic("flow", partitions=3, replication_factor=2)
    produce(bootstrap, "flow", 90)
    sink = Batches()
    frame = reader(spark, bootstrap, subscribe="flow", startingOffsets="earliest", maxRecordsPerTrigger="20")
    run(frame, sink, tmp_path / "checkpoint")
    assert len(sink.records()) == 90
    assert max(len(rows) for rows in sink.by_id.values()) <= 20, "every micro-batch within maxRecordsPerTrigger"
    assert len(sink.by_id) >= 5

    produce(bootstrap, "flow", 30, start=90)  # while stopped

    def grow() -> None:
        admin.create_partitions("flow", 4)
        produce(bootstrap, "flow", 15, start=120, partition=3)

    truth: set[tuple[str, int, int]] = set()

    def everything_read() -> bool:
        truth.update(("flow", r.partition, r.offset) for r in everything(bootstrap, "flow"))
        return set(sink.records()) >= truth

    run(frame, sink, tmp_path / "checkpoint", until=grow, settled=everything_read)  # restarted from its checkpoint
    seen = sink.records()
    assert len(seen) == len(set(seen)), "no record read twice across the restart"
    assert set(seen) == truth, "none skipped"
    assert sum(1 for _, p, _ in seen if p == 3) == 15, "the partition added while running was read"


def test_a_query_commits_its_progress_to_a_consumer_group(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    """Spark hands a source its finished micro-batch's end (``commit``) when it plans the next
    one, so the group's committed offsets trail the query by one micro-batch."""
    lanes.Admin(bootstrap).create_topic("audited", partitions=2, replication_factor=1)
    produce(bootstrap, "audited", 60)
    first_batch_ends: dict[int, int] = {}

    def committed() -> dict[int, int]:
        try:
            described = lanes.Admin(bootstrap).describe_group("spark-audit")
        except LanesError:
            return {}
        return {p.partition: p.committed_offset for p in described.offsets}

    def more() -> None:
        first_batch_ends.update(
            {p: sum(1 for r in everything(bootstrap, "audited") if r.partition == p) for p in (0, 1)}
        )
        assert committed() == {}, "nothing committed before a second micro-batch is planned"
        produce(bootstrap, "audited", 20, start=60, partition=0)  # one batch: seen whole by one micro-batch

    frame = reader(spark, bootstrap, subscribe="audited", startingOffsets="earliest", groupId="spark-audit")
    # planning the micro-batch of the 20 commits the first one's end
    run(frame, Batches(), tmp_path / "checkpoint", until=more, settled=lambda: committed() == first_batch_ends)
    assert lanes.Admin(bootstrap).describe_group("spark-audit").total_lag == 20


def delete_records(bootstrap: str, topic: str, partition: int, before: int) -> None:
    with lanes.Admin(bootstrap) as admin:
        leader = admin.describe_topic(topic).partitions[partition].leader
        address = next(f"{b.host}:{b.port}" for b in admin.describe_cluster().brokers if b.broker_id == leader)
    with blocking_client_channel(address) as channel:
        answer = broker_pb2_grpc.BrokerStub(channel).DeleteRecords(
            broker_pb2.DeleteRecordsRequest(
                topics=[
                    broker_pb2.DeleteRecordsTopic(
                        topic=topic, partitions=[broker_pb2.DeleteRecordsPartition(partition=partition, offset=before)]
                    )
                ],
                timeout_ms=5000,
            ),
            timeout=10,
        )
    assert answer.topics[0].partitions[0].error.code == 0


def test_records_deleted_by_retention_fail_a_query_or_are_skipped(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    admin = lanes.Admin(bootstrap)
    admin.create_topic("expiring", partitions=1, replication_factor=1, config={"segment.bytes": "500"})
    produce(bootstrap, "expiring", 50)
    strict, lenient = Batches(), Batches()
    strict_frame = reader(spark, bootstrap, subscribe="expiring", startingOffsets="earliest")
    lenient_frame = reader(spark, bootstrap, subscribe="expiring", startingOffsets="earliest", failOnDataLoss="false")
    run(strict_frame, strict, tmp_path / "strict")
    run(lenient_frame, lenient, tmp_path / "lenient")
    produce(bootstrap, "expiring", 30, start=50)  # a segment of its own (each batch exceeds segment.bytes)
    produce(bootstrap, "expiring", 30, start=80)  # the active segment, which retention keeps
    admin.alter_configs("expiring", set={"retention.bytes": "1"})  # the brokers' next maintenance deletes the rest
    partition = TopicPartition("expiring", 0)
    with lanes.Consumer(bootstrap) as consumer:
        log_start = wait_for(
            lambda: (o := consumer.beginning_offsets([partition])[partition]) > 50 and o, "retention", 60
        )

    with pytest.raises(
        Exception, match=rf"records 50\.\.{log_start - 1} of expiring/0 were deleted .* failOnDataLoss=false"
    ):
        run(strict_frame, strict, tmp_path / "strict")
    run(lenient_frame, lenient, tmp_path / "lenient")
    assert sorted(o for _, _, o in lenient.records()) == [*range(50), *range(log_start, 110)]


def test_a_task_whose_records_are_deleted_after_planning_fails_or_skips(bootstrap: str) -> None:
    """The same check inside a task (records deleted between planning a micro-batch and reading it)."""
    from lanes_spark.options import read_options  # noqa: PLC0415
    from lanes_spark.planning import OffsetRange  # noqa: PLC0415
    from lanes_spark.records import LanesDataLossError, read_range  # noqa: PLC0415

    lanes.Admin(bootstrap).create_topic("vanishing", partitions=1, replication_factor=1)
    produce(bootstrap, "vanishing", 40)
    delete_records(bootstrap, "vanishing", 0, 25)
    piece = OffsetRange("vanishing", 0, 10, 40)
    strict = read_options({"bootstrap": bootstrap, "subscribe": "vanishing"}, streaming=True)
    with pytest.raises(LanesDataLossError, match=r"records 10\.\.24 of vanishing/0 were deleted"):
        list(read_range(strict, piece))
    lenient = read_options(
        {"bootstrap": bootstrap, "subscribe": "vanishing", "failOnDataLoss": "false"}, streaming=True
    )
    offsets = [o for batch in read_range(lenient, piece) for o in batch.column("offset").to_pylist()]
    assert offsets == list(range(25, 40))


def test_batch_and_streaming_writes_deliver_every_row_as_given(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    from pyspark.sql import functions as F  # noqa: PLC0415, N812

    admin = lanes.Admin(bootstrap)
    for topic in ("source", "copied", "written"):
        admin.create_topic(topic, partitions=3, replication_factor=2)
    rows = [(f"k{i}".encode(), f"v{i}".encode(), i % 3, [("n", str(i).encode())]) for i in range(50)]
    frame = spark.createDataFrame(
        rows, "key binary, value binary, partition int, headers array<struct<key string, value binary>>"
    )
    frame.write.format("lanes").option("bootstrap", bootstrap).options(**access_options()).option(
        "topic", "written"
    ).mode("append").save()
    written = everything(bootstrap, "written")
    assert sorted((r.key, r.value, r.partition, r.headers) for r in written) == sorted(
        (k, v, p, tuple(h)) for k, v, p, h in rows
    )

    produce(bootstrap, "source", 40)
    copy = (
        reader(spark, bootstrap, subscribe="source", startingOffsets="earliest", includeHeaders="true")
        .select(
            F.col("key"),
            F.upper(F.col("value").cast("string")).alias("value"),
            F.lit("copied").alias("topic"),
            ((F.col("offset") + F.col("partition")) % 3).cast("int").alias("partition"),
            F.concat(
                F.col("headers"), F.array(F.struct(F.lit("copied-by").alias("key"), F.lit(b"spark").alias("value")))
            ).alias("headers"),
        )
        .writeStream.format("lanes")
        .option("bootstrap", bootstrap)
        .options(**access_options())
        .option("checkpointLocation", str(tmp_path / "copy"))
        .trigger(availableNow=True)
        .start()
    )
    copy.awaitTermination(120)
    source = {r.key: r for r in everything(bootstrap, "source")}
    copied = everything(bootstrap, "copied")
    assert len(copied) == 40
    for record in copied:
        original = source[record.key]
        assert record.value == original.value.upper()
        assert record.partition == (original.offset + original.partition) % 3
        assert record.headers == (*original.headers, ("copied-by", b"spark"))


def test_bad_options_get_clear_errors(spark: Any, bootstrap: str) -> None:
    with pytest.raises(Exception, match="set exactly one of the options subscribe"):
        spark.read.format("lanes").option("bootstrap", bootstrap).load().collect()
    with pytest.raises(Exception, match="unknown option"):
        spark.read.format("lanes").option("bootstrap", bootstrap).option("subscribe", "x").option(
            "subscibe", "y"
        ).load().collect()
    with pytest.raises(Exception, match="needs passwordFile"):
        spark.read.format("lanes").option("bootstrap", bootstrap).option("subscribe", "x").option(
            "username", "reader"
        ).load().collect()
    with pytest.raises(Exception, match="cannot write column"):
        spark.createDataFrame([(b"v", 1)], "value binary, extra int").write.format("lanes").option(
            "bootstrap", bootstrap
        ).option("topic", "x").mode("append").save()
