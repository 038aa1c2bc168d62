from lanes.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OffsetSpec(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OFFSET_SPEC_UNSPECIFIED: _ClassVar[OffsetSpec]
    OFFSET_SPEC_EARLIEST: _ClassVar[OffsetSpec]
    OFFSET_SPEC_LATEST: _ClassVar[OffsetSpec]
    OFFSET_SPEC_TIMESTAMP: _ClassVar[OffsetSpec]
    OFFSET_SPEC_MAX_TIMESTAMP: _ClassVar[OffsetSpec]
    OFFSET_SPEC_RECORD_TIME: _ClassVar[OffsetSpec]

class ScanEnd(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCAN_END_UNSPECIFIED: _ClassVar[ScanEnd]
    SCAN_END_REACHED: _ClassVar[ScanEnd]
    SCAN_END_RECORD_BUDGET: _ClassVar[ScanEnd]
    SCAN_END_BYTE_BUDGET: _ClassVar[ScanEnd]
    SCAN_END_CPU_BUDGET: _ClassVar[ScanEnd]
    SCAN_END_MATCH_LIMIT: _ClassVar[ScanEnd]
    SCAN_END_ERROR: _ClassVar[ScanEnd]
OFFSET_SPEC_UNSPECIFIED: OffsetSpec
OFFSET_SPEC_EARLIEST: OffsetSpec
OFFSET_SPEC_LATEST: OffsetSpec
OFFSET_SPEC_TIMESTAMP: OffsetSpec
OFFSET_SPEC_MAX_TIMESTAMP: OffsetSpec
OFFSET_SPEC_RECORD_TIME: OffsetSpec
SCAN_END_UNSPECIFIED: ScanEnd
SCAN_END_REACHED: ScanEnd
SCAN_END_RECORD_BUDGET: ScanEnd
SCAN_END_BYTE_BUDGET: ScanEnd
SCAN_END_CPU_BUDGET: ScanEnd
SCAN_END_MATCH_LIMIT: ScanEnd
SCAN_END_ERROR: ScanEnd

class MetadataRequest(_message.Message):
    __slots__ = ("topics", "include_internal", "cluster_only")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_INTERNAL_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    include_internal: bool
    cluster_only: bool
    def __init__(self, topics: _Optional[_Iterable[str]] = ..., include_internal: _Optional[bool] = ..., cluster_only: _Optional[bool] = ...) -> None: ...

class MetadataResponse(_message.Message):
    __slots__ = ("cluster_id", "controller", "brokers", "coordinators", "topics", "metadata_offset")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    COORDINATORS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    controller: _common_pb2.Node
    brokers: _containers.RepeatedCompositeFieldContainer[_common_pb2.Node]
    coordinators: _containers.RepeatedCompositeFieldContainer[_common_pb2.Node]
    topics: _containers.RepeatedCompositeFieldContainer[TopicMetadata]
    metadata_offset: int
    def __init__(self, cluster_id: _Optional[str] = ..., controller: _Optional[_Union[_common_pb2.Node, _Mapping]] = ..., brokers: _Optional[_Iterable[_Union[_common_pb2.Node, _Mapping]]] = ..., coordinators: _Optional[_Iterable[_Union[_common_pb2.Node, _Mapping]]] = ..., topics: _Optional[_Iterable[_Union[TopicMetadata, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class TopicMetadata(_message.Message):
    __slots__ = ("name", "topic_id", "error", "is_internal", "partitions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_INTERNAL_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    topic_id: str
    error: _common_pb2.Error
    is_internal: bool
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionMetadata]
    def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., is_internal: _Optional[bool] = ..., partitions: _Optional[_Iterable[_Union[PartitionMetadata, _Mapping]]] = ...) -> None: ...

class PartitionMetadata(_message.Message):
    __slots__ = ("partition", "error", "leader_id", "leader_epoch", "replicas", "isr", "offline_replicas")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: _common_pb2.Error
    leader_id: int
    leader_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    offline_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class ProduceRequest(_message.Message):
    __slots__ = ("acks", "timeout_ms", "transactional_id", "topics")
    ACKS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    acks: _common_pb2.Acks
    timeout_ms: int
    transactional_id: str
    topics: _containers.RepeatedCompositeFieldContainer[TopicProduceData]
    def __init__(self, acks: _Optional[_Union[_common_pb2.Acks, str]] = ..., timeout_ms: _Optional[int] = ..., transactional_id: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[TopicProduceData, _Mapping]]] = ...) -> None: ...

class TopicProduceData(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionProduceData]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[PartitionProduceData, _Mapping]]] = ...) -> None: ...

class PartitionProduceData(_message.Message):
    __slots__ = ("partition", "records", "current_leader_epoch")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    partition: int
    records: bytes
    current_leader_epoch: int
    def __init__(self, partition: _Optional[int] = ..., records: _Optional[bytes] = ..., current_leader_epoch: _Optional[int] = ...) -> None: ...

class ProduceResponse(_message.Message):
    __slots__ = ("topics", "throttle_time_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicProduceResponse]
    throttle_time_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicProduceResponse, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class TopicProduceResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionProduceResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[PartitionProduceResponse, _Mapping]]] = ...) -> None: ...

class PartitionProduceResponse(_message.Message):
    __slots__ = ("partition", "error", "base_offset", "log_append_time_ms", "log_start_offset", "record_errors", "current_leader")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    BASE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_APPEND_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORD_ERRORS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: _common_pb2.Error
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    record_errors: _containers.RepeatedCompositeFieldContainer[RecordError]
    current_leader: _common_pb2.LeaderHint
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., base_offset: _Optional[int] = ..., log_append_time_ms: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., record_errors: _Optional[_Iterable[_Union[RecordError, _Mapping]]] = ..., current_leader: _Optional[_Union[_common_pb2.LeaderHint, _Mapping]] = ...) -> None: ...

class RecordError(_message.Message):
    __slots__ = ("batch_index", "message")
    BATCH_INDEX_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    batch_index: int
    message: str
    def __init__(self, batch_index: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("max_wait_ms", "min_bytes", "max_bytes", "isolation_level", "topics", "rack_id", "follow")
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: _common_pb2.IsolationLevel
    topics: _containers.RepeatedCompositeFieldContainer[FetchTopic]
    rack_id: str
    follow: bool
    def __init__(self, max_wait_ms: _Optional[int] = ..., min_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ..., isolation_level: _Optional[_Union[_common_pb2.IsolationLevel, str]] = ..., topics: _Optional[_Iterable[_Union[FetchTopic, _Mapping]]] = ..., rack_id: _Optional[str] = ..., follow: _Optional[bool] = ...) -> None: ...

class FetchTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[FetchPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchPartition, _Mapping]]] = ...) -> None: ...

class FetchPartition(_message.Message):
    __slots__ = ("partition", "fetch_offset", "current_leader_epoch", "partition_max_bytes")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    partition: int
    fetch_offset: int
    current_leader_epoch: int
    partition_max_bytes: int
    def __init__(self, partition: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., partition_max_bytes: _Optional[int] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("topics", "throttle_time_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[FetchTopicResponse]
    throttle_time_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[FetchTopicResponse, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class FetchTopicResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[FetchPartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchPartitionResponse, _Mapping]]] = ...) -> None: ...

class FetchPartitionResponse(_message.Message):
    __slots__ = ("partition", "error", "high_watermark", "last_stable_offset", "log_start_offset", "records", "aborted_transactions", "current_leader")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LAST_STABLE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    ABORTED_TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: _common_pb2.Error
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes
    aborted_transactions: _containers.RepeatedCompositeFieldContainer[AbortedTransaction]
    current_leader: _common_pb2.LeaderHint
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., high_watermark: _Optional[int] = ..., last_stable_offset: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., records: _Optional[bytes] = ..., aborted_transactions: _Optional[_Iterable[_Union[AbortedTransaction, _Mapping]]] = ..., current_leader: _Optional[_Union[_common_pb2.LeaderHint, _Mapping]] = ...) -> None: ...

class AbortedTransaction(_message.Message):
    __slots__ = ("producer_id", "first_offset")
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    producer_id: int
    first_offset: int
    def __init__(self, producer_id: _Optional[int] = ..., first_offset: _Optional[int] = ...) -> None: ...

class ListOffsetsRequest(_message.Message):
    __slots__ = ("isolation_level", "topics")
    ISOLATION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    isolation_level: _common_pb2.IsolationLevel
    topics: _containers.RepeatedCompositeFieldContainer[ListOffsetsTopic]
    def __init__(self, isolation_level: _Optional[_Union[_common_pb2.IsolationLevel, str]] = ..., topics: _Optional[_Iterable[_Union[ListOffsetsTopic, _Mapping]]] = ...) -> None: ...

class ListOffsetsTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[ListOffsetsPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ListOffsetsPartition, _Mapping]]] = ...) -> None: ...

class ListOffsetsPartition(_message.Message):
    __slots__ = ("partition", "spec", "timestamp_ms", "current_leader_epoch", "offset")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    partition: int
    spec: OffsetSpec
    timestamp_ms: int
    current_leader_epoch: int
    offset: int
    def __init__(self, partition: _Optional[int] = ..., spec: _Optional[_Union[OffsetSpec, str]] = ..., timestamp_ms: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class ListOffsetsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[ListOffsetsTopicResponse]
    def __init__(self, topics: _Optional[_Iterable[_Union[ListOffsetsTopicResponse, _Mapping]]] = ...) -> None: ...

class ListOffsetsTopicResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[ListOffsetsPartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ListOffsetsPartitionResponse, _Mapping]]] = ...) -> None: ...

class ListOffsetsPartitionResponse(_message.Message):
    __slots__ = ("partition", "error", "offset", "timestamp_ms", "leader_epoch", "current_leader")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: _common_pb2.Error
    offset: int
    timestamp_ms: int
    leader_epoch: int
    current_leader: _common_pb2.LeaderHint
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., offset: _Optional[int] = ..., timestamp_ms: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., current_leader: _Optional[_Union[_common_pb2.LeaderHint, _Mapping]] = ...) -> None: ...

class ReplicaFetchRequest(_message.Message):
    __slots__ = ("replica_id", "broker_epoch", "max_wait_ms", "min_bytes", "max_bytes", "topics", "session_id", "session_epoch", "forgotten")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FORGOTTEN_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    broker_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: _containers.RepeatedCompositeFieldContainer[ReplicaFetchTopic]
    session_id: int
    session_epoch: int
    forgotten: _containers.RepeatedCompositeFieldContainer[ReplicaFetchForgotten]
    def __init__(self, replica_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., min_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[ReplicaFetchTopic, _Mapping]]] = ..., session_id: _Optional[int] = ..., session_epoch: _Optional[int] = ..., forgotten: _Optional[_Iterable[_Union[ReplicaFetchForgotten, _Mapping]]] = ...) -> None: ...

class ReplicaFetchForgotten(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class ReplicaFetchTopic(_message.Message):
    __slots__ = ("topic", "topic_id", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    topic_id: str
    partitions: _containers.RepeatedCompositeFieldContainer[ReplicaFetchPartition]
    def __init__(self, topic: _Optional[str] = ..., topic_id: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ReplicaFetchPartition, _Mapping]]] = ...) -> None: ...

class ReplicaFetchPartition(_message.Message):
    __slots__ = ("partition", "current_leader_epoch", "fetch_offset", "last_fetched_epoch", "log_start_offset", "partition_max_bytes")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCHED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    PARTITION_MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int
    def __init__(self, partition: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., last_fetched_epoch: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., partition_max_bytes: _Optional[int] = ...) -> None: ...

class ReplicaFetchResponse(_message.Message):
    __slots__ = ("topics", "session_id", "error")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[ReplicaFetchTopicResponse]
    session_id: int
    error: _common_pb2.Error
    def __init__(self, topics: _Optional[_Iterable[_Union[ReplicaFetchTopicResponse, _Mapping]]] = ..., session_id: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class ReplicaFetchTopicResponse(_message.Message):
    __slots__ = ("topic", "topic_id", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    topic_id: str
    partitions: _containers.RepeatedCompositeFieldContainer[ReplicaFetchPartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., topic_id: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ReplicaFetchPartitionResponse, _Mapping]]] = ...) -> None: ...

class ReplicaFetchPartitionResponse(_message.Message):
    __slots__ = ("partition", "error", "high_watermark", "log_start_offset", "records", "diverging_epoch", "current_leader")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    DIVERGING_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: _common_pb2.Error
    high_watermark: int
    log_start_offset: int
    records: bytes
    diverging_epoch: EpochEndOffset
    current_leader: _common_pb2.LeaderHint
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., high_watermark: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., records: _Optional[bytes] = ..., diverging_epoch: _Optional[_Union[EpochEndOffset, _Mapping]] = ..., current_leader: _Optional[_Union[_common_pb2.LeaderHint, _Mapping]] = ...) -> None: ...

class EpochEndOffset(_message.Message):
    __slots__ = ("leader_epoch", "end_offset")
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    leader_epoch: int
    end_offset: int
    def __init__(self, leader_epoch: _Optional[int] = ..., end_offset: _Optional[int] = ...) -> None: ...

class OffsetForLeaderEpochRequest(_message.Message):
    __slots__ = ("replica_id", "topics")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    topics: _containers.RepeatedCompositeFieldContainer[OffsetForLeaderEpochTopic]
    def __init__(self, replica_id: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[OffsetForLeaderEpochTopic, _Mapping]]] = ...) -> None: ...

class OffsetForLeaderEpochTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[OffsetForLeaderEpochPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetForLeaderEpochPartition, _Mapping]]] = ...) -> None: ...

class OffsetForLeaderEpochPartition(_message.Message):
    __slots__ = ("partition", "current_leader_epoch", "leader_epoch")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    partition: int
    current_leader_epoch: int
    leader_epoch: int
    def __init__(self, partition: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class OffsetForLeaderEpochResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[OffsetForLeaderEpochTopicResponse]
    def __init__(self, topics: _Optional[_Iterable[_Union[OffsetForLeaderEpochTopicResponse, _Mapping]]] = ...) -> None: ...

class OffsetForLeaderEpochTopicResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[OffsetForLeaderEpochPartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetForLeaderEpochPartitionResponse, _Mapping]]] = ...) -> None: ...

class OffsetForLeaderEpochPartitionResponse(_message.Message):
    __slots__ = ("partition", "error", "end")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: _common_pb2.Error
    end: EpochEndOffset
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., end: _Optional[_Union[EpochEndOffset, _Mapping]] = ...) -> None: ...

class DeleteRecordsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[DeleteRecordsTopic]
    timeout_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[DeleteRecordsTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class DeleteRecordsTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[DeleteRecordsPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[DeleteRecordsPartition, _Mapping]]] = ...) -> None: ...

class DeleteRecordsPartition(_message.Message):
    __slots__ = ("partition", "offset")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    partition: int
    offset: int
    def __init__(self, partition: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class DeleteRecordsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[DeleteRecordsTopicResponse]
    def __init__(self, topics: _Optional[_Iterable[_Union[DeleteRecordsTopicResponse, _Mapping]]] = ...) -> None: ...

class DeleteRecordsTopicResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[DeleteRecordsPartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[DeleteRecordsPartitionResponse, _Mapping]]] = ...) -> None: ...

class DeleteRecordsPartitionResponse(_message.Message):
    __slots__ = ("partition", "error", "low_watermark")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LOW_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: _common_pb2.Error
    low_watermark: int
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., low_watermark: _Optional[int] = ...) -> None: ...

class InitProducerIdRequest(_message.Message):
    __slots__ = ("transactional_id", "transaction_timeout_ms", "producer_id", "producer_epoch")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    transaction_timeout_ms: int
    producer_id: int
    producer_epoch: int
    def __init__(self, transactional_id: _Optional[str] = ..., transaction_timeout_ms: _Optional[int] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ...) -> None: ...

class InitProducerIdResponse(_message.Message):
    __slots__ = ("error", "producer_id", "producer_epoch", "throttle_time_ms")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    producer_id: int
    producer_epoch: int
    throttle_time_ms: int
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class DescribeLogsRequest(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeLogsResponse(_message.Message):
    __slots__ = ("broker_id", "replicas")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaLog]
    def __init__(self, broker_id: _Optional[int] = ..., replicas: _Optional[_Iterable[_Union[ReplicaLog, _Mapping]]] = ...) -> None: ...

class ReplicaLog(_message.Message):
    __slots__ = ("topic", "partition", "is_leader", "log_start_offset", "log_end_offset", "high_watermark", "size_bytes", "segments")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    IS_LEADER_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    is_leader: bool
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int
    segments: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., is_leader: _Optional[bool] = ..., log_start_offset: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., high_watermark: _Optional[int] = ..., size_bytes: _Optional[int] = ..., segments: _Optional[int] = ...) -> None: ...

class ScanRequest(_message.Message):
    __slots__ = ("topic", "partition", "current_leader_epoch", "start_offset", "start_timestamp_ms", "start_last", "end_offset", "conditions", "from_timestamp_ms", "to_timestamp_ms", "budget")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    START_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    START_LAST_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    FROM_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    TO_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    current_leader_epoch: int
    start_offset: int
    start_timestamp_ms: int
    start_last: int
    end_offset: int
    conditions: _containers.RepeatedCompositeFieldContainer[ScanCondition]
    from_timestamp_ms: int
    to_timestamp_ms: int
    budget: ScanBudget
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., start_offset: _Optional[int] = ..., start_timestamp_ms: _Optional[int] = ..., start_last: _Optional[int] = ..., end_offset: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[ScanCondition, _Mapping]]] = ..., from_timestamp_ms: _Optional[int] = ..., to_timestamp_ms: _Optional[int] = ..., budget: _Optional[_Union[ScanBudget, _Mapping]] = ...) -> None: ...

class ScanCondition(_message.Message):
    __slots__ = ("field", "name", "test", "operand", "negate")
    class Field(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        FIELD_UNSPECIFIED: _ClassVar[ScanCondition.Field]
        FIELD_KEY: _ClassVar[ScanCondition.Field]
        FIELD_VALUE: _ClassVar[ScanCondition.Field]
        FIELD_HEADER: _ClassVar[ScanCondition.Field]
        FIELD_JSON: _ClassVar[ScanCondition.Field]
    FIELD_UNSPECIFIED: ScanCondition.Field
    FIELD_KEY: ScanCondition.Field
    FIELD_VALUE: ScanCondition.Field
    FIELD_HEADER: ScanCondition.Field
    FIELD_JSON: ScanCondition.Field
    class Test(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TEST_UNSPECIFIED: _ClassVar[ScanCondition.Test]
        TEST_EQUALS: _ClassVar[ScanCondition.Test]
        TEST_CONTAINS: _ClassVar[ScanCondition.Test]
        TEST_EXISTS: _ClassVar[ScanCondition.Test]
    TEST_UNSPECIFIED: ScanCondition.Test
    TEST_EQUALS: ScanCondition.Test
    TEST_CONTAINS: ScanCondition.Test
    TEST_EXISTS: ScanCondition.Test
    FIELD_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEST_FIELD_NUMBER: _ClassVar[int]
    OPERAND_FIELD_NUMBER: _ClassVar[int]
    NEGATE_FIELD_NUMBER: _ClassVar[int]
    field: ScanCondition.Field
    name: str
    test: ScanCondition.Test
    operand: bytes
    negate: bool
    def __init__(self, field: _Optional[_Union[ScanCondition.Field, str]] = ..., name: _Optional[str] = ..., test: _Optional[_Union[ScanCondition.Test, str]] = ..., operand: _Optional[bytes] = ..., negate: _Optional[bool] = ...) -> None: ...

class ScanBudget(_message.Message):
    __slots__ = ("max_records", "max_bytes", "max_cpu_ms", "max_matches")
    MAX_RECORDS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_CPU_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_MATCHES_FIELD_NUMBER: _ClassVar[int]
    max_records: int
    max_bytes: int
    max_cpu_ms: int
    max_matches: int
    def __init__(self, max_records: _Optional[int] = ..., max_bytes: _Optional[int] = ..., max_cpu_ms: _Optional[int] = ..., max_matches: _Optional[int] = ...) -> None: ...

class ScanProgress(_message.Message):
    __slots__ = ("next_offset", "scanned_records", "scanned_bytes", "matches", "cpu_ms", "log_start_offset", "high_watermark", "end_offset", "end")
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    SCANNED_RECORDS_FIELD_NUMBER: _ClassVar[int]
    SCANNED_BYTES_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    CPU_MS_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    next_offset: int
    scanned_records: int
    scanned_bytes: int
    matches: int
    cpu_ms: int
    log_start_offset: int
    high_watermark: int
    end_offset: int
    end: ScanEnd
    def __init__(self, next_offset: _Optional[int] = ..., scanned_records: _Optional[int] = ..., scanned_bytes: _Optional[int] = ..., matches: _Optional[int] = ..., cpu_ms: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., high_watermark: _Optional[int] = ..., end_offset: _Optional[int] = ..., end: _Optional[_Union[ScanEnd, str]] = ...) -> None: ...

class ScannedRecord(_message.Message):
    __slots__ = ("offset", "timestamp_ms", "key", "value", "headers")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    offset: int
    timestamp_ms: int
    key: bytes
    value: bytes
    headers: _containers.RepeatedCompositeFieldContainer[ScannedHeader]
    def __init__(self, offset: _Optional[int] = ..., timestamp_ms: _Optional[int] = ..., key: _Optional[bytes] = ..., value: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[ScannedHeader, _Mapping]]] = ...) -> None: ...

class ScannedHeader(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class ScanResponse(_message.Message):
    __slots__ = ("error", "records", "progress", "current_leader")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    records: _containers.RepeatedCompositeFieldContainer[ScannedRecord]
    progress: ScanProgress
    current_leader: _common_pb2.LeaderHint
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., records: _Optional[_Iterable[_Union[ScannedRecord, _Mapping]]] = ..., progress: _Optional[_Union[ScanProgress, _Mapping]] = ..., current_leader: _Optional[_Union[_common_pb2.LeaderHint, _Mapping]] = ...) -> None: ...
