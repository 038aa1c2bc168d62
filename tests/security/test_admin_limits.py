"""Issue #23, against a real cluster: administrative requests that harmed data or stalled the
controller are refused with a clear error.

- DeleteRecords on a compacted topic (``__consumer_offsets`` included) dropped keys' latest values
  (committed offsets among them): refused with POLICY_VIOLATION, as Kafka does, and the records
  stay.
- ``max.message.bytes=0`` on ``__consumer_offsets`` failed every group: the cluster manages the
  configs that keep internal topics working (POLICY_VIOLATION).
- CreateTopics(num_partitions=2**31-1) looped in placement on the controller's event loop: refused
  at once with INVALID_PARTITIONS, and the controller goes on answering.
- ``segment.bytes=14`` rolled a segment per batch, filling the broker with files every topic
  shares: below 1 MiB (Kafka 4.0's floor, the controller's ``--min-segment-bytes``) it is refused
  with INVALID_CONFIG, on a new topic and on an existing one.
- A topic named again and again in Metadata or DescribeTopics was described each time: answered
  once; a partition looked up by timestamp twice in one ListOffsets is refused (INVALID_REQUEST).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import lanes
from lanes.errors import ErrorCode, LanesError
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.v1 import broker_pb2, broker_pb2_grpc, controller_pb2
from tests.e2e.cli import wait_for
from tests.integration.processes import client_channel, running_cluster
from tests.security.raw import peak_memory_mib, reset_peak_memory


async def _delete_records(address: str, topic: str, partition: int) -> broker_pb2.DeleteRecordsPartitionResponse:
    async with client_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        request = broker_pb2.DeleteRecordsRequest(timeout_ms=5_000)
        request.topics.add(topic=topic).partitions.add(partition=partition, offset=-1)
        answer: broker_pb2.DeleteRecordsResponse = await stub.DeleteRecords(request, timeout=10)
        return answer.topics[0].partitions[0]


async def _metadata(address: str, topics: list[str]) -> broker_pb2.MetadataResponse:
    async with client_channel(address, [("grpc.max_send_message_length", 32 * 1024 * 1024)]) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        answer: broker_pb2.MetadataResponse = await stub.Metadata(broker_pb2.MetadataRequest(topics=topics), timeout=60)
        return answer


async def _list_offsets(
    address: str, topic: str, partitions: list[int]
) -> list[broker_pb2.ListOffsetsPartitionResponse]:
    async with client_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        request = broker_pb2.ListOffsetsRequest()
        wanted = request.topics.add(topic=topic)
        for partition in partitions:
            wanted.partitions.add(
                partition=partition, spec=broker_pb2.OFFSET_SPEC_TIMESTAMP, timestamp_ms=0, current_leader_epoch=-1
            )
        answer: broker_pb2.ListOffsetsResponse = await stub.ListOffsets(request, timeout=10)
        return list(answer.topics[0].partitions)


def test_delete_records_on_compacted_topics_and_huge_partition_counts_are_refused(tmp_path: Path) -> None:
    with running_cluster(tmp_path, brokers=1, offsets_topic_partitions=1) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        address = cluster.broker_processes[1].address
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("accounts", partitions=1, replication_factor=1, config={"cleanup.policy": "compact"})
        with lanes.Producer(bootstrap, acks="all") as producer:
            for index in range(10):
                producer.send("accounts", f"balance-{index}".encode(), key=f"account-{index}".encode())
            producer.flush()
        with lanes.Consumer(bootstrap, group_id="auditors", auto_offset_reset="earliest") as consumer:
            consumer.subscribe(["accounts"])
            seen: list[lanes.ConsumerRecord] = []

            def read_all() -> bool:
                seen.extend(consumer.poll(500))
                return len(seen) >= 10

            wait_for(read_all, "the records read")
            consumer.commit()

        for topic in ("accounts", CONSUMER_OFFSETS_TOPIC):
            refused = asyncio.run(_delete_records(address, topic, 0))
            assert refused.error.code == int(ErrorCode.POLICY_VIOLATION), (topic, refused.error)
            assert "needs cleanup.policy to include delete" in refused.error.message
        with lanes.Admin(bootstrap) as admin:
            (log,) = admin.describe_logs(["accounts"])
            assert (log.log_start_offset, log.log_end_offset) == (0, 10), "every record is still there"
            offsets = admin.describe_group("auditors").offsets
            assert [(o.topic, o.committed_offset) for o in offsets] == [("accounts", 10)], "and the committed offset"

            with pytest.raises(LanesError, match=r"manages its max\.message\.bytes") as refused_config:
                admin.alter_configs(CONSUMER_OFFSETS_TOPIC, set={"max.message.bytes": "0"})
            assert refused_config.value.code is ErrorCode.POLICY_VIOLATION

            started = time.monotonic()
            with pytest.raises(LanesError, match="at most 10000") as refused_topic:
                admin.create_topic("huge", partitions=2**31 - 1, replication_factor=1)
            assert refused_topic.value.code is ErrorCode.INVALID_PARTITIONS
            assert time.monotonic() - started < 5
            assert admin.describe_cluster().cluster_id, "the controller goes on answering"
            admin.create_topic("normal", partitions=3, replication_factor=1)

            for attempt in (
                lambda: admin.create_topic("tiny", partitions=1, replication_factor=1, config={"segment.bytes": "14"}),
                lambda: admin.alter_configs("normal", set={"segment.bytes": "14"}),
            ):
                with pytest.raises(LanesError, match="must be at least 1048576") as refused_segments:
                    attempt()
                assert refused_segments.value.code is ErrorCode.INVALID_CONFIG
            assert "tiny" not in admin.list_topics()

        # One name 2,000,000 times in a 16 MB Metadata request was described 2,000,000 times (every
        # partition, before the ACL trim): gigabytes; now answered once, as Kafka takes a set.
        broker = cluster.broker_processes[1]
        before_mib = reset_peak_memory(broker.pid)
        metadata = asyncio.run(_metadata(address, ["normal"] * 2_000_000))
        assert [t.name for t in metadata.topics] == ["normal"]
        assert peak_memory_mib(broker.pid) - before_mib < 150, "the broker's memory stays bounded"
        described = asyncio.run(
            cluster._active_controller_call(
                lambda stub: stub.DescribeTopics(controller_pb2.DescribeTopicsRequest(names=["normal"] * 400_000))
            )
        )
        assert [t.name for t in described.topics] == ["normal"]
        offsets = asyncio.run(_list_offsets(address, "normal", [0, 0]))
        assert [p.error.code for p in offsets] == [0, int(ErrorCode.INVALID_REQUEST)], "one lookup by time each"
