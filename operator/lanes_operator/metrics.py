"""The operator's Prometheus metrics, on its own ``/metrics`` (``LANES_OPERATOR_METRICS_PORT``,
9404 by default), beside the process collectors every Lanes process has.

- ``lanes_operator_reconciliations_total{kind, result}``: reconciliations of Topic and
  ConsumerGroup resources by outcome (``ready``, ``not_ready``, ``refused``, ``conflict``,
  ``paused``, ``error``);
- ``lanes_operator_reconcile_duration_seconds{kind}``: how long one took;
- ``lanes_operator_actions_total{kind, action}``: changes made to the cluster or to workloads
  (``Created``, ``PartitionsAdded``, ``ConfigChanged``, ``Recreated``, ``Deleted``,
  ``OffsetsReset``, ``Scaled``...), the same reasons as the Events.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from lanes.runtime.metrics import ServiceMetrics

RECONCILE_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class OperatorMetrics:
    def __init__(self) -> None:
        self.service = ServiceMetrics("operator")
        registry = self.service.registry
        self.reconciliations = Counter(
            "lanes_operator_reconciliations",
            "Reconciliations of Lanes custom resources, by kind and outcome.",
            ["kind", "result"],
            registry=registry,
        )
        self.duration = Histogram(
            "lanes_operator_reconcile_duration_seconds",
            "Time to reconcile one resource, by kind.",
            ["kind"],
            buckets=RECONCILE_BUCKETS_S,
            registry=registry,
        )
        self.actions = Counter(
            "lanes_operator_actions",
            "Changes the operator made, by kind of resource and action (the Events' reasons).",
            ["kind", "action"],
            registry=registry,
        )

    def serve_http(self, host: str, port: int) -> str:
        return self.service.serve_http(host, port)

    def stop(self) -> None:
        self.service.stop()
