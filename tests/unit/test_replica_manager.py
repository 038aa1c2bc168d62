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
from lanes.broker.replica_fetch import ReplicaFetchAsk, ReplicaFetches
from lanes.broker.replica_manager import ReplicaManager, Writer
from lanes.clock import ManualClock
from lanes.errors import ErrorCode
from lanes.metadata.image import CONSUMER_BYTE_RATE, MetadataImage
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.runtime.metrics import ServiceMetrics
from lanes.security.quota_entities import QuotaEntity
from lanes.storage.log import LogConfig, PartitionLog
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2, metadata_pb2

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
        fetched, sent, _ = await ConsumerFetches(manager, 1 << 20).fetch(fetch, limits)
        response = fetched.message()
        assert sent == {}, "nothing committed yet"
        assert response.topics[0].partitions[0].error.code == ErrorCode.NONE
        assert not appending.done()
        advanced = await asyncio.to_thread(partition.on_follower_fetch, 2, -1, 1, 2, clock.monotonic_ms())
        assert advanced == (True, False)
        manager.purgatory.moved(KEY)
        answer = await asyncio.wait_for(appending, 5)
        assert (answer.error.code, answer.base_offset) == (ErrorCode.NONE, 0)
        fetch, limits = consumer_fetch(0)
        fetched, sent, _ = await ConsumerFetches(manager, 1 << 20).fetch(fetch, limits)
        response = fetched.message()
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


def _image_naming(leader: int, leader_epoch: int) -> MetadataImage:
    image = MetadataImage()
    image.apply(
        0,
        metadata_pb2.MetadataRecord(topic_created=metadata_pb2.TopicCreatedRecord(name=KEY.topic, topic_id="topic-id")),
    )
    image.apply(
        1,
        metadata_pb2.MetadataRecord(
            partition=metadata_pb2.PartitionRecord(
                topic_id="topic-id",
                partition=0,
                replicas=[1, 2],
                isr=[1, 2],
                leader_id=leader,
                leader_epoch=leader_epoch,
            )
        ),
    )
    return image


def test_a_broker_that_has_not_heard_of_a_newer_leader_epoch_says_so_instead_of_denying(
    replicas: tuple[ReplicaManager, Partition, ManualClock],
) -> None:
    """Issue #35: a broker whose metadata still named another leader answered a produce for the
    newer epoch naming it with NOT_LEADER_OR_FOLLOWER, and the producer distrusted the correct
    metadata for 10 s. As Kafka's checkCurrentLeaderEpoch: UNKNOWN_LEADER_EPOCH, retried soon."""
    manager, _, _ = replicas
    del manager.partitions[KEY]  # this broker follows, as far as it knows
    manager.controller.image = _image_naming(leader=2, leader_epoch=4)  # type: ignore[misc]

    async def scenario() -> None:
        data = produce_data([b"a"])
        data.current_leader_epoch = 5  # the producer learned elsewhere that this broker leads epoch 5
        answer = await manager.append(KEY.topic, data, common_pb2.ACKS_ALL, 5.0, WRITER)
        assert answer.error.code == ErrorCode.UNKNOWN_LEADER_EPOCH
        data.current_leader_epoch = 4
        answer = await manager.append(KEY.topic, data, common_pb2.ACKS_ALL, 5.0, WRITER)
        assert answer.error.code == ErrorCode.NOT_LEADER_OR_FOLLOWER, "at the epoch it knows, it does not lead"

    asyncio.run(scenario())


def test_a_leader_that_cannot_vouch_for_leading_names_no_leader_in_its_own_metadata(
    replicas: tuple[ReplicaManager, Partition, ManualClock],
) -> None:
    manager, _, clock = replicas
    image = _image_naming(leader=1, leader_epoch=1)
    partition_image = image.topic(KEY.topic).partitions[0]  # type: ignore[union-attr]
    assert manager.named_leader(KEY.topic, partition_image) == 1
    manager.controller.lease_held = lambda: False  # type: ignore[method-assign]
    clock.advance(60_000)  # and the follower has not fetched for longer than a session
    assert manager.named_leader(KEY.topic, partition_image) == -1


def test_in_sync_follows_the_image_record_by_record() -> None:
    """``in_sync`` is worked out once per image offset (health checks ask every second): each
    record that moves this broker in or out of an ISR changes the answer at once."""
    controller = Controller()
    manager = ReplicaManager(1, controller, ManualClock(), Purgatory(), METRICS)
    image = controller.image
    record = metadata_pb2.MetadataRecord
    image.apply(1, record(topic_created=metadata_pb2.TopicCreatedRecord(name="t", topic_id="tid")))
    image.apply(
        2,
        record(
            partition=metadata_pb2.PartitionRecord(
                topic_id="tid", partition=0, replicas=[2, 1], isr=[2], leader_id=2, leader_epoch=1
            )
        ),
    )
    assert not manager.in_sync()
    assert not manager.in_sync()  # (asked again, same image)
    change = metadata_pb2.PartitionChangeRecord(
        topic_id="tid", partition=0, isr=metadata_pb2.IsrList(broker_ids=[2, 1]), leader_epoch=1, partition_epoch=1
    )
    image.apply(3, record(partition_change=change))
    assert manager.in_sync()
    change.isr.broker_ids[:] = [2]
    change.partition_epoch = 2
    image.apply(4, record(partition_change=change))
    assert not manager.in_sync()
    controller.image = MetadataImage()  # a new image (a snapshot loaded): counted again
    assert manager.in_sync()


def replica_fetch(
    session_id: int, session_epoch: int, *, offset: int | None, max_wait_ms: int
) -> broker_pb2.ReplicaFetchRequest:
    """Broker 2's ReplicaFetch of ``KEY`` (at epoch 7), naming it at ``offset`` (None: naming nothing)."""
    named = [
        broker_pb2.ReplicaFetchTopic(
            topic=KEY.topic,
            topic_id="topic-id",
            partitions=[
                broker_pb2.ReplicaFetchPartition(
                    partition=0, current_leader_epoch=1, fetch_offset=offset, last_fetched_epoch=1
                )
            ],
        )
    ]
    return broker_pb2.ReplicaFetchRequest(
        replica_id=2,
        broker_epoch=7,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=named if offset is not None else [],
        session_id=session_id,
        session_epoch=session_epoch,
    )


def test_an_idle_followers_parked_fetch_answers_a_log_start_that_moved_while_it_waited(
    replicas: tuple[ReplicaManager, Partition, ManualClock],
) -> None:
    """An idle follower's fetch answers, at its deadline, what its last pass found when nothing
    moved since; DeleteRecords moving the log start is a move (announced), so the answer carries
    the new log start, not the one of the pass made when the request arrived."""
    manager, partition, clock = replicas
    manager.image.apply(
        1,
        metadata_pb2.MetadataRecord(broker_registered=metadata_pb2.BrokerRegisteredRecord(broker_id=2, broker_epoch=7)),
    )
    fetches = ReplicaFetches(manager, clock, expand_isr_now=lambda: None)

    async def scenario() -> int:
        await manager.append(KEY.topic, produce_data([b"a", b"b", b"c"]), 1, 5.0, WRITER)
        opened = await fetches.fetch(ReplicaFetchAsk.of(replica_fetch(0, 0, offset=3, max_wait_ms=0), 1 << 20))
        assert opened.error.code == ErrorCode.NONE
        assert opened.session_id > 0
        assert partition.log.high_watermark == 3
        parked = asyncio.create_task(
            fetches.fetch(
                ReplicaFetchAsk.of(replica_fetch(opened.session_id, 1, offset=None, max_wait_ms=1_000), 1 << 20)
            )
        )
        while manager.purgatory.waiting_keys() == 0:
            await asyncio.sleep(0.001)
        deleted = await manager.delete_records(KEY.topic, 0, 2)
        assert deleted.error.code == ErrorCode.NONE
        assert deleted.low_watermark == 2
        answer = await asyncio.wait_for(parked, 10)
        return answer.topics[0].partitions[0].log_start_offset

    assert asyncio.run(scenario()) == 2
