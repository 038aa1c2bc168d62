"""``lanes demo``: the seeds' trading example, runnable (docs/demo.md).

- ``lanes demo prices``: a price feed (a random walk per ticker, keyed by ticker, JSON with ``ts``
  ISO-8601 or epoch milliseconds) at a chosen rate: the demo's input, or a load generator.
- ``lanes demo trading``: the whole pipeline on the local cluster (started in the background when
  none runs here): the feed, candles and strategy ``abc`` in Spark, strategy ``xyz`` as a Python
  group member, with a live summary until Ctrl-C (``lanes_spark`` and Java needed: ``make demo``
  installs both).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lanes.cli.common import (
    CLUSTER_FILE,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    Stop,
    add_command,
    add_group,
    admin_for,
    bootstrap_of,
    resolve_credentials,
    resolve_tls,
)
from lanes.cli.local import is_lanes_process, read_cluster_file
from lanes.cli.values import positive_int
from lanes.client.producer import Producer
from lanes.demo.feed import FeedSettings, PriceFeed
from lanes.demo.prices import TS_FORMATS
from lanes.demo.trading import Access, DemoSettings, TradingDemo
from lanes.errors import TopicAlreadyExistsError
from lanes.rpc.credentials import Credentials, UserPassword
from lanes.rpc.tls import TlsFiles

#: partitions of topics the demo creates
PARTITIONS = 6
#: the oldest Java Spark 4 runs on
MIN_JAVA = 17


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"{text} is not in (0, 1000000]")
    return value


def prices(options: argparse.Namespace) -> int:
    """Publish a price walk until Ctrl-C, ``--count`` or ``--duration``."""
    stop = Stop()
    with admin_for(options) as admin:
        try:
            admin.create_topic(options.topic, partitions=PARTITIONS)
            print(f"created topic {options.topic} ({PARTITIONS} partitions)", file=sys.stderr)
        except TopicAlreadyExistsError:
            pass
    settings = FeedSettings(
        topic=options.topic,
        tickers=options.tickers,
        rate_per_s=options.rate,
        speed=options.speed,
        ts_format=options.ts_format,
        count=options.count,
        seed=options.seed,
    )
    started = time.monotonic()
    with Producer(bootstrap_of(options), tls=resolve_tls(), credentials=resolve_credentials()) as producer:
        feed = PriceFeed(producer, settings)
        feed.start()
        deadline = None if options.duration is None else started + options.duration
        while not stop and not feed.finished(0.2) and (deadline is None or time.monotonic() < deadline):
            pass
        feed.stop()
    elapsed = time.monotonic() - started
    if feed.failure is not None:
        raise feed.failure
    print(
        f"sent {feed.acknowledged:,} prices of {settings.tickers} tickers to {options.topic} "
        f"in {elapsed:.1f} s ({feed.acknowledged / elapsed:,.0f}/s)"
    )
    return EXIT_INTERRUPTED if stop else 0


def _spark_missing() -> str | None:
    """What the demo's Spark application needs and this machine lacks, if anything."""
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("lanes_spark") is None:
        return "pyspark is not installed: pip install 'lanes[spark]' (make demo installs it)"
    java = shutil.which("java") or str(Path(os.environ.get("JAVA_HOME", "/nonexistent")) / "bin" / "java")
    version = _java_major_version(java)
    if version is None or version < MIN_JAVA:
        found = "none found" if version is None else f"found Java {version}"
        return (
            f"Spark needs a Java runtime, {MIN_JAVA} or later ({found}; "
            "make demo installs Debian's default-jre-headless)"
        )
    return None


def _java_major_version(java: str) -> int | None:
    """The major version ``java -version`` reports (``openjdk version "17.0.9"``: 17), if it runs."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major  # "1.8.0": Java 8


def _cluster_here() -> dict[str, Any] | None:
    """The cluster ``lanes up`` runs from ./.lanes, if one does."""
    description = read_cluster_file(CLUSTER_FILE.parent)
    if description and is_lanes_process(int(description["pid"])):
        return description
    return None


def _start_cluster() -> bool:
    print("no cluster runs from ./.lanes: starting one in the background (lanes up --detach)", flush=True)
    done = subprocess.run([sys.executable, "-m", "lanes.cli", "up", "--detach"], check=False)
    return done.returncode == 0


def _spark_environment(tls: TlsFiles | None, credentials: Credentials | None) -> dict[str, str]:
    """The environment that tells the Spark application (and its executors) what the demo's own
    clients use: the CA and client certificate (absolute paths: it runs elsewhere) and the user,
    by its password file when ``./.lanes/cluster.json`` names one, else by the password itself."""
    environment: dict[str, str] = {}
    if tls is not None:
        environment["LANES_TLS_CA"] = str(tls.ca_file.absolute())
        if tls.cert_file is not None and tls.key_file is not None:
            environment["LANES_TLS_CERT"] = str(tls.cert_file.absolute())
            environment["LANES_TLS_KEY"] = str(tls.key_file.absolute())
    if isinstance(credentials, UserPassword):
        environment["LANES_USERNAME"] = credentials.username
        password_file = os.environ.get("LANES_PASSWORD_FILE") or _cluster_password_file(credentials.username)
        if password_file:
            environment["LANES_PASSWORD_FILE"] = str(Path(password_file).absolute())
        else:
            environment["LANES_PASSWORD"] = credentials.password
    return environment


def _cluster_password_file(username: str) -> str | None:
    user = (read_cluster_file(CLUSTER_FILE.parent) or {}).get("user") or {}
    return str(user["password_file"]) if user.get("name") == username and user.get("password_file") else None


def trading(options: argparse.Namespace) -> int:
    """Run the pipeline until Ctrl-C or ``--duration``."""
    missing = _spark_missing()
    if missing:
        print(f"lanes: {missing}", file=sys.stderr)
        return EXIT_REFUSED
    given = options.bootstrap or os.environ.get("LANES_BOOTSTRAP")
    if not given and _cluster_here() is None and not _start_cluster():
        return EXIT_REFUSED
    tls, credentials = resolve_tls(), resolve_credentials()
    access = Access(bootstrap_of(options), tls, credentials, _spark_environment(tls, credentials))
    demo = TradingDemo(
        access,
        DemoSettings(
            tickers=options.tickers,
            rate_per_s=options.rate,
            speed=options.speed,
            window=options.window,
            duration_s=options.duration,
            state_dir=options.state_dir,
            prices=options.prices,
            candles=options.candles,
            orders=options.orders,
            group_prefix=options.group_prefix,
            seed=options.seed,
        ),
    )
    interrupted: list[bool] = []

    def on_signal(*_: object) -> None:
        if interrupted:  # a second Ctrl-C: do not wait for the orderly stop
            raise KeyboardInterrupt
        interrupted.append(True)
        print("\nstopping in order (Ctrl-C again to abandon it)", flush=True)
        demo.stop()

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGHUP: the terminal closed
        signal.signal(signum, on_signal)
    try:
        return demo.run()
    except KeyboardInterrupt:
        demo.abandon()
        return EXIT_INTERRUPTED


def register(commands: Any) -> None:
    """Add ``demo prices`` and ``demo trading`` to the ``lanes`` parser."""
    demo = add_group(commands, "demo", "the seeds' trading example: a price feed and the whole pipeline")
    parser = add_command(
        demo,
        "prices",
        summary="publish random-walk prices keyed by ticker (the trading demo's feed; a load generator)",
        examples="""
lanes demo prices                                  # 50 prices/s of 8 tickers to prices until Ctrl-C
lanes demo prices --rate 5000 --tickers 100 --count 1000000
lanes demo prices --ts-format epoch-ms --speed 60  # ts as epoch ms; market time 60x real time""",
        run=prices,
        description=(
            "Publish a random walk of trades, one ticker after another, keyed by ticker, as JSON "
            '{"ticker", "price", "size", "ts"} (ts: the trade\'s event time, ISO-8601 UTC or epoch '
            "milliseconds). Creates the topic (6 partitions) when it does not exist."
        ),
    )
    parser.add_argument("--topic", default="prices", help="where to publish (default prices)")
    parser.add_argument("--tickers", type=positive_int, default=8, help="how many tickers (default 8)")
    parser.add_argument("--rate", type=_positive_float, default=50.0, help="prices per second (default 50)")
    parser.add_argument("--speed", type=_positive_float, default=1.0, help="market seconds per real second (default 1)")
    parser.add_argument("--ts-format", choices=TS_FORMATS, default="iso", help="how ts is written (default iso)")
    parser.add_argument("--count", type=positive_int, default=None, help="stop after this many prices")
    parser.add_argument("--duration", type=_positive_float, default=None, help="stop after this many seconds")
    parser.add_argument("--seed", type=int, default=None, help="the same prices every time")

    parser = add_command(
        demo,
        "trading",
        summary="run the seeds' trading pipeline on the local cluster with a live summary",
        examples="""
lanes demo trading                  # until Ctrl-C (make demo: the same, with what it needs installed)
lanes demo trading --duration 60    # a bounded run
lanes demo trading --rate 200 --tickers 20""",
        run=trading,
        description=(
            "A price feed to prices; candles (OHLC per ticker and window) and strategy abc (moving-average "
            "crossovers, group trading-strategy.abc) as one Spark application; strategy xyz (breakouts, "
            "group trading-strategy.xyz) as a Python group member; their orders on orders. Prints candles, "
            "orders and each group's lag as they come. Starts a cluster in the background (lanes up "
            "--detach) when none runs from ./.lanes, and leaves it running."
        ),
    )
    parser.add_argument("--tickers", type=positive_int, default=8, help="how many tickers (default 8)")
    parser.add_argument("--rate", type=_positive_float, default=40.0, help="prices per second (default 40)")
    parser.add_argument(
        "--speed",
        type=_positive_float,
        default=30.0,
        help="market seconds per real second (default 30: a one-minute candle every 2 s)",
    )
    parser.add_argument("--window", default="1 minute", help="the candles' window (default 1 minute)")
    parser.add_argument("--duration", type=_positive_float, default=None, help="stop after this many seconds")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(".lanes/demo"),
        help="Spark's checkpoints and log (default .lanes/demo)",
    )
    parser.add_argument("--seed", type=int, default=None, help="the same prices every time")
    parser.add_argument("--prices", default="prices", help="the prices topic (default prices)")
    parser.add_argument("--candles", default="candles", help="the candles topic (default candles)")
    parser.add_argument("--orders", default="orders", help="the orders topic (default orders)")
    parser.add_argument(
        "--group-prefix",
        default="trading-strategy",
        help="the strategies' groups are PREFIX.abc and PREFIX.xyz (default trading-strategy)",
    )
