"""Group coordinators as real processes: shards, failover, and fencing of a previous owner's writes
(DESIGN.md section 8), spoken to over raw gRPC so the service contract itself is under test."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from pathlib import Path

import pytest

from lanes.client.admin import Admin
from lanes.clock import SystemClock
from lanes.coordinator.brokers import BrokerAccess
from lanes.coordinator.group import OffsetCommit, offset_record
from lanes.coordinator.shard_log import ShardFencedError, ShardLog
from lanes.errors import ErrorCode
from lanes.protocol.records import Record, encode_batch
from lanes.runtime.link.controller_link import ControllerLink
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, coordinator_pb2, coordinator_pb2_grpc
from tests.integration.processes import blocking_client_channel, running_cluster

SETTINGS = {"coordinators": 2, "offsets_topic_partitions": 4, "session_timeout_ms": 2000}


def stub(address: str) -> coordinator_pb2_grpc.GroupCoordinatorStub:
    return coordinator_pb2_grpc.GroupCoordinatorStub(blocking_client_channel(address))  # type: ignore[no-untyped-call]


def locate(
    address: str, group_id: str, timeout_s: float = 20, expect: int | None = None
) -> coordinator_pb2.GroupCoordinatorLocation:
    """The group's coordinator as ``address`` sees it (waiting until it is ``expect``, if given)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = stub(address).FindCoordinator(coordinator_pb2.FindCoordinatorRequest(group_ids=[group_id]))
        location = found.coordinators[0]
        if location.error.code == ErrorCode.NONE and expect in (None, location.coordinator.node_id):
            return location
        assert time.monotonic() < deadline, location.error
        time.sleep(0.1)


def commit(address: str, group_id: str, offset: int, *, retry: bool = True) -> int:
    """The commit's outcome; with ``retry``, retriable outcomes (a shard still loading) are retried."""
    deadline = time.monotonic() + 20
    while True:
        code = _commit_once(address, group_id, offset)
        if not retry or not ErrorCode(code).retriable or time.monotonic() > deadline:
            return code
        time.sleep(0.1)


def _commit_once(address: str, group_id: str, offset: int) -> int:
    answer = stub(address).CommitOffsets(
        coordinator_pb2.CommitOffsetsRequest(
            group_id=group_id,
            member_epoch=-1,
            topics=[
                coordinator_pb2.CommitOffsetsTopic(
                    topic="orders",
                    partitions=[coordinator_pb2.CommitOffsetsPartition(partition=0, committed_offset=offset)],
                )
            ],
        ),
        timeout=15,
    )
    return int(answer.topics[0].partitions[0].error.code)


def committed(address: str, group_id: str, timeout_s: float = 30) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = stub(address).FetchOffsets(coordinator_pb2.FetchOffsetsRequest(group_id=group_id), timeout=15)
        if answer.error.code == ErrorCode.NONE:
            offsets = [p.committed_offset for t in answer.topics for p in t.partitions]
            return offsets[0] if offsets else -1
        assert time.monotonic() < deadline, answer.error
        time.sleep(0.1)


@pytest.mark.timeout(120)
def test_a_paused_coordinators_shard_moves_and_its_late_commit_is_refused(tmp_path: Path) -> None:
    with running_cluster(tmp_path, 3, **SETTINGS) as cluster:
        coordinators = {c["id"]: c["address"] for c in cluster.describe()["coordinators"]}
        Admin(cluster.describe()["bootstrap"]).create_topic("orders", partitions=1, replication_factor=3)
        location = locate(coordinators[1], "payments")
        owner = location.coordinator.node_id
        other = next(i for i in coordinators if i != owner)
        assert commit(coordinators[owner], "payments", 10) == ErrorCode.NONE

        zombie = cluster.coordinator_processes[owner].process
        zombie.send_signal(signal.SIGSTOP)
        try:
            locate(coordinators[other], "payments", timeout_s=30, expect=other)
            assert committed(coordinators[other], "payments") == 10, "the new owner replayed the commit"
            assert commit(coordinators[other], "payments", 20) == ErrorCode.NONE
        finally:
            zombie.send_signal(signal.SIGCONT)
        late = commit(coordinators[owner], "payments", 99, retry=False)  # the old owner's first act after waking
        assert late in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE), ErrorCode(late).name
        assert committed(coordinators[other], "payments") == 20

        cluster.coordinator_processes[other].process.kill()  # and back to the first, through a crash
        locate(coordinators[owner], "payments", timeout_s=30, expect=owner)
        assert committed(coordinators[owner], "payments") == 20
        members = stub(coordinators[owner]).Heartbeat(
            coordinator_pb2.HeartbeatRequest(
                group_id="payments",
                member_id=str(uuid.uuid4()),
                member_epoch=0,
                subscription=coordinator_pb2.Subscription(topic_names=["orders"]),
            )
        )
        assert members.error.code == ErrorCode.NONE
        assert [tp.partitions for tp in members.assignment.topic_partitions] == [[0]]


@pytest.mark.timeout(120)
def test_a_newer_shard_epoch_fences_the_previous_owners_writes(tmp_path: Path) -> None:
    """The mechanism under the failover: writes under an older shard epoch are refused once the
    newer owner has written its fence marker, and the newer owner's replay has every earlier write.
    The test plays two shard owners itself (a metadata watcher and the shard's producer id), which
    a secure cluster grants to its coordinators' certificates only: this cluster runs plaintext."""
    with running_cluster(tmp_path, 3, coordinators=1, offsets_topic_partitions=2, tls=False, auth=False) as cluster:
        controller = cluster.describe()["controller"]

        async def scenario() -> None:
            link = ControllerLink(
                controller, node_id=99, incarnation_id="observer", endpoint=common_pb2.Node(), role="observer"
            )
            await link.start()
            await link.wait_for(lambda image: 0 in image.shards, 10)
            brokers = BrokerAccess(lambda: link.image)
            producer_id = link.image.shards[0].producer_id  # the shard's own (the broker refuses others)
            clock = SystemClock()
            old = ShardLog(brokers, clock, shard=0, producer_id=producer_id, shard_epoch=100)
            new = ShardLog(brokers, clock, shard=0, producer_id=producer_id, shard_epoch=101)
            await old.append([offset_record("g", ("orders", 0), OffsetCommit(5))])
            replayed = await new.fence_and_read()
            assert any(value is not None and value.offset_commit.committed_offset == 5 for _, value in replayed)
            with pytest.raises(ShardFencedError):
                await old.append([offset_record("g", ("orders", 0), OffsetCommit(6))])
            await new.append([offset_record("g", ("orders", 0), OffsetCommit(7))])
            await brokers.close()
            await link.stop(controlled=False)

        asyncio.run(scenario())


def test_clients_cannot_write_the_internal_topic(tmp_path: Path) -> None:
    with running_cluster(tmp_path, 1, coordinators=1, offsets_topic_partitions=1) as cluster:
        address = cluster.describe()["brokers"][0]["address"]
        batch = encode_batch([Record(0, 0, b"forged", b"value")], producer_id=-1, producer_epoch=-1, base_sequence=-1)
        request = broker_pb2.ProduceRequest(
            acks=common_pb2.ACKS_ALL,
            topics=[
                broker_pb2.TopicProduceData(
                    topic="__consumer_offsets",
                    partitions=[broker_pb2.PartitionProduceData(partition=0, records=batch)],
                )
            ],
        )
        deadline = time.monotonic() + 20
        with blocking_client_channel(address) as channel:
            while True:  # the broker may still be taking the shard's leadership over (retriable)
                answer = broker_pb2_grpc.BrokerStub(channel).Produce(request, timeout=10)  # type: ignore[no-untyped-call]
                error = answer.topics[0].partitions[0].error
                if not ErrorCode(error.code).retriable or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        assert error.code == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert "only the group coordinator" in error.message
