"""The operator's ConsumerGroup decisions (pure): offset resets once and only on an empty group;
replicas from lag, bounded by min/max and the partition count, scale-downs stabilized; the status
from a group's description."""

from __future__ import annotations

import pytest

from lanes.client import GroupDescription, PartitionLag
from lanes_operator.groups import (
    Autoscale,
    ResetDecision,
    bounded,
    desired_replicas,
    group_status,
    reset_decision,
    reset_target,
    stabilized,
)


def test_a_reset_is_applied_once_per_request_and_only_to_an_empty_group() -> None:
    reset = {"requestId": "replay-1", "to": "earliest"}
    assert reset_decision(None, None, members=0) == ResetDecision(apply=False)
    assert reset_decision(reset, None, members=0) == ResetDecision(apply=True)
    waiting = reset_decision(reset, None, members=2)
    assert not waiting.apply
    assert "waits for the group's 2 members to leave" in (waiting.waiting or "")
    assert reset_decision(reset, "replay-1", members=0) == ResetDecision(apply=False)  # done already
    assert reset_decision({**reset, "requestId": "replay-2"}, "replay-1", members=0).apply


@pytest.mark.parametrize(
    ("total_lag", "max_lag_s", "partitions", "replicas"),
    [
        (0, 0.0, 6, 1),  # idle: minReplicas
        (2_500, 0.0, 6, 3),  # ceil(2,500 / 1,000)
        (10_000, 0.0, 6, 4),  # maxReplicas
        (10_000, 0.0, 2, 2),  # never above the partitions
        (100, 95.0, 6, 4),  # the time lag asks for more: ceil(95 / 30)
        (10_000, 0.0, 0, 4),  # partitions unknown: min/max only
    ],
)
def test_replicas_follow_the_lag_within_bounds(
    total_lag: int, max_lag_s: float, partitions: int, replicas: int
) -> None:
    autoscale = Autoscale.of({"lagThreshold": 1_000, "timeLagThresholdSeconds": 30, "minReplicas": 1, "maxReplicas": 4})
    assert desired_replicas(autoscale, total_lag, max_lag_s, partitions) == replicas


def test_min_replicas_zero_scales_an_idle_group_down_and_min_never_exceeds_the_partitions() -> None:
    assert desired_replicas(Autoscale(lag_threshold=100, max_replicas=5, min_replicas=0), 0, 0.0, 3) == 0
    assert desired_replicas(Autoscale(lag_threshold=100, max_replicas=5, min_replicas=4), 0, 0.0, 2) == 2


def test_group_status_sums_known_lags_and_keeps_partitions_in_order() -> None:
    offsets = (
        PartitionLag("orders", 1, 10, 40, 30, 2_500, "m-1", ""),
        PartitionLag("orders", 0, 5, 5, 0, 0, "m-2", ""),
        PartitionLag("audit", 0, -1, 7, -1, -1, "", ""),  # nothing committed: lag unknown
    )
    members = (object(), object())
    group = GroupDescription("g", "stable", 3, 3, "uniform", "127.0.0.1:1", members=members, offsets=offsets)  # type: ignore[arg-type]
    status = group_status(group)
    assert (status["state"], status["members"], status["lag"], status["lagSeconds"]) == ("stable", 2, 30, 2.5)
    assert [(p["topic"], p["partition"]) for p in status["partitions"]] == [("audit", 0), ("orders", 0), ("orders", 1)]
    assert status["partitions"][0]["lagSeconds"] == -1.0
    assert group_status(None) == {"state": "dead", "members": 0, "lag": 0, "lagSeconds": 0.0, "partitions": []}


@pytest.mark.parametrize(
    ("reset", "target"),
    [
        ({"to": "earliest"}, "earliest"),
        ({"to": "latest"}, "latest"),
        ({"to": "offset", "value": 42}, "offset:42"),
        ({"to": "shift", "value": -10}, "shift:-10"),
        ({"to": "timestamp", "value": "2026-11-23T16:00:00Z"}, "timestamp:1795449600000"),
        ({"to": "timestamp", "value": "2026-11-23T17:00:00.5+01:00"}, "timestamp:1795449600500"),
    ],
)
def test_reset_targets(reset: dict[str, object], target: str) -> None:
    assert reset_target(reset) == target


def test_a_reset_time_without_a_zone_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a zone"):
        reset_target({"to": "timestamp", "value": "2026-11-23T16:00:00"})


def test_scaling_up_is_immediate_and_down_waits_for_the_whole_window() -> None:
    window_s = 300
    assert stabilized([(0, 2), (10, 5)], now_s=10, window_s=window_s) == 5  # up at once
    assert stabilized([(0, 5), (100, 2)], now_s=100, window_s=window_s) == 5  # down: not yet
    assert stabilized([(0, 5), (100, 2), (301, 2)], now_s=301, window_s=window_s) == 2  # the 5 left the window
    assert stabilized([(50, 4)], now_s=50, window_s=0) == 4
    with pytest.raises(ValueError, match="no recommendation"):
        stabilized([], now_s=0, window_s=window_s)


def test_autoscale_defaults() -> None:
    autoscale = Autoscale.of({"targetRef": {"kind": "Deployment", "name": "x"}, "lagThreshold": 10, "maxReplicas": 3})
    assert (autoscale.min_replicas, autoscale.scale_down_stabilization_s, autoscale.time_lag_threshold_s) == (
        1,
        300,
        None,
    )
    assert bounded(autoscale, 9, partitions=2) == 2
    assert bounded(autoscale, 0, partitions=2) == 1
