"""A broker's calls to the group coordinators and the active controller, on behalf of the Kafka
clients it serves (a Kafka client sends its group and admin requests to a broker: Lanes'
coordinators and controllers are processes of their own).

Admin calls (``ControllerForwarding``) go to the active controller the broker's controller link
follows, or the one a NOT_CONTROLLER refusal names, with the same call metadata, for up to
``timeout_s``.

Each call goes to the coordinator owning the group's shard (``mmh3(group id) mod`` the partitions
of ``__consumer_offsets``, its owner in the broker's metadata image), on its internal listener
when it has one, with the client's principal, host and client id as call metadata
(``ON_BEHALF_OF_KEY``: the coordinator's guard believes them from a broker's certificate only and
authorizes the call as that client, Kafka's Envelope of KIP-590). An answer of NOT_COORDINATOR or
COORDINATOR_NOT_AVAILABLE, or a coordinator that cannot be reached, is retried for up to
``timeout_s`` as the image catches up; then the last answer is returned (a transport failure as
COORDINATOR_NOT_AVAILABLE), and the Kafka client finds its coordinator again, as it would with Kafka.

Owned by the broker's event loop; channels are kept per coordinator address.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import grpc

from lanes.deadline import Deadline, attempts
from lanes.errors import ErrorCode
from lanes.metadata.image import MetadataImage
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.protocol.partitioner import partition_for_key
from lanes.rpc.call_metadata import CLIENT_ID_KEY, ON_BEHALF_OF_HOST_KEY, ON_BEHALF_OF_KEY
from lanes.rpc.channels import open_channel
from lanes.rpc.controllers import active_controller_named, is_not_controller
from lanes.rpc.wire import code_of, security_refusal, wire_error
from lanes.security.quota_entities import valid_client_id
from lanes.v1 import common_pb2, controller_pb2_grpc, coordinator_pb2_grpc

#: how long a call keeps trying while the group's coordinator moves
TIMEOUT_S = 5.0
_RETRY_PAUSE_S = 0.1
_REDISCOVER = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


def on_behalf(caller: tuple[str, str, str]) -> tuple[tuple[str, str], ...]:
    """The call metadata naming ``caller`` (principal, host, client id) to the node called."""
    principal, host, client_id = caller
    metadata: tuple[tuple[str, str], ...] = ((ON_BEHALF_OF_KEY, principal), (ON_BEHALF_OF_HOST_KEY, host))
    if client_id and valid_client_id(client_id):  # (others are measured as no client id)
        metadata += ((CLIENT_ID_KEY, client_id),)
    return metadata


class GroupLink:
    """See the module docstring. ``image``: the broker's metadata image, as it is now."""

    def __init__(self, image: Callable[[], MetadataImage], *, timeout_s: float = TIMEOUT_S) -> None:
        self._image = image
        self._timeout_s = timeout_s
        self._channels: dict[str, grpc.aio.Channel] = {}

    def coordinator_address(self, group_id: str) -> str | None:
        """Where the coordinator of ``group_id`` is dialled (None: nobody serves its shard now)."""
        image = self._image()
        topic = image.topic(CONSUMER_OFFSETS_TOPIC)
        if topic is None or not topic.partitions:
            return None
        owner = image.shards.get(partition_for_key(group_id.encode(), len(topic.partitions)))
        coordinator = image.coordinators.get(owner.coordinator_id) if owner is not None else None
        if coordinator is None or coordinator.fenced:
            return None
        return f"{coordinator.host}:{coordinator.internal_port or coordinator.port}"

    def coordinator_addresses(self) -> list[str]:
        """Every live coordinator (listings ask each)."""
        return [f"{c.host}:{c.internal_port or c.port}" for c in self._image().live_coordinators()]

    async def ask(
        self,
        group_id: str,
        method: str,
        request: Any,
        caller: tuple[str, str, str],
        *,
        error_of: Callable[[Any], common_pb2.Error],
        refusal: Callable[[common_pb2.Error], Any],
    ) -> Any:
        """``method`` of the group's coordinator for ``caller`` (principal, host, client id), retried
        as the module docstring says; ``refusal(error)`` is the answer when no attempt got one."""
        error = wire_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no attempt was made")
        answer = None
        async for _ in attempts(Deadline(self._timeout_s), _RETRY_PAUSE_S):
            address = self.coordinator_address(group_id)
            if address is None:
                error = wire_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no coordinator serves group {group_id!r} now")
                continue
            try:
                answer = await self._call(address, method, request, caller)
            except grpc.aio.AioRpcError as exc:
                refused = security_refusal(exc)
                if refused is not None:  # the client may not: the refusal's own code (GROUP_AUTHORIZATION_FAILED...)
                    return refusal(wire_error(refused.code, str(refused)))
                error = wire_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, exc.code().name)
                answer = None
                continue
            if code_of(error_of(answer)) not in _REDISCOVER:
                return answer
        return answer if answer is not None else refusal(error)

    async def ask_each(self, method: str, request: Any, caller: tuple[str, str, str]) -> list[Any]:
        """``method`` of every live coordinator (those that do not answer are left out)."""
        addresses = self.coordinator_addresses()
        answers = await asyncio.gather(
            *(self._call(address, method, request, caller) for address in addresses), return_exceptions=True
        )
        return [answer for answer in answers if not isinstance(answer, BaseException)]

    async def _call(self, address: str, method: str, request: Any, caller: tuple[str, str, str]) -> Any:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = open_channel(address)
        stub = coordinator_pb2_grpc.GroupCoordinatorStub(channel)  # type: ignore[no-untyped-call]
        return await getattr(stub, method)(request, metadata=on_behalf(caller), timeout=self._timeout_s)

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            with contextlib.suppress(Exception):
                await channel.close()


class ControllerForwarding:
    """Admin calls to the active controller (see the module docstring): first to the one the
    broker's controller link follows (``active``: a standby authorizes with metadata that may lag,
    so it is not asked), then to the one a NOT_CONTROLLER refusal names."""

    def __init__(self, active: Callable[[], str], *, timeout_s: float = TIMEOUT_S) -> None:
        self._active = active
        self._timeout_s = timeout_s
        self._channels: dict[str, grpc.aio.Channel] = {}

    async def ask(
        self, method: str, request: Any, caller: tuple[str, str, str], *, refusal: Callable[[common_pb2.Error], Any]
    ) -> Any:
        """``method`` of the active controller for ``caller``; ``refusal(error)`` when the caller may
        not (the refusal's own code) or no controller answered in time (REQUEST_TIMED_OUT)."""
        error = wire_error(ErrorCode.REQUEST_TIMED_OUT, "no controller answered")
        named: str | None = None
        async for _ in attempts(Deadline(self._timeout_s), _RETRY_PAUSE_S):
            address = named or self._active()
            named = None
            channel = self._channels.get(address)
            if channel is None:
                channel = self._channels[address] = open_channel(address, fast_reconnect=True)
            stub = controller_pb2_grpc.ControllerStub(channel)  # type: ignore[no-untyped-call]
            try:
                return await getattr(stub, method)(request, metadata=on_behalf(caller), timeout=self._timeout_s)
            except grpc.aio.AioRpcError as exc:
                if is_not_controller(exc):
                    named = active_controller_named(exc)
                    error = wire_error(ErrorCode.NOT_CONTROLLER, "the controller moved")
                    continue
                refused = security_refusal(exc)
                if refused is not None:
                    return refusal(wire_error(refused.code, str(refused)))
                if exc.code() is grpc.StatusCode.INVALID_ARGUMENT:  # (a request the controller will never take)
                    return refusal(wire_error(ErrorCode.INVALID_REQUEST, exc.details() or "invalid request"))
                error = wire_error(ErrorCode.REQUEST_TIMED_OUT, f"{exc.code().name}: {exc.details()}")
        return refusal(error)

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            with contextlib.suppress(Exception):
                await channel.close()
