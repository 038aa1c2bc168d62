from lanes.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GroupState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GROUP_STATE_UNSPECIFIED: _ClassVar[GroupState]
    GROUP_STATE_EMPTY: _ClassVar[GroupState]
    GROUP_STATE_RECONCILING: _ClassVar[GroupState]
    GROUP_STATE_STABLE: _ClassVar[GroupState]
    GROUP_STATE_DEAD: _ClassVar[GroupState]
    GROUP_STATE_LOADING: _ClassVar[GroupState]
GROUP_STATE_UNSPECIFIED: GroupState
GROUP_STATE_EMPTY: GroupState
GROUP_STATE_RECONCILING: GroupState
GROUP_STATE_STABLE: GroupState
GROUP_STATE_DEAD: GroupState
GROUP_STATE_LOADING: GroupState

class FindCoordinatorRequest(_message.Message):
    __slots__ = ("group_ids",)
    GROUP_IDS_FIELD_NUMBER: _ClassVar[int]
    group_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, group_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class FindCoordinatorResponse(_message.Message):
    __slots__ = ("coordinators",)
    COORDINATORS_FIELD_NUMBER: _ClassVar[int]
    coordinators: _containers.RepeatedCompositeFieldContainer[GroupCoordinatorLocation]
    def __init__(self, coordinators: _Optional[_Iterable[_Union[GroupCoordinatorLocation, _Mapping]]] = ...) -> None: ...

class GroupCoordinatorLocation(_message.Message):
    __slots__ = ("group_id", "error", "coordinator", "shard")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    error: _common_pb2.Error
    coordinator: _common_pb2.Node
    shard: int
    def __init__(self, group_id: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., coordinator: _Optional[_Union[_common_pb2.Node, _Mapping]] = ..., shard: _Optional[int] = ...) -> None: ...

class Subscription(_message.Message):
    __slots__ = ("topic_names", "topic_regex")
    TOPIC_NAMES_FIELD_NUMBER: _ClassVar[int]
    TOPIC_REGEX_FIELD_NUMBER: _ClassVar[int]
    topic_names: _containers.RepeatedScalarFieldContainer[str]
    topic_regex: str
    def __init__(self, topic_names: _Optional[_Iterable[str]] = ..., topic_regex: _Optional[str] = ...) -> None: ...

class Assignment(_message.Message):
    __slots__ = ("topic_partitions",)
    TOPIC_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartitions]
    def __init__(self, topic_partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartitions, _Mapping]]] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("group_id", "member_id", "member_epoch", "instance_id", "rack_id", "rebalance_timeout_ms", "subscription", "server_assignor", "owned_partitions", "client_id", "classic")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SERVER_ASSIGNOR_FIELD_NUMBER: _ClassVar[int]
    OWNED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CLASSIC_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str
    rack_id: str
    rebalance_timeout_ms: int
    subscription: Subscription
    server_assignor: str
    owned_partitions: Assignment
    client_id: str
    classic: bool
    def __init__(self, group_id: _Optional[str] = ..., member_id: _Optional[str] = ..., member_epoch: _Optional[int] = ..., instance_id: _Optional[str] = ..., rack_id: _Optional[str] = ..., rebalance_timeout_ms: _Optional[int] = ..., subscription: _Optional[_Union[Subscription, _Mapping]] = ..., server_assignor: _Optional[str] = ..., owned_partitions: _Optional[_Union[Assignment, _Mapping]] = ..., client_id: _Optional[str] = ..., classic: _Optional[bool] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("error", "member_id", "member_epoch", "heartbeat_interval_ms", "assignment", "session_timeout_ms", "assignment_settled")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_SETTLED_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment
    session_timeout_ms: int
    assignment_settled: bool
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., member_id: _Optional[str] = ..., member_epoch: _Optional[int] = ..., heartbeat_interval_ms: _Optional[int] = ..., assignment: _Optional[_Union[Assignment, _Mapping]] = ..., session_timeout_ms: _Optional[int] = ..., assignment_settled: _Optional[bool] = ...) -> None: ...

class LeaveGroupRequest(_message.Message):
    __slots__ = ("group_id", "member_id", "instance_id", "reason")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member_id: str
    instance_id: str
    reason: str
    def __init__(self, group_id: _Optional[str] = ..., member_id: _Optional[str] = ..., instance_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class LeaveGroupResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class CommitOffsetsRequest(_message.Message):
    __slots__ = ("group_id", "member_id", "member_epoch", "topics")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member_id: str
    member_epoch: int
    topics: _containers.RepeatedCompositeFieldContainer[CommitOffsetsTopic]
    def __init__(self, group_id: _Optional[str] = ..., member_id: _Optional[str] = ..., member_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[CommitOffsetsTopic, _Mapping]]] = ...) -> None: ...

class CommitOffsetsTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[CommitOffsetsPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[CommitOffsetsPartition, _Mapping]]] = ...) -> None: ...

class CommitOffsetsPartition(_message.Message):
    __slots__ = ("partition", "committed_offset", "committed_leader_epoch", "metadata")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    partition: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str
    def __init__(self, partition: _Optional[int] = ..., committed_offset: _Optional[int] = ..., committed_leader_epoch: _Optional[int] = ..., metadata: _Optional[str] = ...) -> None: ...

class CommitOffsetsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CommitOffsetsTopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[CommitOffsetsTopicResult, _Mapping]]] = ...) -> None: ...

class CommitOffsetsTopicResult(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionResult]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[PartitionResult, _Mapping]]] = ...) -> None: ...

class PartitionResult(_message.Message):
    __slots__ = ("partition", "error")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: _common_pb2.Error
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class FetchOffsetsRequest(_message.Message):
    __slots__ = ("group_id", "member_id", "member_epoch", "partitions", "require_stable")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_STABLE_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member_id: str
    member_epoch: int
    partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartitions]
    require_stable: bool
    def __init__(self, group_id: _Optional[str] = ..., member_id: _Optional[str] = ..., member_epoch: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartitions, _Mapping]]] = ..., require_stable: _Optional[bool] = ...) -> None: ...

class FetchOffsetsResponse(_message.Message):
    __slots__ = ("error", "topics")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    topics: _containers.RepeatedCompositeFieldContainer[FetchOffsetsTopic]
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[FetchOffsetsTopic, _Mapping]]] = ...) -> None: ...

class FetchOffsetsTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[CommittedOffset]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[CommittedOffset, _Mapping]]] = ...) -> None: ...

class CommittedOffset(_message.Message):
    __slots__ = ("partition", "committed_offset", "committed_leader_epoch", "metadata", "commit_timestamp_ms", "error")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    partition: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    error: _common_pb2.Error
    def __init__(self, partition: _Optional[int] = ..., committed_offset: _Optional[int] = ..., committed_leader_epoch: _Optional[int] = ..., metadata: _Optional[str] = ..., commit_timestamp_ms: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ("states",)
    STATES_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedScalarFieldContainer[GroupState]
    def __init__(self, states: _Optional[_Iterable[_Union[GroupState, str]]] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ("error", "groups")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    groups: _containers.RepeatedCompositeFieldContainer[GroupListing]
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., groups: _Optional[_Iterable[_Union[GroupListing, _Mapping]]] = ...) -> None: ...

class GroupListing(_message.Message):
    __slots__ = ("group_id", "state", "member_count", "coordinator_id")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MEMBER_COUNT_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    state: GroupState
    member_count: int
    coordinator_id: int
    def __init__(self, group_id: _Optional[str] = ..., state: _Optional[_Union[GroupState, str]] = ..., member_count: _Optional[int] = ..., coordinator_id: _Optional[int] = ...) -> None: ...

class DescribeGroupsRequest(_message.Message):
    __slots__ = ("group_ids", "include_offsets")
    GROUP_IDS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    group_ids: _containers.RepeatedScalarFieldContainer[str]
    include_offsets: bool
    def __init__(self, group_ids: _Optional[_Iterable[str]] = ..., include_offsets: _Optional[bool] = ...) -> None: ...

class DescribeGroupsResponse(_message.Message):
    __slots__ = ("groups",)
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[GroupDescription]
    def __init__(self, groups: _Optional[_Iterable[_Union[GroupDescription, _Mapping]]] = ...) -> None: ...

class GroupDescription(_message.Message):
    __slots__ = ("group_id", "error", "state", "group_epoch", "assignment_epoch", "assignor", "members", "offsets", "coordinator")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    GROUP_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ASSIGNOR_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    error: _common_pb2.Error
    state: GroupState
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: _containers.RepeatedCompositeFieldContainer[MemberDescription]
    offsets: _containers.RepeatedCompositeFieldContainer[PartitionOffsetState]
    coordinator: _common_pb2.Node
    def __init__(self, group_id: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., state: _Optional[_Union[GroupState, str]] = ..., group_epoch: _Optional[int] = ..., assignment_epoch: _Optional[int] = ..., assignor: _Optional[str] = ..., members: _Optional[_Iterable[_Union[MemberDescription, _Mapping]]] = ..., offsets: _Optional[_Iterable[_Union[PartitionOffsetState, _Mapping]]] = ..., coordinator: _Optional[_Union[_common_pb2.Node, _Mapping]] = ...) -> None: ...

class MemberDescription(_message.Message):
    __slots__ = ("member_id", "instance_id", "member_epoch", "client_id", "client_host", "rack_id", "subscription", "assignment", "target_assignment")
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HOST_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    TARGET_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    member_id: str
    instance_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str
    subscription: Subscription
    assignment: Assignment
    target_assignment: Assignment
    def __init__(self, member_id: _Optional[str] = ..., instance_id: _Optional[str] = ..., member_epoch: _Optional[int] = ..., client_id: _Optional[str] = ..., client_host: _Optional[str] = ..., rack_id: _Optional[str] = ..., subscription: _Optional[_Union[Subscription, _Mapping]] = ..., assignment: _Optional[_Union[Assignment, _Mapping]] = ..., target_assignment: _Optional[_Union[Assignment, _Mapping]] = ...) -> None: ...

class PartitionOffsetState(_message.Message):
    __slots__ = ("topic", "partition", "committed_offset", "metadata", "log_end_offset", "lag", "lag_ms", "member_id")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    LAG_MS_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    committed_offset: int
    metadata: str
    log_end_offset: int
    lag: int
    lag_ms: int
    member_id: str
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., committed_offset: _Optional[int] = ..., metadata: _Optional[str] = ..., log_end_offset: _Optional[int] = ..., lag: _Optional[int] = ..., lag_ms: _Optional[int] = ..., member_id: _Optional[str] = ...) -> None: ...

class DeleteGroupsRequest(_message.Message):
    __slots__ = ("group_ids",)
    GROUP_IDS_FIELD_NUMBER: _ClassVar[int]
    group_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, group_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteGroupsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[GroupResult]
    def __init__(self, results: _Optional[_Iterable[_Union[GroupResult, _Mapping]]] = ...) -> None: ...

class GroupResult(_message.Message):
    __slots__ = ("group_id", "error")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    error: _common_pb2.Error
    def __init__(self, group_id: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class OffsetResetSpec(_message.Message):
    __slots__ = ("earliest", "latest", "offset", "timestamp_ms", "shift_by")
    EARLIEST_FIELD_NUMBER: _ClassVar[int]
    LATEST_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    SHIFT_BY_FIELD_NUMBER: _ClassVar[int]
    earliest: bool
    latest: bool
    offset: int
    timestamp_ms: int
    shift_by: int
    def __init__(self, earliest: _Optional[bool] = ..., latest: _Optional[bool] = ..., offset: _Optional[int] = ..., timestamp_ms: _Optional[int] = ..., shift_by: _Optional[int] = ...) -> None: ...

class ResetOffsetsRequest(_message.Message):
    __slots__ = ("group_id", "partitions", "to", "dry_run")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartitions]
    to: OffsetResetSpec
    dry_run: bool
    def __init__(self, group_id: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartitions, _Mapping]]] = ..., to: _Optional[_Union[OffsetResetSpec, _Mapping]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class ResetOffsetsResponse(_message.Message):
    __slots__ = ("error", "resets", "dry_run")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESETS_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    resets: _containers.RepeatedCompositeFieldContainer[OffsetReset]
    dry_run: bool
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., resets: _Optional[_Iterable[_Union[OffsetReset, _Mapping]]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class OffsetReset(_message.Message):
    __slots__ = ("topic", "partition", "previous_offset", "new_offset", "error")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_OFFSET_FIELD_NUMBER: _ClassVar[int]
    NEW_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    previous_offset: int
    new_offset: int
    error: _common_pb2.Error
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., previous_offset: _Optional[int] = ..., new_offset: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class DeleteOffsetsRequest(_message.Message):
    __slots__ = ("group_id", "partitions")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartitions]
    def __init__(self, group_id: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartitions, _Mapping]]] = ...) -> None: ...

class DeleteOffsetsResponse(_message.Message):
    __slots__ = ("error", "results")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    results: _containers.RepeatedCompositeFieldContainer[TopicPartitionResult]
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., results: _Optional[_Iterable[_Union[TopicPartitionResult, _Mapping]]] = ...) -> None: ...

class TopicPartitionResult(_message.Message):
    __slots__ = ("topic", "partition", "error")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error: _common_pb2.Error
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...
