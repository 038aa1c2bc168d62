"""The seeds' trading example as Spark sees it: the ``prices`` records' format, parsed into trades.

A price record is keyed by ticker with a JSON value such as
``{"ticker": "AAPL", "price": 190.25, "size": 100, "ts": "2026-11-23T16:00:01.250Z"}``; ``ts`` (the
trade's event time) defaults to the record's timestamp, ``size`` to 0, ``ticker`` to the key.
Values that are not such JSON are dropped. Used by the jobs in spark-apps/jobs/.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812

PRICE_SCHEMA = "ticker string, price double, size long, ts timestamp"


def trades(prices: DataFrame) -> DataFrame:
    """Records of ``prices`` (the data source's columns) as (ticker, price, size, event_time)."""
    parsed = prices.select(
        F.from_json(F.col("value").cast("string"), PRICE_SCHEMA).alias("p"),
        F.col("key").cast("string").alias("key"),
        F.col("timestamp").alias("appended"),
    )
    return parsed.select(
        F.coalesce(F.col("p.ticker"), F.col("key")).alias("ticker"),
        F.col("p.price").alias("price"),
        F.coalesce(F.col("p.size"), F.lit(0)).alias("size"),
        F.coalesce(F.col("p.ts"), F.col("appended")).alias("event_time"),
    ).where(F.col("price").isNotNull() & F.col("ticker").isNotNull())
