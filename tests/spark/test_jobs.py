"""The trading example's Spark jobs (spark-apps/jobs/) on generated price streams, against a real
Lanes cluster; their results checked against a plain Python computation of the same thing."""

from __future__ import annotations

import importlib.util
import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import lanes
from lanes.demo.strategies import crossovers
from lanes_spark.trading import drain, trades
from tests.spark.access import access_options
from tests.spark.test_source import everything

pytestmark = pytest.mark.slow

JOBS = Path(__file__).resolve().parents[2] / "spark-apps" / "jobs"
#: the streams' start: a day ago (their records are written now; ts as epoch ms must be within a year)
START = (datetime.now(UTC) - timedelta(days=1)).replace(minute=0, second=0, microsecond=0)


def job(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"jobs.{name}", JOBS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def price_stream(seed: int, tickers: tuple[str, ...], minutes: int) -> list[dict[str, Any]]:
    """Trades with strictly increasing event times per ticker, a few per second, prices in a random walk."""
    rng = random.Random(seed)
    trades = []
    for ticker in tickers:
        price, moment = 100.0 + rng.random() * 50, START
        while (moment := moment + timedelta(milliseconds=rng.randint(200, 4000))) < START + timedelta(minutes=minutes):
            price = round(max(1.0, price + rng.uniform(-1, 1)), 2)
            trades.append({"ticker": ticker, "price": price, "size": rng.randint(1, 500), "ts": moment})
    return sorted(trades, key=lambda t: t["ts"])


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def produce_prices(bootstrap: str, topic: str, trades: list[dict[str, Any]]) -> None:
    """Every other trade's ts as epoch milliseconds (a JSON integer), the others ISO-8601."""
    with lanes.Producer(bootstrap) as producer:
        for n, trade in enumerate(trades):
            ts = iso(trade["ts"]) if n % 2 else int(trade["ts"].timestamp() * 1000)
            producer.send(topic, json.dumps({**trade, "ts": ts}).encode(), trade["ticker"].encode())
        producer.flush()


def expected_candles(trades: list[dict[str, Any]], closed_before: datetime) -> dict[tuple[str, str], dict[str, Any]]:
    windows: dict[tuple[str, datetime], list[dict[str, Any]]] = defaultdict(list)
    for trade in trades:
        windows[(trade["ticker"], trade["ts"].replace(second=0, microsecond=0))].append(trade)
    expected = {}
    for (ticker, start), members in windows.items():
        if start + timedelta(minutes=1) > closed_before:
            continue
        ordered = sorted(members, key=lambda t: t["ts"])
        expected[(ticker, start.strftime("%Y-%m-%dT%H:%M:%SZ"))] = {
            "open": ordered[0]["price"],
            "high": max(t["price"] for t in members),
            "low": min(t["price"] for t in members),
            "close": ordered[-1]["price"],
            "volume": sum(t["size"] for t in members),
            "trades": len(members),
        }
    return expected


def test_candles_match_a_plain_python_computation(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    admin = lanes.Admin(bootstrap)
    admin.create_topic("prices", partitions=3, replication_factor=2)
    admin.create_topic("candles", partitions=3, replication_factor=2)
    trades = price_stream(7, ("AAPL", "MSFT", "NVDA"), minutes=6)
    late = START + timedelta(minutes=12)  # moves the watermark past every window of the stream
    produce_prices(bootstrap, "prices", [*trades, {"ticker": "AAPL", "price": 1.0, "size": 1, "ts": late}])

    expected = expected_candles(trades, closed_before=late - timedelta(seconds=30))
    assert len(expected) == 18  # 3 tickers x 6 minutes
    # the job as a user runs it: every window the input closes comes out before it stops
    job("candles").main(["--bootstrap", bootstrap, "--checkpoint", str(tmp_path / "candles"), "--available-now"])

    got = {}
    for record in everything(bootstrap, "candles"):
        candle = json.loads(record.value)
        assert record.key == candle["ticker"].encode()
        got[(candle["ticker"], candle["window_start"])] = {
            k: candle[k] for k in ("open", "high", "low", "close", "volume", "trades")
        }
    assert got == expected


def test_signals_emit_the_crossovers_of_each_ticker_across_restarts(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    admin = lanes.Admin(bootstrap)
    admin.create_topic("quotes", partitions=2, replication_factor=1)
    admin.create_topic("orders", partitions=2, replication_factor=1)
    trades = price_stream(11, ("AAPL", "MSFT"), minutes=4)
    half = len(trades) // 2
    signals = job("signals")
    options = signals.parse_args(
        ["--bootstrap", bootstrap, "--prices", "quotes", "--checkpoint", str(tmp_path / "signals"), "--available-now"]
    )
    produce_prices(bootstrap, "quotes", trades[:half])
    drain(signals.start(spark, options))
    produce_prices(bootstrap, "quotes", trades[half:])  # the second run goes on from the state of the first
    drain(signals.start(spark, options))

    expected = []
    for ticker in ("AAPL", "MSFT"):
        mine = [(t["price"], t["ts"]) for t in trades if t["ticker"] == ticker]
        orders, _, _ = crossovers([], None, mine, 5, 20)
        expected += [(ticker, side, price, iso(moment)) for side, price, moment, _, _ in orders]
    got = [json.loads(r.value) for r in everything(bootstrap, "orders")]
    assert sorted((o["ticker"], o["side"], o["price"], o["ts"]) for o in got) == sorted(expected)
    assert {o["side"] for o in got} == {"BUY", "SELL"}
    assert all(o["strategy"] == "ma-crossover" for o in got)


def test_ts_is_iso_8601_or_epoch_milliseconds_and_a_number_far_from_the_record_is_refused(
    spark: Any, bootstrap: str
) -> None:
    """Issue #40: epoch milliseconds (the Kafka habit) were read as seconds (candles in the year
    57868). Both forms are read; a number more than a year from the record's timestamp (epoch
    seconds, microseconds) or a ts that is neither fails the query naming the record."""
    moment = (datetime.now(UTC) - timedelta(seconds=5)).replace(microsecond=250_000)  # before the records
    epoch_ms = int(moment.timestamp() * 1000)

    def read_trades(topic: str, *ts_values: object) -> list[Any]:
        lanes.Admin(bootstrap).create_topic(topic, partitions=1, replication_factor=1)
        with lanes.Producer(bootstrap) as producer:
            for ts in ts_values:
                producer.send(topic, json.dumps({"ticker": "AAPL", "price": 1.5, "ts": ts}).encode())
        reader = spark.read.format("lanes").option("bootstrap", bootstrap).options(**access_options())
        frame = reader.option("subscribe", topic).load()
        return trades(frame).orderBy("event_time").collect()

    rows = read_trades("ticks", iso(moment), epoch_ms, None)
    assert [row.event_time.replace(tzinfo=UTC) for row in rows[:2]] == [moment, moment]
    assert rows[2].event_time.replace(tzinfo=UTC) >= moment, "without ts: the record's timestamp"
    for topic, bad, why in (("ticks-s", epoch_ms // 1000, "more than 365 days"), ("ticks-w", "soon", "is neither")):
        with pytest.raises(Exception, match=why) as refused:
            read_trades(topic, iso(moment), bad)
        assert f"{topic}-0@1" in str(refused.value), "the message names the record"
        assert "epoch milliseconds" in str(refused.value), "and says what ts may be"
