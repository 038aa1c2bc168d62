"""What a client knows of the cluster: brokers, partition leaders, partition counts, and one
channel per broker.

Learned from any broker's Metadata (brokers answer from their metadata image, so the controller is
never involved); refreshed by the producer and consumer when a leader moves or a broker fails.
Owned by the client's event loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from lanes.errors import ErrorCode, error_for
from lanes.rpc.channels import open_channel
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2


class ClusterView:
    """Brokers and partition leaders as last seen, and the channels to reach them."""

    def __init__(self, bootstrap: Sequence[str], request_timeout_s: float) -> None:
        if not bootstrap:
            raise ValueError("bootstrap needs at least one host:port")
        self.bootstrap = list(bootstrap)
        self.brokers: dict[int, str] = {}
        self.coordinators: dict[int, str] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        self.partition_counts: dict[str, int] = {}
        self._timeout_s = request_timeout_s
        self._channels: dict[str, grpc.aio.Channel] = {}

    def stub(self, address: str) -> broker_pb2_grpc.BrokerStub:
        """A broker stub on the (cached) channel to ``address``."""
        return broker_pb2_grpc.BrokerStub(self.channel(address))  # type: ignore[no-untyped-call]

    def channel(self, address: str) -> grpc.aio.Channel:
        """The (cached) channel to ``address``, for any service there."""
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = open_channel(address)
        return channel

    def leader_address(self, topic: str, partition: int) -> str | None:
        """Where the partition's leader listens, if known."""
        return self.brokers.get(self.leaders.get((topic, partition), -1))

    def forget_leader(self, topic: str, partition: int) -> None:
        """The leader moved or failed: look it up again at the next refresh."""
        self.leaders.pop((topic, partition), None)

    async def refresh(self, topics: Sequence[str]) -> dict[str, common_pb2.Error]:
        """Ask a known broker (then the bootstrap ones) for the topics' metadata; per-topic
        errors are returned. Raises a retriable BROKER_NOT_AVAILABLE error when none answers."""
        problems = []
        for address in [*self.brokers.values(), *self.bootstrap]:
            try:
                metadata = await self.stub(address).Metadata(
                    broker_pb2.MetadataRequest(topics=list(topics)), timeout=self._timeout_s
                )
            except grpc.aio.AioRpcError as exc:
                problems.append(f"{address}: {exc.code().name}")
                continue
            self.brokers = {b.node_id: f"{b.host}:{b.port}" for b in metadata.brokers}
            self.coordinators = {c.node_id: f"{c.host}:{c.port}" for c in metadata.coordinators}
            errors = {}
            for topic in metadata.topics:
                errors[topic.name] = topic.error
                if topic.error.code == 0:  # ErrorCode.NONE
                    self.partition_counts[topic.name] = len(topic.partitions)
                    for partition in topic.partitions:
                        self.leaders[(topic.name, partition.partition)] = partition.leader_id
            return errors
        raise error_for(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker answered for metadata ({'; '.join(problems)})")

    async def close(self) -> None:
        """Close every channel."""
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
