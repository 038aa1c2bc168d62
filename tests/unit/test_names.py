"""Topic and group naming rules: errors that state the rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lanes.errors import ErrorCode, InvalidGroupIdError, InvalidTopicError
from lanes.protocol.names import (
    CONSUMER_OFFSETS_TOPIC,
    collision_key,
    is_internal_topic,
    validate_group_id,
    validate_topic_name,
)

valid_topic_names = st.from_regex(r"[a-zA-Z0-9._-]{1,249}", fullmatch=True).filter(
    lambda n: n not in {".", ".."} and not n.startswith("__")
)


@given(name=valid_topic_names)
def test_valid_topic_names_pass_unchanged(name: str) -> None:
    assert validate_topic_name(name) == name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "empty"),
        (".", "not a valid topic name"),
        ("..", "not a valid topic name"),
        ("a" * 250, "250 characters is too long"),
        ("orders/eu", "contains '/'"),
        ("héllo wörld", "contains ' ', 'é', 'ö'"),
        ("__internal", "reserved for internal topics"),
    ],
)
def test_invalid_topic_names_say_the_rule(name: str, message: str) -> None:
    with pytest.raises(InvalidTopicError, match=message) as raised:
        validate_topic_name(name)
    assert raised.value.code is ErrorCode.INVALID_TOPIC_EXCEPTION
    if message != "reserved for internal topics":
        assert "a-z, A-Z, 0-9, '.', '_' and '-'" in str(raised.value)


def test_internal_topics_are_allowed_where_asked() -> None:
    assert is_internal_topic(CONSUMER_OFFSETS_TOPIC)
    assert validate_topic_name(CONSUMER_OFFSETS_TOPIC, allow_internal=True) == CONSUMER_OFFSETS_TOPIC


def test_dots_and_underscores_collide() -> None:
    assert collision_key("orders.eu") == collision_key("orders_eu")
    assert collision_key("orders-eu") != collision_key("orders_eu")


@pytest.mark.parametrize(
    ("group_id", "message"),
    [("", "empty"), ("g" * 256, "too long"), ("a\nb", "control characters"), (" g", "whitespace")],
)
def test_invalid_group_ids_say_the_rule(group_id: str, message: str) -> None:
    with pytest.raises(InvalidGroupIdError, match=message):
        validate_group_id(group_id)


def test_group_ids_may_hold_any_printable_text() -> None:
    assert validate_group_id("billing service / eu-west ✓") == "billing service / eu-west ✓"
