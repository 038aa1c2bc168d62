"""A broker as a real process beside a real controller: it leads its partitions, serves produce
(acks 0/1/all), long-poll fetch, offsets and metadata, refuses bad input without harm, and keeps
every acknowledged record across a kill -9."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lanes.errors import ErrorCode
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.processes import client_channel, free_port, start_controller, start_service


def start_broker(  # type: ignore[no-untyped-def]
    broker_id: int, data_dir: Path, controller: str, port: int, log: Path, *, replica_lag_time_max_ms: int = 30_000
):
    return start_service(
        "lanes.broker",
        [
            "--broker-id",
            str(broker_id),
            "--data-dir",
            str(data_dir),
            "--controller",
            controller,
            "--port",
            str(port),
            "--replica-lag-time-max-ms",
            str(replica_lag_time_max_ms),
        ],
        log,
    )


def batch(values: list[bytes]) -> bytes:
    return encode_batch([Record(i, int(time.time() * 1000), None, v) for i, v in enumerate(values)])


def produce(topic: str, partition: int, records: bytes, acks: int = common_pb2.ACKS_ALL) -> broker_pb2.ProduceRequest:
    return broker_pb2.ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topics=[
            broker_pb2.TopicProduceData(
                topic=topic, partitions=[broker_pb2.PartitionProduceData(partition=partition, records=records)]
            )
        ],
    )


def fetch(topic: str, partition: int, offset: int, max_wait_ms: int = 0) -> broker_pb2.FetchRequest:
    return broker_pb2.FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=10 * 1024 * 1024,
        topics=[
            broker_pb2.FetchTopic(
                topic=topic,
                partitions=[
                    broker_pb2.FetchPartition(
                        partition=partition,
                        fetch_offset=offset,
                        current_leader_epoch=-1,
                        partition_max_bytes=1024 * 1024,
                    )
                ],
            )
        ],
    )


async def wait_for_live_brokers(stub: controller_pb2_grpc.ControllerStub, count: int) -> None:
    """Wait until the controller reports ``count`` live (unfenced) brokers."""

    async def live() -> bool:
        return len((await stub.DescribeCluster(controller_pb2.DescribeClusterRequest())).brokers) == count

    await wait_for(live, f"{count} live brokers")


async def create_topic(controller: str, name: str, partitions: int = 1, *, brokers: int = 1) -> None:
    """Create a topic (replication factor 1) once ``brokers`` brokers are live."""
    async with client_channel(controller) as channel:
        stub = controller_pb2_grpc.ControllerStub(channel)
        await wait_for_live_brokers(stub, brokers)
        answer = await stub.CreateTopics(
            controller_pb2.CreateTopicsRequest(
                topics=[controller_pb2.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)]
            )
        )
        assert answer.topics[0].error.code == 0, answer.topics[0].error.message


async def wait_for(check, what: str, timeout_s: float = 20):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not (result := await check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)
    return result


def test_a_broker_serves_its_partitions_and_keeps_acknowledged_records(tmp_path: Path) -> None:
    log = tmp_path / "services.log"
    controller = start_controller(tmp_path / "controller", free_port(), log)
    broker_port = free_port()
    broker = start_broker(1, tmp_path / "broker-1", controller.address, broker_port, log)

    async def create() -> None:
        async with client_channel(controller.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)

            await wait_for_live_brokers(stub, 1)
            created = await stub.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[
                        controller_pb2.CreatableTopic(
                            name="orders",
                            num_partitions=2,
                            replication_factor=1,
                            configs=[common_pb2.ConfigValue(name="max.message.bytes", value="4096")],
                        )
                    ]
                )
            )
            assert created.topics[0].error.code == 0, created.topics[0].error.message

    async def serve_and_check() -> list[bytes]:
        async with client_channel(broker.address) as channel:
            stub = broker_pb2_grpc.BrokerStub(channel)

            async def leads_both():  # type: ignore[no-untyped-def]
                metadata = await stub.Metadata(broker_pb2.MetadataRequest(topics=["orders"]))
                return [p.leader_id for p in metadata.topics[0].partitions] == [1, 1]

            await wait_for(leads_both, "the broker to lead both partitions")
            # A long-poll fetch waits for data that arrives while it waits.
            waiting = asyncio.ensure_future(stub.Fetch(fetch("orders", 0, 0, max_wait_ms=5000)))
            await asyncio.sleep(0.2)
            acknowledged = []
            for acks in (common_pb2.ACKS_LEADER, common_pb2.ACKS_ALL, common_pb2.ACKS_NONE):
                values = [b"acks-%d-%d" % (acks, i) for i in range(3)]
                answer = await stub.Produce(produce("orders", 0, batch(values), acks))
                result = answer.topics[0].partitions[0]
                assert result.error.code == ErrorCode.NONE, result.error.message
                acknowledged.extend(values)
            polled = await waiting
            assert decode_batches(polled.topics[0].partitions[0].records), "the long poll returned the first batch"

            # Bad input: clear typed errors, the log untouched, the service up.
            bad = bytearray(batch([b"x"]))
            bad[-1] ^= 0xFF
            cases = [
                (produce("orders", 0, bytes(bad)), ErrorCode.CORRUPT_MESSAGE),
                (produce("orders", 0, batch([b"y" * 5000])), ErrorCode.MESSAGE_TOO_LARGE),
                (produce("orders", 7, batch([b"z"])), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                (produce("nope", 0, batch([b"z"])), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ]
            for request, expected in cases:
                answer = await stub.Produce(request)
                assert answer.topics[0].partitions[0].error.code == expected, answer
            out_of_range = await stub.Fetch(fetch("orders", 0, 999))
            assert out_of_range.topics[0].partitions[0].error.code == ErrorCode.OFFSET_OUT_OF_RANGE

            offsets = await stub.ListOffsets(
                broker_pb2.ListOffsetsRequest(
                    topics=[
                        broker_pb2.ListOffsetsTopic(
                            topic="orders",
                            partitions=[
                                broker_pb2.ListOffsetsPartition(partition=0, spec=broker_pb2.OFFSET_SPEC_EARLIEST),
                                broker_pb2.ListOffsetsPartition(partition=0, spec=broker_pb2.OFFSET_SPEC_LATEST),
                            ],
                        )
                    ]
                )
            )
            assert [p.offset for p in offsets.topics[0].partitions] == [0, 9]

            epochs = await stub.OffsetForLeaderEpoch(
                broker_pb2.OffsetForLeaderEpochRequest(
                    replica_id=-1,
                    topics=[
                        broker_pb2.OffsetForLeaderEpochTopic(
                            topic="orders",
                            partitions=[
                                broker_pb2.OffsetForLeaderEpochPartition(
                                    partition=0, current_leader_epoch=-1, leader_epoch=0
                                )
                            ],
                        )
                    ],
                )
            )
            assert epochs.topics[0].partitions[0].end.end_offset == 9, "epoch 0 ends at the log end"
            deleted = await stub.DeleteRecords(
                broker_pb2.DeleteRecordsRequest(
                    topics=[
                        broker_pb2.DeleteRecordsTopic(
                            topic="orders", partitions=[broker_pb2.DeleteRecordsPartition(partition=1, offset=-1)]
                        )
                    ]
                )
            )
            assert deleted.topics[0].partitions[0].error.code == ErrorCode.NONE
            too_far = await stub.DeleteRecords(
                broker_pb2.DeleteRecordsRequest(
                    topics=[
                        broker_pb2.DeleteRecordsTopic(
                            topic="orders", partitions=[broker_pb2.DeleteRecordsPartition(partition=0, offset=100)]
                        )
                    ]
                )
            )
            assert too_far.topics[0].partitions[0].error.code == ErrorCode.OFFSET_OUT_OF_RANGE
            return acknowledged

    async def read_back(address: str) -> list[bytes]:
        async with client_channel(address) as channel:
            stub = broker_pb2_grpc.BrokerStub(channel)

            async def led():  # type: ignore[no-untyped-def]
                metadata = await stub.Metadata(broker_pb2.MetadataRequest(topics=["orders"]))
                return (
                    metadata.topics
                    and metadata.topics[0].partitions
                    and metadata.topics[0].partitions[0].leader_id == 1
                )

            await wait_for(led, "leadership after the restart")
            values: list[bytes] = []
            offset = 0
            while True:
                answer = await stub.Fetch(fetch("orders", 0, offset))
                part = answer.topics[0].partitions[0]
                if part.error.code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE):
                    await asyncio.sleep(0.05)
                    continue
                records = [r for b in decode_batches(part.records) for r in b.records if r.offset >= offset]
                if not records:
                    return values
                values.extend(r.value or b"" for r in records)
                offset = records[-1].offset + 1

    asyncio.run(create())
    acknowledged = asyncio.run(serve_and_check())
    assert asyncio.run(read_back(broker.address)) == acknowledged
    broker.kill()  # no flush, no clean shutdown: what was acknowledged must still be there
    broker = start_broker(1, tmp_path / "broker-1", controller.address, broker_port, log)
    assert asyncio.run(read_back(broker.address)) == acknowledged
    assert broker.terminate() == 0, "SIGTERM: controlled shutdown and a clean close"
    assert controller.terminate() == 0


def test_idempotent_producers_get_duplicates_recognised_even_after_a_broker_crash(tmp_path: Path) -> None:
    log = tmp_path / "services.log"
    controller = start_controller(tmp_path / "controller", free_port(), log)
    port = free_port()
    broker = start_broker(1, tmp_path / "broker-1", controller.address, port, log)

    def idempotent(values: list[bytes], producer_id: int, epoch: int, sequence: int) -> bytes:
        return encode_batch(
            [Record(i, 1, None, v) for i, v in enumerate(values)],
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=sequence,
        )

    async def send(address: str, records: bytes) -> tuple[ErrorCode, int]:
        async with client_channel(address) as channel:
            stub = broker_pb2_grpc.BrokerStub(channel)
            while True:
                result = (await stub.Produce(produce("events", 0, records))).topics[0].partitions[0]
                if result.error.code not in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE):
                    return ErrorCode(result.error.code), result.base_offset
                await asyncio.sleep(0.05)

    async def scenario() -> int:
        async with client_channel(controller.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)

            await wait_for_live_brokers(stub, 1)
            await stub.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[controller_pb2.CreatableTopic(name="events", num_partitions=1, replication_factor=1)]
                )
            )
        async with client_channel(broker.address) as channel:
            init = await broker_pb2_grpc.BrokerStub(channel).InitProducerId(
                broker_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1)
            )
            assert init.error.code == ErrorCode.NONE
            producer_id = init.producer_id
        first = idempotent([b"a", b"b", b"c"], producer_id, 0, 0)
        assert await send(broker.address, first) == (ErrorCode.NONE, 0)
        assert await send(broker.address, first) == (ErrorCode.DUPLICATE_SEQUENCE_NUMBER, 0), "a retry is not rewritten"
        gap = await send(broker.address, idempotent([b"x"], producer_id, 0, 5))
        assert gap[0] is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        second = idempotent([b"d"], producer_id, 0, 3)
        assert await send(broker.address, second) == (ErrorCode.NONE, 3)
        return producer_id

    producer_id = asyncio.run(scenario())
    broker.kill()
    broker = start_broker(1, tmp_path / "broker-1", controller.address, port, log)

    async def after_crash() -> None:
        second = idempotent([b"d"], producer_id, 0, 3)
        code, offset = await send(broker.address, second)
        assert (code, offset) == (ErrorCode.DUPLICATE_SEQUENCE_NUMBER, 3), "the state was rebuilt from the log"
        assert await send(broker.address, idempotent([b"e"], producer_id, 1, 0)) == (ErrorCode.NONE, 4), "new epoch"
        zombie = await send(broker.address, idempotent([b"z"], producer_id, 0, 4))
        assert zombie[0] is ErrorCode.INVALID_PRODUCER_EPOCH
        assert await read_back_all(broker.address) == [b"a", b"b", b"c", b"d", b"e"]

    asyncio.run(after_crash())
    assert broker.terminate() == 0
    assert controller.terminate() == 0


async def read_back_all(address: str) -> list[bytes]:
    async with client_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        part = (await stub.Fetch(fetch("events", 0, 0))).topics[0].partitions[0]
        return [r.value or b"" for b in decode_batches(part.records) for r in b.records]
