"""The controller's Prometheus metrics (docs/operations.md lists them with the alerts on them).

Reported at each scrape from the quorum, by every controller:

- ``lanes_controller_active``: 1 on the active controller, 0 on the others (the sum over a
  cluster's controllers is 1 while it has an active controller);
- ``lanes_controller_quorum_epoch``, ``lanes_controller_quorum_has_leader`` (0 while an election
  runs), ``lanes_controller_quorum_can_vote`` (0 while a controller that lost its directory
  rejoins);
- ``lanes_controller_quorum_leader_changes_total``: leaders this controller has seen take over;
- ``lanes_controller_quorum_last_election_seconds``: how long the last election left it without a
  leader;
- ``lanes_controller_quorum_commit_lag``: entries in its log not committed yet (log end minus
  high-water mark);
- ``lanes_controller_quorum_voter_lag`` {voter}: on the active controller, how many entries each
  voter's log is behind its own, and ``lanes_controller_quorum_voter_fetch_age_seconds`` {voter}:
  since its last fetch.

Reported from the metadata state by the active controller only (the others hold the same
replicated state; one reporter keeps sums right):

- ``lanes_controller_brokers`` / ``lanes_controller_coordinators`` {state: fenced|unfenced};
- ``lanes_controller_topics``, ``lanes_controller_partitions`` (internal topics included);
- ``lanes_controller_offline_partitions``: partitions without a leader (nobody can produce to or
  consume from them);
- ``lanes_controller_under_replicated_partitions``: partitions whose ISR is smaller than their
  replica set, as the metadata says;
- ``lanes_controller_metadata_log_offset``: the last metadata record applied.

Counted as metadata records are committed: ``lanes_controller_leader_elections_total`` (every
partition change that names a new leader: a failover, a preferred or unclean election).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client import Counter
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from lanes.metadata.image import NO_LEADER, MetadataImage
from lanes.runtime.metrics import ServiceMetrics
from lanes.v1 import controller_pb2, metadata_pb2


@dataclass(frozen=True)
class QuorumView:
    """What the quorum's gauges report, read at scrape time."""

    active: bool
    described: controller_pb2.DescribeQuorumResponse
    leader_changes: int
    last_election_ms: int | None


class ControllerMetrics:
    """The controller's election and throttle counters and its scrape-time gauges."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self.service = metrics
        self.leader_elections = Counter(
            "lanes_controller_leader_elections",
            "Partition leader changes the controller committed (failovers, preferred and unclean elections).",
            registry=metrics.registry,
        )
        self.mutations_throttled = Counter(
            "lanes_controller_mutations_throttled",
            "Topic creations, partition additions and topic deletions refused because the user's controller "
            "mutation quota was used up (KIP-599).",
            registry=metrics.registry,
        )

    def committed(self, records: Sequence[metadata_pb2.MetadataRecord]) -> None:
        """Count what matters in records just committed."""
        for record in records:
            if record.WhichOneof("record") == "partition_change" and record.partition_change.HasField("leader_id"):
                self.leader_elections.inc()

    @staticmethod
    def quorum_gauges(view: QuorumView) -> list[Metric]:
        """The quorum's gauges (every controller)."""
        described = view.described
        voter_lag = GaugeMetricFamily(
            "lanes_controller_quorum_voter_lag",
            "On the active controller: entries each voter's metadata log is behind its own.",
            labels=["voter"],
        )
        fetch_age = GaugeMetricFamily(
            "lanes_controller_quorum_voter_fetch_age_seconds",
            "On the active controller: seconds since each voter last fetched.",
            labels=["voter"],
        )
        if view.active:
            for voter in described.voters:
                if voter.log_end_offset >= 0:
                    voter_lag.add_metric([str(voter.endpoint.node_id)], described.log_end_offset - voter.log_end_offset)
                    fetch_age.add_metric([str(voter.endpoint.node_id)], voter.last_fetch_age_ms / 1000)
        leader_changes = CounterMetricFamily(
            "lanes_controller_quorum_leader_changes", "Leaders this controller has seen take over the quorum."
        )
        leader_changes.add_metric([], view.leader_changes)
        return [
            GaugeMetricFamily(
                "lanes_controller_active", "1 on the active controller, 0 on the others.", int(view.active)
            ),
            GaugeMetricFamily("lanes_controller_quorum_epoch", "The controller quorum's epoch.", described.epoch),
            GaugeMetricFamily(
                "lanes_controller_quorum_has_leader",
                "1 while this controller knows a quorum leader, 0 during an election.",
                int(described.leader_id >= 0),
            ),
            GaugeMetricFamily(
                "lanes_controller_quorum_can_vote",
                "0 while a controller that lost its data directory rejoins without a vote.",
                int(described.can_vote),
            ),
            leader_changes,
            GaugeMetricFamily(
                "lanes_controller_quorum_last_election_seconds",
                "How long the last election left this controller without a leader.",
                (view.last_election_ms or 0) / 1000,
            ),
            GaugeMetricFamily(
                "lanes_controller_quorum_commit_lag",
                "Entries of this controller's metadata log not committed yet.",
                max(described.log_end_offset - described.high_watermark, 0),
            ),
            voter_lag,
            fetch_age,
        ]

    @staticmethod
    def gauges(state: MetadataImage) -> list[Metric]:
        """The metadata state's gauges (the active controller only)."""
        brokers = GaugeMetricFamily("lanes_controller_brokers", "Registered brokers by state.", labels=["state"])
        coordinators = GaugeMetricFamily(
            "lanes_controller_coordinators", "Registered group coordinators by state.", labels=["state"]
        )
        for family, nodes in ((brokers, state.brokers.values()), (coordinators, state.coordinators.values())):
            fenced = sum(1 for node in nodes if node.fenced)
            family.add_metric(["fenced"], fenced)
            family.add_metric(["unfenced"], len(nodes) - fenced)
        partitions = [p for topic in state.topics.values() for p in topic.partitions.values()]
        return [
            brokers,
            coordinators,
            GaugeMetricFamily("lanes_controller_topics", "Topics, internal ones included.", len(state.topics)),
            GaugeMetricFamily("lanes_controller_partitions", "Partitions of every topic.", len(partitions)),
            GaugeMetricFamily(
                "lanes_controller_offline_partitions",
                "Partitions without a leader: nothing can be produced to or consumed from them.",
                sum(1 for p in partitions if p.leader == NO_LEADER),
            ),
            GaugeMetricFamily(
                "lanes_controller_under_replicated_partitions",
                "Partitions whose ISR is smaller than their replica set.",
                sum(1 for p in partitions if len(p.isr) < len(p.replicas)),
            ),
            GaugeMetricFamily(
                "lanes_controller_metadata_log_offset", "Offset of the last metadata record applied.", state.last_offset
            ),
        ]
