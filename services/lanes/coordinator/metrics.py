"""A group coordinator's Prometheus metrics (docs/operations.md lists them with the alerts).

Counted as requests are answered:

- ``lanes_coordinator_rebalances_total``: group epoch bumps (a member joined, left or was
  fenced, a subscription or a subscribed topic's partition count changed);
- ``lanes_coordinator_offset_commits_total`` {result: ok|error}: partition offsets committed
  (commit latency and rate per request are ``lanes_rpc_duration_seconds{method="CommitOffsets"}``).

Reported at each scrape, for the groups of the shards this coordinator has loaded:

- ``lanes_coordinator_shards`` {state: loaded|loading}; ``lanes_coordinator_groups`` {state:
  empty|reconciling|stable}; ``lanes_coordinator_members``;
- per group: ``lanes_consumer_group_members``, ``lanes_consumer_group_epoch``;
- per group and partition with a committed offset or an owner:
  ``lanes_consumer_group_committed_offset``, ``lanes_consumer_group_lag_records`` (log end
  offset minus committed offset) and ``lanes_consumer_group_lag_seconds`` (how long ago the
  oldest record not yet consumed, the one at the committed offset, was appended: the lag people
  act on; 0 when caught up). Partitions whose end offset or record time cannot be read at scrape
  time are left out of that scrape rather than reported wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import Counter
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from lanes.coordinator.group import GroupState
from lanes.runtime.metrics import ServiceMetrics

_STATE_NAMES: dict[int, str] = {state: state.name.lower() for state in GroupState}


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed_offset: int  # -1: none yet
    lag_records: int  # -1: unknown
    lag_ms: int  # -1: unknown


@dataclass(frozen=True)
class GroupSnapshot:
    group_id: str
    state: int  # coordinator_pb2 GroupSnapshot
    members: int
    epoch: int
    partitions: tuple[PartitionLag, ...]


class CoordinatorMetrics:
    """The coordinator's counters and its scrape-time gauges."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self.service = metrics
        self.rebalances = Counter(
            "lanes_coordinator_rebalances",
            "Group epoch bumps: membership, subscription or partition count changes.",
            registry=metrics.registry,
        )
        self.offset_commits = Counter(
            "lanes_coordinator_offset_commits",
            "Partition offsets committed, by result.",
            ["result"],
            registry=metrics.registry,
        )

    def committed(self, ok: int, failed: int) -> None:
        if ok:
            self.offset_commits.labels("ok").inc(ok)
        if failed:
            self.offset_commits.labels("error").inc(failed)

    @staticmethod
    def gauges(shards_loaded: int, shards_loading: int, groups: Iterable[GroupSnapshot]) -> list[Metric]:
        shards = GaugeMetricFamily("lanes_coordinator_shards", "Shards this coordinator owns.", labels=["state"])
        shards.add_metric(["loaded"], shards_loaded)
        shards.add_metric(["loading"], shards_loading)
        by_state = dict.fromkeys(_STATE_NAMES.values(), 0)
        members = 0
        group_labels = ["group"]
        partition_labels = ["group", "topic", "partition"]
        group_members = GaugeMetricFamily("lanes_consumer_group_members", "Members of the group.", labels=group_labels)
        group_epoch = GaugeMetricFamily("lanes_consumer_group_epoch", "The group's epoch.", labels=group_labels)
        committed = GaugeMetricFamily(
            "lanes_consumer_group_committed_offset", "The group's committed offset.", labels=partition_labels
        )
        lag_records = GaugeMetricFamily(
            "lanes_consumer_group_lag_records",
            "Records appended and not yet consumed: log end offset minus committed offset.",
            labels=partition_labels,
        )
        lag_seconds = GaugeMetricFamily(
            "lanes_consumer_group_lag_seconds",
            "How long ago the oldest record the group has not consumed was appended (0: caught up).",
            labels=partition_labels,
        )
        for group in groups:
            by_state[_STATE_NAMES.get(group.state, "empty")] += 1
            members += group.members
            group_members.add_metric([group.group_id], group.members)
            group_epoch.add_metric([group.group_id], group.epoch)
            for partition in group.partitions:
                labels = [group.group_id, partition.topic, str(partition.partition)]
                if partition.committed_offset >= 0:
                    committed.add_metric(labels, partition.committed_offset)
                if partition.lag_records >= 0:
                    lag_records.add_metric(labels, partition.lag_records)
                if partition.lag_ms >= 0:
                    lag_seconds.add_metric(labels, partition.lag_ms / 1000)
        groups_family = GaugeMetricFamily("lanes_coordinator_groups", "Groups by state.", labels=["state"])
        for state, count in by_state.items():
            groups_family.add_metric([state], count)
        return [
            shards,
            groups_family,
            GaugeMetricFamily("lanes_coordinator_members", "Members of every group.", members),
            group_members,
            group_epoch,
            committed,
            lag_records,
            lag_seconds,
        ]
