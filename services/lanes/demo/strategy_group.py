"""Strategy ``xyz`` of the demo: a plain Python member of the consumer group
``trading-strategy.xyz`` running ``lanes.demo.strategies.breakouts`` per ticker, its order requests
on the orders topic.

Delivery: after each poll it produces the orders that poll's prices triggered, waits until they
are acknowledged, then commits the poll's offsets (at least once: a crash between the two sends
those orders again). Its per-ticker windows live in memory: a restarted strategy starts them empty.
Prices of one ticker come in order (they share a partition); a price older than the ticker's last
is counted in ``out_of_order`` (the demo shows it; it stays 0).

Threads: ``run`` on a thread of its own (``start``) until ``stop``; it alone writes the counters.
"""

from __future__ import annotations

import json
import logging
import threading

from lanes.client.consumer import Consumer
from lanes.client.producer import Producer
from lanes.demo.prices import NotAPriceError, iso_ms, parse_price
from lanes.demo.strategies import Order, breakouts

_log = logging.getLogger(__name__)

#: prices the breakout channel spans
LOOKBACK = 20


def breakout_order(ticker: str, order: Order, strategy: str) -> bytes:
    """An order request of the breakout strategy, as JSON (``order``'s time in epoch ms)."""
    side, price, ts_ms, high, low = order
    document = {
        "ticker": ticker,
        "side": side,
        "price": price,
        "ts": iso_ms(ts_ms),
        "high": high,
        "low": low,
        "strategy": strategy,
    }
    return json.dumps(document, separators=(",", ":")).encode()


class BreakoutStrategy:
    """The group member; ``consumer`` is subscribed by ``run``."""

    def __init__(
        self,
        consumer: Consumer,
        producer: Producer,
        *,
        prices: str,
        orders: str,
        strategy: str = "xyz",
        lookback: int = LOOKBACK,
    ) -> None:
        self._consumer = consumer
        self._producer = producer
        self._prices = prices
        self._orders = orders
        self._strategy = strategy
        self._lookback = lookback
        self._windows: dict[str, tuple[list[float], str | None]] = {}
        self._last_ts_ms: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.prices_seen = 0
        self.orders_sent = 0
        self.out_of_order = 0
        self.failure: BaseException | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run_logged, name="lanes-demo-strategy-xyz", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop after the poll under way (its orders sent, its offsets committed); leave the group."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run_logged(self) -> None:
        try:
            self.run()
        except Exception as exc:  # shown by the demo, which stops
            _log.exception("strategy %s failed", self._strategy)
            self.failure = exc

    def run(self) -> None:
        self._consumer.subscribe([self._prices])
        try:
            while not self._stop.is_set():
                records = self._consumer.poll(timeout_ms=200)
                if not records:
                    continue
                pending = []
                for record in records:
                    if record.value is None:
                        continue
                    for key, value in self._feed(record.value, record.key, record.timestamp):
                        pending.append(self._producer.send(self._orders, value, key))
                for future in pending:
                    future.result()
                self._consumer.commit()
        finally:
            self._consumer.close()
            self._producer.close()

    def _feed(self, value: bytes, key: bytes | None, timestamp_ms: int) -> list[tuple[bytes, bytes]]:
        """The orders one price triggers, as (key, value). A price whose ts is refused stops the
        strategy (RefusedTsError), as it fails the Spark jobs."""
        try:
            trade = parse_price(value, key, timestamp_ms)
        except NotAPriceError:
            return []  # the Spark jobs drop it too
        self.prices_seen += 1
        if trade.ts_ms < self._last_ts_ms.get(trade.ticker, trade.ts_ms):
            self.out_of_order += 1
        self._last_ts_ms[trade.ticker] = trade.ts_ms
        window, side = self._windows.get(trade.ticker, ([], None))
        orders, window, side = breakouts(window, side, [(trade.price, trade.ts_ms)], self._lookback)
        self._windows[trade.ticker] = (window, side)
        found = []
        for order in orders:
            found.append((trade.ticker.encode(), breakout_order(trade.ticker, order, self._strategy)))
            self.orders_sent += 1
        return found
