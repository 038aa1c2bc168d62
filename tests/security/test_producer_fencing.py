"""Issue #23, against a real cluster: producer ids and epochs no longer let one client fence
another.

- InitProducerId naming another producer's id bumped that id's epoch, so anyone could fence any
  idempotent producer: it now hands out a new id whatever the request names (as Kafka does
  without a transactional id), and the victim goes on producing.
- A batch written to ``__consumer_offsets`` with a shard's producer id (readable by anyone in
  the batch headers) and epoch 32767 fenced the shard's coordinator until a restart: the broker
  refuses epochs newer than the shard's, and the group goes on committing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc

import lanes
from lanes.errors import ErrorCode
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.v1 import broker_pb2, broker_pb2_grpc
from tests.e2e.cli import wait_for
from tests.integration.processes import running_cluster
from tests.security.raw import produce


async def _call(address: str, method: str, request: object) -> object:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        return await getattr(stub, method)(request, timeout=10)


def _init_producer_id(address: str, producer_id: int, epoch: int) -> broker_pb2.InitProducerIdResponse:
    answer = asyncio.run(
        _call(
            address, "InitProducerId", broker_pb2.InitProducerIdRequest(producer_id=producer_id, producer_epoch=epoch)
        )
    )
    assert isinstance(answer, broker_pb2.InitProducerIdResponse)
    return answer


def _offsets_batch_producers(address: str) -> set[int]:
    """Producer ids in the headers of ``__consumer_offsets`` partition 0 (what any client reads)."""
    request = broker_pb2.FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20)
    request.topics.add(topic=CONSUMER_OFFSETS_TOPIC).partitions.add(
        partition=0, fetch_offset=0, current_leader_epoch=-1, partition_max_bytes=1 << 20
    )
    answer = asyncio.run(_call(address, "Fetch", request))
    assert isinstance(answer, broker_pb2.FetchResponse)
    return {batch.header.producer_id for batch in decode_batches(answer.topics[0].partitions[0].records)}


def test_producer_ids_and_epochs_do_not_let_a_client_fence_another(tmp_path: Path) -> None:
    with running_cluster(tmp_path, brokers=1, offsets_topic_partitions=1) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        address = cluster.broker_processes[1].address
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("orders", partitions=1, replication_factor=1)

        victim = _init_producer_id(address, -1, -1)
        first = encode_batch(
            [Record(0, 1, None, b"one")], producer_id=victim.producer_id, producer_epoch=0, base_sequence=0
        )
        assert produce(address, "orders", 0, bytes(first)).code == 0
        attacker = _init_producer_id(address, victim.producer_id, victim.producer_epoch)
        assert attacker.error.code == 0
        assert attacker.producer_id != victim.producer_id, "a new id, not the victim's with a bumped epoch"
        second = encode_batch(
            [Record(0, 2, None, b"two")], producer_id=victim.producer_id, producer_epoch=0, base_sequence=1
        )
        assert produce(address, "orders", 0, bytes(second)).code == 0, "the victim is not fenced"

        with lanes.Consumer(bootstrap, group_id="ledger", auto_offset_reset="earliest") as consumer:
            consumer.subscribe(["orders"])
            wait_for(lambda: bool(consumer.poll(500)), "the group reads")
            consumer.commit()
            (shard_producer,) = _offsets_batch_producers(address)
            hostile = encode_batch([Record(0, 3, b"k", b"v")], producer_id=shard_producer, producer_epoch=32767)
            refused = produce(address, CONSUMER_OFFSETS_TOPIC, 0, bytes(hostile), retry=False)
            assert refused.code == int(ErrorCode.UNKNOWN_LEADER_EPOCH), refused
            assert "newer than shard 0's epoch" in refused.message
            with lanes.Producer(bootstrap, acks="all") as producer:
                producer.send("orders", b"three")
                producer.flush()
            wait_for(lambda: bool(consumer.poll(500)), "the group reads on")
            consumer.commit()  # the shard's coordinator still writes
