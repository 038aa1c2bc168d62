"""Cluster benchmarks over real processes (run by `make bench`; prints numbers, asserts nothing
about time).

Until the client library exists (issue #4 continues), one driver process speaks the gRPC API
directly: pre-encoded 1,000-record batches of 100-byte values, several produce requests in flight.
Reported, for one broker with acks=1 and three brokers with RF 3 and acks=all:

- produce throughput (records/s, MB/s) and per-request latency p50/p99;
- consume throughput (fetches of whole batches from the leader).

Aims on this 2-core machine: 500,000 records/s acks=1 and 200,000 records/s acks=all RF 3.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import grpc

from lanes.protocol.records import Record, encode_batch, validate_batches
from lanes.runtime.local_cluster import LocalCluster
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.processes import consecutive_free_ports

RECORDS_PER_BATCH = 1_000
VALUE_BYTES = 100
REQUESTS = 300
IN_FLIGHT = 4


async def _leader_address(cluster: LocalCluster, topic: str) -> str:
    assert cluster.controller is not None
    async with grpc.aio.insecure_channel(cluster.controller.address) as channel:
        stub = controller_pb2_grpc.ControllerStub(channel)
        await stub.CreateTopics(
            controller_pb2.CreateTopicsRequest(
                topics=[
                    controller_pb2.CreatableTopic(
                        name=topic,
                        num_partitions=1,
                        replication_factor=cluster.brokers,
                        configs=[
                            common_pb2.ConfigValue(name="min.insync.replicas", value=str(min(2, cluster.brokers)))
                        ],
                    )
                ]
            )
        )
        leader = (
            (await stub.DescribeTopics(controller_pb2.DescribeTopicsRequest(names=[topic])))
            .topics[0]
            .partitions[0]
            .leader_id
        )
    return cluster.broker_processes[leader].address


async def _produce(address: str, topic: str, acks: int, batch: bytes) -> tuple[float, list[float]]:
    latencies: list[float] = []
    request = broker_pb2.ProduceRequest(
        acks=acks,
        timeout_ms=30_000,
        topics=[
            broker_pb2.TopicProduceData(
                topic=topic, partitions=[broker_pb2.PartitionProduceData(partition=0, records=batch)]
            )
        ],
    )
    async with grpc.aio.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20)]) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        await stub.Produce(request)  # warm-up (leadership settled, connection open)
        remaining = REQUESTS
        start = time.perf_counter()

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                sent = time.perf_counter()
                while True:
                    answer = await stub.Produce(request)
                    if answer.topics[0].partitions[0].error.code == 0:
                        break
                latencies.append(time.perf_counter() - sent)

        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
        return time.perf_counter() - start, latencies


async def _consume(address: str, topic: str) -> tuple[float, int]:
    async with grpc.aio.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 << 20)]) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        offset, total_bytes = 0, 0
        start = time.perf_counter()
        while True:
            answer = await stub.Fetch(
                broker_pb2.FetchRequest(
                    max_wait_ms=0,
                    min_bytes=1,
                    max_bytes=8 << 20,
                    topics=[
                        broker_pb2.FetchTopic(
                            topic=topic,
                            partitions=[
                                broker_pb2.FetchPartition(
                                    partition=0,
                                    fetch_offset=offset,
                                    current_leader_epoch=-1,
                                    partition_max_bytes=8 << 20,
                                )
                            ],
                        )
                    ],
                )
            )
            part = answer.topics[0].partitions[0]
            if not part.records:
                return time.perf_counter() - start, total_bytes
            total_bytes += len(part.records)
            offset = validate_batches(part.records)[-1].next_offset


def test_cluster_produce_and_consume_throughput() -> None:
    value = os.urandom(VALUE_BYTES)
    batch = encode_batch([Record(i, 1_700_000_000_000, None, value) for i in range(RECORDS_PER_BATCH)])
    lines = [
        f"cluster benchmark: {REQUESTS} produce requests of {RECORDS_PER_BATCH} x {VALUE_BYTES}-byte records, "
        f"{IN_FLIGHT} in flight, one driver process (raw gRPC, no client library yet)"
    ]
    for brokers, acks, label in (
        (1, common_pb2.ACKS_LEADER, "1 broker, acks=1"),
        (3, common_pb2.ACKS_ALL, "3 brokers RF 3, acks=all"),
    ):
        with tempfile.TemporaryDirectory() as tmp:
            cluster = LocalCluster(Path(tmp), brokers=brokers, port_base=consecutive_free_ports(brokers + 1))
            cluster.start()
            try:
                address = asyncio.run(_leader_address(cluster, "bench"))
                elapsed, latencies = asyncio.run(_produce(address, "bench", acks, batch))
                consume_s, consumed = asyncio.run(_consume(address, "bench"))
            finally:
                cluster.stop()
        records = REQUESTS * RECORDS_PER_BATCH
        latencies.sort()
        p50 = statistics.median(latencies) * 1000
        p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000
        lines += [
            f"  {label}:",
            f"    produce  {records / elapsed:>12,.0f} records/s  "
            f"{records * VALUE_BYTES / elapsed / 1e6:>8,.1f} MB/s of values   "
            f"request latency p50 {p50:.1f} ms, p99 {p99:.1f} ms",
            f"    consume  {consumed / len(batch) * RECORDS_PER_BATCH / consume_s:>12,.0f} records/s  "
            f"{consumed / consume_s / 1e6:>8,.1f} MB/s",
        ]
    print("\n" + "\n".join(lines))
