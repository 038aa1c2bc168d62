"""Who may read a service's ``/metrics`` and what it shows (``lanes.runtime.metrics.MetricsAccess``),
on a real HTTP endpoint of a real registry."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import Counter

from lanes.cli.watch import scrape_text
from lanes.runtime.metrics import MetricsAccess, ServiceMetrics


def _served(access: MetricsAccess) -> tuple[ServiceMetrics, str]:
    metrics = ServiceMetrics("broker")
    records = Counter("lanes_test_records", "Records, by topic.", ["topic"], registry=metrics.registry)
    records.labels("payroll").inc(3)
    return metrics, metrics.serve_http("127.0.0.1", 0, lambda name: True, access)


def _status(address: str, path: str = "/metrics", token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"http://{address}{path}", headers=headers), timeout=5):
            return 200
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_token_file_admits_its_token_only_and_rotates_without_a_restart(tmp_path: Path) -> None:
    token_file = tmp_path / "metrics.token"
    token_file.write_text("first-token-0123456789\n")
    metrics, address = _served(MetricsAccess(token_file, closed=True))
    try:
        assert _status(address) == 401
        assert _status(address, token="first-token-012345678") == 401
        assert _status(address, token="first-token-0123456789") == 200
        assert _status(address, "/healthz") == 200, "probes need no token"
        token_file.write_text("second-token-0123456789-longer\n")
        deadline = time.monotonic() + 5  # the file is looked at once a second at most
        while _status(address, token="second-token-0123456789-longer") != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _status(address, token="second-token-0123456789-longer") == 200
        assert _status(address, token="first-token-0123456789") == 401
    finally:
        metrics.stop()


def test_secured_services_without_a_token_serve_no_metrics() -> None:
    metrics, address = _served(MetricsAccess(closed=True))
    try:
        assert _status(address) == 403
        assert _status(address, "/healthz") == 200
    finally:
        metrics.stop()


def test_a_short_token_is_refused_at_start(tmp_path: Path) -> None:
    token_file = tmp_path / "metrics.token"
    token_file.write_text("short")
    with pytest.raises(ValueError, match="at least 16"):
        _served(MetricsAccess(token_file))


@pytest.mark.parametrize("named", [True, False])
def test_series_named_by_topics_and_groups_are_served_only_when_asked_for(named: bool) -> None:
    metrics, address = _served(MetricsAccess(named_series=named))
    try:
        body = scrape_text(address)
    finally:
        metrics.stop()
    assert ('topic="payroll"' in body) is named
    assert "lanes_rpc_duration_seconds" in body or "process_cpu_seconds_total" in body
