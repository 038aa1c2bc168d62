"""Issue #23: a ReplicaFetch naming another broker as the fetching follower. Before, the leader
trusted ``replica_id`` and ``fetch_offset``: a spoofed fetch moved the high-water mark for a
follower that held nothing (acknowledged records were later lost), and a full fetch request in
its name replaced the real follower's fetch session.

Now the leader refuses a follower's fetch at an epoch older than that broker's registration, and
counts one toward high-water marks and ISRs only at the current registration epoch (KIP-903) and
only for partitions it replicates (a newer epoch, which a leader whose metadata lags sees from a
restarted follower, is served without counting); an ISR expansion names the epoch each joining
member fetched with, and the controller refuses one that registered again since. Against a real
cluster: with follower 2 paused, spoofed fetches claiming it has everything leave the mark where
it is, and once it resumes replication goes on and every acknowledged record is there.

The cluster here runs plaintext, so the epoch checks are proved on their own (they hold where a
node's certificate was stolen, or a cluster runs without TLS). With security on, the default, a
ReplicaFetch also needs a node's certificate on the internal listener, naming the replica it
claims (``tests/security/test_tls.py``, ``test_authorization.py``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import grpc

import lanes
from lanes.errors import ErrorCode
from lanes.local.cluster import LocalCluster
from lanes.protocol.records import Record, encode_batch
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2
from tests.integration.processes import running_cluster
from tests.security.raw import produce


async def _describe(address: str, topic: str) -> broker_pb2.ReplicaLog:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        answer: broker_pb2.DescribeLogsResponse = await stub.DescribeLogs(
            broker_pb2.DescribeLogsRequest(topics=[topic]), timeout=10
        )
    (log,) = answer.replicas
    assert log.is_leader
    return log


def _leader_log(address: str, topic: str) -> broker_pb2.ReplicaLog:
    """The leader's own view (asking every broker would wait for the paused one)."""
    return asyncio.run(_describe(address, topic))


async def _spoof(
    address: str, topic: str, topic_id: str, *, replica_id: int, broker_epoch: int, offset: int
) -> broker_pb2.ReplicaFetchResponse:
    """A full-session fetch in ``replica_id``'s name, claiming its log ends at ``offset``."""
    request = broker_pb2.ReplicaFetchRequest(
        replica_id=replica_id, broker_epoch=broker_epoch, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20
    )
    request.topics.add(topic=topic, topic_id=topic_id).partitions.add(
        partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1, partition_max_bytes=1 << 20
    )
    async with grpc.aio.insecure_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        answer: broker_pb2.ReplicaFetchResponse = await stub.ReplicaFetch(request, timeout=10)
        return answer


def test_spoofed_follower_fetches_move_no_high_water_mark(tmp_path: Path) -> None:
    with running_cluster(tmp_path, brokers=2, tls=False, auth=False) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("t", partitions=1, replication_factor=2, config={"min.insync.replicas": "1"})
            info = admin.describe_topic("t")
        leader_id = info.partitions[0].leader
        follower_id = next(b for b in info.partitions[0].replicas if b != leader_id)
        leader = cluster.broker_processes[leader_id]
        batch = encode_batch([Record(0, int(time.time() * 1000), None, b"acknowledged")])
        assert produce(leader.address, "t", 0, batch).code == 0  # acks=all: both replicas have it
        _spoof_while_paused(cluster, follower_id, leader.address, info.topic_id, bootstrap)


def _spoof_while_paused(cluster: LocalCluster, follower_id: int, address: str, topic_id: str, bootstrap: str) -> None:
    """Within the controller's session timeout (6 s here): the follower stays in the ISR."""
    follower = cluster.broker_processes[follower_id]
    os.kill(follower.pid, signal.SIGSTOP)
    try:
        for _ in range(5):  # acks=1: on the leader only, above the mark
            assert produce(address, "t", 0, encode_batch([Record(0, 0, None, b"x")]), common_pb2.ACKS_LEADER).code == 0
        before = _leader_log(address, "t")
        assert before.high_watermark < before.log_end_offset
        for replica_id, epoch in ((follower_id, 0), (99, 1), (follower_id, 2**62)):
            answer = asyncio.run(
                _spoof(address, "t", topic_id, replica_id=replica_id, broker_epoch=epoch, offset=before.log_end_offset)
            )
            if epoch < 2**62:  # an older incarnation, or no broker at all: refused outright
                assert answer.error.code == int(ErrorCode.STALE_BROKER_EPOCH), answer
                assert not answer.topics, "nothing is read for it"
            else:  # newer than the leader knows (its metadata may lag): served, and counts for nothing
                assert answer.error.code == 0, answer
        after = _leader_log(address, "t")
        assert after.high_watermark == before.high_watermark, "the mark did not move for a follower holding nothing"
    finally:
        os.kill(follower.pid, signal.SIGCONT)
    deadline = time.monotonic() + 30
    while (log := _leader_log(address, "t")).high_watermark < log.log_end_offset:
        assert time.monotonic() < deadline, "the real follower replicates again"
        time.sleep(0.2)
    with lanes.Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([lanes.TopicPartition("t", 0)])
        values: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while len(values) < 6 and time.monotonic() < deadline:
            values += [record.value for record in consumer.poll(1000)]
    assert values == [b"acknowledged"] + [b"x"] * 5
