"""The controller service in-process, as a quorum of one (its gRPC surface and quorums of three
are tested with real processes in tests/integration): it becomes active by itself, snapshots
are taken as the log grows, and a restart reads them back."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from lanes.clock import ManualClock
from lanes.controller.service import ControllerService
from lanes.v1 import common_pb2, controller_pb2


def make(data_dir: Path) -> ControllerService:
    return ControllerService(
        data_dir,
        endpoint=common_pb2.Node(node_id=0, host="127.0.0.1", port=1),
        clock=ManualClock(),
        rng=random.Random(3),
        snapshot_every_records=20,
    )


async def started(data_dir: Path) -> ControllerService:
    service = make(data_dir)
    await service.start()
    for _ in range(200):
        if service.active:
            return service
        await asyncio.sleep(0.01)
    raise AssertionError("a quorum of one elects itself at its first tick")


def test_snapshots_are_taken_as_the_log_grows_and_read_back_on_restart(tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        service = await started(tmp_path)
        registered = await service.RegisterBroker(
            controller_pb2.RegisterBrokerRequest(broker_id=1, incarnation_id="a", endpoint=common_pb2.Node(node_id=1)),
            None,  # type: ignore[arg-type]
        )
        await service.BrokerHeartbeat(  # caught up: unfenced, so topics can be placed on it
            controller_pb2.BrokerHeartbeatRequest(
                broker_id=1, broker_epoch=registered.broker_epoch, current_metadata_offset=registered.broker_epoch
            ),
            None,  # type: ignore[arg-type]
        )
        for index in range(15):
            await service.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[controller_pb2.CreatableTopic(name=f"t{index}", num_partitions=2, replication_factor=1)]
                ),
                None,  # type: ignore[arg-type]
            )
        names = sorted(service.image.topic_ids)
        await service.stop()
        return names

    names = asyncio.run(scenario())
    assert len(names) == 15
    assert 1 <= len(list(tmp_path.glob("snapshot-*.bin"))) <= 2, "taken as the log grew; the newest two kept"

    async def restart() -> list[str]:
        service = await started(tmp_path)
        names = sorted(service.image.topic_ids)
        await service.stop()
        return names

    assert asyncio.run(restart()) == names
