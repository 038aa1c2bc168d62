"""Records per second a Spark streaming query reads from a 6-partition topic through the ``lanes``
data source (run by `make bench`; prints numbers, asserts nothing about time).

A local[2] Spark session and a one-broker cluster on loopback: 600,000 records of 100 bytes, then
one streaming query (trigger availableNow, no limit) counting them into a ``noop`` sink, timed
from start to finish; and the same with ``maxRecordsPerTrigger`` 50,000 (more, smaller
micro-batches). The time includes planning and Spark's task overhead, not only reading.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import lanes
from tests.integration.processes import running_cluster
from tests.spark.access import access_options

RECORDS = 600_000
PARTITIONS = 6


def test_streaming_read_rate() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession  # noqa: PLC0415 (after the environment is set)

    from lanes_spark import LanesDataSource  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp, running_cluster(Path(tmp) / "lanes", brokers=1) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("ticks", partitions=PARTITIONS, replication_factor=1)
        with lanes.Producer(bootstrap, acks="1", enable_idempotence=False) as producer:
            for index in range(RECORDS):
                producer.send("ticks", b"x" * 100, str(index).encode())
            producer.flush()
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        spark.dataSource.register(LanesDataSource)
        try:
            print(f"\nSpark streaming read, {RECORDS:,} records of 100 B from {PARTITIONS} partitions, local[2]:")
            for label, limit in (("no limit", None), ("maxRecordsPerTrigger 50,000", 50_000)):
                stream = (
                    spark.readStream.format("lanes")
                    .option("bootstrap", bootstrap)
                    .options(**access_options())
                    .option("subscribe", "ticks")
                    .option("startingOffsets", "earliest")
                )
                if limit:
                    stream = stream.option("maxRecordsPerTrigger", str(limit))
                started = time.perf_counter()
                query = (
                    stream.load()
                    .writeStream.format("noop")
                    .option("checkpointLocation", str(Path(tmp) / label.replace(" ", "-")))
                    .trigger(processingTime="0 seconds")
                    .start()
                )
                query.processAllAvailable()
                elapsed = time.perf_counter() - started
                read = sum(p["numInputRows"] for p in query.recentProgress)
                query.stop()
                print(f"  {label:<30} {read / elapsed:>12,.0f} records/s ({read:,} in {elapsed:.1f} s)")
        finally:
            spark.stop()
