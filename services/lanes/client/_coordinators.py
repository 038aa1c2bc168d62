"""Finding group coordinators from a client: the brokers' Metadata lists the live coordinators,
and any coordinator answers FindCoordinator for any group. Owned by the client's event loop."""

from __future__ import annotations

import grpc

from lanes.client._cluster import ClusterView
from lanes.errors import ErrorCode, error_for
from lanes.rpc.wire import code_of
from lanes.v1 import coordinator_pb2, coordinator_pb2_grpc

#: Answers after which the client finds the coordinator again and retries.
REDISCOVER = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


class Coordinators:
    """Where each group's coordinator is, as last found."""

    def __init__(self, cluster: ClusterView, request_timeout_s: float) -> None:
        self.cluster = cluster
        self._timeout_s = request_timeout_s
        self._by_group: dict[str, str] = {}

    def stub(self, address: str) -> coordinator_pb2_grpc.GroupCoordinatorStub:
        """A GroupCoordinator stub on the cached channel to ``address``."""
        return coordinator_pb2_grpc.GroupCoordinatorStub(self.cluster.channel(address))  # type: ignore[no-untyped-call]

    async def addresses(self) -> list[str]:
        """Every live coordinator's address (asks a broker when none is known)."""
        if not self.cluster.coordinators:
            await self.cluster.refresh([])
        return sorted(self.cluster.coordinators.values())

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
