"""The controller service in-process, as a quorum of one (its gRPC surface and quorums of three
are tested with real processes in tests/integration): it becomes active by itself, snapshots
are taken as the log grows, and a restart reads them back."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from lanes.clock import ManualClock
from lanes.controller.quorum_controller import QuorumController
from lanes.controller.service import ControllerService
from lanes.errors import ErrorCode
from lanes.runtime.access.guard import CALLER, Caller
from lanes.security.quota_entities import QuotaEntity
from lanes.v1 import common_pb2, controller_pb2, metadata_pb2


def make(data_dir: Path) -> ControllerService:
    return ControllerService(
        QuorumController(
            data_dir,
            endpoint=common_pb2.Node(node_id=0, host="127.0.0.1", port=1),
            clock=ManualClock(),
            rng=random.Random(3),
            snapshot_every_records=20,
        )
    )


async def started(data_dir: Path) -> ControllerService:
    service = make(data_dir)
    await service.controller.start()
    for _ in range(200):
        if service.controller.active:
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
        names = sorted(service.controller.image.topic_ids)
        await service.controller.stop()
        return names

    names = asyncio.run(scenario())
    assert len(names) == 15
    assert 1 <= len(list(tmp_path.glob("snapshot-*.bin"))) <= 2, "taken as the log grew; the newest two kept"

    async def restart() -> list[str]:
        service = await started(tmp_path)
        names = sorted(service.controller.image.topic_ids)
        await service.controller.stop()
        return names

    assert asyncio.run(restart()) == names


def test_topic_changes_over_a_users_controller_mutation_quota_are_refused_until_it_drains(tmp_path: Path) -> None:
    """KIP-599 on the active controller, with a manual clock: a burst passes while the user is
    under its quota, then its topics are refused with THROTTLING_QUOTA_EXCEEDED and the time to
    wait until the rate (over ten seconds at least) is back under it. Validate-only requests,
    the cluster's own calls and users without a quota count nothing."""
    clock = ManualClock()

    async def create(service: ControllerService, name: str, partitions: int, *, validate_only: bool = False) -> Any:
        return await service.CreateTopics(
            controller_pb2.CreateTopicsRequest(
                topics=[controller_pb2.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)],
                validate_only=validate_only,
            ),
            None,  # type: ignore[arg-type]
        )

    async def scenario() -> None:
        service = ControllerService(
            QuorumController(
                tmp_path,
                endpoint=common_pb2.Node(node_id=0, host="127.0.0.1", port=1),
                clock=clock,
                rng=random.Random(3),
            )
        )
        await service.controller.start()
        for _ in range(200):
            if service.controller.active:
                break
            await asyncio.sleep(0.01)
        registered = await service.RegisterBroker(
            controller_pb2.RegisterBrokerRequest(broker_id=1, incarnation_id="a", endpoint=common_pb2.Node(node_id=1)),
            None,  # type: ignore[arg-type]
        )
        await service.BrokerHeartbeat(
            controller_pb2.BrokerHeartbeatRequest(
                broker_id=1, broker_epoch=registered.broker_epoch, current_metadata_offset=registered.broker_epoch
            ),
            None,  # type: ignore[arg-type]
        )
        await service.AlterClientQuotas(
            controller_pb2.AlterClientQuotasRequest(
                changes=[
                    metadata_pb2.ClientQuotaRecord(
                        entity=QuotaEntity("builder").to_proto(), key="controller_mutation_rate", value=2.0
                    )
                ]
            ),
            None,  # type: ignore[arg-type]
        )
        CALLER.set(Caller("User:builder", "any-client"))
        assert (await create(service, "checked", 100, validate_only=True)).topics[0].error.code == 0
        burst = await create(service, "burst", 30)  # a full bucket (22 tokens): passes, leaving -8
        assert burst.topics[0].error.code == 0
        assert burst.throttle_time_ms == 0, "an accepted change says nothing (Kafka's strict quota)"
        refused = await create(service, "next", 1)
        assert refused.topics[0].error.code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        assert refused.throttle_time_ms == 4_000  # 8 tokens at 2 per second
        assert "retry in 4000 ms" in refused.topics[0].error.message
        assert (await create(service, "burst", 1)).topics[0].error.code == ErrorCode.TOPIC_ALREADY_EXISTS, (
            "a change the cluster refuses anyway says why, not the quota"
        )
        assert (await create(service, "checked", 100, validate_only=True)).topics[0].error.code == 0
        deleted = await service.DeleteTopics(
            controller_pb2.DeleteTopicsRequest(names=["burst"]),
            None,  # type: ignore[arg-type]
        )
        assert deleted.topics[0].error.code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        assert deleted.throttle_time_ms == 4_000
        assert service.controller.image.topic("burst") is not None
        assert service.controller.image.topic("next") is None
        clock.advance(3_000)  # -2 tokens
        assert (await create(service, "next", 1)).throttle_time_ms == 1_000
        clock.advance(1_000)  # 0 tokens: accepted, -1
        assert (await create(service, "next", 1)).topics[0].error.code == 0
        clock.advance(60_000)  # full again (22): of ten concurrent creations of 30, one passes
        answers = await asyncio.gather(*(create(service, f"racing-{i}", 30) for i in range(10)))
        assert sorted(answer.topics[0].error.code for answer in answers) == [0] + [89] * 9
        clock.advance(60_000)  # full again: in one request, topics pass until the bucket is below zero
        several = await service.CreateTopics(
            controller_pb2.CreateTopicsRequest(
                topics=[
                    controller_pb2.CreatableTopic(name=f"many-{i}", num_partitions=10, replication_factor=1)
                    for i in range(4)
                ]
            ),
            None,  # type: ignore[arg-type]
        )
        assert [t.error.code for t in several.topics] == [0, 0, 0, 89]  # 22 -> 12 -> 2 -> -8: refused
        assert several.throttle_time_ms == 4_000
        clock.advance(60_000)  # full again: adding partitions counts those added
        grown = await service.CreatePartitions(
            controller_pb2.CreatePartitionsRequest(
                topics=[controller_pb2.CreatePartitionsTopic(name="next", count=24)]
            ),
            None,  # type: ignore[arg-type]
        )
        assert grown.topics[0].error.code == 0  # 23 added: 22 - 23 = -1
        assert (await create(service, "after-growth", 1)).throttle_time_ms == 500
        CALLER.set(Caller("User:someone-else", "any-client"))  # no quota of its own, no default
        assert (await create(service, "theirs", 50)).throttle_time_ms == 0
        assert (await create(service, "theirs-too", 50)).topics[0].error.code == 0
        CALLER.set(None)  # the cluster's own calls
        assert (await create(service, "internal-ish", 50)).topics[0].error.code == 0
        assert service.controller.metrics.mutations_throttled._value.get() == 14
        await service.controller.stop()

    asyncio.run(asyncio.wait_for(scenario(), 30))
