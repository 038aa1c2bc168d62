"""The trading demo's pure cores: the price feed's records and the two strategies' rules
(issue #40)."""

from __future__ import annotations

import json
import random

import pytest

from lanes.demo.prices import (
    FLOOR,
    STEP,
    NotAPriceError,
    PriceWalk,
    RefusedTsError,
    Trade,
    iso_ms,
    parse_price,
    price_record,
    tickers,
)
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


def test_prices_read_by_the_rules_the_spark_jobs_read_them_with() -> None:
    """``lanes_spark.trading.trades``'s rules (tests/spark/test_jobs.py checks Spark's side), so the
    Python strategy and the Spark one see the same trades."""
    key = b"MSFT"
    assert parse_price(b'{"price": 2}', key, MOMENT_MS) == Trade("MSFT", 2.0, 0, MOMENT_MS), "defaults"
    assert parse_price(b'{"price": 2, "ts": "1764000001250"}', key, MOMENT_MS).ts_ms == MOMENT_MS
    assert parse_price(b'{"price": 2, "ts": "2025-11-24T16:00:01.250999Z"}', key).ts_ms == MOMENT_MS, "cut, not rounded"
    assert parse_price(b'{"price": 2, "ts": "2025-11-24T16:00:01.250"}', key).ts_ms == MOMENT_MS, "no zone: UTC"
    for value in (b"[1]", b"nope", b'{"ticker": "A"}', b'{"ticker": "A", "price": "1"}', b'{"price": 1}'):
        with pytest.raises(NotAPriceError):
            parse_price(value, None, MOMENT_MS)  # dropped, as Spark drops them
    for ts in (b"1.5", b'"soon"', b"true", str(MOMENT_MS // 1000).encode()):
        with pytest.raises(RefusedTsError):
            parse_price(b'{"ticker": "A", "price": 1, "ts": ' + ts + b"}", None, MOMENT_MS)  # fails, as Spark fails


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
