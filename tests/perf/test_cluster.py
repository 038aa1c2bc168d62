"""Cluster benchmarks over real processes (run by `make bench`; prints numbers, asserts nothing
about time).

For one broker with acks=1 and three brokers with RF 3 and acks=all, 100-byte values, one driver
process:

- client: ``lanes.Producer`` sending records one by one (throughput in records/s and MB/s), then
  ``lanes.Consumer`` reading them all back; produce latency (send to acknowledgement) p50/p99 at a
  fixed offered rate, so queueing does not dominate it;
- wire path: pre-encoded 1,000-record batches straight over gRPC, several requests in flight:
  what the brokers sustain without the client's per-record work, the client's ceiling.

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

import lanes
from lanes.local.cluster import LocalCluster
from lanes.protocol.records import Record, encode_batch, validate_batches
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.processes import consecutive_free_ports

RECORDS_PER_BATCH = 1_000
VALUE_BYTES = 100
REQUESTS = 300
IN_FLIGHT = 4
CLIENT_RECORDS = 500_000
LATENCY_RATE_PER_S = 10_000
LATENCY_SECONDS = 3


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


def _client_produce(bootstrap: str, topic: str, acks: str, value: bytes) -> float:
    """Seconds to send CLIENT_RECORDS records one by one and have them all acknowledged."""
    with lanes.Producer(bootstrap, acks=acks, enable_idempotence=acks == "all", batch_size=256 * 1024) as producer:
        producer.send(topic, value).result(timeout=30)  # warm-up: metadata, producer id, channel
        send = producer.send
        start = time.perf_counter()
        for _ in range(CLIENT_RECORDS):
            send(topic, value)
        producer.flush()
        return time.perf_counter() - start


def _client_consume(bootstrap: str, topic: str, expected: int) -> float:
    """Seconds to read ``expected`` records from the beginning of partition 0."""
    with lanes.Consumer(bootstrap) as consumer:
        consumer.assign([lanes.TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        start = time.perf_counter()
        read = 0
        while read < expected:
            read += len(consumer.poll(timeout_ms=1000))
        return time.perf_counter() - start


def _client_latencies(bootstrap: str, topic: str, acks: str, value: bytes) -> list[float]:
    """Send-to-acknowledgement seconds of each record sent at LATENCY_RATE_PER_S: a tick every
    millisecond sends that millisecond's records, then the driver sleeps (a spinning driver would
    hold the GIL and starve the client's own event loop)."""
    latencies: list[float] = []
    per_tick = LATENCY_RATE_PER_S // 1000
    with lanes.Producer(bootstrap, acks=acks, enable_idempotence=acks == "all", linger_ms=1) as producer:
        producer.send(topic, value).result(timeout=30)
        start = time.perf_counter()
        for tick in range(LATENCY_SECONDS * 1000):
            pause = start + tick / 1000 - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            sent = time.perf_counter()
            for _ in range(per_tick):
                producer.send(topic, value).add_done_callback(
                    lambda _f, sent=sent: latencies.append(time.perf_counter() - sent)
                )
        producer.flush()
    return latencies


def _percentile_ms(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000


def test_cluster_produce_and_consume_throughput() -> None:
    value = os.urandom(VALUE_BYTES)
    batch = encode_batch([Record(i, 1_700_000_000_000, None, value) for i in range(RECORDS_PER_BATCH)])
    lines = [
        f"cluster benchmark: {VALUE_BYTES}-byte values, one driver process; client = lanes.Producer/Consumer, "
        f"{CLIENT_RECORDS:,} records sent one by one; latency at {LATENCY_RATE_PER_S:,} records/s; "
        f"wire path = {REQUESTS} pre-encoded batches of {RECORDS_PER_BATCH} over gRPC, {IN_FLIGHT} in flight"
    ]
    for brokers, acks, wire_acks, label in (
        (1, "1", common_pb2.ACKS_LEADER, "1 broker, acks=1"),
        (3, "all", common_pb2.ACKS_ALL, "3 brokers RF 3, acks=all, min.insync.replicas=2"),
    ):
        with tempfile.TemporaryDirectory() as tmp:
            cluster = LocalCluster(
                Path(tmp),
                brokers=brokers,
                port_base=consecutive_free_ports(LocalCluster.ports_for(brokers)),
                tls=False,  # what the cluster sustains; tests/perf/test_tls.py prices security
                auth=False,
            )
            cluster.start()
            try:
                bootstrap = str(cluster.describe()["bootstrap"])
                asyncio.run(_leader_address(cluster, "client"))
                produce_s = _client_produce(bootstrap, "client", acks, value)
                consume_s = _client_consume(bootstrap, "client", CLIENT_RECORDS + 1)
                asyncio.run(_leader_address(cluster, "latency"))
                latencies = _client_latencies(bootstrap, "latency", acks, value)
                address = asyncio.run(_leader_address(cluster, "wire"))
                wire_s, wire_latencies = asyncio.run(_produce(address, "wire", wire_acks, batch))
                wire_consume_s, wire_consumed = asyncio.run(_consume(address, "wire"))
            finally:
                cluster.stop()
        wire_records = REQUESTS * RECORDS_PER_BATCH
        lines += [
            f"  {label}:",
            f"    client produce  {CLIENT_RECORDS / produce_s:>11,.0f} records/s "
            f"{CLIENT_RECORDS * VALUE_BYTES / produce_s / 1e6:>7,.1f} MB/s of values",
            f"    client consume  {CLIENT_RECORDS / consume_s:>11,.0f} records/s "
            f"{CLIENT_RECORDS * VALUE_BYTES / consume_s / 1e6:>7,.1f} MB/s of values",
            f"    client latency  p50 {_percentile_ms(latencies, 0.5):.1f} ms, "
            f"p99 {_percentile_ms(latencies, 0.99):.1f} ms "
            f"(send to acknowledgement, {len(latencies):,} records at {LATENCY_RATE_PER_S:,}/s)",
            f"    wire produce    {wire_records / wire_s:>11,.0f} records/s "
            f"{wire_records * VALUE_BYTES / wire_s / 1e6:>7,.1f} MB/s of values   request latency "
            f"p50 {statistics.median(wire_latencies) * 1000:.1f} ms, p99 {_percentile_ms(wire_latencies, 0.99):.1f} ms",
            f"    wire consume    {wire_consumed / len(batch) * RECORDS_PER_BATCH / wire_consume_s:>11,.0f} records/s "
            f"{wire_consumed / wire_consume_s / 1e6:>7,.1f} MB/s",
        ]
    print("\n" + "\n".join(lines))
