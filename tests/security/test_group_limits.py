"""Issue #23, against a real cluster: a heartbeat with a 2 MB client id became a member record
too large to write and stopped its coordinator shard. Now every string and list a heartbeat
carries is bounded, and so are a subscription's bytes (4,100 names of 249 characters, each
within bounds, made a 1 MB record): it is refused with INVALID_REQUEST, and groups on the same
shard go on. An
offset commit in the name of a 2 MB group id (it would have made that group) is refused with
INVALID_GROUP_ID."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import lanes
from lanes.errors import ErrorCode
from lanes.v1 import coordinator_pb2, coordinator_pb2_grpc
from tests.e2e.cli import wait_for
from tests.integration.processes import client_channel, running_cluster
from tests.security.raw import heartbeat


async def _heartbeat(address: str, request: coordinator_pb2.HeartbeatRequest) -> coordinator_pb2.HeartbeatResponse:
    async with client_channel(address) as channel:
        return await heartbeat(coordinator_pb2_grpc.GroupCoordinatorStub(channel), request)  # type: ignore[no-untyped-call]


async def _commit(address: str, request: coordinator_pb2.CommitOffsetsRequest) -> coordinator_pb2.CommitOffsetsResponse:
    async with client_channel(address) as channel:
        stub = coordinator_pb2_grpc.GroupCoordinatorStub(channel)  # type: ignore[no-untyped-call]
        answer: coordinator_pb2.CommitOffsetsResponse = await stub.CommitOffsets(request, timeout=10)
        return answer


def test_a_heartbeat_with_a_2_mb_client_id_is_refused_and_the_shard_serves_on(tmp_path: Path) -> None:
    with running_cluster(tmp_path, brokers=1, offsets_topic_partitions=1) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("orders", partitions=2, replication_factor=1)
        address = cluster.coordinator_processes[1].address
        request = coordinator_pb2.HeartbeatRequest(
            group_id="hostile",
            member_id=str(uuid.uuid4()),
            member_epoch=0,
            client_id="x" * 2_000_000,
            rebalance_timeout_ms=30_000,
            subscription=coordinator_pb2.Subscription(topic_names=["orders"]),
        )
        answer = asyncio.run(_heartbeat(address, request))
        assert answer.error.code == int(ErrorCode.INVALID_REQUEST), answer.error
        assert "client id has 2000000 characters; at most 255" in answer.error.message

        # each name within bounds, together a 1 MB member record (more than the shard's log takes)
        names = [f"{n:05d}" + "t" * 244 for n in range(4_100)]
        request = coordinator_pb2.HeartbeatRequest(
            group_id="hostile",
            member_id=str(uuid.uuid4()),
            member_epoch=0,
            rebalance_timeout_ms=30_000,
            subscription=coordinator_pb2.Subscription(topic_names=names),
        )
        answer = asyncio.run(_heartbeat(address, request))
        assert answer.error.code == int(ErrorCode.INVALID_REQUEST), answer.error
        assert "the subscription's topic names take 1020900 bytes" in answer.error.message

        commit = coordinator_pb2.CommitOffsetsRequest(group_id="g" * 2_000_000, member_epoch=-1)
        commit.topics.add(topic="orders").partitions.add(partition=0, committed_offset=1, committed_leader_epoch=-1)
        committed = asyncio.run(_commit(address, commit))
        refusal = committed.topics[0].partitions[0].error
        assert refusal.code == int(ErrorCode.INVALID_GROUP_ID), refusal
        assert "group id of 2000000 characters is too long" in refusal.message

        with lanes.Producer(bootstrap, acks="all") as producer:
            for index in range(20):
                producer.send("orders", f"order-{index}".encode(), key=str(index).encode())
            producer.flush()
        with lanes.Consumer(bootstrap, group_id="honest", auto_offset_reset="earliest") as consumer:
            consumer.subscribe(["orders"])  # the same (only) shard of __consumer_offsets
            seen: list[lanes.ConsumerRecord] = []

            def read_all() -> bool:
                seen.extend(consumer.poll(500))
                return len(seen) >= 20

            wait_for(read_all, "the honest group reads every record")
            consumer.commit()
        assert cluster.coordinator_processes[1].process.poll() is None, "the coordinator is up"
