"""The demo's two trading strategies as pure rules over one ticker's prices in event-time order
(a pure core): each takes its state and the new (price, time) trades, and returns the order
requests those trades trigger and the new state. The Spark job ``signals`` runs the first in
Spark's state store; the demo's Python group consumer runs the second; tests compute both again.

- ``crossovers`` (strategy ``abc``): the average of the last ``short`` prices against that of the
  last ``long``; BUY when the short one crosses above, SELL when it crosses below (the first
  comparison only sets the side).
- ``breakouts`` (strategy ``xyz``): BUY when a price rises above the highest of the previous
  ``lookback`` prices, SELL when it falls below the lowest, each only when the last order was not
  the same side.

An order is (side, price, time, a, b): for crossovers the short and long averages, for breakouts
the channel's high and low before the trade.
"""

from __future__ import annotations

from typing import Any

Order = tuple[str, float, Any, float, float]


def crossovers(
    prices: list[float], above: bool | None, new: list[tuple[float, Any]], short: int, long: int
) -> tuple[list[Order], list[float], bool | None]:
    """Feed ``new`` trades in order to the window ``prices`` (the last ``long`` ones) and the side
    ``above``; the orders and the new (window, side)."""
    orders: list[Order] = []
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


def breakouts(
    prices: list[float], side: str | None, new: list[tuple[float, Any]], lookback: int
) -> tuple[list[Order], list[float], str | None]:
    """Feed ``new`` trades in order to the window ``prices`` (the last ``lookback`` ones) and the
    last order's ``side``; the orders and the new (window, side)."""
    orders: list[Order] = []
    window = list(prices)
    for price, moment in new:
        if len(window) == lookback:
            high, low = max(window), min(window)
            if price > high and side != "BUY":
                side = "BUY"
                orders.append((side, price, moment, high, low))
            elif price < low and side != "SELL":
                side = "SELL"
                orders.append((side, price, moment, high, low))
        window = [*window, price][-lookback:]
    return orders, window, side
