"""The shipped monitoring files against the real thing: every alert rule and dashboard query
parses with Prometheus' own parser (`promtool check rules`), and every metric they name is
exposed by a live scrape of a local cluster's services."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

import lanes
from lanes.cli.watch import scrape_text
from tests.integration.processes import running_cluster

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "charts" / "lanes" / "files" / "lanes-alerts.rules.yaml"
DASHBOARDS = sorted((ROOT / "charts" / "lanes" / "dashboards").glob("*.json"))
#: Grafana's variables, replaced by what they stand for when a query is checked outside Grafana.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$topic": ".*", "$group": ".*"}
_NOT_METRICS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
    "inf", "nan",
}  # fmt: skip


def alert_rules() -> dict[str, Any]:
    """The Prometheus rules file (the chart wraps it in a PrometheusRule)."""
    return dict(yaml.safe_load(ALERTS.read_text()))


def dashboard_queries() -> list[tuple[str, str]]:
    """(where, expr) of every query of every dashboard, with Grafana's variables substituted."""
    queries = []
    for path in DASHBOARDS:
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel["targets"]:
                expr = target["expr"]
                for variable, value in GRAFANA_VARIABLES.items():
                    expr = expr.replace(variable, value)
                queries.append((f"{path.name}: {panel['title']}", expr))
    return queries


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (not functions, keywords or label names)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*", expr):
        rest = expr[match.end() :].lstrip()
        if match.group() not in _NOT_METRICS and not rest.startswith("("):
            names.add(match.group())
    return names


def test_metric_names_are_found_in_promql() -> None:
    assert metric_names(
        'sum by (le, method) (rate(lanes_rpc_duration_seconds_bucket{service="broker"}[5m])) '
        "/ on (instance) group_left lanes_partition_leader or absent(lanes_controller_active) > 1e3"
    ) == {"lanes_rpc_duration_seconds_bucket", "lanes_partition_leader", "lanes_controller_active"}


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    assert found, (
        "promtool is missing: make test installs Debian's prometheus package (tools/ensure-debian-packages.sh)"
    )
    return found


def test_alert_rules_load_in_prometheus(promtool: str) -> None:
    checked = subprocess.run([promtool, "check", "rules", str(ALERTS)], check=False, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    names = {rule["alert"] for group in alert_rules()["groups"] for rule in group["rules"]}
    assert names == {
        "LanesUnderReplicatedPartitions",
        "LanesOfflinePartitions",
        "LanesUnderMinIsr",
        "LanesNoActiveController",
        "LanesControllerVoterOutOfSync",
        "LanesControllerElectionsFlapping",
        "LanesConsumerLagTooHigh",
        "LanesBrokerDiskFillingUp",
        "LanesCoordinatorDown",
    }
    runbooks = (ROOT / "docs" / "operations.md").read_text()
    for group in alert_rules()["groups"]:
        for rule in group["rules"]:
            anchor = rule["alert"].lower()
            assert rule["annotations"]["runbook_url"].endswith(f"#{anchor}")
            assert f"### {rule['alert']}" in runbooks, f"docs/operations.md has no runbook for {rule['alert']}"


def test_dashboard_queries_parse_in_prometheus(promtool: str, tmp_path: Path) -> None:
    """Each query checked as the expression of a recording rule: Prometheus' parser, for real."""
    queries = dashboard_queries()
    assert len(queries) > 20
    rules = {
        "groups": [
            {
                "name": "dashboards",
                "rules": [
                    {"record": f"lanes:dashboard_query:{n}", "expr": expr} for n, (_, expr) in enumerate(queries)
                ],
            }
        ]
    }
    path = tmp_path / "dashboards.rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    checked = subprocess.run([promtool, "check", "rules", str(path)], check=False, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def exposed_names(text: str) -> set[str]:
    """Every metric name a scrape exposes: families (counters with their _total) and samples."""
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        if family.type == "counter":
            names.add(f"{family.name}_total")
        names.update(sample.name for sample in family.samples)
    return names


def test_every_metric_the_monitoring_files_use_is_exposed(tmp_path: Path) -> None:
    used: dict[str, set[str]] = {}
    for group in alert_rules()["groups"]:
        for rule in group["rules"]:
            for name in metric_names(rule["expr"]):
                used.setdefault(name, set()).add(f"alert {rule['alert']}")
    for where, expr in dashboard_queries():
        for name in metric_names(expr):
            used.setdefault(name, set()).add(where)

    with running_cluster(tmp_path, brokers=2) as cluster:
        described = cluster.describe()
        bootstrap = str(described["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("watched", partitions=2, replication_factor=2)
        with lanes.Producer(bootstrap) as producer:
            for n in range(100):
                producer.send("watched", b"%d" % n)
        with lanes.Consumer(bootstrap, group_id="watchers") as consumer:
            consumer.commit({lanes.TopicPartition("watched", 0): 1})
        addresses = [
            described["controllers"][0]["metrics"],
            *(b["metrics"] for b in described["brokers"]),
            *(c["metrics"] for c in described["coordinators"]),
        ]
        exposed: set[str] = set()
        for address in addresses:
            exposed |= exposed_names(scrape_text(address))

    missing = {name: sorted(places) for name, places in used.items() if name not in exposed}
    assert not missing, f"metrics used by the monitoring files but exposed by no service: {missing}"
