"""What the controller's decisions are made of: the records a request or an event produces, with
the error that refused it, and the requests' own shapes."""

from __future__ import annotations

from dataclasses import dataclass, field

from lanes.errors import ErrorCode
from lanes.metadata.image import ProducerIdBlock
from lanes.v1 import common_pb2, metadata_pb2

MetadataRecord = metadata_pb2.MetadataRecord
TOPIC = common_pb2.CONFIG_RESOURCE_TYPE_TOPIC


@dataclass
class ControllerDecision:
    """Records to append, and the error (NONE when accepted) with its message; for a producer-id
    allocation, the block the records hand out."""

    records: list[MetadataRecord] = field(default_factory=list)
    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    producer_ids: ProducerIdBlock | None = None

    @classmethod
    def refuse(cls, error: ErrorCode, message: str) -> ControllerDecision:
        return cls([], error, message)


@dataclass(frozen=True)
class NewTopic:
    """A CreateTopics entry: no partition count or replication factor means the cluster default
    (the wire says so with -1, as Kafka's does; the service converts)."""

    name: str
    num_partitions: int | None = None
    replication_factor: int | None = None
    assignments: tuple[tuple[int, ...], ...] = ()
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ConfigOp:
    """One incremental config change: op is set, delete, append or subtract."""

    name: str
    op: str
    value: str | None = None
