"""The seeds' trading example with nothing but the CLI: prices keyed by ticker; two strategy groups
(two instances each, every instance a ``lanes consume | lanes produce`` pipeline) turn prices into
orders; an order-execution group consumes the orders.

Pub-sub across groups: each strategy group sees every price. Queue within a group: its two
instances split the partitions and each price is handled by the one instance owning its
partition. ``groups describe`` shows the members and the lag going to zero.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from lanes.protocol.partitioner import partition_for_key
from tests.e2e.cli import Workdir, stop, wait_for

TICKERS = ["AAPL", "MSFT", "GOOG", "AMZN", "TSLA", "NVDA", "META", "IBM"]
ROUNDS = 15
STRATEGIES = ["abc", "xyz"]


def strategy_instance(lanes: Workdir, strategy: str, instance: int) -> subprocess.Popen[str]:
    """One instance of a strategy: every price becomes an order keyed strategy-ticker, tagged with
    the instance that made it."""
    return lanes.start(
        f"lanes consume prices --group trading-strategy.{strategy} --follow "
        f"--format '{strategy}-%k:%v|{strategy}-{instance}' | lanes produce orders --key-separator :"
    )


def described(lanes: Workdir, group: str) -> dict[str, Any]:
    """``groups describe --output json``; a group that does not exist yet is empty."""
    done = lanes.run("groups", "describe", group, "--output", "json")
    if done.returncode == 3:  # documented: not found
        return {"state": "none", "members": [], "partitions": [], "total_lag": 0}
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def settled(lanes: Workdir, group: str, members: int, partitions: int) -> dict[str, Any] | None:
    """The group once it is stable with ``members`` members that all own partitions, ``partitions``
    in all, each owned once."""
    group_now = described(lanes, group)
    owned = [tp for m in group_now["members"] for tp in m["assignment"]]
    if (
        group_now["state"] == "stable"
        and len(group_now["members"]) == members
        and all(m["assignment"] for m in group_now["members"])
        and len(owned) == partitions == len({json.dumps(tp) for tp in owned})
    ):
        return group_now
    return None


def caught_up(lanes: Workdir, group: str, records: int) -> dict[str, Any] | None:
    """The group once it committed ``records`` records in all and its lag is zero."""
    group_now = described(lanes, group)
    committed = sum(p["committed_offset"] or 0 for p in group_now["partitions"])
    return group_now if committed == records and group_now["total_lag"] == 0 else None


def test_trading_strategies_and_order_execution(lanes: Workdir) -> None:
    lanes.ok("topics", "create", "prices", "--partitions", "6", "--replication-factor", "3")
    lanes.ok("topics", "create", "orders", "--partitions", "3", "--replication-factor", "3")
    instances = [strategy_instance(lanes, s, i) for s in STRATEGIES for i in (1, 2)]
    execution = lanes.start("lanes consume orders --group order-execution --follow --format '%k %v'")
    try:
        before = {
            s: wait_for(lambda s=s: settled(lanes, f"trading-strategy.{s}", 2, 6), f"{s} to settle", 60)
            for s in STRATEGIES
        }
        wait_for(lambda: settled(lanes, "order-execution", 1, 3), "order-execution to settle", 60)
        owner_of = {
            s: {tp["partition"]: m["member_id"] for m in before[s]["members"] for tp in m["assignment"]}
            for s in STRATEGIES
        }

        prices = [
            f'{ticker}:{{"ticker": "{ticker}", "price": {100 + n}.25, "round": {n}}}'
            for n in range(ROUNDS)
            for ticker in TICKERS
        ]
        assert lanes.json("produce", "prices", "--key-separator", ":", input="\n".join(prices) + "\n")[
            "records"
        ] == len(prices)

        for strategy in STRATEGIES:
            group = wait_for(
                lambda s=strategy: caught_up(lanes, f"trading-strategy.{s}", len(prices)), "strategies", 60
            )
            assert len(group["members"]) == 2
            assert group["state"] == "stable"
        wait_for(lambda: caught_up(lanes, "order-execution", 2 * len(prices)), "order execution to catch up", 60)
        table = lanes.ok("groups", "describe", "order-execution")
        assert "total lag 0" in table
        assert "lanes-cli" in table
    finally:
        executed = stop(execution).splitlines()
        for process in instances:
            stop(process)

    orders = [(line.split(" ", 1)[0], line.split(" ", 1)[1].rsplit("|", 1)) for line in executed]
    for strategy in STRATEGIES:
        mine = [(key, value, instance) for key, (value, instance) in orders if key.startswith(f"{strategy}-")]
        # pub-sub across groups: this strategy saw every price, once
        assert sorted(f"{key.split('-', 1)[1]}:{value}" for key, value, _ in mine) == sorted(prices)
        # queue within the group: both instances worked, and each partition had one instance
        handled_by: dict[int, set[str]] = {}
        for key, _, instance in mine:
            handled_by.setdefault(partition_for_key(key.split("-", 1)[1].encode(), 6), set()).add(instance)
        assert {i for owners in handled_by.values() for i in owners} == {f"{strategy}-1", f"{strategy}-2"}
        assert all(len(owners) == 1 for owners in handled_by.values()), handled_by
        assert len(set(owner_of[strategy].values())) == 2
    # per ticker, each strategy's orders follow the price order (a key's records keep their order)
    for strategy in STRATEGIES:
        for ticker in TICKERS:
            rounds = [json.loads(v)["round"] for k, (v, _) in orders if k == f"{strategy}-{ticker}"]
            assert rounds == list(range(ROUNDS))
