"""What only the active controller does, on its own initiative: create the cluster (the first
active controller of a new quorum) and record where it listens; fence brokers and coordinators
whose session expired, and create ``__consumer_offsets`` once it can be (a coordinator and
enough live brokers); give leadership back to preferred replicas every
``leader_imbalance_check_interval_ms`` where a broker leads too few of its preferred partitions.

The duties start when this controller becomes active and stop when it is not. Owned by the
controller's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lanes.controller.core import ControllerDecision
from lanes.errors import NotControllerError
from lanes.metadata.image import NodeKind
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.runtime.quotas.loop_time import service_task
from lanes.security.scram import ScramCredential

if TYPE_CHECKING:
    from lanes.controller.quorum_controller import QuorumController

_log = logging.getLogger(__name__)


class ActiveDuties:
    """The active controller's own work; see the module docstring."""

    def __init__(
        self,
        controller: QuorumController,
        *,
        leader_imbalance_check_interval_ms: int,
        leader_imbalance_per_broker_percentage: int,
        bootstrap_users: Sequence[tuple[str, ScramCredential]],
    ) -> None:
        self._controller = controller
        self.leader_imbalance_check_interval_ms = leader_imbalance_check_interval_ms
        self.leader_imbalance_per_broker_percentage = leader_imbalance_per_broker_percentage
        self._bootstrap_users = list(bootstrap_users)
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self.stop()
        self._tasks = [service_task(self._create_cluster()), service_task(self._fence_silent_nodes())]
        if self.leader_imbalance_check_interval_ms > 0:
            self._tasks.append(service_task(self._rebalance_leaders()))

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks = []

    async def _create_cluster(self) -> None:
        """A no-op after the first time; every active controller records where it listens."""
        controller = self._controller
        core = controller.core
        with contextlib.suppress(NotControllerError):  # leadership moved on: the next one does it
            await controller.write(lambda: core.create_cluster(controller.clock.now_ms()))
            await controller.write(lambda: core.bootstrap_users(self._bootstrap_users))
            await controller.write(lambda: core.register_controller(controller.endpoint))

    async def _fence_silent_nodes(self) -> None:
        controller = self._controller
        heartbeats = controller.heartbeats
        while True:
            await asyncio.sleep(heartbeats.heartbeat_interval_ms / 2000)
            for node, silent_ms in heartbeats.expired(controller.live_nodes(), controller.clock.monotonic_ms()):
                _log.info("fencing %s %d: no heartbeat for %d ms", node[0], node[1], silent_ms)
                await controller.write(lambda kind=node[0], node_id=node[1]: self._fence(kind, node_id))
            decision = await controller.write(controller.core.ensure_offsets_topic)
            if decision.records:
                _log.info("created %s with %d shards", CONSUMER_OFFSETS_TOPIC, controller.core.offsets_topic_partitions)

    def _fence(self, kind: NodeKind, node_id: int) -> ControllerDecision:
        """Fence the node unless it came back meanwhile (decided in its write)."""
        controller = self._controller
        if controller.heartbeats.alive((kind, node_id), controller.clock.monotonic_ms()):
            return ControllerDecision()
        return controller.core.fence(kind, node_id, "session timeout")

    async def _rebalance_leaders(self) -> None:
        while True:
            await asyncio.sleep(self.leader_imbalance_check_interval_ms / 1000)
            await self._controller.write(self._preferred_elections)

    def _preferred_elections(self) -> ControllerDecision:
        core = self._controller.core
        wanted = core.imbalanced_partitions(self.leader_imbalance_per_broker_percentage)
        if not wanted:
            return ControllerDecision()
        decision, _ = core.elect_preferred_leaders(wanted)
        _log.info("preferred leader election for %d partitions", len(decision.records))
        return decision
