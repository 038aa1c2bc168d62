"""Lanes: a Kubernetes-native event streaming platform.

Subpackages: ``protocol`` (record batch codec, partitioner, names, error codes; pure),
``storage`` (log engine), ``broker``, ``controller``, ``coordinator`` (services),
``client`` (Producer, Consumer, Admin), ``cli`` (the ``lanes`` command), ``runtime`` (gRPC
server bootstrap, config, logging, metrics), ``v1`` (generated wire contract).
"""

from typing import Any

_CLIENTS = {
    "Admin": "lanes.client.admin",
    "CommitFailedError": "lanes.client.consumer",
    "Consumer": "lanes.client.consumer",
    "ConsumerRecord": "lanes.client.consumer",
    "Producer": "lanes.client.producer",
    "RecordFuture": "lanes.client.producer",
    "RebalanceListener": "lanes.client.consumer",
    "RecordMetadata": "lanes.client.producer",
    "TopicPartition": "lanes.topic_partition",
}


def __getattr__(name: str) -> Any:
    """``lanes.Admin`` and the other clients, imported on first use (the pure cores never pull in gRPC)."""
    module = _CLIENTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lanes' has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    return getattr(importlib.import_module(module), name)
