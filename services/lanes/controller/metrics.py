"""The controller's Prometheus metrics (docs/operations.md lists them with the alerts on them).

Reported at each scrape from the metadata state:

- ``lanes_controller_active``: 1 on the active controller (Lanes runs one controller);
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

from prometheus_client import Counter
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from lanes.metadata.image import NO_LEADER, MetadataImage
from lanes.runtime.metrics import ServiceMetrics
from lanes.v1 import metadata_pb2


class ControllerMetrics:
    """The controller's election counter and its scrape-time gauges."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self.service = metrics
        self.leader_elections = Counter(
            "lanes_controller_leader_elections",
            "Partition leader changes the controller committed (failovers, preferred and unclean elections).",
            registry=metrics.registry,
        )

    def committed(self, records: Sequence[metadata_pb2.MetadataRecord]) -> None:
        """Count what matters in records just committed."""
        for record in records:
            if record.WhichOneof("record") == "partition_change" and record.partition_change.HasField("leader_id"):
                self.leader_elections.inc()

    @staticmethod
    def gauges(state: MetadataImage) -> list[Metric]:
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
            GaugeMetricFamily("lanes_controller_active", "1 on the active controller.", 1),
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
