"""Issue #23, against a real cluster: producer ids no longer let one client fence another.

- InitProducerId naming another producer's id bumped that id's epoch, so anyone could fence any
  idempotent producer: it now hands out a new id whatever the request names (as Kafka does
  without a transactional id), and the victim goes on producing.
- A record timestamped far ahead kept its (made-up) producer id's state on the broker forever:
  refused beyond ``message.timestamp.after.max.ms`` (KIP-937); and a request carries one batch
  per partition (Kafka's rule), not thousands each naming a made-up producer.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import lanes
from lanes.errors import ErrorCode
from lanes.protocol.records import Record, encode_batch
from lanes.v1 import broker_pb2, broker_pb2_grpc
from tests.integration.processes import client_channel, running_cluster
from tests.security.raw import produce


async def _call(address: str, method: str, request: object) -> object:
    async with client_channel(address) as channel:
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

        # A producer's state lives until producer.id.expiration.ms after its newest record's time:
        # a record far in the future kept made-up producer ids forever. Refused beyond
        # message.timestamp.after.max.ms (one hour ahead, KIP-937).
        future_ms = int(time.time() * 1000) + 2 * 3600 * 1000
        immortal = encode_batch([Record(0, future_ms, None, b"x")], producer_id=10**12, producer_epoch=0)
        refused = produce(address, "orders", 0, bytes(immortal))
        assert refused.code == int(ErrorCode.INVALID_TIMESTAMP), refused
        assert "message.timestamp.after.max.ms" in refused.message
        soon = encode_batch(
            [Record(0, int(time.time() * 1000) + 60_000, None, b"y")],
            producer_id=victim.producer_id,
            producer_epoch=0,
            base_sequence=2,
        )
        assert produce(address, "orders", 0, bytes(soon)).code == 0, "a clock a minute ahead is fine"

        # Many small batches in one request, each naming a producer id of its own, left that many
        # producers' state on every replica: one batch per partition per request, as Kafka.
        many = b"".join(
            bytes(encode_batch([Record(0, int(time.time() * 1000), None, b"z")], producer_id=pid, producer_epoch=0))
            for pid in range(10**12, 10**12 + 1_000)
        )
        refused = produce(address, "orders", 0, many)
        assert refused.code == int(ErrorCode.INVALID_RECORD), refused
        assert "one record batch per partition, not 1000" in refused.message
