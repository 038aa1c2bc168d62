"""What to do about one ConsumerGroup resource: a pure core (no Kubernetes, no gRPC). The kopf
handlers read the group (DescribeGroups) and the target workload, call these, and write.

- ``reset_decision``: a ``spec.resetOffsets`` request is applied once per ``requestId``, and only
  while the group has no members (a member would overwrite the reset with its next commit, and
  Lanes refuses resets of active groups); until then the GroupActive condition says why it waits.
- ``group_status``: the resource's status fields from the group's description (members, lag in
  records and seconds, per partition);
- ``desired_replicas``: lag-based autoscaling of the workload that runs the members: one replica
  per ``lagThreshold`` records of total lag, or per ``timeLagThresholdSeconds`` of the largest time
  lag, whichever asks for more; at least ``minReplicas``, at most ``maxReplicas`` and never more
  than the group's partitions (extra members would idle); ``stabilized`` holds a scale-down back
  until the lower recommendation has lasted ``scaleDownStabilizationSeconds`` (as the
  HorizontalPodAutoscaler does), so a lag that dips between two bursts does not drop consumers
  that are needed again a moment later.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

MAX_STATUS_PARTITIONS = 1000  # the CRD's status.partitions maxItems


class PartitionProgress(Protocol):
    """What ``group_status`` reads of one partition (``lanes.client``'s ``PartitionLag``)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def lag(self) -> int: ...
    @property
    def lag_ms(self) -> int: ...
    @property
    def member_id(self) -> str: ...


class GroupProgress(Protocol):
    """What ``group_status`` reads of a group (``lanes.client``'s ``GroupDescription``)."""

    @property
    def state(self) -> str: ...
    @property
    def members(self) -> Sequence[object]: ...
    @property
    def offsets(self) -> Sequence[PartitionProgress]: ...


def group_status(group: GroupProgress | None) -> dict[str, Any]:
    """Status fields of a group: state, members, total lag (records), the largest time lag
    (seconds) and per partition progress. ``None`` (the group does not exist yet): state dead,
    no members, no lag known. Lags of -1 (unknown) are left out of the totals."""
    if group is None:
        return {"state": "dead", "members": 0, "lag": 0, "lagSeconds": 0.0, "partitions": []}
    partitions = [
        {
            "topic": p.topic,
            "partition": p.partition,
            "committedOffset": p.committed_offset,
            "logEndOffset": p.log_end_offset,
            "lag": p.lag,
            "lagSeconds": round(p.lag_ms / 1000, 3) if p.lag_ms >= 0 else -1.0,
            "memberId": p.member_id,
        }
        for p in sorted(group.offsets, key=lambda p: (p.topic, p.partition))
    ]
    return {
        "state": group.state,
        "members": len(group.members),
        "lag": sum(p.lag for p in group.offsets if p.lag > 0),
        "lagSeconds": max((p.lag_ms / 1000 for p in group.offsets if p.lag_ms > 0), default=0.0),
        "partitions": partitions[:MAX_STATUS_PARTITIONS],
    }


def reset_target(reset: Mapping[str, Any]) -> str:
    """``spec.resetOffsets`` as the client's reset target (``earliest``, ``latest``, ``offset:N``,
    ``timestamp:MILLISECONDS``, ``shift:N``). ValueError for a value the CRD should have refused."""
    to = str(reset["to"])
    if to in ("earliest", "latest"):
        return to
    value = reset.get("value")
    if to in ("offset", "shift"):
        return f"{to}:{int(str(value))}"
    if to == "timestamp":
        moment = datetime.fromisoformat(str(value))
        if moment.tzinfo is None:
            raise ValueError(f"reset time {value!r} needs a zone (Z or +HH:MM)")
        return f"timestamp:{round(moment.timestamp() * 1000)}"
    raise ValueError(f"unknown reset target {to!r}")


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
    scale_down_stabilization_s: int = 300

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> Autoscale:
        return cls(
            lag_threshold=int(spec["lagThreshold"]),
            max_replicas=int(spec["maxReplicas"]),
            min_replicas=int(spec.get("minReplicas", 1)),
            time_lag_threshold_s=spec.get("timeLagThresholdSeconds"),
            scale_down_stabilization_s=int(spec.get("scaleDownStabilizationSeconds", 300)),
        )


def desired_replicas(autoscale: Autoscale, total_lag: int, max_lag_s: float, partitions: int) -> int:
    """Replicas for the group's workload (see the module docstring). ``partitions``: of the
    group's topics; 0 when unknown (then only min/max bound the answer)."""
    wanted = math.ceil(max(0, total_lag) / autoscale.lag_threshold)
    if autoscale.time_lag_threshold_s:
        wanted = max(wanted, math.ceil(max(0.0, max_lag_s) / autoscale.time_lag_threshold_s))
    return bounded(autoscale, wanted, partitions)


def bounded(autoscale: Autoscale, replicas: int, partitions: int) -> int:
    """``replicas`` within minReplicas..maxReplicas and never above ``partitions`` (when known)."""
    ceiling = autoscale.max_replicas if partitions <= 0 else min(autoscale.max_replicas, partitions)
    return max(min(replicas, ceiling), min(autoscale.min_replicas, ceiling))


def stabilized(recommendations: Sequence[tuple[float, int]], now_s: float, window_s: float) -> int:
    """The replicas to set from ``recommendations`` ((time, replicas), oldest first, the current
    one last): the largest recommended within the last ``window_s`` seconds, so scaling up is
    immediate and scaling down waits until every recommendation of the window agrees."""
    if not recommendations:
        raise ValueError("no recommendation")
    latest = recommendations[-1][1]
    return max((replicas for at_s, replicas in recommendations if at_s >= now_s - window_s), default=latest)
