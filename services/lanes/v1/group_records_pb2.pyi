from lanes.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GroupRecordKey(_message.Message):
    __slots__ = ("offset_commit", "group_metadata", "member", "target_assignment", "target_assignment_metadata", "current_assignment")
    OFFSET_COMMIT_FIELD_NUMBER: _ClassVar[int]
    GROUP_METADATA_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    TARGET_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    TARGET_ASSIGNMENT_METADATA_FIELD_NUMBER: _ClassVar[int]
    CURRENT_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    offset_commit: OffsetCommitKey
    group_metadata: GroupMetadataKey
    member: GroupMemberKey
    target_assignment: GroupMemberKey
    target_assignment_metadata: GroupMetadataKey
    current_assignment: GroupMemberKey
    def __init__(self, offset_commit: _Optional[_Union[OffsetCommitKey, _Mapping]] = ..., group_metadata: _Optional[_Union[GroupMetadataKey, _Mapping]] = ..., member: _Optional[_Union[GroupMemberKey, _Mapping]] = ..., target_assignment: _Optional[_Union[GroupMemberKey, _Mapping]] = ..., target_assignment_metadata: _Optional[_Union[GroupMetadataKey, _Mapping]] = ..., current_assignment: _Optional[_Union[GroupMemberKey, _Mapping]] = ...) -> None: ...

class OffsetCommitKey(_message.Message):
    __slots__ = ("group_id", "topic", "partition")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    topic: str
    partition: int
    def __init__(self, group_id: _Optional[str] = ..., topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class GroupMetadataKey(_message.Message):
    __slots__ = ("group_id",)
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    def __init__(self, group_id: _Optional[str] = ...) -> None: ...

class GroupMemberKey(_message.Message):
    __slots__ = ("group_id", "member_id")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member_id: str
    def __init__(self, group_id: _Optional[str] = ..., member_id: _Optional[str] = ...) -> None: ...

class GroupRecordValue(_message.Message):
    __slots__ = ("offset_commit", "group_metadata", "member", "target_assignment", "target_assignment_metadata", "current_assignment")
    OFFSET_COMMIT_FIELD_NUMBER: _ClassVar[int]
    GROUP_METADATA_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    TARGET_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    TARGET_ASSIGNMENT_METADATA_FIELD_NUMBER: _ClassVar[int]
    CURRENT_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    offset_commit: OffsetCommitValue
    group_metadata: GroupMetadataValue
    member: GroupMemberValue
    target_assignment: StoredAssignment
    target_assignment_metadata: TargetAssignmentMetadataValue
    current_assignment: CurrentAssignmentValue
    def __init__(self, offset_commit: _Optional[_Union[OffsetCommitValue, _Mapping]] = ..., group_metadata: _Optional[_Union[GroupMetadataValue, _Mapping]] = ..., member: _Optional[_Union[GroupMemberValue, _Mapping]] = ..., target_assignment: _Optional[_Union[StoredAssignment, _Mapping]] = ..., target_assignment_metadata: _Optional[_Union[TargetAssignmentMetadataValue, _Mapping]] = ..., current_assignment: _Optional[_Union[CurrentAssignmentValue, _Mapping]] = ...) -> None: ...

class OffsetCommitValue(_message.Message):
    __slots__ = ("committed_offset", "committed_leader_epoch", "metadata", "commit_timestamp_ms")
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    committed_offset: int
    committed_leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    def __init__(self, committed_offset: _Optional[int] = ..., committed_leader_epoch: _Optional[int] = ..., metadata: _Optional[str] = ..., commit_timestamp_ms: _Optional[int] = ...) -> None: ...

class GroupMetadataValue(_message.Message):
    __slots__ = ("group_epoch", "assignor", "empty_since_ms")
    GROUP_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ASSIGNOR_FIELD_NUMBER: _ClassVar[int]
    EMPTY_SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    group_epoch: int
    assignor: str
    empty_since_ms: int
    def __init__(self, group_epoch: _Optional[int] = ..., assignor: _Optional[str] = ..., empty_since_ms: _Optional[int] = ...) -> None: ...

class GroupMemberValue(_message.Message):
    __slots__ = ("instance_id", "rack_id", "client_id", "client_host", "subscription", "server_assignor", "rebalance_timeout_ms", "principal", "classic")
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HOST_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SERVER_ASSIGNOR_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    CLASSIC_FIELD_NUMBER: _ClassVar[int]
    instance_id: str
    rack_id: str
    client_id: str
    client_host: str
    subscription: StoredSubscription
    server_assignor: str
    rebalance_timeout_ms: int
    principal: str
    classic: bool
    def __init__(self, instance_id: _Optional[str] = ..., rack_id: _Optional[str] = ..., client_id: _Optional[str] = ..., client_host: _Optional[str] = ..., subscription: _Optional[_Union[StoredSubscription, _Mapping]] = ..., server_assignor: _Optional[str] = ..., rebalance_timeout_ms: _Optional[int] = ..., principal: _Optional[str] = ..., classic: _Optional[bool] = ...) -> None: ...

class TargetAssignmentMetadataValue(_message.Message):
    __slots__ = ("assignment_epoch",)
    ASSIGNMENT_EPOCH_FIELD_NUMBER: _ClassVar[int]
    assignment_epoch: int
    def __init__(self, assignment_epoch: _Optional[int] = ...) -> None: ...

class CurrentAssignmentValue(_message.Message):
    __slots__ = ("member_epoch", "previous_member_epoch", "assigned", "pending_revocation")
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ASSIGNED_FIELD_NUMBER: _ClassVar[int]
    PENDING_REVOCATION_FIELD_NUMBER: _ClassVar[int]
    member_epoch: int
    previous_member_epoch: int
    assigned: StoredAssignment
    pending_revocation: StoredAssignment
    def __init__(self, member_epoch: _Optional[int] = ..., previous_member_epoch: _Optional[int] = ..., assigned: _Optional[_Union[StoredAssignment, _Mapping]] = ..., pending_revocation: _Optional[_Union[StoredAssignment, _Mapping]] = ...) -> None: ...

class StoredAssignment(_message.Message):
    __slots__ = ("topic_partitions",)
    TOPIC_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartitions]
    def __init__(self, topic_partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartitions, _Mapping]]] = ...) -> None: ...

class StoredSubscription(_message.Message):
    __slots__ = ("topic_names", "topic_regex")
    TOPIC_NAMES_FIELD_NUMBER: _ClassVar[int]
    TOPIC_REGEX_FIELD_NUMBER: _ClassVar[int]
    topic_names: _containers.RepeatedScalarFieldContainer[str]
    topic_regex: str
    def __init__(self, topic_names: _Optional[_Iterable[str]] = ..., topic_regex: _Optional[str] = ...) -> None: ...
