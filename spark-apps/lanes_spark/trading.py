"""The seeds' trading example as Spark sees it: the ``prices`` records' format, parsed into trades.

A price record is keyed by ticker with a JSON value such as
``{"ticker": "AAPL", "price": 190.25, "size": 100, "ts": "2026-11-23T16:00:01.250Z"}``
(``lanes.demo.prices`` writes them). ``ts``, the trade's event time, is an ISO-8601 string
(without a zone: in the session's time zone, UTC in the jobs) or epoch milliseconds (a JSON integer
or a string of digits); it defaults to the record's
timestamp, ``size`` to 0, ``ticker`` to the key. A ``ts`` that is neither, or a number more than
``TS_BOUND_DAYS`` from the record's timestamp (epoch *seconds*, microseconds: the year 57868
otherwise), fails the query with a message naming the record, as a record that cannot be read
fails a Kafka Streams application by default: event times silently wrong would be worse. Values
that are not JSON with a price are dropped. Also the jobs' shared plumbing (their common options,
reading the prices stream, writing records, running a query until it ends or, with
``--available-now``, until what is there is processed: ``drain``). Used by spark-apps/jobs/ and
``lanes_spark.demo``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.streaming.query import StreamingQuery

PRICE_SCHEMA = "ticker string, price double, size long, ts string"
#: how far a ``ts`` in epoch milliseconds may be from its record's timestamp
TS_BOUND_DAYS = 365
_EPOCH_MS = r"^-?[0-9]{1,18}$"


def trades(prices: DataFrame) -> DataFrame:
    """Records of ``prices`` (the data source's columns) as (ticker, price, size, event_time,
    offset); a ticker's records share a partition, so ``offset`` is their order in the log."""
    parsed = prices.select(
        F.from_json(F.col("value").cast("string"), PRICE_SCHEMA).alias("p"),
        F.col("key").cast("string").alias("key"),
        F.col("timestamp").alias("appended"),
        F.format_string("%s-%d@%d", "topic", "partition", "offset").alias("record"),
        F.col("offset"),
    )
    return parsed.select(
        F.coalesce(F.col("p.ticker"), F.col("key")).alias("ticker"),
        F.col("p.price").alias("price"),
        F.coalesce(F.col("p.size"), F.lit(0)).alias("size"),
        F.coalesce(event_time(F.col("p.ts"), F.col("appended"), F.col("record")), F.col("appended")).alias(
            "event_time"
        ),
        F.col("offset"),
    ).where(F.col("price").isNotNull() & F.col("ticker").isNotNull())


def event_time(ts: Column, appended: Column, record: Column) -> Column:
    """``ts`` (the JSON text of the field: a string's content, a number's digits) as a timestamp:
    epoch milliseconds within ``TS_BOUND_DAYS`` of ``appended``, or ISO-8601; null when absent;
    anything else raises an error naming ``record`` and what ``ts`` may be."""
    millis = F.timestamp_millis(F.when(ts.rlike(_EPOCH_MS), ts.cast("long")))
    iso = F.try_to_timestamp(ts)
    off_by_s = F.abs(F.unix_seconds(millis) - F.unix_seconds(appended))

    def refused(why: str) -> Column:
        return F.raise_error(
            F.concat(
                F.lit("price record "),
                record,
                F.lit(": ts "),
                ts,
                F.lit(f" {why}; "),
                F.lit("ts is an ISO-8601 string such as 2026-11-23T16:00:01.250Z or epoch milliseconds"),
            )
        )

    return (
        F.when(ts.isNull(), F.lit(None).cast("timestamp"))
        .when(
            millis.isNotNull() & (off_by_s > TS_BOUND_DAYS * 86_400),
            refused(f"is more than {TS_BOUND_DAYS} days from the record's timestamp (epoch seconds?)"),
        )
        .when(millis.isNotNull(), millis)
        .when(iso.isNotNull(), iso)
        .otherwise(refused("is neither"))
    )


def job_arguments(name: str, description: str, output: str) -> argparse.ArgumentParser:
    """The options every trading job takes: where Lanes is and how to reach it (the cluster's
    CA and a user, by default from the driver's environment as clients take them), the prices
    topic, the ``output`` topic (``--<output>``), the checkpoint, where to start, and
    ``--available-now``."""
    parser = argparse.ArgumentParser(prog=name, description=description)
    parser.add_argument("--bootstrap", default=os.environ.get("LANES_BOOTSTRAP", "127.0.0.1:9092"))
    parser.add_argument(
        "--tls-ca", default=os.environ.get("LANES_TLS_CA"), help="the cluster's CA file (on the executors too)"
    )
    parser.add_argument("--username", default=os.environ.get("LANES_USERNAME"))
    parser.add_argument(
        "--password-file", default=os.environ.get("LANES_PASSWORD_FILE"), help="read once, on the driver"
    )
    parser.add_argument("--prices", default="prices", help="the topic read")
    parser.add_argument(f"--{output}", default=output, help="the topic written")
    parser.add_argument("--checkpoint", required=True, help="where Spark keeps the query's progress and state")
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument(
        "--group-id", default=None, help="commit the query's progress to this consumer group (its lag shows there)"
    )
    parser.add_argument("--max-records-per-trigger", type=int, default=None)
    parser.add_argument(
        "--available-now",
        action="store_true",
        help="process what is there (and what arrives meanwhile), emit every window it closes, then stop",
    )
    return parser


def access_options(options: argparse.Namespace) -> dict[str, str]:
    """The data source's options naming the CA and user the job was given (``lanes_spark.options``):
    a user only with its password file (without one, the source's clients take their process's
    user, ``LANES_PASSWORD`` included)."""
    named = {"tls.ca": options.tls_ca}
    if options.username and options.password_file:
        named |= {"username": options.username, "passwordFile": options.password_file}
    return {key: value for key, value in named.items() if value}


def read_prices(spark: SparkSession, options: argparse.Namespace) -> DataFrame:
    """The prices topic as a stream (registers the ``lanes`` format in ``spark``)."""
    from lanes_spark.source import LanesDataSource  # noqa: PLC0415 (pyspark's data source API on demand)

    spark.dataSource.register(LanesDataSource)
    reader = (
        spark.readStream.format("lanes")
        .option("bootstrap", options.bootstrap)
        .options(**access_options(options))
        .option("subscribe", options.prices)
        .option("startingOffsets", options.starting_offsets)
    )
    if options.max_records_per_trigger:
        reader = reader.option("maxRecordsPerTrigger", str(options.max_records_per_trigger))
    if getattr(options, "group_id", None):
        reader = reader.option("groupId", options.group_id)
    return reader.load()


def write_records(records: DataFrame, options: argparse.Namespace, topic: str, name: str) -> StreamingQuery:
    """Start the query writing ``records`` (key, value) to ``topic`` in append mode."""
    writer = (
        records.writeStream.format("lanes")
        .option("bootstrap", options.bootstrap)
        .options(**access_options(options))
        .option("topic", topic)
        .option("checkpointLocation", options.checkpoint)
        .outputMode("append")
        .queryName(name)
    )
    return writer.start()


def run_job(
    name: str, start: Callable[[SparkSession, argparse.Namespace], StreamingQuery], options: argparse.Namespace
) -> int:
    """A job's ``main``: a session in UTC, the query started, waited for until it ends (with
    ``--available-now``: until what is there is processed, ``drain``)."""
    spark = SparkSession.builder.appName(f"lanes-{name}").config("spark.sql.session.timeZone", "UTC").getOrCreate()
    query = start(spark, options)
    if options.available_now:
        drain(query)
    else:
        query.awaitTermination()
    return 0


def drain(query: StreamingQuery) -> None:
    """Process every record there is, then stop the query. Records that keep arriving while it
    runs are processed too (``processAllAvailable`` waits for what is there each time it looks):
    against a topic that is always written it stops only once the writers pause.

    Not Spark's ``trigger(availableNow=True)``: that stops after the last batch with data, so
    windows that batch's watermark closes would come out only on the next run (an append-mode
    aggregation emits a window in the batch *after* the one that moves the watermark past it).
    ``processAllAvailable`` returns once Spark constructs no further batch, which is after the
    batch without data that such a watermark calls for; the query then stops between batches.
    """
    query.processAllAvailable()
    query.stop()
