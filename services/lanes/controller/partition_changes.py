"""The partition records the controller's decisions write: a new partition's first state, and a
change of leader or ISR (every change bumps the partition epoch; a leader change bumps the
leader epoch)."""

from __future__ import annotations

from collections.abc import Iterable

from lanes.controller.decisions import MetadataRecord
from lanes.metadata.image import NO_LEADER, MetadataImage, PartitionImage, TopicImage
from lanes.v1 import metadata_pb2


def new_partition(topic_id: str, partition: int, replicas: list[int], live: set[int]) -> metadata_pb2.PartitionRecord:
    isr = [b for b in replicas if b in live] or list(replicas)
    leader = next((b for b in replicas if b in live), NO_LEADER)
    return metadata_pb2.PartitionRecord(
        topic_id=topic_id,
        partition=partition,
        replicas=replicas,
        isr=isr,
        leader_id=leader,
        leader_epoch=0,
        partition_epoch=0,
    )


def partitions_in_order(image: MetadataImage) -> Iterable[tuple[TopicImage, PartitionImage]]:
    """Every partition, by topic name and index (decisions are deterministic)."""
    for topic in sorted(image.topics.values(), key=lambda t: t.name):
        for index in sorted(topic.partitions):
            yield topic, topic.partitions[index]


def partition_change(
    partition: PartitionImage, *, leader: int | None = None, isr: list[int] | None = None, reason: str
) -> MetadataRecord:
    change = metadata_pb2.PartitionChangeRecord(
        topic_id=partition.topic_id,
        partition=partition.partition,
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition.partition_epoch + 1,
        reason=reason,
    )
    if leader is not None and leader != partition.leader:
        change.leader_id = leader
        change.leader_epoch = partition.leader_epoch + 1
    if isr is not None and isr != partition.isr:
        change.isr.broker_ids.extend(isr)
    return MetadataRecord(partition_change=change)
