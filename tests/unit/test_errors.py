"""Error codes: the Python enum is the proto enum, each code is classified, exceptions map."""

from __future__ import annotations

import pytest

from lanes.errors import (
    ErrorCode,
    LanesError,
    NotLeaderError,
    RetriableError,
    TopicAlreadyExistsError,
    error_for,
    exception_class_for,
)
from lanes.v1 import common_pb2


def test_python_enum_matches_the_wire_contract_exactly() -> None:
    wire = dict(common_pb2.ErrorCode.items())
    assert {code.name: code.value for code in ErrorCode} == wire


@pytest.mark.parametrize("code", [c for c in ErrorCode if c is not ErrorCode.NONE])
def test_every_error_code_has_a_hint_and_a_matching_exception(code: ErrorCode) -> None:
    assert code.hint
    exception = error_for(code, "")
    assert exception.code is code
    assert exception.retriable is code.retriable
    assert isinstance(exception, RetriableError) is code.retriable
    assert code.hint in str(exception)


def test_specific_exceptions_for_common_codes() -> None:
    assert isinstance(error_for(ErrorCode.NOT_LEADER_OR_FOLLOWER), NotLeaderError)
    assert exception_class_for(ErrorCode.TOPIC_ALREADY_EXISTS) is TopicAlreadyExistsError
    error = error_for(6, "partition orders-3 moved to broker 2")
    assert str(error) == "NOT_LEADER_OR_FOLLOWER: partition orders-3 moved to broker 2"


def test_unknown_codes_from_newer_servers_still_raise() -> None:
    error = error_for(9999, "something new")
    assert type(error) is LanesError
    assert "unknown error code 9999" in str(error)


def test_none_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="success"):
        exception_class_for(ErrorCode.NONE)
