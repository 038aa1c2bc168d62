"""``lanes status --watch``: a one-line live summary of the cluster, from the services' own
Prometheus endpoints (the same figures the dashboards show), refreshed every ``--interval``.

The endpoints come from ``--metrics host:port,...`` or, by default, from ``./.lanes/cluster.json``
(``lanes up`` lists every process's); scrapes give the bearer token of ``LANES_METRICS_TOKEN_FILE``
or of the ``metrics_token_file`` cluster.json names. Rates are computed between two consecutive scrapes, so the
first line shows counts and the rates start with the second. ``summarize`` is pure: scrapes in,
figures out.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from lanes.cli.common import CLUSTER_FILE
from lanes.cli.values import UsageError

#: (metric name, frozenset of label pairs) -> value, summed over every endpoint scraped.
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass(frozen=True)
class Summary:
    """What one line shows. Rates are None on the first scrape."""

    time: str
    records_in_per_s: float | None
    bytes_in_per_s: float | None
    bytes_out_per_s: float | None
    brokers_live: int
    brokers_fenced: int
    under_replicated_partitions: int
    under_min_isr_partitions: int
    offline_partitions: int
    groups: int
    max_lag_seconds: float | None
    max_lag_group: str | None  # "group/topic" of the largest lag
    unreachable: list[str]


def endpoints(flag: str | None, cluster_file: Path = CLUSTER_FILE) -> list[str]:
    """``--metrics`` or every process's endpoint in ``cluster.json``."""
    if flag:
        return [address.strip() for address in flag.split(",") if address.strip()]
    if cluster_file.is_file():
        described = json.loads(cluster_file.read_text())
        nodes = (*described.get("controllers", []), *described.get("brokers", []), *described.get("coordinators", []))
        found = [node.get("metrics") for node in nodes]
        if addresses := [address for address in found if address]:
            return addresses
    raise UsageError(
        "no metrics endpoints: pass --metrics host:port,... or run in the directory where `lanes up` wrote "
        f"{CLUSTER_FILE}"
    )


def metrics_token(environ: Mapping[str, str] = os.environ, cluster_file: Path | None = CLUSTER_FILE) -> str | None:
    """The bearer token scrapes give: the content of ``LANES_METRICS_TOKEN_FILE``, or of the
    ``metrics_token_file`` ``cluster_file`` names (a secure ``lanes up``); None without either."""
    file = environ.get("LANES_METRICS_TOKEN_FILE")
    if not file and cluster_file is not None and cluster_file.is_file():
        file = json.loads(cluster_file.read_text()).get("metrics_token_file")
    return Path(file).read_text().strip() if file else None


def scrape_text(address: str, timeout_s: float = 5, token: str | None = None) -> str:
    """The body of ``http://address/metrics``, asked with ``token`` (by default the one
    ``LANES_METRICS_TOKEN_FILE`` holds, if set)."""
    if token is None:
        token = metrics_token(cluster_file=None)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://{address}/metrics", headers=headers)
    with urllib.request.urlopen(request, timeout=timeout_s) as answer:
        return str(answer.read().decode())


def scrape(addresses: Iterable[str], timeout_s: float = 5, token: str | None = None) -> tuple[Samples, list[str]]:
    """Every endpoint's samples summed by (name, labels), and the endpoints that did not answer."""
    samples: Samples = {}
    unreachable = []
    for address in addresses:
        try:
            text = scrape_text(address, timeout_s, token)
        except (OSError, urllib.error.URLError):
            unreachable.append(address)
            continue
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = (sample.name, frozenset(sample.labels.items()))
                samples[key] = samples.get(key, 0.0) + sample.value
    return samples, unreachable


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name`` over the samples carrying ``labels`` (0 when there are none)."""
    wanted = set(labels.items())
    return sum(value for (metric, have), value in samples.items() if metric == name and wanted <= have)


def summarize(now: Samples, before: Samples | None, elapsed_s: float, *, clock: str, unreachable: list[str]) -> Summary:
    """The figures of one line: counts from ``now``, rates from ``now`` - ``before``."""

    def rate(name: str) -> float | None:
        if before is None or elapsed_s <= 0:
            return None
        return max(0.0, total(now, name) - total(before, name)) / elapsed_s

    lags = [
        (dict(labels), value) for (name, labels), value in now.items() if name == "lanes_consumer_group_lag_seconds"
    ]
    worst = max(lags, key=lambda item: item[1], default=None)
    groups = {dict(labels)["group"] for (name, labels) in now if name == "lanes_consumer_group_members"}
    return Summary(
        time=clock,
        records_in_per_s=rate("lanes_broker_records_in_total"),
        bytes_in_per_s=rate("lanes_broker_bytes_in_total"),
        bytes_out_per_s=rate("lanes_broker_bytes_out_total"),
        brokers_live=int(total(now, "lanes_controller_brokers", state="unfenced")),
        brokers_fenced=int(total(now, "lanes_controller_brokers", state="fenced")),
        under_replicated_partitions=int(total(now, "lanes_broker_under_replicated_partitions")),
        under_min_isr_partitions=int(total(now, "lanes_broker_under_min_isr_partitions")),
        offline_partitions=int(total(now, "lanes_controller_offline_partitions")),
        groups=len(groups),
        max_lag_seconds=worst[1] if worst else None,
        max_lag_group=f"{worst[0]['group']}/{worst[0]['topic']}" if worst else None,
        unreachable=unreachable,
    )


def _bytes(per_s: float | None) -> str:
    if per_s is None:
        return "-"
    for unit in ("B", "KiB", "MiB"):
        if per_s < 1024:
            return f"{per_s:.1f} {unit}/s"
        per_s /= 1024
    return f"{per_s:.1f} GiB/s"


def render(summary: Summary) -> str:
    """One line for people."""
    records = "-" if summary.records_in_per_s is None else f"{summary.records_in_per_s:,.0f} rec/s"
    lag = "-" if summary.max_lag_seconds is None else f"{summary.max_lag_seconds:.1f} s ({summary.max_lag_group})"
    line = (
        f"{summary.time}  in {records} {_bytes(summary.bytes_in_per_s)}  out {_bytes(summary.bytes_out_per_s)}  "
        f"brokers {summary.brokers_live}/{summary.brokers_live + summary.brokers_fenced}  "
        f"under-replicated {summary.under_replicated_partitions}  under-min-isr {summary.under_min_isr_partitions}  "
        f"offline {summary.offline_partitions}  groups {summary.groups}  max lag {lag}"
    )
    if summary.unreachable:
        line += f"  UNREACHABLE {','.join(summary.unreachable)}"
    return line


def watch(
    addresses: list[str],
    *,
    interval_s: float,
    updates: int | None,
    emit: Callable[[Summary], None],
    sleep: Callable[[float], object] = time.sleep,
    stopped: Callable[[], bool] = lambda: False,
    token: str | None = None,
) -> None:
    """Scrape every ``interval_s`` (with ``token``) and ``emit`` a summary, ``updates`` times
    (None: until ``stopped()``)."""
    before: Samples | None = None
    taken_at = 0.0
    count = 0
    while not stopped() and (updates is None or count < updates):
        if count:
            sleep(interval_s)
        samples, unreachable = scrape(addresses, token=token)
        now = time.monotonic()
        emit(
            summarize(
                samples,
                before,
                now - taken_at,
                clock=time.strftime("%H:%M:%S"),
                unreachable=unreachable,
            )
        )
        before, taken_at = samples, now
        count += 1


def as_json(summary: Summary) -> str:
    return json.dumps(asdict(summary))
