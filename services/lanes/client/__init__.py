"""The client library: Admin and Producer so far; the Consumer follows (issue #4)."""

from lanes.client.admin import Admin, AsyncAdmin, BrokerInfo, ClusterInfo, ConfigInfo, PartitionInfo, TopicInfo
from lanes.client.producer import AsyncProducer, Producer, RecordMetadata

__all__ = [
    "Admin",
    "AsyncAdmin",
    "AsyncProducer",
    "BrokerInfo",
    "ClusterInfo",
    "ConfigInfo",
    "PartitionInfo",
    "Producer",
    "RecordMetadata",
    "TopicInfo",
]
