"""How the controller describes what its image holds: topics, partitions, the cluster, configs.
Pure functions of the image (and of what the caller is told about listeners)."""

from __future__ import annotations

from collections.abc import Iterable

from lanes.errors import ErrorCode
from lanes.metadata.image import MetadataImage, PartitionImage, TopicImage
from lanes.rpc.wire import wire_error
from lanes.topic_configs import TOPIC_CONFIGS
from lanes.v1 import common_pb2, controller_pb2


def describe_topic(image: MetadataImage, topic: TopicImage) -> controller_pb2.TopicDescription:
    fenced = {b.broker_id for b in image.brokers.values() if b.fenced}
    return controller_pb2.TopicDescription(
        name=topic.name,
        topic_id=topic.topic_id,
        error=wire_error(ErrorCode.NONE),
        is_internal=topic.internal,
        partitions=[describe_partition(p, fenced) for _, p in sorted(topic.partitions.items())],
    )


def describe_partition(partition: PartitionImage, fenced: set[int]) -> controller_pb2.PartitionDescription:
    return controller_pb2.PartitionDescription(
        partition=partition.partition,
        leader_id=partition.leader,
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition.partition_epoch,
        replicas=partition.replicas,
        isr=partition.isr,
        offline_replicas=[b for b in partition.replicas if b in fenced],
    )


def describe_brokers(
    image: MetadataImage, *, include_fenced: bool, certificates: bool
) -> list[controller_pb2.BrokerDescription]:
    """Every broker with the leaders and replicas it holds; ``certificates``: the caller is on a
    certificate listener (it is told those ports)."""
    leaders: dict[int, int] = {}
    replicas: dict[int, int] = {}
    for topic in image.topics.values():
        for partition in topic.partitions.values():
            leaders[partition.leader] = leaders.get(partition.leader, 0) + 1
            for broker_id in partition.replicas:
                replicas[broker_id] = replicas.get(broker_id, 0) + 1
    return [
        controller_pb2.BrokerDescription(
            endpoint=common_pb2.Node(node_id=b.broker_id, host=b.host, port=b.client_port(certificates), rack=b.rack),
            broker_epoch=b.epoch,
            fenced=b.fenced,
            leader_count=leaders.get(b.broker_id, 0),
            replica_count=replicas.get(b.broker_id, 0),
        )
        for _, b in sorted(image.brokers.items())
        if include_fenced or not b.fenced
    ]


def describe_coordinators(
    image: MetadataImage, *, include_fenced: bool, certificates: bool
) -> list[controller_pb2.CoordinatorDescription]:
    """Every coordinator with the ``__consumer_offsets`` shards it owns."""
    shards: dict[int, list[int]] = {}
    for shard, owner in sorted(image.shards.items()):
        shards.setdefault(owner.coordinator_id, []).append(shard)
    return [
        controller_pb2.CoordinatorDescription(
            endpoint=common_pb2.Node(node_id=c.coordinator_id, host=c.host, port=c.client_port(certificates)),
            coordinator_epoch=c.epoch,
            fenced=c.fenced,
            shards=shards.get(c.coordinator_id, []),
        )
        for _, c in sorted(image.coordinators.items())
        if include_fenced or not c.fenced
    ]


def config_entries(
    image: MetadataImage, topic: str, names: Iterable[str] = (), *, include_documentation: bool = False
) -> list[common_pb2.ConfigEntry]:
    """A topic's configs by Kafka's names (``names``, or all), overrides and defaults told apart."""
    overrides = image.topic_configs(topic)
    wanted = list(names) or sorted(TOPIC_CONFIGS)
    entries = []
    for name in wanted:
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            continue
        overridden = name in overrides
        entries.append(
            common_pb2.ConfigEntry(
                name=name,
                value=overrides[name] if overridden else definition.render(definition.default),
                source=common_pb2.CONFIG_SOURCE_DYNAMIC_RESOURCE if overridden else common_pb2.CONFIG_SOURCE_DEFAULT,
                documentation=definition.doc if include_documentation else "",
            )
        )
    return entries


def partition_state(
    image: MetadataImage, topic_id: str, partition: int, result: controller_pb2.AlterPartitionResult
) -> None:
    """Fill ``result`` with the partition's leader, epochs and ISR as the image has them now."""
    topic = image.topics.get(topic_id)
    state = topic.partitions.get(partition) if topic else None
    if state is not None:
        result.leader_id = state.leader
        result.leader_epoch = state.leader_epoch
        result.isr.extend(state.isr)
        result.partition_epoch = state.partition_epoch
