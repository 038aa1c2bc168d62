"""Candles: open, high, low, close and volume per ticker per minute, from ``prices`` to ``candles``.

Input: records of ``prices`` keyed by ticker, with JSON values such as
``{"ticker": "AAPL", "price": 190.25, "size": 100, "ts": "2026-11-23T16:00:01.250Z"}``
(``lanes_spark.trading``: ``ts`` is the trade's event time).
Output: one record per ticker and window once the window is closed (event-time windows with a
watermark: trades arriving later than the watermark are dropped), keyed by ticker, with
``{"ticker", "window_start", "window_end", "open", "high", "low", "close", "volume", "trades"}``.

Run it locally against ``lanes up`` (docs/spark.md):

    spark-submit spark-apps/jobs/candles.py --bootstrap 127.0.0.1:9092 --checkpoint /tmp/candles
    cd spark-apps && python -m jobs.candles --bootstrap 127.0.0.1:9092 --checkpoint /tmp/candles

and on Kubernetes as deploy/spark/candles.yaml (a SparkApplication on the lanes-spark image).
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from lanes_spark.candles import candle_records, candles
from lanes_spark.trading import job_arguments, read_prices, run_job, write_records


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = job_arguments("candles", __doc__.splitlines()[0], "candles")
    parser.add_argument("--window", default="1 minute")
    parser.add_argument("--watermark", default="30 seconds", help="how late a trade may arrive")
    return parser.parse_args(argv)


def start(spark: SparkSession, options: argparse.Namespace) -> StreamingQuery:
    """Start the streaming query; returns it."""
    frame = candles(read_prices(spark, options), options.window, options.watermark)
    return write_records(candle_records(frame), options, options.candles, "candles")


def main(argv: list[str] | None = None) -> int:
    return run_job("candles", start, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
