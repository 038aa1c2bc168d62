"""Signals: a moving-average crossover per ticker, from ``prices`` to order requests on ``orders``.

For each ticker, in event-time order, the average of its last ``--short`` prices and of its last
``--long`` prices; when the short average crosses above the long one the job emits a BUY order
request, when it crosses below a SELL (the first comparison only sets the side, it is not a
cross). The per-ticker state (the last ``--long`` prices and the side) lives in Spark's state
store through ``applyInPandasWithState``, so it survives restarts with the checkpoint. Prices of
one ticker share a partition (they are keyed by ticker), so they arrive in order.

Output records keyed by ticker: ``{"ticker", "side", "price", "ts", "short_ma", "long_ma",
"strategy"}``, the order requests the seeds' ``order-execution`` group consumes.

    spark-submit spark-apps/jobs/signals.py --bootstrap 127.0.0.1:9092 --checkpoint /tmp/signals
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from lanes_spark.signals import order_records, signals
from lanes_spark.trading import job_arguments, read_prices, run_job, write_records


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = job_arguments("signals", __doc__.splitlines()[0], "orders")
    parser.add_argument("--short", type=int, default=5, help="prices in the short moving average")
    parser.add_argument("--long", type=int, default=20, help="prices in the long moving average")
    parser.add_argument("--strategy", default="ma-crossover", help="named in every order request")
    options = parser.parse_args(argv)
    if not 1 <= options.short < options.long:
        parser.error("--short must be at least 1 and below --long")
    return options


def start(spark: SparkSession, options: argparse.Namespace) -> StreamingQuery:
    """Start the streaming query; returns it."""
    orders = signals(read_prices(spark, options), options.short, options.long)
    return write_records(order_records(orders, options.strategy), options, options.orders, "signals")


def main(argv: list[str] | None = None) -> int:
    return run_job("signals", start, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
