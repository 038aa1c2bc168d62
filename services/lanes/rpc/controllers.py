"""The controllers a node or client talks to, and which one it believes is active.

A cluster has several controllers (a Raft quorum); only the active one answers Controller RPCs.
The others refuse with FAILED_PRECONDITION, details starting ``NOT_CONTROLLER``, and the active
one's address in the trailing metadata key ``lanes-active-controller`` when they know it
(``lanes.controller.gate.ActiveControllerGate``). ``ControllerEndpoints`` follows that
pointer after a refusal, and tries the next known controller after any other failure, so
brokers, coordinators, `lanes up` and the operator find the active controller by themselves
and follow it when it moves. Owned by one event loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from lanes.rpc.channels import ChannelCache
from lanes.rpc.credentials import Credentials
from lanes.rpc.tls import ClientTls
from lanes.v1 import controller_pb2_grpc

NOT_CONTROLLER_DETAILS = "NOT_CONTROLLER"

ACTIVE_CONTROLLER_KEY = "lanes-active-controller"


def active_controller_named(exc: grpc.aio.AioRpcError) -> str | None:
    """The active controller a NOT_CONTROLLER refusal names (None: another failure, or none known)."""
    for key, value in exc.trailing_metadata() or ():
        if key == ACTIVE_CONTROLLER_KEY and value:
            return str(value)
    return None


def is_not_controller(exc: grpc.aio.AioRpcError) -> bool:
    return exc.code() == grpc.StatusCode.FAILED_PRECONDITION and (exc.details() or "").startswith(
        NOT_CONTROLLER_DETAILS
    )


class ControllerEndpoints:
    """Channels to the known controllers (opened on first use) and the current target."""

    def __init__(
        self, addresses: Sequence[str], tls: ClientTls = "process", credentials: Credentials | None = None
    ) -> None:
        if not addresses:
            raise ValueError("at least one controller address is needed")
        self.addresses = list(dict.fromkeys(addresses))
        self._current = 0
        self._channels = ChannelCache(fast_reconnect=True, tls=tls, credentials=credentials)

    @property
    def address(self) -> str:
        """The controller calls go to now."""
        return self.addresses[self._current]

    def target(self) -> tuple[str, controller_pb2_grpc.ControllerStub]:
        """The controller calls go to now and a stub for it; a failure of the call is reported
        with that address (``failed``)."""
        address = self.address
        return address, controller_pb2_grpc.ControllerStub(self._channels.get(address))  # type: ignore[no-untyped-call]

    def failed(self, exc: grpc.aio.AioRpcError, address: str) -> bool:
        """A call to ``address`` failed: follow the active controller it named, or move on to the
        next known one. Whether a call should be retried at once (a controller was named, or
        another call already moved on from ``address``).

        Only the failed call's own controller is judged. Several tasks share the endpoints (a
        node's heartbeats and its metadata stream): judged against the current target instead, a
        refusal naming the active controller, arriving after the other task had already followed
        the same name, looked like the active controller refusing, and moved off it; the two
        tasks then pushed each other off the active controller every second until the node was
        fenced (seen under controller failovers)."""
        named = active_controller_named(exc) if is_not_controller(exc) else None
        if named is not None and named != address:
            if named not in self.addresses:
                self.addresses.append(named)
            self._current = self.addresses.index(named)
            return True
        if address != self.address:
            return True
        self.move_on(address)
        return False

    def move_on(self, address: str) -> None:
        """``address`` went silent: calls go to the next known controller (unless another call
        already moved them on from it)."""
        if address == self.address:
            self._current = (self._current + 1) % len(self.addresses)

    async def close(self) -> None:
        await self._channels.close()
