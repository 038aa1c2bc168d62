"""The broker's engine in process, on a manual clock, with no gRPC: ``ReplicaManager`` appends as
leader with acks 1 and all (an acks=all append parks in the purgatory until a follower's fetch
moves the high-water mark), ``ConsumerFetches`` serves what was committed, a produce cancelled
while its worker thread appends keeps its partition's order, and byte-rate quotas run on the
injected clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes.broker.byte_rate_quotas import ByteRateQuotas
from lanes.broker.consumer_fetch import ConsumerFetch, ConsumerFetches
from lanes.broker.fetch_limits import FetchLimits
from lanes.broker.metrics import BrokerMetrics
from lanes.broker.partition import Partition
from lanes.broker.purgatory import Purgatory
from lanes.broker.replica_manager import ReplicaManager, Writer
from lanes.clock import ManualClock
from lanes.errors import ErrorCode
from lanes.metadata.image import CONSUMER_BYTE_RATE, MetadataImage
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.runtime.metrics import ServiceMetrics
from lanes.security.quota_entities import QuotaEntity
from lanes.storage.log import LogConfig, PartitionLog
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2

KEY = TopicPartition("orders", 0)
WRITER = Writer(identity=None, verified=False)
METRICS = BrokerMetrics(ServiceMetrics("broker"))


class Controller:
    """The engine's view of the controllers: a lease that holds, an empty image."""

    def __init__(self) -> None:
        self.image = MetadataImage()
        self.session_timeout_s: float | None = 6.0

    def lease_held(self) -> bool:
        return True


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[ReplicaManager, Partition, ManualClock]]:
    clock = ManualClock()
    manager = ReplicaManager(1, Controller(), clock, Purgatory(), METRICS)
    partition = Partition(KEY, "topic-id", PartitionLog.open(tmp_path, LogConfig.from_topic_configs({}), clock=clock))
    partition.make_leader(
        leader_epoch=1,
        partition_epoch=1,
        replicas=[1, 2],
        isr=[1, 2],
        min_insync_replicas=1,
        leader_id=1,
        now_ms=clock.monotonic_ms(),
        replica_lag_time_max_ms=30_000,
    )
    manager.partitions[KEY] = partition
    yield manager, partition, clock
    partition.close()


def produce_data(values: list[bytes]) -> broker_pb2.PartitionProduceData:
    records = encode_batch([Record(i, 0, None, value) for i, value in enumerate(values)])
    return broker_pb2.PartitionProduceData(partition=0, records=records)


def consumer_fetch(offset: int, min_bytes: int = 1, max_wait_ms: int = 0) -> tuple[ConsumerFetch, FetchLimits]:
    request = broker_pb2.FetchRequest(
        topics=[
            broker_pb2.FetchTopic(
                topic=KEY.topic,
                partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=offset, current_leader_epoch=-1)],
            )
        ]
    )
    limits = FetchLimits.clamp(1 << 20, min_bytes, max_wait_ms, cap_bytes=1 << 20)
    return ConsumerFetch(request, limits.max_bytes), limits


def test_acks_all_parks_until_a_follower_moves_the_high_water_mark_then_consumers_read_it(
    replicas: tuple[ReplicaManager, Partition, ManualClock],
) -> None:
    manager, partition, clock = replicas

    async def scenario() -> None:
        appending = asyncio.create_task(
            manager.append(KEY.topic, produce_data([b"a", b"b"]), common_pb2.ACKS_ALL, 5.0, WRITER)
        )
        while partition.log.log_end_offset < 2:
            await asyncio.sleep(0.001)
        fetch, limits = consumer_fetch(0)
        response, sent, _ = await ConsumerFetches(manager, 1 << 20).fetch(fetch, limits)
        assert sent == {}, "nothing committed yet"
        assert response.topics[0].partitions[0].error.code == ErrorCode.NONE
        assert not appending.done()
        advanced = await asyncio.to_thread(partition.on_follower_fetch, 2, -1, 1, 2, clock.monotonic_ms())
        assert advanced == (True, False)
        manager.purgatory.moved(KEY)
        answer = await asyncio.wait_for(appending, 5)
        assert (answer.error.code, answer.base_offset) == (ErrorCode.NONE, 0)
        fetch, limits = consumer_fetch(0)
        response, sent, _ = await ConsumerFetches(manager, 1 << 20).fetch(fetch, limits)
        records = [r.value for batch in decode_batches(response.topics[0].partitions[0].records) for r in batch.records]
        assert records == [b"a", b"b"]
        assert sent == {KEY.topic: (len(response.topics[0].partitions[0].records), 2)}
        assert manager.purgatory.waiting_keys() == 0

    asyncio.run(scenario())


def test_a_produce_cancelled_while_its_thread_appends_holds_the_partition_until_the_append_is_done(
    replicas: tuple[ReplicaManager, Partition, ManualClock],
) -> None:
    """A later request must not overtake an append still under way in a worker thread."""
    manager, partition, _ = replicas

    async def scenario() -> None:
        partition._lock.acquire()  # the worker thread's append waits on the partition's lock
        try:
            first = asyncio.create_task(manager.append(KEY.topic, produce_data([b"first"]), 1, 5.0, WRITER))
            while not partition.append_queue.locked():
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.05)  # (the worker thread is blocked in the append)
            first.cancel()
            await asyncio.sleep(0.05)
            assert partition.append_queue.locked(), "released while the append still runs"
            second = asyncio.create_task(manager.append(KEY.topic, produce_data([b"second"]), 1, 5.0, WRITER))
            await asyncio.sleep(0.05)
        finally:
            partition._lock.release()
        with pytest.raises(asyncio.CancelledError):
            await first
        answer = await asyncio.wait_for(second, 5)
        assert answer.base_offset == 1, "the second append comes after the first"

    asyncio.run(scenario())


def test_byte_rate_quotas_count_on_the_injected_clock() -> None:
    clock = ManualClock()
    quotas = ByteRateQuotas(clock)
    limited = (QuotaEntity(user="mallory"), 1000.0)
    owed_ms = asyncio.run(quotas.admit(CONSUMER_BYTE_RATE, limited, 20_000))
    assert owed_ms > 0
    assert quotas.muted_ms(CONSUMER_BYTE_RATE, limited) == owed_ms
    clock.advance(owed_ms)
    assert quotas.muted_ms(CONSUMER_BYTE_RATE, limited) == 0
