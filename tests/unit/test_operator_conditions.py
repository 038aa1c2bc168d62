"""Status conditions keep their transition time while their status holds; operator settings from
the environment; which of several Topic resources owns a topic."""

from __future__ import annotations

import random

import pytest

from lanes_operator.conditions import condition_of, set_condition
from lanes_operator.settings import OperatorSettings
from lanes_operator.topics import Claim, owner


def test_a_condition_keeps_its_transition_time_until_its_status_changes() -> None:
    first = set_condition(None, "Ready", "False", "Creating", "being created", now="T1", generation=1)
    assert first == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "Creating",
            "message": "being created",
            "lastTransitionTime": "T1",
            "observedGeneration": 1,
        }
    ]
    same = set_condition(first, "Ready", "False", "OfflinePartitions", "2 offline", now="T2", generation=2)
    assert condition_of(same, "Ready") == {
        **first[0],
        "reason": "OfflinePartitions",
        "message": "2 offline",
        "observedGeneration": 2,
    }
    flipped = set_condition(same, "Ready", "True", "Ready", "ok", now="T3")
    assert condition_of(flipped, "Ready")["lastTransitionTime"] == "T3"  # type: ignore[index]
    both = set_condition(flipped, "GroupActive", "True", "MembersActive", "2 members", now="T4")
    assert [c["type"] for c in both] == ["Ready", "GroupActive"]
    assert condition_of(both, "Missing") is None


def test_settings_from_the_environment() -> None:
    settings = OperatorSettings.from_env(
        {
            "LANES_BOOTSTRAP": "b-0:9093,b-1:9093",
            "LANES_OPERATOR_TOPIC_RESYNC_SECONDS": "5",
            "LANES_OPERATOR_PRIORITY": "7",
        }
    )
    assert (settings.bootstrap, settings.topic_resync_s, settings.group_interval_s) == ("b-0:9093,b-1:9093", 5.0, 10.0)
    assert settings.peering_priority(random.Random(1)) == 7
    chosen = OperatorSettings.from_env({}).peering_priority(random.Random(1))
    assert 1 <= chosen < 2**31
    with pytest.raises(ValueError, match="LANES_OPERATOR_GROUP_INTERVAL_SECONDS='often' is not a number"):
        OperatorSettings.from_env({"LANES_OPERATOR_GROUP_INTERVAL_SECONDS": "often"})
    with pytest.raises(ValueError, match="must be above 0"):
        OperatorSettings.from_env({"LANES_OPERATOR_TOPIC_RESYNC_SECONDS": "0"})


def test_the_oldest_resource_owns_a_topic_and_ties_are_broken_by_name() -> None:
    older = Claim("2026-11-23T10:00:00Z", "trading", "prices")
    younger = Claim("2026-11-23T11:00:00Z", "default", "prices")
    twin = Claim("2026-11-23T10:00:00Z", "analytics", "prices")
    assert owner([younger, older]) == older
    assert owner([older, twin, younger]) == twin
    assert owner([]) is None
