"""Issue #21, mechanism 8: a consumer notices when records it read are no longer in the log
(KIP-320's position check).

With replication and clean elections, a record a consumer could read (below the high-water mark)
is on every in-sync replica and is never truncated. It can be lost when every replica holding it
loses it at once (a power loss before fsync: see docs/guarantees.md, "Not guaranteed"). Here a
single replica's log loses its unflushed tail while the broker is down; new records then take
the lost offsets under a new leader epoch. A consumer that only sent its position would go on
past them and silently skip the new records; it must ask the new leader where the epoch of its
last record ends, go back there (with a warning), or raise LogTruncationError with
``auto_offset_reset="none"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import lanes
from lanes.errors import ErrorCode, LogTruncationError
from lanes.local.processes import ServiceProcess
from lanes.v1 import broker_pb2_grpc
from tests.integration.processes import client_channel, free_port, start_controller
from tests.integration.test_broker_process import batch, create_topic, produce, start_broker

TOPIC = "events"
RETRIABLE = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
PARTITION = lanes.TopicPartition(TOPIC, 0)


async def send_one_by_one(address: str, values: list[bytes]) -> None:
    """Each value in a batch of its own, acks=all, retried while the broker takes over (and while
    it has not yet learnt of the topic from the metadata log: retriable, as in Kafka)."""
    async with client_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        for value in values:
            while True:
                # (wait_for_ready: a broker just restarted; this process's consumer may have left the
                # shared connection to its address in reconnect backoff)
                answer = await stub.Produce(produce(TOPIC, 0, batch([value])), wait_for_ready=True, timeout=30)
                result = answer.topics[0].partitions[0]
                if result.error.code not in RETRIABLE:
                    assert result.error.code == ErrorCode.NONE, result.error.message
                    break
                await asyncio.sleep(0.05)


def cut_log_after(directory: Path, batches: int) -> None:
    """Lose every batch after the first ``batches`` of the partition's log (as an unflushed tail
    after a power loss): the file is cut, the indexes (derived data) go."""
    segment = directory / f"{0:020d}.log"
    data = segment.read_bytes()
    position = 0
    for _ in range(batches):
        position += 12 + int.from_bytes(data[position + 8 : position + 12], "big")
    with segment.open("r+b") as file:
        file.truncate(position)
    for derived in directory.glob("*index"):
        derived.unlink()


@contextmanager
def broker_losing_its_tail(tmp_path: Path, auto_offset_reset: str) -> Iterator[tuple[ServiceProcess, lanes.Consumer]]:
    """A one-broker cluster; yields once a consumer has read ``old-0..9`` and the broker came back
    with only ``old-0..4`` and then took ``new-0..9`` at offsets 5..14."""
    log = tmp_path / "services.log"
    controller = start_controller(tmp_path / "controller", free_port(), log)
    port = free_port()
    broker = start_broker(1, tmp_path / "broker-1", controller.address, port, log)
    consumer: lanes.Consumer | None = None
    try:
        asyncio.run(create_topic(controller.address, TOPIC))
        asyncio.run(send_one_by_one(broker.address, [f"old-{i}".encode() for i in range(10)]))
        consumer = lanes.Consumer(broker.address, auto_offset_reset=auto_offset_reset, request_timeout_ms=5_000)
        consumer.assign([PARTITION])
        consumer.seek(PARTITION, 0)
        read: list[bytes | None] = []
        while len(read) < 10:
            read.extend(record.value for record in consumer.poll(timeout_ms=1_000))
        assert read == [f"old-{i}".encode() for i in range(10)]
        assert consumer.position(PARTITION) == 10
        broker.kill()
        cut_log_after(tmp_path / "broker-1" / "logs" / f"{TOPIC}-0", 5)
        broker = start_broker(1, tmp_path / "broker-1", controller.address, port, log)
        asyncio.run(send_one_by_one(broker.address, [f"new-{i}".encode() for i in range(10)]))
        yield broker, consumer
    finally:
        if consumer is not None:
            consumer.close()
        broker.terminate()
        controller.terminate()


def test_a_consumer_goes_back_to_where_the_new_leaders_log_diverges(tmp_path: Path) -> None:
    with broker_losing_its_tail(tmp_path, "earliest") as (_, consumer):
        read: list[tuple[int, bytes | None]] = []
        for _ in range(20):  # polls of up to 1 s: the new records are all there
            read.extend((record.offset, record.value) for record in consumer.poll(timeout_ms=1_000))
            if len(read) >= 10:
                break
        assert read == [(5 + i, f"new-{i}".encode()) for i in range(10)], "no new record skipped"


def test_a_consumer_without_a_reset_policy_raises_log_truncation(tmp_path: Path) -> None:
    def poll_a_while(consumer: lanes.Consumer) -> None:
        for _ in range(20):
            consumer.poll(timeout_ms=1_000)

    with broker_losing_its_tail(tmp_path, "none") as (_, consumer), pytest.raises(LogTruncationError):
        poll_a_while(consumer)
