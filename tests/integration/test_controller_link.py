"""A broker's controller link against the real controller process: registration, unfencing once
caught up, the metadata image through a controller kill -9 and restart, controlled shutdown."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

from lanes.deadline import Deadline, attempts
from lanes.runtime.link.controller_link import ControllerLink
from lanes.v1 import common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.processes import client_channel, free_port, start_controller


async def create_topic(address: str, name: str) -> None:
    async with client_channel(address) as channel:
        stub = controller_pb2_grpc.ControllerStub(channel)
        answer = await stub.CreateTopics(
            controller_pb2.CreateTopicsRequest(
                topics=[controller_pb2.CreatableTopic(name=name, num_partitions=2, replication_factor=1)]
            )
        )
        assert answer.topics[0].error.code == 0, answer.topics[0].error.message


async def broker_fenced(address: str, broker_id: int) -> bool:
    async with client_channel(address) as channel:
        stub = controller_pb2_grpc.ControllerStub(channel)
        cluster = await stub.DescribeCluster(controller_pb2.DescribeClusterRequest(include_fenced=True))
        return next(b.fenced for b in cluster.brokers if b.endpoint.node_id == broker_id)


async def unfenced_link(address: str, incarnation_id: str, port: int) -> ControllerLink:
    """Broker 1's link, started and unfenced."""
    link = ControllerLink(
        address,
        node_id=1,
        incarnation_id=incarnation_id,
        endpoint=common_pb2.Node(node_id=1, host="127.0.0.1", port=port),
    )
    await link.start()
    await link.wait_for(lambda image: image.brokers.get(1) is not None and not image.brokers[1].fenced, 15)
    return link


def test_the_link_registers_follows_metadata_across_a_controller_restart_and_shuts_down_cleanly(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "controller.log"
    controller = start_controller(tmp_path / "data", port, log)

    async def scenario() -> None:
        nonlocal controller
        link = ControllerLink(
            controller.address,
            node_id=1,
            incarnation_id="incarnation-a",
            endpoint=common_pb2.Node(node_id=1, host="127.0.0.1", port=19001),
        )
        deltas: list[int] = []
        link.on_update(lambda applied: deltas.extend(offset for offset, _ in applied))
        await link.start()
        assert link.node_epoch >= 0
        await link.wait_for(lambda image: image.brokers.get(1) is not None and not image.brokers[1].fenced, 15)

        await create_topic(controller.address, "before-restart")
        await link.wait_for(lambda image: image.topic("before-restart") is not None, 10)
        assert deltas, "the topic arrived as a delta, not a new snapshot"

        controller.kill()  # the link keeps its image while the controller is away
        assert link.image.topic("before-restart") is not None
        controller = start_controller(tmp_path / "data", port, log)
        await create_topic(controller.address, "after-restart")
        await link.wait_for(lambda image: image.topic("after-restart") is not None, 15)
        assert link.image.topic("before-restart") is not None

        await link.stop(controlled=True)
        assert await broker_fenced(controller.address, 1), "a controlled shutdown fences the broker"

    asyncio.run(scenario())
    assert controller.terminate() == 0


def test_the_lease_lapses_a_session_timeout_after_the_last_accepted_heartbeat_was_sent(tmp_path: Path) -> None:
    """While the controller is frozen (SIGSTOP) no heartbeat is answered: the lease lapses within
    the session timeout (2 s here) of the last accepted one, and holds again once one is."""
    controller = start_controller(tmp_path / "data", free_port(), tmp_path / "controller.log")

    async def scenario() -> None:
        link = await unfenced_link(controller.address, "incarnation-lease", 19002)
        async for _ in attempts(Deadline(5), 0.05):
            if link.session_timeout_s is not None:
                break
        assert link.session_timeout_s == 2.0
        assert link.lease_held()
        controller.process.send_signal(signal.SIGSTOP)
        try:
            frozen_at = time.monotonic()
            while link.lease_held():
                assert time.monotonic() - frozen_at < 2.0 + 0.5, "the lease outlived the session timeout"
                await asyncio.sleep(0.02)
        finally:
            controller.process.send_signal(signal.SIGCONT)
        deadline = Deadline(10)
        while not link.lease_held():
            assert not deadline.expired(), "the lease never came back"
            await asyncio.sleep(0.05)
        await link.stop()

    try:
        asyncio.run(scenario())
    finally:
        controller.process.send_signal(signal.SIGCONT)
        controller.terminate()


def test_the_metadata_stream_resumes_when_its_channel_is_closed_under_it(tmp_path: Path) -> None:
    """A renewed TLS certificate retires the channel the metadata stream runs on, and gRPC cancels
    the stream when that channel closes: seen on Kubernetes after a helm upgrade, the broker's
    watch ended for good and it applied no metadata again (a restarted broker never rejoined the
    ISRs it led). Here the link's channels are closed under the stream; it resumes on a new one."""
    controller = start_controller(tmp_path / "data", free_port(), tmp_path / "controller.log")

    async def scenario() -> None:
        link = await unfenced_link(controller.address, "incarnation-channel", 19003)
        await link.controllers.close()  # what retiring the channel does to the stream on it
        await create_topic(controller.address, "after-the-channel-closed")
        await link.wait_for(lambda image: image.topic("after-the-channel-closed") is not None, 15)
        await link.stop()

    try:
        asyncio.run(scenario())
    finally:
        controller.terminate()
