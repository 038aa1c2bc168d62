"""The price feed as a running thing: a ``PriceWalk`` published to a topic at a steady rate, on a
market clock that may run faster than real time (``lanes demo prices``; ``lanes demo trading``).

Threads: ``run`` loops on the caller's thread (``lanes demo prices``) or on a thread of its own
(``PriceFeed.start``) until ``stop``, and alone writes ``sent``; ``acknowledged`` and ``failure``
are written by the producer's delivery callbacks (its client's event-loop thread).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from lanes.client._record_future import RecordFuture
from lanes.client.producer import Producer
from lanes.demo.prices import PriceWalk, TsFormat, price_record, tickers

#: the feed sends what is due every this many seconds
TICK_S = 0.01


@dataclass(frozen=True)
class FeedSettings:
    """``rate_per_s`` trades a second over ``tickers`` tickers; ``speed``: market seconds per real
    second (event times run that much faster); ``count``: stop after this many (None: until
    stopped)."""

    topic: str = "prices"
    tickers: int = 8
    rate_per_s: float = 50.0
    speed: float = 1.0
    ts_format: TsFormat = "iso"
    count: int | None = None
    seed: int | None = None


class PriceFeed:
    """Publishes a price walk with ``producer`` (keyed by ticker) per ``settings``."""

    def __init__(
        self,
        producer: Producer,
        settings: FeedSettings,
        *,
        wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        monotonic_s: Callable[[], float] = time.monotonic,
    ) -> None:
        self._producer = producer
        self._settings = settings
        self._walk = PriceWalk(tickers(settings.tickers), random.Random(settings.seed))
        self._wall_ms = wall_ms
        self._monotonic_s = monotonic_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: records handed to the producer
        self.sent = 0
        #: records the cluster acknowledged
        self.acknowledged = 0
        #: the first delivery failure, if any
        self.failure: BaseException | None = None

    def start(self) -> None:
        """Run on a thread of its own (what stops it early is in ``failure``)."""
        self._thread = threading.Thread(target=self._run_caught, name="lanes-demo-feed", daemon=True)
        self._thread.start()

    def _run_caught(self) -> None:
        try:
            self.run()
        except Exception as exc:  # the caller reads it
            if self.failure is None:
                self.failure = exc

    def finished(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for ``run`` to end by itself (``count`` sent); whether it did."""
        if self._thread is None:
            return False
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Stop sending and wait until everything sent is acknowledged (or failed)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._producer.flush()

    def run(self) -> None:
        """Send until stopped or ``count`` are sent: every ``TICK_S`` what the rate makes due."""
        settings = self._settings
        started_s = self._monotonic_s()
        market_start_ms = self._wall_ms()
        while not self._stop.is_set() and self.failure is None:
            elapsed_s = self._monotonic_s() - started_s
            due = int(elapsed_s * settings.rate_per_s) + 1
            if settings.count is not None:
                due = min(due, settings.count)
            ts_ms = market_start_ms + int(elapsed_s * settings.speed * 1000)
            while self.sent < due:
                key, value = price_record(self._walk.next(ts_ms), settings.ts_format)
                self._producer.send(settings.topic, value, key).add_done_callback(self._delivered)
                self.sent += 1
            if settings.count is not None and self.sent >= settings.count:
                break
            self._stop.wait(TICK_S)
        self._producer.flush()

    def _delivered(self, future: RecordFuture) -> None:
        error = future.exception()
        if error is None:
            self.acknowledged += 1
        elif self.failure is None:
            self.failure = error
