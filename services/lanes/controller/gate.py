"""What stands between the network and a controller: the quorum's own service (the controllers'
Raft traffic) and the gate that lets Controller RPCs reach only the active controller.

Owned by the controller's event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from lanes.controller.quorum import Quorum
from lanes.controller.quorum_controller import QuorumController
from lanes.errors import ErrorCode, NotControllerError
from lanes.rpc.controllers import ACTIVE_CONTROLLER_KEY, NOT_CONTROLLER_DETAILS
from lanes.rpc.tls import check_claim, node_identity
from lanes.rpc.wire import ServicerContext, wire_error
from lanes.runtime.access.guard import Listener
from lanes.runtime.interceptors import CallInterceptor, Wrappers
from lanes.v1 import controller_pb2, controller_pb2_grpc


class QuorumService(controller_pb2_grpc.ControllerQuorumServicer):
    """The controllers' Raft traffic, into this controller's quorum."""

    def __init__(self, quorum: Quorum) -> None:
        self._quorum = quorum

    async def Send(  # noqa: N802
        self, request: controller_pb2.RaftMessage, context: ServicerContext
    ) -> controller_pb2.RaftAck:
        await check_claim(context, node_identity("controller", request.sender))
        self._quorum.receive(request)
        return controller_pb2.RaftAck()

    async def DescribeQuorum(  # noqa: N802
        self, request: controller_pb2.DescribeQuorumRequest, context: ServicerContext
    ) -> controller_pb2.DescribeQuorumResponse:
        answer = self._quorum.describe()
        answer.error.CopyFrom(wire_error(ErrorCode.NONE))
        return answer


class ActiveControllerGate(CallInterceptor):
    """Controller RPCs reach only the active controller: elsewhere, and when a call finds its
    controller deposed, they fail with FAILED_PRECONDITION, details starting NOT_CONTROLLER, and
    the active controller's address in trailing metadata (``ACTIVE_CONTROLLER_KEY``): on the
    internal listener the one nodes dial, on the client listener its client listener (when it
    registered one, ``ControllerRegisteredRecord``)."""

    def __init__(self, controller: QuorumController, listener: Listener = "client") -> None:
        self._controller = controller
        self._listener = listener

    def wrappers(self, method: str) -> Wrappers | None:
        if not method.startswith(f"/{CONTROLLER_SERVICE}/"):
            return None
        return {"unary_unary": self._gate_unary, "unary_stream": self._gate_stream}

    def _gate_unary(self, inner: Any) -> Any:
        async def unary(request: Any, context: ServicerContext) -> Any:
            if not self._controller.active:
                await self._refuse(context, self._controller.quorum.not_leader_message())
            try:
                return await inner(request, context)
            except NotControllerError as exc:
                await self._refuse(context, exc.message)

        return unary

    def _gate_stream(self, inner: Any) -> Any:
        async def stream(request: Any, context: ServicerContext) -> AsyncIterator[Any]:
            if not self._controller.active:
                await self._refuse(context, self._controller.quorum.not_leader_message())
            try:
                async for item in inner(request, context):
                    yield item
            except NotControllerError as exc:
                await self._refuse(context, exc.message)

        return stream

    async def _refuse(self, context: ServicerContext, why: str) -> None:
        address = self._controller.quorum.leader_address if not self._controller.active else None
        if address is not None and self._listener != "internal":
            registered = self._controller.image.controller_at(address)
            port = registered.client_port(self._listener == "certificates") if registered is not None else 0
            address = f"{registered.host}:{port}" if registered is not None else None
        metadata = ((ACTIVE_CONTROLLER_KEY, address),) if address else ()
        await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"{NOT_CONTROLLER_DETAILS}: {why}", metadata)


CONTROLLER_SERVICE = controller_pb2.DESCRIPTOR.services_by_name["Controller"].full_name
QUORUM_SERVICE = controller_pb2.DESCRIPTOR.services_by_name["ControllerQuorum"].full_name


def add_quorum_to_server(quorum: Quorum, server: grpc.aio.Server) -> None:
    """Register ``quorum``'s service on ``server`` (the generated helper is untyped)."""
    controller_pb2_grpc.add_ControllerQuorumServicer_to_server(QuorumService(quorum), server)  # type: ignore[no-untyped-call]
