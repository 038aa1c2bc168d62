"""The client library's implementation: ``lanes`` and ``lanes.aio`` are its public faces.

The names below stay importable from ``lanes.client`` for code written against earlier
versions; new code imports them from ``lanes`` (or ``lanes.aio`` for the asynchronous clients).
"""

from lanes.client._group_admin import GroupDescription, GroupListing, MemberInfo, OffsetReset, PartitionLag
from lanes.client.admin import Admin, AsyncAdmin, BrokerInfo, ClusterInfo, ConfigInfo, PartitionInfo, TopicInfo
from lanes.client.consumer import AsyncConsumer, Consumer, ConsumerRecord
from lanes.client.producer import AsyncProducer, Producer, RecordFuture, RecordMetadata
from lanes.topic_partition import TopicPartition

__all__ = [
    "Admin",
    "AsyncAdmin",
    "AsyncConsumer",
    "AsyncProducer",
    "BrokerInfo",
    "ClusterInfo",
    "ConfigInfo",
    "Consumer",
    "ConsumerRecord",
    "GroupDescription",
    "GroupListing",
    "MemberInfo",
    "OffsetReset",
    "PartitionInfo",
    "PartitionLag",
    "Producer",
    "RecordFuture",
    "RecordMetadata",
    "TopicInfo",
    "TopicPartition",
]
