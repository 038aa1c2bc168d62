"""Consumer-group administration behind ``lanes.Admin``: list, describe (with lag), delete groups,
reset and delete their offsets. Each request goes to the group's coordinator (found through
``Coordinators``); answers that the coordinator moved or is loading are retried until the
request timeout. Owned by the client's event loop."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

import grpc

from lanes.client._cluster import ClusterView
from lanes.client._coordinators import Coordinators
from lanes.errors import ErrorCode, LanesError, error_for
from lanes.rpc.credentials import ClientCredentials
from lanes.rpc.tls import ClientTls
from lanes.rpc.wire import assignment_from_wire, security_refusal, topic_partitions_to_wire
from lanes.topic_partition import TopicPartition
from lanes.v1 import coordinator_pb2

T = TypeVar("T")
_STATES = {
    coordinator_pb2.GROUP_STATE_EMPTY: "empty",
    coordinator_pb2.GROUP_STATE_RECONCILING: "reconciling",
    coordinator_pb2.GROUP_STATE_STABLE: "stable",
    coordinator_pb2.GROUP_STATE_DEAD: "dead",
    coordinator_pb2.GROUP_STATE_LOADING: "loading",
}


@dataclass(frozen=True)
class GroupListing:
    """A group, briefly."""

    group_id: str
    state: str
    members: int
    coordinator_id: int


@dataclass(frozen=True)
class MemberInfo:
    """A member of a group."""

    member_id: str
    instance_id: str
    client_id: str
    client_host: str
    member_epoch: int
    assignment: frozenset[TopicPartition]
    target_assignment: frozenset[TopicPartition]


@dataclass(frozen=True)
class PartitionLag:
    """A group's progress on one partition (-1: unknown; lag_ms: age of the oldest unread record)."""

    topic: str
    partition: int
    committed_offset: int
    log_end_offset: int
    lag: int
    lag_ms: int
    member_id: str
    metadata: str


@dataclass(frozen=True)
class GroupDescription:
    """A group in full."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    coordinator: str
    members: tuple[MemberInfo, ...]
    offsets: tuple[PartitionLag, ...]

    @property
    def total_lag(self) -> int:
        """Records not yet committed, over every partition with a known lag."""
        return sum(p.lag for p in self.offsets if p.lag > 0)


@dataclass(frozen=True)
class OffsetReset:
    """One partition's reset (``new_offset`` -1 with an error when it could not be computed)."""

    topic: str
    partition: int
    previous_offset: int
    new_offset: int
    error: str


def reset_spec(to: str) -> coordinator_pb2.OffsetResetSpec:
    """``earliest`` | ``latest`` | ``offset:N`` | ``timestamp:MS`` | ``shift:N`` as a spec."""
    kind, _, value = to.partition(":")
    try:
        if kind == "earliest" and not value:
            return coordinator_pb2.OffsetResetSpec(earliest=True)
        if kind == "latest" and not value:
            return coordinator_pb2.OffsetResetSpec(latest=True)
        if kind == "offset":
            return coordinator_pb2.OffsetResetSpec(offset=int(value))
        if kind == "timestamp":
            return coordinator_pb2.OffsetResetSpec(timestamp_ms=int(value))
        if kind == "shift":
            return coordinator_pb2.OffsetResetSpec(shift_by=int(value))
    except ValueError:
        pass
    raise LanesError(
        f"cannot reset to {to!r}: use earliest, latest, offset:N, timestamp:MILLISECONDS or shift:N",
        ErrorCode.INVALID_REQUEST,
    )


class GroupAdmin:
    """Group administration (asynchronous)."""

    def __init__(
        self,
        bootstrap: list[str],
        request_timeout_s: float,
        tls: ClientTls = "process",
        credentials: ClientCredentials = "process",
        client_id: str | None = None,
    ) -> None:
        self._timeout_s = request_timeout_s
        self._cluster = ClusterView(bootstrap, request_timeout_s, tls, credentials, client_id)
        self._coordinators = Coordinators(self._cluster, request_timeout_s)

    async def list_groups(self) -> list[GroupListing]:
        """Every group of the cluster (each coordinator lists the groups of its shards)."""
        listings: dict[str, GroupListing] = {}
        for address in await self._coordinators.addresses():
            try:
                answer = await self._coordinators.stub(address).ListGroups(
                    coordinator_pb2.ListGroupsRequest(), timeout=self._timeout_s
                )
            except grpc.aio.AioRpcError as exc:
                refused = security_refusal(exc)
                if refused is not None:
                    raise refused from None
                raise error_for(
                    ErrorCode.COORDINATOR_NOT_AVAILABLE, f"coordinator {address}: {exc.code().name}"
                ) from exc
            for group in answer.groups:
                listings[group.group_id] = GroupListing(
                    group.group_id, _STATES.get(group.state, "unknown"), group.member_count, group.coordinator_id
                )
        return [listings[g] for g in sorted(listings)]

    async def describe_group(self, group_id: str, *, include_offsets: bool = True) -> GroupDescription:
        """Members, assignments and, per partition, committed offset, end offset and lag."""
        answer = await self._coordinators.ask(
            group_id,
            lambda stub: stub.DescribeGroups(
                coordinator_pb2.DescribeGroupsRequest(group_ids=[group_id], include_offsets=include_offsets),
                timeout=self._timeout_s,
            ),
            lambda response: response.groups[0].error,
        )
        group = answer.groups[0]
        return GroupDescription(
            group_id=group.group_id,
            state=_STATES.get(group.state, "unknown"),
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor=group.assignor,
            coordinator=f"{group.coordinator.host}:{group.coordinator.port}",
            members=tuple(
                MemberInfo(
                    m.member_id,
                    m.instance_id,
                    m.client_id,
                    m.client_host,
                    m.member_epoch,
                    assignment_from_wire(m.assignment),
                    assignment_from_wire(m.target_assignment),
                )
                for m in group.members
            ),
            offsets=tuple(
                PartitionLag(
                    o.topic, o.partition, o.committed_offset, o.log_end_offset, o.lag, o.lag_ms, o.member_id, o.metadata
                )
                for o in group.offsets
            ),
        )

    async def delete_group(self, group_id: str) -> None:
        """Delete an empty group and its offsets (NonEmptyGroupError while it has members)."""
        await self._coordinators.ask(
            group_id,
            lambda stub: stub.DeleteGroups(
                coordinator_pb2.DeleteGroupsRequest(group_ids=[group_id]), timeout=self._timeout_s
            ),
            lambda response: response.results[0].error,
        )

    async def reset_offsets(
        self, group_id: str, to: str, *, partitions: Iterable[TopicPartition] = (), dry_run: bool = True
    ) -> list[OffsetReset]:
        """Move an empty group's offsets (``to``: see ``reset_spec``) of ``partitions`` (default:
        every partition it has offsets for). A dry run (the default) only computes them."""
        spec = reset_spec(to)
        answer = await self._coordinators.ask(
            group_id,
            lambda stub: stub.ResetOffsets(
                coordinator_pb2.ResetOffsetsRequest(
                    group_id=group_id, partitions=topic_partitions_to_wire(partitions), to=spec, dry_run=dry_run
                ),
                timeout=self._timeout_s,
            ),
            lambda response: response.error,
        )
        return [
            OffsetReset(r.topic, r.partition, r.previous_offset, r.new_offset, r.error.message) for r in answer.resets
        ]

    async def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, str]:
        """Delete committed offsets; per partition an error message ('' when deleted)."""
        answer = await self._coordinators.ask(
            group_id,
            lambda stub: stub.DeleteOffsets(
                coordinator_pb2.DeleteOffsetsRequest(
                    group_id=group_id, partitions=topic_partitions_to_wire(partitions)
                ),
                timeout=self._timeout_s,
            ),
            lambda response: response.error,
        )
        return {TopicPartition(r.topic, r.partition): r.error.message for r in answer.results}

    async def close(self) -> None:
        """Release connections."""
        await self._cluster.close()
