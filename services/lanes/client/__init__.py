"""The client library. So far the Admin client; Producer and Consumer follow (issue #4)."""

from lanes.client.admin import Admin, AsyncAdmin, BrokerInfo, ClusterInfo, ConfigInfo, PartitionInfo, TopicInfo

__all__ = ["Admin", "AsyncAdmin", "BrokerInfo", "ClusterInfo", "ConfigInfo", "PartitionInfo", "TopicInfo"]
