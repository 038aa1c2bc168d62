"""Issue #23: a compressed batch that inflates to 1 GiB (a few MiB on the wire), against a real
cluster. Measured before: +2,051 MiB on a broker answering ListOffsets by timestamp, +2,045 MiB
producing it to a compacted topic, and every consumer of it dead.

Now every decompression stops at ``MAX_DECOMPRESSED_BYTES`` (64 MiB), and the broker checks every
produced record as Kafka's LogValidator does, inflating compressed batches: a plain topic and a
compacted one both refuse the batch with MESSAGE_TOO_LARGE, so no consumer and no ListOffsets
ever meets it; the broker's peak resident memory (VmHWM, read from /proc) grows by less than
``MEMORY_BOUND_MIB``, and it goes on serving. (Decoding a batch that arrived another way stops
at the same bound: ``tests/unit/test_compression.py``.)
"""

from __future__ import annotations

import asyncio
import struct
import time
import zlib
from pathlib import Path

from crc32c import crc32c

import lanes
from lanes.errors import ErrorCode
from lanes.local.cluster import LocalCluster
from lanes.protocol.compression import MAX_DECOMPRESSED_BYTES, Compression
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2
from tests.integration.processes import client_channel, running_cluster
from tests.security.raw import peak_memory_mib, produce

INFLATED_BYTES = 1024 * 1024 * 1024
#: the broker's peak memory may grow by this much while refusing the bomb (the decompression
#: bound, a buffer being doubled, and what the request itself takes)
MEMORY_BOUND_MIB = 160


def _zigzag(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def gzip_bomb_batch() -> bytes:
    """One RecordBatch v2 whose gzip records section holds one record with a 1 GiB value of
    zeros, compressed in chunks (the test never holds the inflated bytes)."""
    body_head = b"\x00" + _zigzag(0) + _zigzag(0) + _zigzag(-1) + _zigzag(INFLATED_BYTES)
    body_tail = _zigzag(0)
    record_head = _zigzag(len(body_head) + INFLATED_BYTES + len(body_tail)) + body_head
    gzip = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1024 * 1024)
    parts = [gzip.compress(record_head)]
    parts += [gzip.compress(zeros) for _ in range(INFLATED_BYTES // len(zeros))]
    parts += [gzip.compress(body_tail), gzip.flush()]
    section = b"".join(parts)
    now = int(time.time() * 1000)
    tail = struct.pack(">hiqqqhii", int(Compression.GZIP), 0, now, now, -1, -1, -1, 1) + section
    head = struct.pack(">qiiBI", 0, 4 + 1 + 4 + len(tail), -1, 2, crc32c(tail))
    return head + tail


async def _offset_at(address: str, topic: str, timestamp_ms: int) -> broker_pb2.ListOffsetsPartitionResponse:
    async with client_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        request = broker_pb2.ListOffsetsRequest()
        request.topics.add(topic=topic).partitions.add(
            partition=0, spec=broker_pb2.OFFSET_SPEC_TIMESTAMP, timestamp_ms=timestamp_ms, current_leader_epoch=-1
        )
        answer: broker_pb2.ListOffsetsResponse = await stub.ListOffsets(request, timeout=60)
        return answer.topics[0].partitions[0]


def _broker(cluster: LocalCluster) -> tuple[str, int]:
    process = cluster.broker_processes[1]
    return process.address, process.pid


def test_a_gzip_bomb_is_refused_in_bounded_memory_and_the_broker_serves_on(tmp_path: Path) -> None:
    bomb = gzip_bomb_batch()
    assert len(bomb) < 8 * 1024 * 1024, "a few MiB on the wire"
    assert MAX_DECOMPRESSED_BYTES < INFLATED_BYTES
    with running_cluster(tmp_path, brokers=1) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("compacted", partitions=1, replication_factor=1, config={"cleanup.policy": "compact"})
            admin.create_topic("plain", partitions=1, replication_factor=1)
        address, pid = _broker(cluster)
        before = peak_memory_mib(pid)

        for topic in ("compacted", "plain"):
            refused = produce(address, topic, 0, bomb, common_pb2.ACKS_LEADER)
            assert refused.code == int(ErrorCode.MESSAGE_TOO_LARGE), refused
            assert "decompresses to more than" in refused.message
        answer = asyncio.run(_offset_at(address, "plain", 0))
        assert answer.error.code == 0, answer
        assert answer.offset == -1, "nothing was stored"

        grown = peak_memory_mib(pid) - before
        print(f"\nbroker peak memory grew by {grown:.0f} MiB refusing a 1 GiB bomb twice")
        assert grown < MEMORY_BOUND_MIB
        assert cluster.broker_processes[1].process.poll() is None, "the broker is up"
        with lanes.Producer(bootstrap, acks="all") as producer:
            producer.send("compacted", b"value", key=b"key")
            producer.flush()
