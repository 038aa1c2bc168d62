"""Issue #22's metadata safety, first part: a controller that lost its volume starts a new
cluster; brokers refuse its metadata and keep every log (measured before: every broker deleted
every partition directory within 20 s, without a log line). And two processes never share a data
directory."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from lanes.deadline import Deadline, attempts_blocking
from lanes.v1 import broker_pb2_grpc, common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.processes import client_channel, free_port, start_controller
from tests.integration.test_broker_process import batch, create_topic, produce, start_broker

TOPIC = "kept"


def wait_until(condition: Callable[[], bool], timeout_s: float = 20) -> None:
    for _ in attempts_blocking(Deadline(timeout_s), pause_s=0.1):
        if condition():
            return
    raise AssertionError("the brokers never said they refused the controller's metadata")


def log_files(data_dir: Path) -> dict[str, int]:
    """Every file under a broker's logs, with its size."""
    return {str(p.relative_to(data_dir)): p.stat().st_size for p in (data_dir / "logs").rglob("*") if p.is_file()}


async def write(address: str, partition: int) -> None:
    async with client_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        for _ in range(100):
            request = produce(TOPIC, partition, batch([b"v" * 100] * 10), acks=common_pb2.ACKS_LEADER)
            result = (await stub.Produce(request)).topics[0].partitions[0]
            if result.error.code == 0:
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"partition {partition} took no write: {result.error.message}")


def test_brokers_keep_every_log_when_the_controller_comes_back_as_a_new_cluster(tmp_path: Path) -> None:
    log = tmp_path / "services.log"
    controller_port = free_port()
    controller = start_controller(tmp_path / "controller", controller_port, log)
    brokers = {b: start_broker(b, tmp_path / f"broker-{b}", controller.address, free_port(), log) for b in (1, 2)}
    try:

        async def create_and_fill() -> None:
            await create_topic(controller.address, TOPIC, 3, brokers=2)
            async with client_channel(controller.address) as channel:
                stub = controller_pb2_grpc.ControllerStub(channel)
                topic = (await stub.DescribeTopics(controller_pb2.DescribeTopicsRequest(names=[TOPIC]))).topics[0]
            for partition in topic.partitions:
                await write(brokers[partition.leader_id].address, partition.partition)

        asyncio.run(create_and_fill())
        before = {b: log_files(tmp_path / f"broker-{b}") for b in brokers}
        assert all(before.values())
        controller.kill()
        shutil.rmtree(tmp_path / "controller")
        controller = start_controller(tmp_path / "controller", controller_port, log)
        # measured before: every log was gone within 20 s; both brokers refuse at once instead
        refusals = [f"broker[{b}] lanes.runtime.link.controller_link refusing" for b in brokers]
        wait_until(lambda: all(refusal in log.read_text() for refusal in refusals))
        after = {b: log_files(tmp_path / f"broker-{b}") for b in brokers}
        for broker_id in brokers:
            assert set(after[broker_id]) >= set(before[broker_id]), f"broker {broker_id} deleted files"
            assert sum(after[broker_id].values()) >= sum(before[broker_id].values())
        said = log.read_text()
        assert "refusing the controller's metadata" in said
        assert "belongs to cluster" in said
    finally:
        for broker in brokers.values():
            broker.terminate()
        controller.terminate()


def test_a_second_process_on_a_data_directory_refuses_to_start(tmp_path: Path) -> None:
    log = tmp_path / "services.log"
    controller = start_controller(tmp_path / "controller", free_port(), log)
    first = start_broker(1, tmp_path / "broker-1", controller.address, free_port(), log)
    try:
        with pytest.raises(RuntimeError, match="did not become ready"):
            start_broker(1, tmp_path / "broker-1", controller.address, free_port(), log)
        assert "not starting: the data directory" in log.read_text()
        assert "is in use by another process" in log.read_text()
        assert first.process.poll() is None, "the first broker runs on"
    finally:
        first.terminate()
        controller.terminate()


def test_brokers_refuse_a_controller_restored_from_an_older_copy_also_once_its_log_grew_past(
    tmp_path: Path,
) -> None:
    log = tmp_path / "services.log"
    controller_port = free_port()
    controller = start_controller(tmp_path / "controller", controller_port, log)
    broker = start_broker(1, tmp_path / "broker-1", controller.address, free_port(), log)
    try:
        asyncio.run(create_topic(controller.address, "early"))
        assert controller.terminate() == 0
        shutil.copytree(tmp_path / "controller", tmp_path / "controller-copy")
        controller = start_controller(tmp_path / "controller", controller_port, log)
        asyncio.run(create_topic(controller.address, TOPIC))
        asyncio.run(write(broker.address, 0))
        before = log_files(tmp_path / "broker-1")
        assert any(name.startswith(f"logs/{TOPIC}-0") for name in before)
        controller.kill()
        shutil.rmtree(tmp_path / "controller")
        shutil.copytree(tmp_path / "controller-copy", tmp_path / "controller")
        controller = start_controller(tmp_path / "controller", controller_port, log)
        wait_until(lambda: "this node applied" in log.read_text())
        # The copy's log then grows past what the broker applied (new topics): offsets alone
        # would now look fine; the epochs of the entries tell the two histories apart.
        for index in range(30):
            asyncio.run(create_topic(controller.address, f"after-restore-{index}"))
        wait_until(lambda: "another history" in log.read_text(), timeout_s=30)
        after = log_files(tmp_path / "broker-1")
        assert set(after) >= set(before), "the broker deleted the topic the old copy does not know"
        assert all(after[name] >= size for name, size in before.items() if name.endswith(".log"))
    finally:
        broker.terminate()
        controller.terminate()
