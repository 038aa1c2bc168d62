"""``lanes status --watch``: figures from two scrapes (pure), and where endpoints come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lanes.cli.values import UsageError
from lanes.cli.watch import Samples, endpoints, render, summarize


def samples(**values: float) -> Samples:
    """``name__label_value`` keyword arguments as samples (one label per metric, enough here)."""
    out: Samples = {}
    for key, value in values.items():
        name, _, label = key.partition("__")
        labels = frozenset([tuple(label.split("_eq_"))]) if label else frozenset()
        out[(name, labels)] = value  # type: ignore[index]
    return out


def test_rates_come_from_two_scrapes_and_counts_from_the_last() -> None:
    before = samples(lanes_broker_records_in_total=1_000, lanes_broker_bytes_in_total=10_000)
    now = samples(
        lanes_broker_records_in_total=3_000,
        lanes_broker_bytes_in_total=30_000,
        lanes_broker_under_replicated_partitions=2,
        lanes_controller_brokers__state_eq_unfenced=3,
        lanes_controller_brokers__state_eq_fenced=1,
    )
    now[("lanes_consumer_group_lag_seconds", frozenset({("group", "billing"), ("topic", "orders")}))] = 7.5
    now[("lanes_consumer_group_lag_seconds", frozenset({("group", "audit"), ("topic", "orders")}))] = 0.5
    now[("lanes_consumer_group_members", frozenset({("group", "billing")}))] = 2
    summary = summarize(now, before, 2.0, clock="12:00:00", unreachable=[])
    assert summary.records_in_per_s == 1_000
    assert summary.bytes_in_per_s == 10_000
    assert summary.bytes_out_per_s == 0
    assert (summary.brokers_live, summary.brokers_fenced) == (3, 1)
    assert summary.under_replicated_partitions == 2
    assert (summary.max_lag_seconds, summary.max_lag_group) == (7.5, "billing/orders")
    assert summary.groups == 1
    line = render(summary)
    assert "in 1,000 rec/s 9.8 KiB/s" in line
    assert "brokers 3/4" in line
    assert "max lag 7.5 s (billing/orders)" in line


def test_the_first_scrape_has_no_rates_and_says_who_did_not_answer() -> None:
    summary = summarize(samples(), None, 0.0, clock="12:00:00", unreachable=["127.0.0.1:1"])
    assert summary.records_in_per_s is None
    assert summary.max_lag_seconds is None
    assert "in - -" in render(summary)
    assert render(summary).endswith("UNREACHABLE 127.0.0.1:1")


def test_endpoints_come_from_the_flag_or_cluster_json(tmp_path: Path) -> None:
    assert endpoints("a:1, b:2") == ["a:1", "b:2"]
    cluster = tmp_path / "cluster.json"
    cluster.write_text(
        json.dumps(
            {"controllers": [{"metrics": "c:9"}], "brokers": [{"metrics": "b:1"}], "coordinators": [{"metrics": "g:3"}]}
        )
    )
    assert endpoints(None, cluster) == ["c:9", "b:1", "g:3"]
    with pytest.raises(UsageError, match="pass --metrics"):
        endpoints(None, tmp_path / "missing.json")
