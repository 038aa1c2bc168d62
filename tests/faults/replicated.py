"""A small replicated cluster for fault tests: a controller and brokers as real processes, one
topic, and the means to pause a replica (SIGSTOP) and to ask the leader for its offsets."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lanes.local.processes import ServiceProcess
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.processes import client_channel, free_port, start_controller
from tests.integration.test_broker_process import start_broker, wait_for, wait_for_live_brokers
from tests.integration.test_replication_process import partition_state


@dataclass
class Replicated:
    """The processes of a running cluster and where the topic's partition 0 lives."""

    controller: ServiceProcess
    brokers: dict[int, ServiceProcess]
    topic: str
    leader: int
    followers: list[int]

    def address(self, broker_id: int) -> str:
        return self.brokers[broker_id].address

    @contextlib.contextmanager
    def paused(self, broker_id: int) -> Iterator[None]:
        """``broker_id`` frozen (SIGSTOP) inside the block, resumed after it, even on failure."""
        self.brokers[broker_id].process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self.brokers[broker_id].process.send_signal(signal.SIGCONT)


async def list_offset(address: str, topic: str, spec: int) -> int:
    """The partition 0 offset ``spec`` names (OFFSET_SPEC_LATEST: the high-water mark)."""
    async with client_channel(address) as channel:
        request = broker_pb2.ListOffsetsRequest(
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic=topic,
                    partitions=[broker_pb2.ListOffsetsPartition(partition=0, spec=spec, current_leader_epoch=-1)],
                )
            ]
        )
        return int((await broker_pb2_grpc.BrokerStub(channel).ListOffsets(request)).topics[0].partitions[0].offset)


@contextlib.contextmanager
def replicated_topic(
    tmp_path: Path, *, brokers: int = 2, min_insync_replicas: int = 2, topic: str = "orders"
) -> Iterator[Replicated]:
    """``brokers`` brokers and a one-partition topic replicated on all of them, every replica in
    sync. Session and replica-lag limits are 30 s: a replica paused for a few seconds stays
    registered and in the ISR, so the leader's high-water mark waits for it."""
    log = tmp_path / "services.log"
    controller = start_controller(tmp_path / "controller", free_port(), log, session_timeout_ms=30_000)
    processes: dict[int, ServiceProcess] = {}
    try:
        for broker_id in range(1, brokers + 1):
            processes[broker_id] = start_broker(
                broker_id, tmp_path / f"broker-{broker_id}", controller.address, free_port(), log
            )

        async def create() -> tuple[int, list[int]]:
            async with client_channel(controller.address) as channel:
                stub = controller_pb2_grpc.ControllerStub(channel)
                await wait_for_live_brokers(stub, brokers)
                config = common_pb2.ConfigValue(name="min.insync.replicas", value=str(min_insync_replicas))
                await stub.CreateTopics(
                    controller_pb2.CreateTopicsRequest(
                        topics=[
                            controller_pb2.CreatableTopic(
                                name=topic, num_partitions=1, replication_factor=brokers, configs=[config]
                            )
                        ]
                    )
                )

            async def all_in_sync() -> bool:
                state = await partition_state(controller.address, topic, 0)
                return state.leader_id > 0 and len(state.isr) == brokers

            await wait_for(all_in_sync, "a leader with every replica in sync")
            state = await partition_state(controller.address, topic, 0)

            async def leader_serves() -> bool:  # the controller's choice reaches the broker after
                async with client_channel(processes[state.leader_id].address) as channel:
                    metadata = await broker_pb2_grpc.BrokerStub(channel).Metadata(
                        broker_pb2.MetadataRequest(topics=[topic])
                    )
                return any(p.leader_id == state.leader_id for t in metadata.topics for p in t.partitions)

            await wait_for(leader_serves, "the leader serving the partition")
            return state.leader_id, [b for b in state.replicas if b != state.leader_id]

        leader, followers = asyncio.run(create())
        yield Replicated(controller, processes, topic, leader, followers)
    finally:
        for process in processes.values():
            process.process.send_signal(signal.SIGCONT)
            process.terminate()
        controller.terminate()
