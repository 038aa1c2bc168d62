"""What to do about one ConsumerGroup resource: a pure core (no Kubernetes, no gRPC). The kopf
handlers read the group (DescribeGroups) and the target workload, call these, and write.

- ``reset_decision``: a ``spec.resetOffsets`` request is applied once per ``requestId``, and only
  while the group has no members (a member would overwrite the reset with its next commit, and
  Lanes refuses resets of active groups); until then the GroupActive condition says why it waits.
- ``desired_replicas``: lag-based autoscaling of the workload that runs the members: one replica
  per ``lagThreshold`` records of total lag, or per ``timeLagThresholdSeconds`` of the largest time
  lag, whichever asks for more; at least ``minReplicas``, at most ``maxReplicas`` and never more
  than the group's partitions (extra members would idle).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ResetDecision:
    """``apply``: do the reset now. Otherwise ``waiting`` says why not (None: nothing to do)."""

    apply: bool
    waiting: str | None = None


def reset_decision(reset: Mapping[str, Any] | None, last_applied_request_id: str | None, members: int) -> ResetDecision:
    """Whether the spec's offset reset should be applied now."""
    if not reset or reset.get("requestId") == last_applied_request_id:
        return ResetDecision(apply=False)
    if members > 0:
        return ResetDecision(
            apply=False,
            waiting=f"reset {reset['requestId']!r} waits for the group's {members} members to leave "
            "(scale the consumers to 0 or stop them)",
        )
    return ResetDecision(apply=True)


@dataclass(frozen=True)
class Autoscale:
    """``spec.autoscale`` with its defaults applied."""

    lag_threshold: int
    max_replicas: int
    min_replicas: int = 1
    time_lag_threshold_s: int | None = None

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> Autoscale:
        return cls(
            lag_threshold=int(spec["lagThreshold"]),
            max_replicas=int(spec["maxReplicas"]),
            min_replicas=int(spec.get("minReplicas", 1)),
            time_lag_threshold_s=spec.get("timeLagThresholdSeconds"),
        )


def desired_replicas(autoscale: Autoscale, total_lag: int, max_lag_s: float, partitions: int) -> int:
    """Replicas for the group's workload (see the module docstring). ``partitions``: of the
    group's topics; 0 when unknown (then only min/max bound the answer)."""
    wanted = math.ceil(max(0, total_lag) / autoscale.lag_threshold)
    if autoscale.time_lag_threshold_s:
        wanted = max(wanted, math.ceil(max(0.0, max_lag_s) / autoscale.time_lag_threshold_s))
    ceiling = autoscale.max_replicas if partitions <= 0 else min(autoscale.max_replicas, partitions)
    return max(min(wanted, ceiling), min(autoscale.min_replicas, ceiling))
