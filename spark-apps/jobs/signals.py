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
import json
import sys
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from lanes_spark.trading import job_arguments, read_prices, run_job, trades, write_records

ORDER_SCHEMA = "ticker string, side string, price double, ts timestamp, short_ma double, long_ma double"
#: The window travels as JSON text: pyspark 4.3 cannot read an array in this state's schema back
#: (KeyError 'elementType' in the Python worker).
STATE_SCHEMA = "prices string, above boolean"


def crossovers(
    prices: list[float], above: bool | None, new: list[tuple[float, Any]], short: int, long: int
) -> tuple[list[tuple[str, float, Any, float, float]], list[float], bool | None]:
    """The pure core: feed ``new`` (price, time) trades in order to the window ``prices`` and the
    side ``above``; returns the orders (side, price, time, short_ma, long_ma) and the new state."""
    orders = []
    window = list(prices)
    for price, moment in new:
        window = [*window, price][-long:]
        if len(window) < long:
            continue
        short_ma = sum(window[-short:]) / short
        long_ma = sum(window) / long
        if short_ma == long_ma:
            continue
        now_above = short_ma > long_ma
        if above is not None and now_above != above:
            orders.append(("BUY" if now_above else "SELL", price, moment, short_ma, long_ma))
        above = now_above
    return orders, window, above


def signals(prices: DataFrame, short: int = 5, long: int = 20) -> DataFrame:
    """Order requests from the crossovers of each ticker's short and long moving averages."""

    def per_ticker(key: tuple[str], batches: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        window, above = (json.loads(state.get[0]), state.get[1]) if state.exists else ([], None)
        trades_in_order = pd.concat(list(batches)).sort_values("event_time", kind="stable")
        orders, window, above = crossovers(
            window, above, list(zip(trades_in_order["price"], trades_in_order["event_time"], strict=True)), short, long
        )
        state.update((json.dumps(window), above))
        yield pd.DataFrame(
            {
                "ticker": [key[0]] * len(orders),
                "side": [o[0] for o in orders],
                "price": [o[1] for o in orders],
                "ts": [o[2] for o in orders],
                "short_ma": [o[3] for o in orders],
                "long_ma": [o[4] for o in orders],
            }
        )

    return (
        trades(prices)
        .groupBy("ticker")
        .applyInPandasWithState(per_ticker, ORDER_SCHEMA, STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout)
    )


def as_records(orders: DataFrame, strategy: str) -> DataFrame:
    return orders.select(
        F.col("ticker").alias("key"),
        F.to_json(
            F.struct(
                "ticker",
                "side",
                "price",
                F.date_format("ts", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias("ts"),
                F.round("short_ma", 6).alias("short_ma"),
                F.round("long_ma", 6).alias("long_ma"),
                F.lit(strategy).alias("strategy"),
            )
        ).alias("value"),
    )


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
    return write_records(as_records(orders, options.strategy), options, options.orders, "signals")


def main(argv: list[str] | None = None) -> int:
    return run_job("signals", start, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
