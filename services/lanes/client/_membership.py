"""A consumer's membership of a group: coordinator discovery, heartbeats, and the steps by which
it follows the coordinator's assignment (docs/consumer-groups.md; KIP-848).

The heartbeat task runs on the client's loop, independent of ``poll``. It sends the
subscription and the partitions the consumer owns now, and records the assignment it receives.
The consumer applies changes only inside ``poll`` (``next_step``), in this order, so that a
partition is never used by two members at once:

1. *lost* — the member was fenced, its session lapsed (no successful heartbeat for the session
   timeout the coordinator announced, counted from when the last good one was *sent*, so the
   member gives up before the coordinator reassigns), or it left because ``poll`` was not called
   within ``max_poll_interval_ms``: everything owned is dropped without committing, then it
   rejoins;
2. *revoke* — partitions owned but no longer assigned: the consumer commits (auto-commit), calls
   the listener, forgets their positions and buffered records, and only then reports them
   released on an immediate heartbeat;
3. *assign* — partitions assigned but not yet owned (the coordinator hands out a partition only
   after its previous owner reported it released): positions come from committed offsets. Not
   while the session may have lapsed: an answer read after the process was frozen for a session
   may name partitions the coordinator has since given to another member (it fenced this one).

Owned by the client's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import grpc

from lanes.client._cluster import ClusterView
from lanes.client._coordinators import Coordinators
from lanes.clock import SYSTEM_CLOCK, Clock
from lanes.errors import ErrorCode, LanesError, error_for
from lanes.rpc.wire import assignment_from_wire, assignment_to_wire, code_of, security_refusal
from lanes.topic_partition import TopicPartition
from lanes.v1 import coordinator_pb2, coordinator_pb2_grpc

_log = logging.getLogger(__name__)
_RETRY_S = 0.1
_RETRIABLE_HEARTBEAT = {
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.UNRELEASED_INSTANCE_ID,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.REQUEST_TIMED_OUT,
}
_FENCED = {ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID}


@dataclass(frozen=True)
class Step:
    """One change the consumer applies in ``poll``."""

    kind: Literal["lost", "revoke", "assign"]
    partitions: frozenset[TopicPartition]


class GroupMembership:
    """Membership of one consumer in one group."""

    def __init__(
        self,
        cluster: ClusterView,
        group_id: str,
        *,
        instance_id: str = "",
        client_id: str = "",
        assignor: str = "",
        rebalance_timeout_ms: int,
        request_timeout_s: float,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.cluster = cluster
        self._clock = clock
        self.coordinators = Coordinators(cluster, request_timeout_s, clock)
        self.group_id = group_id
        self.instance_id = instance_id
        self.client_id = client_id
        self.assignor = assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0
        self.owned: frozenset[TopicPartition] = frozenset()
        self.assigned: frozenset[TopicPartition] | None = None  # the coordinator's latest word
        self.subscription: coordinator_pb2.Subscription | None = None
        self.heartbeat_interval_s = 1.0
        self.session_timeout_s: float | None = None
        self.fatal: LanesError | None = None
        self._lost = False
        self._left_for_poll_timeout = False
        self._last_success_sent = self._now_s()
        self._last_poll = self._now_s()
        self._timeout_s = request_timeout_s
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def _now_s(self) -> float:
        return self._clock.monotonic_ms() / 1000

    # -----------------------------------------------------------------------------------------
    # lifecycle

    def subscribe(self, topics: Sequence[str] = (), pattern: str = "") -> None:
        """Set the subscription and start heartbeating (on the first call)."""
        self.subscription = coordinator_pb2.Subscription(topic_names=list(topics), topic_regex=pattern)
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._heartbeats())

    @property
    def active(self) -> bool:
        """Whether the consumer has subscribed."""
        return self._task is not None

    def polled(self) -> None:
        """The application called poll: it is alive (max_poll_interval_ms)."""
        self._last_poll = self._now_s()

    def vouches_for_ownership(self) -> bool:
        """Whether the member may still hand out records of what it owns: not fenced, not left,
        and a heartbeat got through within the session timeout (a member frozen longer may
        already have lost its partitions to another member)."""
        return not (self._lost or self._left_for_poll_timeout or self._session_lapsed())

    def next_step(self) -> Step | None:
        """The next change to apply in poll, if any (see the module docstring)."""
        if self.fatal is not None:
            error, self.fatal = self.fatal, None
            raise error
        if self._session_lapsed() and self.owned:
            _log.warning("group %s: no heartbeat got through for the session timeout; partitions lost", self.group_id)
            self._lost = True
        if self._lost or self._left_for_poll_timeout:
            if self.owned:
                return Step("lost", self.owned)
            self._lost = self._left_for_poll_timeout = False  # dropped everything: rejoin
            self.member_epoch = 0
            self.assigned = None
            self._wake.set()
            return None
        if self.assigned is None:
            return None
        if self._session_lapsed():
            # The coordinator's word came in an answer to a heartbeat sent over a session ago (the
            # process was frozen meanwhile): the member may have been fenced and the partitions
            # given to another. It takes nothing until a heartbeat gets through again.
            self._wake.set()
            return None
        revoke = self.owned - self.assigned
        if revoke:
            return Step("revoke", revoke)
        assign = self.assigned - self.owned
        if assign:
            return Step("assign", assign)
        return None

    def step_done(self, step: Step) -> None:
        """The consumer applied ``step``: update what it owns and tell the coordinator now."""
        if step.kind == "assign":
            self.owned |= step.partitions
        else:
            self.owned -= step.partitions
        self._wake.set()

    async def wait_for_change(self, timeout_s: float) -> None:
        """Return early when the coordinator's assignment changes (for poll)."""
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout_s)

    async def leave(self) -> None:
        """Leave the group (a static member leaves temporarily, keeping its assignment briefly)."""
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self.member_epoch > 0:
            epoch = -2 if self.instance_id else -1
            try:
                await self._send(await self.coordinator(), epoch)
            except (grpc.aio.AioRpcError, LanesError) as exc:
                _log.info("group %s: leave not delivered (%s); the session will expire", self.group_id, exc)
        self.member_epoch = 0
        self.owned = frozenset()
        self.assigned = None

    # -----------------------------------------------------------------------------------------
    # coordinator calls

    def coordinator_stub(self, address: str) -> coordinator_pb2_grpc.GroupCoordinatorStub:
        return self.coordinators.stub(address)

    async def coordinator(self) -> str:
        """The group's coordinator address."""
        return await self.coordinators.find(self.group_id)

    def forget_coordinator(self) -> None:
        """The coordinator moved or failed: find it again."""
        self.coordinators.forget(self.group_id)

    async def _send(self, address: str, epoch: int) -> coordinator_pb2.HeartbeatResponse:
        request = coordinator_pb2.HeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.instance_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.assignor,
            client_id=self.client_id,
            owned_partitions=assignment_to_wire(self.owned),
        )
        if self.subscription is not None:
            request.subscription.CopyFrom(self.subscription)
        answer: coordinator_pb2.HeartbeatResponse = await self.coordinator_stub(address).Heartbeat(
            request, timeout=self._timeout_s
        )
        return answer

    # -----------------------------------------------------------------------------------------
    # the heartbeat task

    def _session_lapsed(self) -> bool:
        return self.session_timeout_s is not None and self._now_s() - self._last_success_sent > self.session_timeout_s

    async def _heartbeats(self) -> None:
        while not self._closing:
            delay = await self._heartbeat_once()
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def _heartbeat_once(self) -> float:
        """One heartbeat; the delay before the next."""
        if self._now_s() - self._last_poll > self.rebalance_timeout_ms / 1000 and not self._left_for_poll_timeout:
            _log.warning(
                "group %s: poll() not called for max_poll_interval_ms=%d; leaving the group so its partitions move",
                self.group_id,
                self.rebalance_timeout_ms,
            )
            self._left_for_poll_timeout = True
            if self.member_epoch > 0:
                with contextlib.suppress(grpc.aio.AioRpcError, LanesError):
                    await self._send(await self.coordinator(), -1)
            self.member_epoch = 0
            self.assigned = None
            self._changed.set()
        if self._left_for_poll_timeout or (self._lost and self.owned):
            return self.heartbeat_interval_s  # wait for poll to drop the partitions first
        if self._lost:
            return 0.0
        sent_at = self._now_s()
        try:
            address = await self.coordinator()
            answer = await self._send(address, self.member_epoch)
        except LanesError as exc:
            if not exc.retriable:
                self.fatal = exc
            return _RETRY_S
        except grpc.aio.AioRpcError as exc:
            refused = security_refusal(exc)  # retrying cannot help: poll raises it
            if refused is not None:
                self.fatal = refused
                return _RETRY_S
            self.forget_coordinator()
            return _RETRY_S
        code = code_of(answer.error)
        if code is ErrorCode.NONE:
            self._last_success_sent = sent_at
            self.member_epoch = answer.member_epoch
            if answer.heartbeat_interval_ms:
                self.heartbeat_interval_s = answer.heartbeat_interval_ms / 1000
            if answer.session_timeout_ms:
                self.session_timeout_s = answer.session_timeout_ms / 1000
            if answer.HasField("assignment"):
                assigned = assignment_from_wire(answer.assignment)
                if assigned != self.assigned:
                    self.assigned = assigned
                    self._changed.set()
            return self.heartbeat_interval_s
        if code in _FENCED:
            _log.warning("group %s: member %s fenced (%s)", self.group_id, self.member_id, answer.error.message)
            self._lost = True
            self.assigned = None
            self._changed.set()
            return 0.0
        if code in _RETRIABLE_HEARTBEAT:
            if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                self.forget_coordinator()
            return _RETRY_S
        self.fatal = error_for(answer.error.code, answer.error.message)
        self._changed.set()
        return self.heartbeat_interval_s
