"""Finding group coordinators from a client: the brokers' Metadata lists the live coordinators,
and any coordinator holding its controller lease answers FindCoordinator for any group (one
without it refuses: its metadata may be stale). A group's coordinator is found again as soon as
it answers NOT_COORDINATOR or fails. Owned by the client's event loop."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc

from lanes.client._cluster import ClusterView
from lanes.clock import SYSTEM_CLOCK, Clock
from lanes.deadline import Deadline, attempts
from lanes.errors import ErrorCode, RetriableError, error_for
from lanes.rpc.wire import code_of, security_refusal
from lanes.v1 import common_pb2, coordinator_pb2, coordinator_pb2_grpc

T = TypeVar("T")

#: Pause between attempts of a call to a group's coordinator.
RETRY_PAUSE_S = 0.1

#: Answers after which the client finds the coordinator again and retries.
REDISCOVER = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


class Coordinators:
    """Where each group's coordinator is, as last found."""

    def __init__(self, cluster: ClusterView, request_timeout_s: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self.cluster = cluster
        self._timeout_s = request_timeout_s
        self._clock = clock
        self._by_group: dict[str, str] = {}
        self._rotation = random.randrange(1 << 16)

    async def ask(
        self,
        group_id: str,
        call: Callable[[coordinator_pb2_grpc.GroupCoordinatorStub], Awaitable[T]],
        error_of: Callable[[T], common_pb2.Error],
    ) -> T:
        """``call`` the group's coordinator and return its answer, retrying for up to the request
        timeout while the error ``error_of(answer)`` is retriable (finding the coordinator again
        when it moved or did not answer); raise a non-retriable error at once, the last retriable
        one when time runs out."""
        code, message = ErrorCode.REQUEST_TIMED_OUT, "no attempt was made"
        async for _ in attempts(Deadline(self._timeout_s, self._clock), RETRY_PAUSE_S):
            try:
                answer = await call(self.stub(await self.find(group_id)))
                code, message = code_of(error_of(answer)), error_of(answer).message
            except grpc.aio.AioRpcError as exc:
                refused = security_refusal(exc)
                if refused is not None:
                    raise refused from None
                code, message = ErrorCode.NETWORK_EXCEPTION, exc.code().name
            except RetriableError as exc:
                code, message = exc.code, exc.message
            if code is ErrorCode.NONE:
                return answer
            if not code.retriable:
                raise error_for(code, message)
            if code in REDISCOVER or code is ErrorCode.NETWORK_EXCEPTION:
                self.forget(group_id)
        raise error_for(code, f"group {group_id!r}: {message}")

    def stub(self, address: str) -> coordinator_pb2_grpc.GroupCoordinatorStub:
        """A GroupCoordinator stub on the cached channel to ``address``."""
        return self.cluster.stub_of(address, coordinator_pb2_grpc.GroupCoordinatorStub)

    async def addresses(self) -> list[str]:
        """Every live coordinator's address (asks a broker when none is known), starting with a
        different one on each call: a coordinator that cannot answer (cut off from the
        controllers, it refuses FindCoordinator) is not asked first every time."""
        if not self.cluster.coordinators:
            await self.cluster.refresh([])
        found = sorted(self.cluster.coordinators.values())
        self._rotation += 1
        start = self._rotation % len(found) if found else 0
        return found[start:] + found[:start]

    async def find(self, group_id: str) -> str:
        """The address of the group's coordinator; a retriable COORDINATOR_NOT_AVAILABLE error
        while nobody serves it (a shard moving, the cluster starting)."""
        known = self._by_group.get(group_id)
        if known is not None:
            return known
        problems = []
        for address in await self.addresses():
            try:
                found = await self.stub(address).FindCoordinator(
                    coordinator_pb2.FindCoordinatorRequest(group_ids=[group_id]), timeout=self._timeout_s
                )
            except grpc.aio.AioRpcError as exc:
                refused = security_refusal(exc)
                if refused is not None:
                    raise refused from None
                problems.append(f"{address}: {exc.code().name}")
                continue
            location = found.coordinators[0]
            code = code_of(location.error)
            if code is ErrorCode.NONE:
                self._by_group[group_id] = f"{location.coordinator.host}:{location.coordinator.port}"
                return self._by_group[group_id]
            if not code.retriable:
                raise error_for(location.error.code, location.error.message)
            problems.append(f"{address}: {location.error.message}")
        self.cluster.coordinators.clear()  # look them up again next time
        raise error_for(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            f"no coordinator for group {group_id!r} yet ({'; '.join(problems) or 'none listed by the brokers'})",
        )

    def forget(self, group_id: str) -> None:
        """The group's coordinator moved or failed: find it again next time."""
        self._by_group.pop(group_id, None)
