"""Candles (the trading example): open, high, low, close and volume per ticker per event-time
window, from price records (``lanes_spark.trading``) to candle records keyed by ticker with JSON
``{"ticker", "window_start", "window_end", "open", "high", "low", "close", "volume", "trades"}``,
one per ticker and window once the window is closed by the watermark (trades later than the
watermark are dropped). The ``candles`` job (spark-apps/jobs/candles.py) and ``lanes demo trading``
run it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812

from lanes_spark.trading import trades


def candles(prices: DataFrame, window: str = "1 minute", watermark: str = "30 seconds") -> DataFrame:
    """OHLC, volume and trade count per ticker per event-time ``window``."""
    return (
        trades(prices)
        .withWatermark("event_time", watermark)
        .groupBy(F.window("event_time", window).alias("window"), "ticker")
        .agg(
            F.min_by("price", "event_time").alias("open"),
            F.max("price").alias("high"),
            F.min("price").alias("low"),
            F.max_by("price", "event_time").alias("close"),
            F.sum("size").alias("volume"),
            F.count(F.lit(1)).alias("trades"),
        )
    )


def candle_records(frame: DataFrame) -> DataFrame:
    """Candles as records: key ticker, value JSON."""
    return frame.select(
        F.col("ticker").alias("key"),
        F.to_json(
            F.struct(
                "ticker",
                F.date_format("window.start", "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("window_start"),
                F.date_format("window.end", "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("window_end"),
                "open",
                "high",
                "low",
                "close",
                "volume",
                "trades",
            )
        ).alias("value"),
    )
