"""``ControllerEndpoints``: finding and following the active controller when several tasks share
the endpoints (a node's heartbeats and its metadata stream)."""

from __future__ import annotations

import grpc
import pytest

from lanes.rpc.controllers import ACTIVE_CONTROLLER_KEY, NOT_CONTROLLER_DETAILS, ControllerEndpoints

A, B, C = "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"


def refusal(active: str | None) -> grpc.aio.AioRpcError:
    """A NOT_CONTROLLER refusal naming ``active`` (None: an election, nobody known)."""
    trailing = grpc.aio.Metadata(*([(ACTIVE_CONTROLLER_KEY, active)] if active else []))
    return grpc.aio.AioRpcError(
        grpc.StatusCode.FAILED_PRECONDITION, grpc.aio.Metadata(), trailing, f"{NOT_CONTROLLER_DETAILS}: not me"
    )


def unavailable() -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), "gone")


@pytest.fixture
def endpoints() -> ControllerEndpoints:
    return ControllerEndpoints([A, B, C])


def test_a_refusal_naming_the_active_controller_is_followed(endpoints: ControllerEndpoints) -> None:
    assert endpoints.failed(refusal(C), A) is True
    assert endpoints.address == C


def test_two_tasks_refused_by_the_same_controller_both_end_on_the_active_one(endpoints: ControllerEndpoints) -> None:
    """The livelock seen under controller failovers: the heartbeat and the metadata stream both
    call A, which names C; the first failure moves both to C, and the second (judged against C,
    the current target, it looked like C refusing) used to move them off C again, every round."""
    heartbeat_at = endpoints.address  # where each task sent its call
    stream_at = endpoints.address
    assert endpoints.failed(refusal(C), heartbeat_at) is True
    assert endpoints.failed(refusal(C), stream_at) is True
    assert endpoints.address == C


def test_a_failure_of_a_controller_already_left_moves_nobody(endpoints: ControllerEndpoints) -> None:
    heartbeat_at = endpoints.address  # where each task sent its call
    stream_at = endpoints.address
    assert endpoints.failed(unavailable(), heartbeat_at) is False  # A is down: on to B
    assert endpoints.address == B
    assert endpoints.failed(unavailable(), stream_at) is True  # also A: B stands, retry there at once
    assert endpoints.address == B
    endpoints.move_on(stream_at)  # a stream of A's went silent: B stands too
    assert endpoints.address == B


def test_without_a_name_the_next_controller_is_tried_in_turn(endpoints: ControllerEndpoints) -> None:
    seen = []
    for _ in range(4):
        address = endpoints.address
        seen.append(address)
        assert endpoints.failed(refusal(None), address) is False
    assert seen == [A, B, C, A]


def test_a_named_controller_not_in_the_list_is_learned(endpoints: ControllerEndpoints) -> None:
    assert endpoints.failed(refusal("127.0.0.1:4"), A) is True
    assert endpoints.addresses[-1] == "127.0.0.1:4" == endpoints.address
