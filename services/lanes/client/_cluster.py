"""What a client knows of the cluster: brokers, partition leaders, partition counts, and one
channel per broker.

Learned from any broker's Metadata (brokers answer from their metadata image, so the controller is
never involved); refreshed by the producer and consumer when a leader moves or a broker fails.
Owned by the client's event loop.

Staleness (KIP-320's rule): a broker's image may lag, or a broker cut off from the controller may
still name itself leader. A partition's leader is replaced only by an answer with a leader epoch
at least as new as the one known. A broker that timed out or said it does not lead a partition
is a *suspect* for a while: refreshes ask every other broker first, so a client is not sent back
to a cut-off leader by that leader's own stale answer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import grpc

from lanes.errors import ErrorCode, error_for
from lanes.rpc.channels import open_channel
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2

#: how long a broker that timed out or was not the leader is asked for metadata last
SUSPECT_S = 10.0


class ClusterView:
    """Brokers and partition leaders as last seen, and the channels to reach them."""

    def __init__(self, bootstrap: Sequence[str], request_timeout_s: float) -> None:
        if not bootstrap:
            raise ValueError("bootstrap needs at least one host:port")
        self.bootstrap = list(bootstrap)
        self.brokers: dict[int, str] = {}
        self.coordinators: dict[int, str] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        #: the newest leader epoch seen per partition (kept when the leader is forgotten)
        self.leader_epochs: dict[tuple[str, int], int] = {}
        self._suspects: dict[str, float] = {}  # address -> monotonic time it stops being one
        self.topic_ids: dict[str, str] = {}  # epochs of a recreated topic start again
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

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's newest known leader epoch, -1 if none (for requests that carry it)."""
        return self.leader_epochs.get((topic, partition), -1)

    def forget_leader(self, topic: str, partition: int, suspect: str | None = None) -> None:
        """The leader moved or failed: look it up again at the next refresh, asking the
        ``suspect`` address (the broker that failed us) last for a while."""
        self.leaders.pop((topic, partition), None)
        if suspect is not None:
            self._suspects[suspect] = time.monotonic() + SUSPECT_S

    def _recreated(self, topic: str, topic_id: str) -> None:
        """``topic`` was deleted and made again (a new id): its epochs start again."""
        self.topic_ids[topic] = topic_id
        for key in [key for key in self.leader_epochs if key[0] == topic]:
            del self.leader_epochs[key]

    def metadata_sources(self) -> list[str]:
        """Known brokers then bootstrap addresses, each once, suspects last."""
        now = time.monotonic()
        self._suspects = {a: until for a, until in self._suspects.items() if until > now}
        addresses = list(dict.fromkeys([*self.brokers.values(), *self.bootstrap]))
        return sorted(addresses, key=lambda address: address in self._suspects)

    async def refresh(self, topics: Sequence[str]) -> dict[str, common_pb2.Error]:
        """Ask a known broker (then the bootstrap ones) for the topics' metadata; per-topic
        errors are returned. Raises a retriable BROKER_NOT_AVAILABLE error when none answers."""
        problems = []
        for address in self.metadata_sources():
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
                    if self.topic_ids.setdefault(topic.name, topic.topic_id) != topic.topic_id:
                        self._recreated(topic.name, topic.topic_id)
                    for partition in topic.partitions:
                        key = (topic.name, partition.partition)
                        if partition.leader_epoch >= self.leader_epochs.get(key, -1):
                            self.leaders[key] = partition.leader_id
                            self.leader_epochs[key] = partition.leader_epoch
            return errors
        raise error_for(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker answered for metadata ({'; '.join(problems)})")

    async def close(self) -> None:
        """Close every channel."""
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
