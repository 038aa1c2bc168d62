"""The price feed's records (a pure core): a random walk of trades for N tickers, in the format the
trading jobs read (``lanes_spark.trading``, docs/demo.md).

A price record is keyed by its ticker, its value JSON::

    {"ticker": "AAPL", "price": 190.25, "size": 100, "ts": "2026-11-23T16:00:01.250Z"}

``ts`` is the trade's event time: an ISO-8601 string (UTC, milliseconds) by default, or epoch
milliseconds (a JSON integer) with ``ts_format="epoch-ms"``; readers take either. Prices move by
at most ``STEP`` per trade (never below ``FLOOR``), rounded to cents; event times of one ticker
strictly increase.

Randomness and time are given: the feed's market clock is the caller's (``PriceWalk.next`` takes
the event time of the trade).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

#: largest move of a price per trade
STEP = 0.5
#: prices never go below this
FLOOR = 1.0
#: how the feed writes ``ts``
TsFormat = Literal["iso", "epoch-ms"]
TS_FORMATS: tuple[TsFormat, ...] = ("iso", "epoch-ms")
#: tickers the feed names when asked for N of them: these first, then T011, T012, ...
KNOWN_TICKERS = ("AAPL", "MSFT", "NVDA", "AMZN", "GOOG", "META", "TSLA", "NFLX", "AMD", "INTC")


@dataclass(frozen=True)
class Trade:
    """One trade: ``ts_ms`` its event time in epoch milliseconds."""

    ticker: str
    price: float
    size: int
    ts_ms: int


def tickers(count: int) -> list[str]:
    """``count`` distinct ticker names."""
    return [*KNOWN_TICKERS[:count], *(f"T{n:03d}" for n in range(len(KNOWN_TICKERS) + 1, count + 1))]


def iso_ms(ts_ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds: ``2026-11-23T16:00:01.250Z``."""
    moment = datetime.fromtimestamp(ts_ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts_ms % 1000:03d}Z"


class PriceWalk:
    """Trades of ``names`` in turn, each price a random walk from a random start in [50, 250)."""

    def __init__(self, names: list[str], rng: random.Random) -> None:
        if not names:
            raise ValueError("a price walk needs at least one ticker")
        self._rng = rng
        self._prices = {name: round(50 + rng.random() * 200, 2) for name in names}
        self._last_ts_ms = dict.fromkeys(names, -1)
        self._names = names
        self._turn = 0

    def next(self, ts_ms: int) -> Trade:
        """The next ticker's next trade at ``ts_ms`` (moved past its last trade's time if not later)."""
        name = self._names[self._turn % len(self._names)]
        self._turn += 1
        price = round(max(FLOOR, self._prices[name] + self._rng.uniform(-STEP, STEP)), 2)
        self._prices[name] = price
        ts_ms = max(ts_ms, self._last_ts_ms[name] + 1)
        self._last_ts_ms[name] = ts_ms
        return Trade(name, price, self._rng.randint(1, 500), ts_ms)


def price_record(trade: Trade, ts_format: TsFormat = "iso") -> tuple[bytes, bytes]:
    """The trade as a ``prices`` record: (key, value)."""
    ts: str | int = iso_ms(trade.ts_ms) if ts_format == "iso" else trade.ts_ms
    value = {"ticker": trade.ticker, "price": trade.price, "size": trade.size, "ts": ts}
    return trade.ticker.encode(), json.dumps(value, separators=(",", ":")).encode()


class NotAPriceError(ValueError):
    """A value that is not a price record: readers drop it (the Spark jobs do too)."""


class RefusedTsError(ValueError):
    """A price whose ``ts`` readers refuse: it fails them, naming why (the Spark jobs fail too)."""


def parse_price(value: bytes, key: bytes | None = None, timestamp_ms: int | None = None) -> Trade:
    """A ``prices`` record as a Trade, by the rules the Spark jobs read it with
    (``lanes_spark.trading.trades``): ``ticker`` defaults to the key, ``size`` to 0, ``ts`` to
    the record's timestamp; ``ts`` is ISO-8601 (without a zone: UTC; below a millisecond cut) or
    epoch milliseconds, a JSON integer or a string of digits, within ``TS_BOUND_MS`` of the
    record's timestamp. NotAPriceError (to drop) or RefusedTsError (to fail)."""
    try:
        document = json.loads(value)
    except ValueError:
        raise NotAPriceError("not JSON") from None
    if not isinstance(document, dict):
        raise NotAPriceError("not a JSON object")
    price, ticker = document.get("price"), document.get("ticker")
    if ticker is None and key is not None:
        ticker = key.decode(errors="replace")
    if isinstance(price, bool) or not isinstance(price, (int, float)) or ticker is None:
        raise NotAPriceError("no price or no ticker")
    size = document.get("size")
    size = size if isinstance(size, int) and not isinstance(size, bool) else 0
    return Trade(str(ticker), float(price), size, _ts_ms(document.get("ts"), timestamp_ms))


#: how far a ``ts`` in epoch milliseconds may be from its record's timestamp
TS_BOUND_MS = 365 * 86_400_000
_DIGITS = re.compile(r"-?[0-9]{1,18}")


def _ts_ms(ts: object, timestamp_ms: int | None) -> int:
    if ts is None:
        if timestamp_ms is None:
            raise RefusedTsError("no ts and no record timestamp")
        return timestamp_ms
    text = ts if isinstance(ts, str) else json.dumps(ts)
    if _DIGITS.fullmatch(text):
        ts_ms = int(text)
        if timestamp_ms is not None and abs(ts_ms - timestamp_ms) > TS_BOUND_MS:
            raise RefusedTsError(f"ts {text} is more than 365 days from the record's timestamp (epoch seconds?)")
        return ts_ms
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise RefusedTsError(f"ts {text} is neither ISO-8601 nor epoch milliseconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
