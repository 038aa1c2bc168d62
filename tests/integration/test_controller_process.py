"""The controller as a real process: registration, fencing by session timeout, topics, configs,
the metadata stream, and a kill -9 + restart that loses nothing."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lanes.errors import ErrorCode
from lanes.v1 import common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.processes import ServiceProcess, client_channel, free_port
from tests.integration.processes import start_controller as start_test_controller

SESSION_TIMEOUT_MS = 1500


def start_controller(data_dir: Path, port: int, log: Path) -> ServiceProcess:
    return start_test_controller(data_dir, port, log, session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=300)


async def wait_for(check, what: str, timeout_s: float = 20):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        result = await check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def test_the_controller_process_end_to_end(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "controller.log"
    controller = start_controller(tmp_path / "data", port, log)

    async def scenario() -> str:
        async with client_channel(controller.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)
            epochs = {}
            for broker_id in (1, 2, 3):
                registered = await stub.RegisterBroker(
                    controller_pb2.RegisterBrokerRequest(
                        broker_id=broker_id,
                        incarnation_id=f"i-{broker_id}",
                        endpoint=common_pb2.Node(node_id=broker_id, host="127.0.0.1", port=19000 + broker_id),
                    )
                )
                assert registered.error.code == ErrorCode.NONE, registered.error.message
                epochs[broker_id] = registered.broker_epoch
            alive = {1, 2, 3}

            async def heartbeats() -> None:
                while True:
                    for broker_id in list(alive):
                        await stub.BrokerHeartbeat(
                            controller_pb2.BrokerHeartbeatRequest(
                                broker_id=broker_id, broker_epoch=epochs[broker_id], current_metadata_offset=10**9
                            )
                        )
                    await asyncio.sleep(0.2)

            beating = asyncio.create_task(heartbeats())

            async def all_unfenced():  # type: ignore[no-untyped-def]
                cluster = await stub.DescribeCluster(controller_pb2.DescribeClusterRequest())
                return len(cluster.brokers) == 3

            await wait_for(all_unfenced, "brokers to be unfenced")

            created = await stub.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[
                        controller_pb2.CreatableTopic(
                            name="orders",
                            num_partitions=6,
                            replication_factor=3,
                            configs=[common_pb2.ConfigValue(name="retention.ms", value="3600000")],
                        ),
                        controller_pb2.CreatableTopic(name="orders", num_partitions=1, replication_factor=1),
                        controller_pb2.CreatableTopic(name="too-wide", num_partitions=1, replication_factor=4),
                        controller_pb2.CreatableTopic(
                            name="bad-config",
                            num_partitions=1,
                            replication_factor=1,
                            configs=[common_pb2.ConfigValue(name="retention.ms", value="forever")],
                        ),
                    ]
                )
            )
            codes = [ErrorCode(t.error.code) for t in created.topics]
            assert codes == [
                ErrorCode.NONE,
                ErrorCode.TOPIC_ALREADY_EXISTS,
                ErrorCode.INVALID_REPLICATION_FACTOR,
                ErrorCode.INVALID_CONFIG,
            ]
            assert "larger than the 3 live brokers" in created.topics[2].error.message
            topic_id = created.topics[0].topic_id

            watch = stub.WatchMetadata(controller_pb2.WatchMetadataRequest(node_id=1, from_offset=-1))
            first = await watch.read()
            assert first.snapshot
            assert any(r.topic_created.name == "orders" for r in first.records)
            await stub.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[controller_pb2.CreatableTopic(name="payments", num_partitions=2, replication_factor=2)]
                )
            )
            delta = await asyncio.wait_for(watch.read(), timeout=10)
            while not delta.records:  # keep-alives may come first
                delta = await asyncio.wait_for(watch.read(), timeout=10)
            assert not delta.snapshot
            assert any(r.topic_created.name == "payments" for r in delta.records)
            watch.cancel()

            # Broker 1 goes silent: it is fenced and leads nothing.
            alive.discard(1)

            async def broker_one_fenced():  # type: ignore[no-untyped-def]
                described = await stub.DescribeTopics(controller_pb2.DescribeTopicsRequest(names=["orders"]))
                leaders = {p.leader_id for p in described.topics[0].partitions}
                return 1 not in leaders and all(1 not in p.isr for p in described.topics[0].partitions)

            await wait_for(broker_one_fenced, "broker 1 to be fenced", timeout_s=SESSION_TIMEOUT_MS / 1000 + 10)
            beating.cancel()
            return topic_id

    topic_id = asyncio.run(scenario())

    # kill -9 and restart: topics, ids, configs and leadership are intact.
    controller.kill()
    restarted = start_controller(tmp_path / "data", port, log)

    async def after_restart() -> None:
        async with client_channel(restarted.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)
            described = await stub.DescribeTopics(controller_pb2.DescribeTopicsRequest())
            assert [t.name for t in described.topics] == ["orders", "payments"]
            assert described.topics[0].topic_id == topic_id
            configs = await stub.DescribeConfigs(
                controller_pb2.DescribeConfigsRequest(
                    resources=[
                        controller_pb2.DescribeConfigsResource(
                            resource_type=common_pb2.CONFIG_RESOURCE_TYPE_TOPIC,
                            resource_name="orders",
                            names=["retention.ms"],
                        )
                    ]
                )
            )
            entry = configs.results[0].configs[0]
            assert (entry.value, entry.source) == ("3600000", common_pb2.CONFIG_SOURCE_DYNAMIC_RESOURCE)
            assert all(1 not in p.isr for p in described.topics[0].partitions)

    asyncio.run(after_restart())
    assert restarted.terminate() == 0, "SIGTERM stops the controller gracefully"
