"""The producer's settings as Kafka's (KIP-679): idempotence is on by default only where nothing
the user chose conflicts with it; asked for explicitly with a conflict, it is an error."""

from __future__ import annotations

import pytest

from lanes.aio import Producer
from lanes.errors import LanesError


@pytest.mark.parametrize(
    ("settings", "idempotent"),
    [
        ({}, True),
        ({"acks": "all"}, True),
        ({"acks": "1"}, False),
        ({"acks": 0}, False),
        ({"acks": "all", "max_in_flight_requests_per_partition": 10}, False),
        ({"acks": "1", "enable_idempotence": False}, False),
        ({"acks": "all", "enable_idempotence": False}, False),
    ],
)
def test_idempotence_by_default_unless_a_chosen_setting_conflicts(
    settings: dict[str, object], idempotent: bool
) -> None:
    assert Producer("127.0.0.1:1", **settings).idempotent is idempotent  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "settings",
    [
        {"acks": "1", "enable_idempotence": True},
        {"acks": "all", "enable_idempotence": True, "max_in_flight_requests_per_partition": 6},
    ],
)
def test_idempotence_asked_for_with_a_conflicting_setting_is_refused(settings: dict[str, object]) -> None:
    with pytest.raises(LanesError):
        Producer("127.0.0.1:1", **settings)  # type: ignore[arg-type]
