"""The controller's decisions on the shards of ``__consumer_offsets`` (which group coordinator
owns which shard): pure, over the image it is given."""

from __future__ import annotations

from collections.abc import Callable

from lanes.controller.decisions import MetadataRecord
from lanes.metadata.image import MetadataImage, ShardImage
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.v1 import metadata_pb2


def coordinator_fenced(coordinator_id: int, epoch: int, reason: str) -> MetadataRecord:
    return MetadataRecord(
        coordinator_fenced=metadata_pb2.CoordinatorFencedRecord(
            coordinator_id=coordinator_id, coordinator_epoch=epoch, reason=reason
        )
    )


class ShardControl:
    """Places the shards on the live coordinators."""

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    def moves(
        self, live: set[int], *, restarted: frozenset[int] | set[int] = frozenset(), shard_count: int | None = None
    ) -> list[MetadataRecord]:
        """ShardAssigned records that give every shard to a live coordinator, balanced (owned
        counts differ by at most one) and sticky (a shard moves only when its owner is gone,
        restarted, or holds more than its share). A moved shard gets the next shard epoch."""
        if shard_count is None:
            topic = self._image().topic(CONSUMER_OFFSETS_TOPIC)
            shard_count = len(topic.partitions) if topic is not None else 0
        if shard_count == 0:
            return []
        owner: dict[int, int] = {}
        load = dict.fromkeys(sorted(live), 0)
        ceiling = -(-shard_count // len(live)) if live else 0
        for shard in range(shard_count):
            keeper = self._image().shards[shard].coordinator_id if shard in self._image().shards else -1
            if keeper in load and keeper not in restarted and load[keeper] < ceiling:
                owner[shard] = keeper
                load[keeper] += 1
        for shard in range(shard_count):
            if shard not in owner and load:
                chosen = min(load, key=lambda c: (load[c], c))
                owner[shard] = chosen
                load[chosen] += 1
        while load and max(load.values()) - min(load.values()) > 1:
            donor = max(load, key=lambda c: (load[c], -c))
            receiver = min(load, key=lambda c: (load[c], c))
            shard = max(s for s, c in owner.items() if c == donor)
            owner[shard] = receiver
            load[donor] -= 1
            load[receiver] += 1
        records = []
        next_producer_id = self._image().next_producer_id
        for shard in range(shard_count):
            current = self._image().shards.get(shard)
            new_owner = owner.get(shard, -1)
            moved = current is None or current.coordinator_id != new_owner or new_owner in restarted
            if not moved:
                continue
            if current is None:
                shard_info = ShardImage(new_owner, 1, next_producer_id)
                next_producer_id += 1
            else:
                shard_info = ShardImage(new_owner, current.shard_epoch + 1, current.producer_id)
            records.append(
                MetadataRecord(
                    shard_assigned=metadata_pb2.ShardAssignedRecord(
                        shard=shard,
                        coordinator_id=shard_info.coordinator_id,
                        shard_epoch=shard_info.shard_epoch,
                        producer_id=shard_info.producer_id,
                    )
                )
            )
        if next_producer_id != self._image().next_producer_id:
            records.append(
                MetadataRecord(
                    producer_ids=metadata_pb2.ProducerIdsRecord(node_id=-1, next_producer_id=next_producer_id)
                )
            )
        return records
