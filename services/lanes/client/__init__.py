"""The client library: Admin, Producer, Consumer (free mode; groups arrive with issue #5)."""

from lanes.client.admin import Admin, AsyncAdmin, BrokerInfo, ClusterInfo, ConfigInfo, PartitionInfo, TopicInfo
from lanes.client.consumer import AsyncConsumer, Consumer, ConsumerRecord, TopicPartition
from lanes.client.producer import AsyncProducer, Producer, RecordFuture, RecordMetadata

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
    "PartitionInfo",
    "Producer",
    "RecordFuture",
    "RecordMetadata",
    "TopicInfo",
    "TopicPartition",
]
