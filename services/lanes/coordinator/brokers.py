"""How a coordinator reaches partition leaders: produce, fetch and list offsets over gRPC.

Leaders come from the coordinator's metadata image (the controller's WatchMetadata stream), so
no bootstrap round trips are needed. Transport failures are answered as NETWORK_EXCEPTION
results, never raised, so callers handle one kind of outcome. Owned by the coordinator's loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import grpc

from lanes.errors import ErrorCode
from lanes.metadata.image import NO_LEADER, MetadataImage
from lanes.rpc.channels import ChannelCache
from lanes.rpc.wire import code_of, produce_request, wire_error
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2

_REQUEST_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ListedOffset:
    """A ListOffsets answer for one partition."""

    error: ErrorCode
    offset: int = -1
    timestamp_ms: int = -1


def _network_error(exc: grpc.aio.AioRpcError) -> common_pb2.Error:
    return wire_error(ErrorCode.NETWORK_EXCEPTION, f"broker unreachable: {exc.code().name}")


class BrokerAccess:
    """Stubs to the brokers the metadata image names."""

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image
        self._channels = ChannelCache()

    def leader_address(self, topic: str, partition: int) -> str | None:
        """``host:port`` of the partition's leader, or None when it has none (or is unknown)."""
        image = self._image()
        found = image.topic(topic)
        info = found.partitions.get(partition) if found is not None else None
        if info is None or info.leader == NO_LEADER:
            return None
        broker = image.brokers.get(info.leader)
        return broker.internal_address if broker is not None else None

    def _stub(self, address: str) -> broker_pb2_grpc.BrokerStub:
        return broker_pb2_grpc.BrokerStub(self._channels.get(address))  # type: ignore[no-untyped-call]

    async def produce(
        self, topic: str, partition: int, batch: bytes, *, timeout_ms: int
    ) -> broker_pb2.PartitionProduceResponse:
        """Append one batch with acks=all to the partition's leader."""
        address = self.leader_address(topic, partition)
        if address is None:
            return broker_pb2.PartitionProduceResponse(
                partition=partition,
                error=wire_error(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition} has no leader"),
            )
        request = produce_request(topic, partition, batch, acks=common_pb2.ACKS_ALL, timeout_ms=timeout_ms)
        try:
            answer = await self._stub(address).Produce(request, timeout=timeout_ms / 1000 + _REQUEST_TIMEOUT_S)
        except grpc.aio.AioRpcError as exc:
            return broker_pb2.PartitionProduceResponse(partition=partition, error=_network_error(exc))
        result: broker_pb2.PartitionProduceResponse = answer.topics[0].partitions[0]
        return result

    async def fetch(
        self, topic: str, partition: int, offset: int, *, max_bytes: int = 4 << 20
    ) -> broker_pb2.FetchPartitionResponse:
        """Read committed records (below the high-water mark) from ``offset``, without waiting."""
        address = self.leader_address(topic, partition)
        if address is None:
            return broker_pb2.FetchPartitionResponse(
                partition=partition,
                error=wire_error(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition} has no leader"),
            )
        request = broker_pb2.FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=max_bytes,
            topics=[
                broker_pb2.FetchTopic(
                    topic=topic,
                    partitions=[
                        broker_pb2.FetchPartition(
                            partition=partition,
                            fetch_offset=offset,
                            current_leader_epoch=-1,  # unchecked: 0 would be fenced by any later leader
                            partition_max_bytes=max_bytes,
                        )
                    ],
                )
            ],
        )
        try:
            answer = await self._stub(address).Fetch(request, timeout=_REQUEST_TIMEOUT_S)
        except grpc.aio.AioRpcError as exc:
            return broker_pb2.FetchPartitionResponse(partition=partition, error=_network_error(exc))
        result: broker_pb2.FetchPartitionResponse = answer.topics[0].partitions[0]
        return result

    async def list_offsets(
        self, partitions: Iterable[TopicPartition], spec: int, timestamp_ms: int = -1, offset: int = -1
    ) -> dict[TopicPartition, ListedOffset]:
        """Offsets of ``partitions`` by ``spec`` (a broker_pb2.OffsetSpec), one request per leader."""
        by_leader: dict[str | None, list[TopicPartition]] = {}
        for topic, partition in partitions:
            by_leader.setdefault(self.leader_address(topic, partition), []).append(TopicPartition(topic, partition))
        listed: dict[TopicPartition, ListedOffset] = {}
        for address, wanted in by_leader.items():
            if address is None:
                listed.update(dict.fromkeys(wanted, ListedOffset(ErrorCode.LEADER_NOT_AVAILABLE)))
                continue
            topics: dict[str, list[broker_pb2.ListOffsetsPartition]] = {}
            for topic, partition in wanted:
                topics.setdefault(topic, []).append(
                    broker_pb2.ListOffsetsPartition(
                        partition=partition,
                        spec=spec,  # type: ignore[arg-type]
                        timestamp_ms=timestamp_ms,
                        current_leader_epoch=-1,
                        offset=offset,
                    )
                )
            request = broker_pb2.ListOffsetsRequest(
                topics=[broker_pb2.ListOffsetsTopic(topic=t, partitions=ps) for t, ps in topics.items()]
            )
            try:
                answer = await self._stub(address).ListOffsets(request, timeout=_REQUEST_TIMEOUT_S)
            except grpc.aio.AioRpcError:
                listed.update(dict.fromkeys(wanted, ListedOffset(ErrorCode.NETWORK_EXCEPTION)))
                continue
            for topic_answer in answer.topics:
                for p in topic_answer.partitions:
                    listed[TopicPartition(topic_answer.topic, p.partition)] = ListedOffset(
                        code_of(p.error), p.offset, p.timestamp_ms
                    )
        return listed

    async def record_timestamp(self, topic: str, partition: int, offset: int) -> int | None:
        """The timestamp of the first record at or after ``offset`` below the high-water mark, as
        the leader reads it (OFFSET_SPEC_RECORD_TIME: no record's bytes reach the coordinator)."""
        where = TopicPartition(topic, partition)
        listed = await self.list_offsets([where], broker_pb2.OFFSET_SPEC_RECORD_TIME, offset=offset)
        found = listed.get(where)
        if found is None or found.error is not ErrorCode.NONE or found.offset < 0:
            return None
        return found.timestamp_ms

    async def close(self) -> None:
        """Close every channel."""
        await self._channels.close()
