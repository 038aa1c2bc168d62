"""The trading demo's pure cores: the price feed's records and the two strategies' rules
(issue #40)."""

from __future__ import annotations

import json
import random

import pytest

from lanes.demo.prices import FLOOR, STEP, PriceWalk, Trade, iso_ms, parse_price, price_record, tickers
from lanes.demo.strategies import breakouts, crossovers

MOMENT_MS = 1_764_000_001_250  # 2025-11-24T16:00:01.250Z


def test_a_walk_moves_each_ticker_by_at_most_a_step_and_its_times_strictly_increase() -> None:
    names = tickers(12)
    assert len(set(names)) == 12
    assert names[:2] == ["AAPL", "MSFT"]
    walk = PriceWalk(names, random.Random(7))
    last: dict[str, Trade] = {}
    for n in range(5_000):
        trade = walk.next(MOMENT_MS + n // 40)  # many trades share a millisecond of the market clock
        before = last.get(trade.ticker)
        if before is not None:
            assert abs(trade.price - before.price) <= STEP + 0.005
            assert trade.ts_ms > before.ts_ms
        assert trade.price >= FLOOR
        assert 1 <= trade.size <= 500
        last[trade.ticker] = trade
    assert set(last) == set(names), "every ticker in turn"


@pytest.mark.parametrize("ts_format", ["iso", "epoch-ms"])
def test_a_price_record_is_keyed_by_ticker_and_reads_back_in_either_ts_format(ts_format: str) -> None:
    trade = Trade("NVDA", 143.25, 100, MOMENT_MS)
    key, value = price_record(trade, ts_format)  # type: ignore[arg-type]
    document = json.loads(value)
    assert key == b"NVDA"
    assert document["ts"] == ("2025-11-24T16:00:01.250Z" if ts_format == "iso" else MOMENT_MS)
    assert parse_price(value) == trade
    assert iso_ms(MOMENT_MS) == "2025-11-24T16:00:01.250Z"


def test_a_value_that_is_not_a_price_is_refused() -> None:
    for value in (b"{}", b'{"ticker": "A", "price": 1, "ts": 1.5}', b'{"ticker": "A", "price": 1, "ts": "soon"}'):
        with pytest.raises((ValueError, KeyError)):
            parse_price(value)


def test_crossovers_buy_when_the_short_average_crosses_above_and_sell_below() -> None:
    falling_then_rising = [(float(p), n) for n, p in enumerate([*range(30, 10, -1), *range(11, 40)])]
    orders, window, above = crossovers([], None, falling_then_rising, 3, 10)
    assert [side for side, *_ in orders] == ["BUY"]
    assert (len(window), above) == (10, True)
    orders, _, _ = crossovers(window, above, [(1.0, 100), (1.0, 101), (1.0, 102)], 3, 10)
    assert [side for side, *_ in orders] == ["SELL"]


def test_breakouts_buy_above_the_channel_sell_below_and_never_twice_the_same_side() -> None:
    flat = [(10.0, n) for n in range(5)]
    orders, window, side = breakouts([], None, flat, 5)
    assert (orders, side) == ([], None), "a channel needs its lookback first"
    orders, window, side = breakouts(window, side, [(11.0, 5), (12.0, 6), (10.5, 7)], 5)
    assert orders == [("BUY", 11.0, 5, 10.0, 10.0)], "the second rise is still BUY: no new order"
    orders, window, side = breakouts(window, side, [(9.0, 8)], 5)
    assert orders == [("SELL", 9.0, 8, 12.0, 10.0)]
    assert window == [10.0, 11.0, 12.0, 10.5, 9.0]
    split = breakouts([], None, [*flat, (11.0, 5), (9.0, 6)], 5)
    whole = breakouts(*breakouts([], None, flat, 5)[1:], [(11.0, 5), (9.0, 6)], 5)
    assert split == whole, "fed in pieces or at once, the same orders and state"
