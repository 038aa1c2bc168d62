"""The cluster metadata image (``image.MetadataImage``): the state machine every node applies
metadata records to, with ``BrokerImage``, ``TopicImage``, ``PartitionImage``,
``CoordinatorImage`` and ``ShardImage`` for its parts.

Shared by the controller (from its metadata log), brokers and coordinators (from WatchMetadata).
The client library has its own, public descriptions (``lanes.client.admin``).
"""
