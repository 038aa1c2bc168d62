"""Issue #21, mechanism 1: a retried batch that the leader recognises as a duplicate must not be
acknowledged before it is replicated.

The leader appended the first attempt, but its follower is paused, so the high-water mark stays
below the batch and the first attempt times out. The producer retries the same batch (same
producer id, epoch and sequence); the leader recognises it. Answering that retry at once, as a
success, would acknowledge a record no other replica holds: a leader that then loses its
leadership truncates it away, and an acknowledged record is lost. The retry must wait for
replication like the first attempt did, and succeed only once the high-water mark covers the
original batch.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lanes.errors import ErrorCode
from lanes.protocol.records import Record, encode_batch
from lanes.v1 import broker_pb2, broker_pb2_grpc
from tests.faults.replicated import list_offset, replicated_topic
from tests.integration.processes import client_channel
from tests.integration.test_broker_process import produce


def test_a_retried_duplicate_waits_for_replication_before_it_is_acknowledged(tmp_path: Path) -> None:
    with replicated_topic(tmp_path, min_insync_replicas=2) as cluster:
        leader = cluster.address(cluster.leader)

        async def send(stub: broker_pb2_grpc.BrokerStub, records: bytes, timeout_ms: int) -> tuple[ErrorCode, int]:
            request = produce(cluster.topic, 0, records)
            request.timeout_ms = timeout_ms
            result = (await stub.Produce(request, timeout=timeout_ms / 1000 + 10)).topics[0].partitions[0]
            return ErrorCode(result.error.code), result.base_offset

        async def scenario() -> None:
            async with client_channel(leader) as channel:
                stub = broker_pb2_grpc.BrokerStub(channel)
                init = await stub.InitProducerId(broker_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1))
                assert init.error.code == ErrorCode.NONE
                # a record of now: the broker forgets a producer whose last batch's timestamp is older
                # than producer.id.expiration.ms (as Kafka does), and a record stamped 1 ms after
                # the epoch had its producer forgotten at the broker's first maintenance pass, the
                # retry then appended again (seen once, with the tests' CPU starved)
                retried = encode_batch(
                    [Record(0, int(time.time() * 1000), b"key", b"acknowledged only when replicated")],
                    producer_id=init.producer_id,
                    producer_epoch=init.producer_epoch,
                    base_sequence=0,
                )
                with cluster.paused(cluster.followers[0]):
                    first = await send(stub, retried, 1000)
                    assert first[0] is ErrorCode.REQUEST_TIMED_OUT, first
                    retry = await send(stub, retried, 1000)
                    high_watermark = await list_offset(leader, cluster.topic, broker_pb2.OFFSET_SPEC_LATEST)
                    assert retry[0] is ErrorCode.REQUEST_TIMED_OUT, (
                        f"the retry was answered {retry[0].name} while the high-water mark is {high_watermark}: "
                        "the batch at offset 0 is on the leader only"
                    )
                replicated = await send(stub, retried, 10_000)
                assert replicated == (ErrorCode.DUPLICATE_SEQUENCE_NUMBER, 0), "once replicated: the original offset"
                assert await list_offset(leader, cluster.topic, broker_pb2.OFFSET_SPEC_LATEST) == 1

        asyncio.run(scenario())
