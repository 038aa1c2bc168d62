"""The operator's ConsumerGroup decisions (pure): offset resets once and only on an empty group;
replicas from lag, bounded by min/max and the partition count."""

from __future__ import annotations

import pytest

from lanes_operator.groups import Autoscale, ResetDecision, desired_replicas, reset_decision


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
