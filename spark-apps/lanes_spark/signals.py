"""Signals (the trading example's strategy in Spark): a moving-average crossover per ticker
(``lanes.demo.strategies.crossovers``), from price records to order requests keyed by ticker with
JSON ``{"ticker", "side", "price", "ts", "short_ma", "long_ma", "strategy"}``. The per-ticker state
(the last ``long`` prices and the side) lives in Spark's state store through
``applyInPandasWithState``, so it survives restarts with the checkpoint. Prices of one ticker share
a partition (they are keyed by ticker), so they arrive in order. The ``signals`` job
(spark-apps/jobs/signals.py) and ``lanes demo trading`` run it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from lanes.demo.strategies import crossovers
from lanes_spark.trading import trades

ORDER_SCHEMA = "ticker string, side string, price double, ts timestamp, short_ma double, long_ma double"
#: The window travels as JSON text: pyspark 4.3 cannot read an array in this state's schema back
#: (KeyError 'elementType' in the Python worker).
STATE_SCHEMA = "prices string, above boolean"


def signals(prices: DataFrame, short: int = 5, long: int = 20) -> DataFrame:
    """Order requests from the crossovers of each ticker's short and long moving averages."""

    def per_ticker(key: tuple[str], batches: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        window, above = (json.loads(state.get[0]), state.get[1]) if state.exists else ([], None)
        trades_in_order = pd.concat(list(batches)).sort_values("offset", kind="stable")  # the log's order
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


def order_records(orders: DataFrame, strategy: str) -> DataFrame:
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
