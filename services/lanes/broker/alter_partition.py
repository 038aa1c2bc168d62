"""ISR changes a leader asks the controller for (Kafka's ``AlterPartitionManager``).

Every ``check_interval_s``, and at once when a follower outside an ISR caught up
(``check_now``), each led partition is asked for its proposal (``Partition.isr_proposal``:
shrink for followers that lag past ``replica.lag.time.max.ms``, expand for those caught up) and
the proposal is sent through the node's controller link. One proposal per partition is in
flight at a time; the controller fences stale proposals by partition epoch, and the partition
decides what an answer means (``Partition.on_isr_answer``). Every answer wakes the partition's
parked requests (acks=all producers wait on the ISR).

Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

from lanes.broker.partition import Partition
from lanes.broker.purgatory import Purgatory
from lanes.clock import Clock
from lanes.errors import ErrorCode, error_code
from lanes.topic_partition import TopicPartition
from lanes.v1 import controller_pb2


class Send(Protocol):
    """Sends one proposal (``ControllerLink.alter_partition``): the controller's answer, or None
    when it could not be reached."""

    async def __call__(
        self,
        topic_id: str,
        partition: int,
        *,
        leader_epoch: int,
        partition_epoch: int,
        new_isr: list[int],
        new_isr_broker_epochs: list[int],
    ) -> controller_pb2.AlterPartitionResult | None: ...


class AlterPartitionManager:
    """Proposes the ISR changes of the partitions led here; see the module docstring."""

    def __init__(
        self,
        partitions: dict[TopicPartition, Partition],
        send: Send,
        purgatory: Purgatory,
        clock: Clock,
        *,
        replica_lag_time_max_ms: int,
    ) -> None:
        self._partitions = partitions
        self._send = send
        self._purgatory = purgatory
        self._clock = clock
        self.check_interval_s = max(0.05, replica_lag_time_max_ms / 4000)
        self._check_now = asyncio.Event()

    def check_now(self) -> None:
        """A follower outside an ISR caught up: expansions need no wait."""
        self._check_now.set()

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._check_now.wait(), self.check_interval_s)
            self._check_now.clear()
            await self.propose_all()

    async def propose_all(self) -> None:
        """Send the proposal of every led partition that has one, and apply the answers."""
        now = self._clock.monotonic_ms()
        for partition in list(self._partitions.values()):
            proposal = partition.isr_proposal(now)
            if proposal is None:
                continue
            result = await self._send(
                partition.topic_id,
                partition.key.partition,
                leader_epoch=proposal.leader_epoch,
                partition_epoch=proposal.partition_epoch,
                new_isr=proposal.isr,
                new_isr_broker_epochs=proposal.broker_epochs,
            )
            if result is None:
                partition.on_isr_answer(proposal, None)
            else:
                code = error_code(result.error.code)
                partition.on_isr_answer(
                    proposal,
                    ErrorCode.UNKNOWN_SERVER_ERROR if code is None else code,
                    result.isr,
                    result.partition_epoch,
                )
            self._purgatory.moved(partition.key)  # producers waiting for acks=all
