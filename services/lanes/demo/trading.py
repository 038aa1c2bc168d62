"""``lanes demo trading``: the seeds' trading pipeline on a running cluster, with a live summary.

    feed --> prices --+--> Spark: candles ------------------------> candles
                      +--> Spark: strategy abc (group trading-strategy.abc) --> orders
                      +--> Python: strategy xyz (group trading-strategy.xyz) -> orders

The feed publishes a price walk keyed by ticker (``lanes.demo.feed``) on a market clock running
``speed`` times faster than real time, so one-minute candles close every few seconds. Strategy
``abc`` and the candles run as one Spark application (``lanes_spark.demo``, a process of its own);
strategy ``xyz`` is a group member in this process (``lanes.demo.strategy_group``). A new strategy
group starts where the prices topic ends when the demo starts (its first offsets are committed
before anything runs), as the Spark queries' first batches do, so both see the same prices.

``run`` prints each new candle and order (read back from their topics) and, every
``summary_every_s``, a line with prices in, candles out, orders per strategy and each group's lag,
until ``stop`` is called (Ctrl-C) or ``duration_s`` passes. Then, in order: the feed stops; the
Python strategy catches up with the last price and leaves its group; the Spark application
processes what is left, commits and exits; a final summary. The cluster keeps running.

Threads: ``run`` on the caller's thread; the feed and strategy ``xyz`` on threads of their own;
``stop`` may be called from a signal handler.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from lanes.client.admin import Admin
from lanes.client.consumer import Consumer, ConsumerRecord
from lanes.client.producer import Producer
from lanes.demo.feed import FeedSettings, PriceFeed
from lanes.demo.strategy_group import BreakoutStrategy
from lanes.errors import ErrorCode, LanesError, TopicAlreadyExistsError
from lanes.rpc.credentials import ClientCredentials
from lanes.rpc.tls import ClientTls
from lanes.topic_partition import TopicPartition

#: the strategies, each a consumer group ``<group_prefix>.<name>``
STRATEGIES = ("abc", "xyz")
SPARK_READY_TIMEOUT_S = 180
SPARK_STOP_TIMEOUT_S = 120
CATCH_UP_TIMEOUT_S = 60


@dataclass(frozen=True)
class Access:
    """How the demo's clients reach the cluster, and the environment that tells a Spark process
    the same (``LANES_TLS_CA``, ``LANES_USERNAME``, ``LANES_PASSWORD_FILE``)."""

    bootstrap: str
    tls: ClientTls
    credentials: ClientCredentials
    spark_environment: Mapping[str, str] = field(default_factory=dict)

    def admin(self) -> Admin:
        return Admin(self.bootstrap, tls=self.tls, credentials=self.credentials)

    def consumer(self, group_id: str | None = None) -> Consumer:
        """A consumer that commits only when told (``group_id``: of that group; a partition it
        has no offset for, one added to the topic meanwhile, is read from its start, as Spark's
        queries read new partitions)."""
        return Consumer(
            self.bootstrap,
            group_id=group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            tls=self.tls,
            credentials=self.credentials,
        )

    def producer(self) -> Producer:
        return Producer(self.bootstrap, tls=self.tls, credentials=self.credentials)


@dataclass(frozen=True)
class DemoSettings:
    tickers: int = 8
    rate_per_s: float = 40.0
    speed: float = 30.0
    window: str = "1 minute"
    watermark: str = "30 seconds"
    partitions: int = 6
    replication_factor: int = -1  # the cluster default
    duration_s: float | None = None
    summary_every_s: float = 2.0
    state_dir: Path = Path(".lanes/demo")
    prices: str = "prices"
    candles: str = "candles"
    orders: str = "orders"
    group_prefix: str = "trading-strategy"
    seed: int | None = None

    def group(self, strategy: str) -> str:
        return f"{self.group_prefix}.{strategy}"


class TradingDemo:
    """One run of the pipeline; see the module docstring."""

    def __init__(self, access: Access, settings: DemoSettings, out: TextIO = sys.stdout) -> None:
        self._access = access
        self._settings = settings
        self._out = out
        self._stop = threading.Event()
        self._spark: subprocess.Popen[str] | None = None
        self._lookups: Consumer | None = None
        self._started_s = 0.0
        self.candles_out = 0
        self.orders_out: Counter[str] = Counter()

    def stop(self) -> None:
        """End the run in order (from any thread, a signal handler included)."""
        self._stop.set()

    def abandon(self) -> None:
        """Give up on an orderly end: kill the Spark application."""
        if self._spark is not None and self._spark.poll() is None:
            self._spark.kill()
            self._spark.wait()

    # -----------------------------------------------------------------------------------------

    def run(self) -> int:
        """The whole run; 0 when every part ended cleanly. The Spark application runs in a
        process group of its own (out of the terminal's Ctrl-C): whatever ends the run, it is not
        left behind."""
        try:
            return self._run()
        finally:
            self.abandon()  # (after an orderly stop it has exited already)

    def _run(self) -> int:
        settings, access = self._settings, self._access
        self._started_s = time.monotonic()
        with access.admin() as admin, access.consumer() as lookups:
            self._lookups = lookups  # end offsets, for the whole run: one client, not one per lookup
            self._create_topics(admin)
            start = self._end_offsets(admin, settings.prices)
            if not start:
                self._say(f"the topic {settings.prices} is not served yet: try again in a moment")
                return 1
            for name in STRATEGIES:
                self._start_group_at(admin, settings.group(name), start)
            watch_from = {**self._end_offsets(admin, settings.candles), **self._end_offsets(admin, settings.orders)}
            self._say(
                f"lanes demo trading: {settings.tickers} tickers, {settings.rate_per_s:g} prices/s, market time "
                f"{settings.speed:g}x real time; candles of {settings.window}; "
                + ("Ctrl-C stops it" if settings.duration_s is None else f"for {settings.duration_s:g} s")
            )
            self._say("starting Spark (candles and strategy abc): its first start takes a while...")
            self._spark = self._start_spark(start)
            if not self._spark_ready() or self._stop.is_set():
                return 1
            feed_producer = access.producer()
            feed = PriceFeed(
                feed_producer,
                FeedSettings(
                    topic=settings.prices,
                    tickers=settings.tickers,
                    rate_per_s=settings.rate_per_s,
                    speed=settings.speed,
                    seed=settings.seed,
                ),
            )
            strategy = BreakoutStrategy(
                access.consumer(settings.group("xyz")),
                access.producer(),
                prices=settings.prices,
                orders=settings.orders,
                strategy="xyz",
            )
            strategy.start()
            feed.start()
            self._say("running: the feed, strategy xyz (Python group member), Spark (candles, strategy abc)")
            with access.consumer() as watcher:
                watcher.assign(list(watch_from))
                for partition, offset in watch_from.items():
                    watcher.seek(partition, offset)
                healthy = self._watch(admin, watcher, feed, strategy)
                feed.stop()
                feed_producer.close()
                self._say(f"stopping: the feed sent {feed.acknowledged:,} prices; the strategies finish them")
                end = self._end_offsets(admin, settings.prices)
                xyz = settings.group("xyz")
                caught_up = self._wait_for(
                    lambda: strategy.failure is not None or self._committed(admin, xyz) == end, CATCH_UP_TIMEOUT_S
                )
                strategy.stop()
                spark_ok = self._stop_spark()
                self._drain_watcher(watcher)
                self._summary(admin, feed, strategy, final=True)
        if strategy.failure is not None or feed.failure is not None:
            self._say(f"failed: {strategy.failure or feed.failure}")
        ok = healthy and caught_up and spark_ok and strategy.failure is None and feed.failure is None
        self._say("stopped" if ok else "stopped, not cleanly (see above)")
        return 0 if ok else 1

    # -----------------------------------------------------------------------------------------
    # setup

    def _create_topics(self, admin: Admin) -> None:
        settings = self._settings
        for topic in (settings.prices, settings.candles, settings.orders):
            try:
                admin.create_topic(
                    topic, partitions=settings.partitions, replication_factor=settings.replication_factor
                )
                self._say(f"created topic {topic} ({settings.partitions} partitions)")
            except TopicAlreadyExistsError:
                pass
        topics = (settings.prices, settings.candles, settings.orders)
        self._wait_for(lambda: all(self._end_offsets(admin, topic) for topic in topics), 30)

    def _end_offsets(self, admin: Admin, topic: str) -> dict[TopicPartition, int]:
        """Where each partition of ``topic`` ends now ({} while a new topic is not yet served)."""
        try:
            partitions = [TopicPartition(topic, p.partition) for p in admin.describe_topic(topic).partitions]
            assert self._lookups is not None  # (set by _run)
            return self._lookups.end_offsets(partitions)
        except LanesError as exc:
            if exc.retriable or exc.code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                return {}
            raise

    def _committed(self, admin: Admin, group: str) -> dict[TopicPartition, int]:
        try:
            description = admin.describe_group(group)
        except LanesError as exc:
            if exc.code is ErrorCode.GROUP_ID_NOT_FOUND:
                return {}
            raise
        return {
            TopicPartition(p.topic, p.partition): p.committed_offset
            for p in description.offsets
            if p.topic == self._settings.prices
        }

    def _start_group_at(self, admin: Admin, group: str, offsets: dict[TopicPartition, int]) -> None:
        """A group that has no offsets yet starts at ``offsets`` (the prices topic's end now)."""
        if self._committed(admin, group):
            return
        with self._access.consumer(group) as committer:
            committer.commit(offsets)

    # -----------------------------------------------------------------------------------------
    # Spark

    def _start_spark(self, start: dict[TopicPartition, int]) -> subprocess.Popen[str]:
        settings = self._settings
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        starting = {settings.prices: {str(tp.partition): offset for tp, offset in start.items()}}
        command = [
            sys.executable,
            "-m",
            "lanes_spark.demo",
            "--bootstrap",
            self._access.bootstrap,
            "--checkpoints",
            str((settings.state_dir / "checkpoints").absolute()),
            "--prices",
            settings.prices,
            "--candles",
            settings.candles,
            "--orders",
            settings.orders,
            "--group",
            settings.group("abc"),
            "--strategy",
            "abc",
            "--window",
            settings.window,
            "--watermark",
            settings.watermark,
            "--starting-offsets",
            json.dumps(starting),
        ]
        environment = {
            **os.environ,
            "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            **self._access.spark_environment,
        }
        log = open(settings.state_dir / "spark.log", "ab")  # noqa: SIM115 - the child keeps it
        try:
            return subprocess.Popen(
                command,
                stdin=subprocess.PIPE,  # closed when the demo is gone, however it ends: the application stops
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=environment,
                process_group=0,  # the terminal's Ctrl-C reaches the demo, which stops Spark in order
            )
        finally:
            log.close()

    def _spark_ready(self) -> bool:
        """Wait until the application says ``running`` (or exits, or the demo is stopped, or
        ``SPARK_READY_TIMEOUT_S`` pass); its later output goes to its log."""
        spark = self._spark
        assert spark is not None
        assert spark.stdout is not None
        ready = threading.Event()
        stdout = spark.stdout
        log_path = self._settings.state_dir / "spark.log"

        def read_output() -> None:
            with open(log_path, "a") as log:
                for line in stdout:
                    if line.strip() == "running":
                        ready.set()
                    else:
                        log.write(line)
                        log.flush()

        threading.Thread(target=read_output, name="lanes-demo-spark-output", daemon=True).start()
        deadline = time.monotonic() + SPARK_READY_TIMEOUT_S
        while not ready.wait(0.2):
            if spark.poll() is not None or self._stop.is_set() or time.monotonic() > deadline:
                break
        if ready.is_set():
            return True
        if self._stop.is_set():
            return False
        tail = log_path.read_text(errors="replace").strip().splitlines()[-5:]
        if spark.poll() is None:
            self._say(f"Spark did not start within {SPARK_READY_TIMEOUT_S} s; the end of {log_path}:")
        else:
            self._say(f"Spark did not start (exit {spark.returncode}); the end of {log_path}:")
        for text in tail:
            self._say(f"  {text}")
        return False

    def _stop_spark(self) -> bool:
        spark = self._spark
        if spark is None or spark.poll() is not None:
            return spark is not None and spark.returncode == 0
        spark.terminate()  # it processes what is left, commits, exits
        try:
            return spark.wait(SPARK_STOP_TIMEOUT_S) == 0
        except subprocess.TimeoutExpired:
            spark.kill()
            spark.wait()
            self._say(f"Spark did not stop within {SPARK_STOP_TIMEOUT_S} s: killed")
            return False

    # -----------------------------------------------------------------------------------------
    # the live view

    def _watch(self, admin: Admin, watcher: Consumer, feed: PriceFeed, strategy: BreakoutStrategy) -> bool:
        """Print what comes out until stopped or the duration passes; False when a part failed."""
        settings = self._settings
        deadline = None if settings.duration_s is None else time.monotonic() + settings.duration_s
        next_summary = time.monotonic() + settings.summary_every_s
        while not self._stop.is_set() and (deadline is None or time.monotonic() < deadline):
            self._show(watcher.poll(timeout_ms=200))
            if time.monotonic() >= next_summary:
                next_summary += settings.summary_every_s
                self._summary(admin, feed, strategy)
            if self._spark is not None and self._spark.poll() is not None:
                self._say(f"Spark exited ({self._spark.returncode}); see {settings.state_dir / 'spark.log'}")
                return False
            if strategy.failure is not None or feed.failure is not None:
                return False
        return True

    def _drain_watcher(self, watcher: Consumer) -> None:
        while records := watcher.poll(timeout_ms=500):
            self._show(records)

    def _show(self, records: list[ConsumerRecord]) -> None:
        for record in records:
            topic, value = record.topic, record.value
            if value is None:
                continue
            try:
                document = json.loads(value)
            except ValueError:
                continue
            if topic == self._settings.candles:
                self.candles_out += 1
                window = f"{document['window_start'][11:16]}-{document['window_end'][11:16]}"
                self._say(
                    f"  candle {document['ticker']:<5} {window}"
                    f"  open {document['open']:.2f}  high {document['high']:.2f}  low {document['low']:.2f}"
                    f"  close {document['close']:.2f}  volume {document['volume']:,} ({document['trades']} trades)"
                )
            elif topic == self._settings.orders:
                strategy = str(document.get("strategy", "?"))
                self.orders_out[strategy] += 1
                self._say(
                    f"  order  {strategy:<5} {document['side']:<4} {document['ticker']:<5} @ {document['price']:.2f}"
                    f"  {str(document['ts'])[11:19]}"
                )

    def _summary(self, admin: Admin, feed: PriceFeed, strategy: BreakoutStrategy, *, final: bool = False) -> None:
        lags = []
        for name in STRATEGIES:
            try:
                lags.append(f"{name} {admin.describe_group(self._settings.group(name)).total_lag:,}")
            except Exception:  # the summary goes on without it
                lags.append(f"{name} ?")
        elapsed = time.monotonic() - self._started_s
        orders = ", ".join(f"{name} {self.orders_out[name]:,}" for name in STRATEGIES)
        self._say(
            f"[{elapsed:5.0f} s]{' final:' if final else ''} prices in {feed.acknowledged:,} | candles out "
            f"{self.candles_out:,} | orders {orders} | lag {', '.join(lags)}"
            + (f" | out of order {strategy.out_of_order}" if strategy.out_of_order else "")
        )

    # -----------------------------------------------------------------------------------------

    def _wait_for(self, condition: Callable[[], object], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def _say(self, line: str) -> None:
        print(line, file=self._out, flush=True)
