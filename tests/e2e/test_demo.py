"""``lanes demo trading`` headless for a bounded time (25 s after Spark started) on the shared e2e
cluster (issue #40): it prints candles and orders of both strategies; every price was consumed by both strategy groups;
each ticker's prices are in order in one partition; and the orders on the orders topic are exactly
what each strategy's rule gives over the prices, computed again here in plain Python."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict

import pytest

from lanes.client.admin import Admin
from lanes.client.consumer import Consumer
from lanes.demo.prices import iso_ms, parse_price
from lanes.demo.strategies import breakouts, crossovers
from lanes.topic_partition import TopicPartition
from tests.e2e.cli import Workdir

PREFIX = "demo-e2e"
TOPICS = {"prices": f"{PREFIX}.prices", "candles": f"{PREFIX}.candles", "orders": f"{PREFIX}.orders"}


def everything(admin: Admin, consumer: Consumer, topic: str) -> dict[int, list[bytes]]:
    """Every record value of ``topic`` per partition, in offset order."""
    partitions = [TopicPartition(topic, p.partition) for p in admin.describe_topic(topic).partitions]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    ends = consumer.end_offsets(partitions)
    found: dict[int, list[bytes]] = defaultdict(list)
    while any(consumer.position(p) < ends[p] for p in partitions):
        for record in consumer.poll(500):
            assert record.value is not None
            found[record.partition].append(record.value)
    return found


@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java: make test installs it")
def test_the_trading_demo_runs_headless_and_both_strategies_follow_their_rules(lanes: Workdir) -> None:
    done = lanes.run(
        "demo",
        "trading",
        "--duration",
        "25",
        "--rate",
        "60",
        "--tickers",
        "6",
        "--seed",
        "40",
        "--state-dir",
        "demo-state",
        "--group-prefix",
        PREFIX,
        *(f"--{name}={topic}" for name, topic in TOPICS.items()),
        timeout=420,
    )
    spark_log = (lanes.path / "demo-state" / "spark.log").read_text(errors="replace")[-3000:]
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}\n{spark_log}"
    out = done.stdout
    assert "  candle " in out
    assert "  order  abc " in out
    assert "  order  xyz " in out
    assert "final:" in out
    assert "lag abc 0, xyz 0" in out.split("final:")[1], "both groups consumed every price"
    assert "out of order" not in out, "strategy xyz saw each ticker's prices in order"
    running = [
        (int(m["prices"].replace(",", "")), int(m["lag"].replace(",", "")))
        for m in re.finditer(r"\] prices in (?P<prices>[\d,]+) .* lag abc (?P<lag>[\d,]+),", out.split("final:")[0])
    ]
    assert any(lag < prices for prices, lag in running), f"the Spark strategy commits as it goes: {running}"

    with lanes.admin() as admin, lanes.consumer() as consumer:
        prices = everything(admin, consumer, TOPICS["prices"])
        orders = everything(admin, consumer, TOPICS["orders"])
        for name in ("abc", "xyz"):
            group = admin.describe_group(f"{PREFIX}.{name}")
            assert group.offsets
            assert all(p.lag == 0 for p in group.offsets if p.topic == TOPICS["prices"]), (name, group.offsets)

    series: dict[str, list[tuple[float, int]]] = defaultdict(list)
    partition_of: dict[str, int] = {}
    for partition, values in prices.items():
        for value in values:
            trade = parse_price(value)
            assert partition_of.setdefault(trade.ticker, partition) == partition, "a ticker lives in one partition"
            series[trade.ticker].append((trade.price, trade.ts_ms))
    assert len(series) == 6
    for ticker, trades in series.items():
        times = [ts for _, ts in trades]
        assert times == sorted(set(times)), f"{ticker}'s prices are in order"

    expected: dict[str, set[tuple[str, str, float, str]]] = {"abc": set(), "xyz": set()}
    for ticker, trades in series.items():
        for side, price, ts_ms, _, _ in crossovers([], None, trades, 5, 20)[0]:
            expected["abc"].add((ticker, side, price, iso_ms(ts_ms)))
        for side, price, ts_ms, _, _ in breakouts([], None, trades, 20)[0]:
            expected["xyz"].add((ticker, side, price, iso_ms(ts_ms)))
    got: dict[str, list[tuple[str, str, float, str]]] = {"abc": [], "xyz": []}
    for values in orders.values():
        for value in values:
            order = json.loads(value)
            got[order["strategy"]].append((order["ticker"], order["side"], order["price"], order["ts"]))
    for name in ("abc", "xyz"):
        assert expected[name], f"the rule of {name} orders something over {sum(map(len, series.values()))} prices"
        assert len(got[name]) == len(set(got[name])), f"{name}: no order twice"
        assert set(got[name]) == expected[name], name


def test_the_price_feed_publishes_a_random_walk_keyed_by_ticker(lanes: Workdir) -> None:
    """``lanes demo prices``: the demo's feed alone (a load generator): N records over the tickers,
    each on its ticker's partition, ``ts`` as asked, the topic created when missing."""
    out = lanes.ok(
        "demo", "prices", "--topic", "feed-e2e", "--count", "300", "--rate", "1000", "--tickers", "5",
        "--ts-format", "epoch-ms", "--seed", "3",
    )  # fmt: skip
    assert "sent 300 prices of 5 tickers to feed-e2e" in out
    with lanes.admin() as admin, lanes.consumer() as consumer:
        records = everything(admin, consumer, "feed-e2e")
    partition_of: dict[str, int] = {}
    trades = []
    for partition, values in records.items():
        for value in values:
            document = json.loads(value)
            assert isinstance(document["ts"], int), "epoch milliseconds"
            assert partition_of.setdefault(document["ticker"], partition) == partition
            trades.append(parse_price(value))
    assert len(trades) == 300
    assert len(partition_of) == 5
