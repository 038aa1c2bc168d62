"""Lanes: a Kubernetes-native event streaming platform.

The public surface, and the only one documented (docs/architecture.md, "The public surface"):

- ``lanes``: the synchronous clients ``Producer``, ``Consumer``, ``Admin``, ``Scanner``, and what they take
  and return (``TopicPartition``, ``ConsumerRecord``, ``RecordMetadata``, ``RecordFuture``,
  ``RebalanceListener``, the ``Admin`` descriptions);
- ``lanes.aio``: the same clients, asynchronous (``lanes.aio.Producer`` ...);
- ``lanes.errors``: ``ErrorCode``, ``LanesError``, ``RetriableError`` and the typed exceptions.

Everything else (the services, ``lanes.client``'s modules, the pure cores) is internal. The
clients are imported on first use, so importing a pure core never pulls in gRPC.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any

from lanes.topic_partition import TopicPartition

if TYPE_CHECKING:
    from lanes.client._group_admin import GroupDescription, GroupListing, MemberInfo, OffsetReset, PartitionLag
    from lanes.client.admin import (
        Admin,
        BrokerInfo,
        ClusterInfo,
        ConfigInfo,
        CoordinatorInfo,
        PartitionInfo,
        QuotaInfo,
        ReplicaLogInfo,
        TopicInfo,
        UserInfo,
    )
    from lanes.client.consumer import CommitFailedError, Consumer, ConsumerRecord, RebalanceListener
    from lanes.client.producer import Producer, RecordFuture, RecordMetadata
    from lanes.client.scanner import ScanBudget, Scanner, ScanProgress, ScanUpdate
    from lanes.rpc.credentials import BearerToken, UserPassword
    from lanes.rpc.tls import TlsFiles
    from lanes.security.acls import AclBinding
    from lanes.security.quota_entities import QUOTA_DEFAULT, QuotaEntity

_LAZY = {
    "Admin": "lanes.client.admin",
    "AclBinding": "lanes.security.acls",
    "BearerToken": "lanes.rpc.credentials",
    "TlsFiles": "lanes.rpc.tls",
    "UserInfo": "lanes.client.admin",
    "QuotaInfo": "lanes.client.admin",
    "QuotaEntity": "lanes.security.quota_entities",
    "QUOTA_DEFAULT": "lanes.security.quota_entities",
    "UserPassword": "lanes.rpc.credentials",
    "BrokerInfo": "lanes.client.admin",
    "ClusterInfo": "lanes.client.admin",
    "ConfigInfo": "lanes.client.admin",
    "CoordinatorInfo": "lanes.client.admin",
    "PartitionInfo": "lanes.client.admin",
    "ReplicaLogInfo": "lanes.client.admin",
    "TopicInfo": "lanes.client.admin",
    "GroupDescription": "lanes.client._group_admin",
    "GroupListing": "lanes.client._group_admin",
    "MemberInfo": "lanes.client._group_admin",
    "OffsetReset": "lanes.client._group_admin",
    "PartitionLag": "lanes.client._group_admin",
    "CommitFailedError": "lanes.client.consumer",
    "Consumer": "lanes.client.consumer",
    "ConsumerRecord": "lanes.client.consumer",
    "RebalanceListener": "lanes.client.consumer",
    "Producer": "lanes.client.producer",
    "RecordFuture": "lanes.client.producer",
    "RecordMetadata": "lanes.client.producer",
    "Scanner": "lanes.client.scanner",
    "ScanBudget": "lanes.client.scanner",
    "ScanProgress": "lanes.client.scanner",
    "ScanUpdate": "lanes.client.scanner",
}

__all__ = [
    "QUOTA_DEFAULT",
    "AclBinding",
    "Admin",
    "BearerToken",
    "BrokerInfo",
    "ClusterInfo",
    "CommitFailedError",
    "ConfigInfo",
    "Consumer",
    "ConsumerRecord",
    "CoordinatorInfo",
    "GroupDescription",
    "GroupListing",
    "MemberInfo",
    "OffsetReset",
    "PartitionInfo",
    "PartitionLag",
    "Producer",
    "QuotaEntity",
    "QuotaInfo",
    "RebalanceListener",
    "RecordFuture",
    "RecordMetadata",
    "ReplicaLogInfo",
    "ScanBudget",
    "ScanProgress",
    "ScanUpdate",
    "Scanner",
    "TlsFiles",
    "TopicInfo",
    "TopicPartition",
    "UserInfo",
    "UserPassword",
]


#: one first use at a time: two threads importing two clients at once must not each hold one
#: client module while waiting for the other's (Python then hands one of them a module not yet
#: initialised)
_FIRST_USE = threading.RLock()


def __getattr__(name: str) -> Any:
    """``lanes.Producer`` and the other client names, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lanes' has no attribute {name!r}")
    with _FIRST_USE:
        value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
