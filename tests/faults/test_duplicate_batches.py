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
import signal
from pathlib import Path

import grpc

from lanes.errors import ErrorCode
from lanes.protocol.records import Record, encode_batch
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.processes import free_port, start_controller
from tests.integration.test_broker_process import produce, start_broker, wait_for, wait_for_live_brokers
from tests.integration.test_replication_process import partition_state


def test_a_retried_duplicate_waits_for_replication_before_it_is_acknowledged(tmp_path: Path) -> None:
    log = tmp_path / "services.log"
    # Long session and lag limits: the paused follower stays registered and in the ISR.
    controller = start_controller(tmp_path / "controller", free_port(), log, session_timeout_ms=30_000)
    ports = {b: free_port() for b in (1, 2)}
    brokers = {
        b: start_broker(b, tmp_path / f"broker-{b}", controller.address, ports[b], log, replica_lag_time_max_ms=30_000)
        for b in (1, 2)
    }
    address = {b: f"127.0.0.1:{ports[b]}" for b in (1, 2)}

    async def send(stub: broker_pb2_grpc.BrokerStub, records: bytes, timeout_ms: int) -> tuple[ErrorCode, int]:
        request = produce("orders", 0, records)
        request.timeout_ms = timeout_ms
        result = (await stub.Produce(request, timeout=timeout_ms / 1000 + 10)).topics[0].partitions[0]
        return ErrorCode(result.error.code), result.base_offset

    async def high_watermark(stub: broker_pb2_grpc.BrokerStub) -> int:
        request = broker_pb2.ListOffsetsRequest(
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic="orders",
                    partitions=[
                        broker_pb2.ListOffsetsPartition(
                            partition=0, spec=broker_pb2.OFFSET_SPEC_LATEST, current_leader_epoch=-1
                        )
                    ],
                )
            ]
        )
        return int((await stub.ListOffsets(request)).topics[0].partitions[0].offset)

    async def scenario() -> None:
        async with grpc.aio.insecure_channel(controller.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)
            await wait_for_live_brokers(stub, 2)
            await stub.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[
                        controller_pb2.CreatableTopic(
                            name="orders",
                            num_partitions=1,
                            replication_factor=2,
                            configs=[common_pb2.ConfigValue(name="min.insync.replicas", value="2")],
                        )
                    ]
                )
            )

        async def both_in_sync() -> bool:
            state = await partition_state(controller.address, "orders", 0)
            return state.leader_id > 0 and sorted(state.isr) == [1, 2]

        await wait_for(both_in_sync, "a leader with both replicas in sync")
        state = await partition_state(controller.address, "orders", 0)
        leader = state.leader_id
        follower = 2 if leader == 1 else 1
        async with grpc.aio.insecure_channel(address[leader]) as channel:
            stub = broker_pb2_grpc.BrokerStub(channel)
            init = await stub.InitProducerId(broker_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1))
            assert init.error.code == ErrorCode.NONE
            retried = encode_batch(
                [Record(0, 1, b"key", b"acknowledged only when replicated")],
                producer_id=init.producer_id,
                producer_epoch=init.producer_epoch,
                base_sequence=0,
            )
            brokers[follower].process.send_signal(signal.SIGSTOP)
            try:
                first = await send(stub, retried, 1000)
                assert first[0] is ErrorCode.REQUEST_TIMED_OUT, first
                retry = await send(stub, retried, 1000)
                assert retry[0] is ErrorCode.REQUEST_TIMED_OUT, (
                    f"the retry was answered {retry[0].name} while the high-water mark is "
                    f"{await high_watermark(stub)}: the batch at offset 0 is on the leader only"
                )
            finally:
                brokers[follower].process.send_signal(signal.SIGCONT)
            replicated = await send(stub, retried, 10_000)
            assert replicated == (ErrorCode.DUPLICATE_SEQUENCE_NUMBER, 0), "once replicated: the original offset"
            assert await high_watermark(stub) == 1

    try:
        asyncio.run(scenario())
    finally:
        for broker in brokers.values():
            broker.process.send_signal(signal.SIGCONT)
            broker.terminate()
        controller.terminate()
