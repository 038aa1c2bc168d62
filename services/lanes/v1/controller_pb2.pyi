from lanes.v1 import common_pb2 as _common_pb2
from lanes.v1 import metadata_pb2 as _metadata_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AlterConfigOp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALTER_CONFIG_OP_SET: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_DELETE: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_APPEND: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_SUBTRACT: _ClassVar[AlterConfigOp]

class ElectionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ELECTION_TYPE_PREFERRED: _ClassVar[ElectionType]
    ELECTION_TYPE_UNCLEAN: _ClassVar[ElectionType]
ALTER_CONFIG_OP_SET: AlterConfigOp
ALTER_CONFIG_OP_DELETE: AlterConfigOp
ALTER_CONFIG_OP_APPEND: AlterConfigOp
ALTER_CONFIG_OP_SUBTRACT: AlterConfigOp
ELECTION_TYPE_PREFERRED: ElectionType
ELECTION_TYPE_UNCLEAN: ElectionType

class RaftEntry(_message.Message):
    __slots__ = ("epoch", "data", "continues_write", "voters")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    CONTINUES_WRITE_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    data: bytes
    continues_write: bool
    voters: RaftVoterSet
    def __init__(self, epoch: _Optional[int] = ..., data: _Optional[bytes] = ..., continues_write: _Optional[bool] = ..., voters: _Optional[_Union[RaftVoterSet, _Mapping]] = ...) -> None: ...

class RaftVoterSet(_message.Message):
    __slots__ = ("voters",)
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    voters: _containers.RepeatedCompositeFieldContainer[RaftVoter]
    def __init__(self, voters: _Optional[_Iterable[_Union[RaftVoter, _Mapping]]] = ...) -> None: ...

class RaftVoter(_message.Message):
    __slots__ = ("node_id", "address")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    address: str
    def __init__(self, node_id: _Optional[int] = ..., address: _Optional[str] = ...) -> None: ...

class RaftMessage(_message.Message):
    __slots__ = ("sender", "to", "epoch", "vote_request", "vote_response", "begin_epoch", "fetch_request", "fetch_response", "end_epoch", "fetch_snapshot_request", "fetch_snapshot_response", "sender_address")
    SENDER_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    VOTE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    VOTE_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    BEGIN_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FETCH_REQUEST_FIELD_NUMBER: _ClassVar[int]
    FETCH_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    END_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FETCH_SNAPSHOT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    FETCH_SNAPSHOT_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    SENDER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    sender: int
    to: int
    epoch: int
    vote_request: RaftVoteRequest
    vote_response: RaftVoteResponse
    begin_epoch: RaftBeginEpoch
    fetch_request: RaftFetchRequest
    fetch_response: RaftFetchResponse
    end_epoch: RaftEndEpoch
    fetch_snapshot_request: RaftFetchSnapshotRequest
    fetch_snapshot_response: RaftFetchSnapshotResponse
    sender_address: str
    def __init__(self, sender: _Optional[int] = ..., to: _Optional[int] = ..., epoch: _Optional[int] = ..., vote_request: _Optional[_Union[RaftVoteRequest, _Mapping]] = ..., vote_response: _Optional[_Union[RaftVoteResponse, _Mapping]] = ..., begin_epoch: _Optional[_Union[RaftBeginEpoch, _Mapping]] = ..., fetch_request: _Optional[_Union[RaftFetchRequest, _Mapping]] = ..., fetch_response: _Optional[_Union[RaftFetchResponse, _Mapping]] = ..., end_epoch: _Optional[_Union[RaftEndEpoch, _Mapping]] = ..., fetch_snapshot_request: _Optional[_Union[RaftFetchSnapshotRequest, _Mapping]] = ..., fetch_snapshot_response: _Optional[_Union[RaftFetchSnapshotResponse, _Mapping]] = ..., sender_address: _Optional[str] = ...) -> None: ...

class RaftSnapshotId(_message.Message):
    __slots__ = ("end_offset", "epoch")
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    end_offset: int
    epoch: int
    def __init__(self, end_offset: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class RaftVoteRequest(_message.Message):
    __slots__ = ("last_epoch", "end_offset", "pre_vote")
    LAST_EPOCH_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    PRE_VOTE_FIELD_NUMBER: _ClassVar[int]
    last_epoch: int
    end_offset: int
    pre_vote: bool
    def __init__(self, last_epoch: _Optional[int] = ..., end_offset: _Optional[int] = ..., pre_vote: _Optional[bool] = ...) -> None: ...

class RaftVoteResponse(_message.Message):
    __slots__ = ("granted", "pre_vote", "leader")
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    PRE_VOTE_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    granted: bool
    pre_vote: bool
    leader: int
    def __init__(self, granted: _Optional[bool] = ..., pre_vote: _Optional[bool] = ..., leader: _Optional[int] = ...) -> None: ...

class RaftBeginEpoch(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RaftEndEpoch(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RaftFetchRequest(_message.Message):
    __slots__ = ("fetch_offset", "last_fetched_epoch")
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCHED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    fetch_offset: int
    last_fetched_epoch: int
    def __init__(self, fetch_offset: _Optional[int] = ..., last_fetched_epoch: _Optional[int] = ...) -> None: ...

class RaftFetchResponse(_message.Message):
    __slots__ = ("leader", "fetch_offset", "entries", "has_diverging", "diverging_epoch", "diverging_end_offset", "high_watermark", "snapshot", "last_fetched_epoch")
    LEADER_FIELD_NUMBER: _ClassVar[int]
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    HAS_DIVERGING_FIELD_NUMBER: _ClassVar[int]
    DIVERGING_EPOCH_FIELD_NUMBER: _ClassVar[int]
    DIVERGING_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCHED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    leader: int
    fetch_offset: int
    entries: _containers.RepeatedCompositeFieldContainer[RaftEntry]
    has_diverging: bool
    diverging_epoch: int
    diverging_end_offset: int
    high_watermark: int
    snapshot: RaftSnapshotId
    last_fetched_epoch: int
    def __init__(self, leader: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., entries: _Optional[_Iterable[_Union[RaftEntry, _Mapping]]] = ..., has_diverging: _Optional[bool] = ..., diverging_epoch: _Optional[int] = ..., diverging_end_offset: _Optional[int] = ..., high_watermark: _Optional[int] = ..., snapshot: _Optional[_Union[RaftSnapshotId, _Mapping]] = ..., last_fetched_epoch: _Optional[int] = ...) -> None: ...

class RaftFetchSnapshotRequest(_message.Message):
    __slots__ = ("snapshot", "position")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    snapshot: RaftSnapshotId
    position: int
    def __init__(self, snapshot: _Optional[_Union[RaftSnapshotId, _Mapping]] = ..., position: _Optional[int] = ...) -> None: ...

class RaftFetchSnapshotResponse(_message.Message):
    __slots__ = ("leader", "snapshot", "position", "data", "size", "high_watermark")
    LEADER_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    leader: int
    snapshot: RaftSnapshotId
    position: int
    data: bytes
    size: int
    high_watermark: int
    def __init__(self, leader: _Optional[int] = ..., snapshot: _Optional[_Union[RaftSnapshotId, _Mapping]] = ..., position: _Optional[int] = ..., data: _Optional[bytes] = ..., size: _Optional[int] = ..., high_watermark: _Optional[int] = ...) -> None: ...

class MetadataSnapshotHeader(_message.Message):
    __slots__ = ("id", "epochs", "voters")
    ID_FIELD_NUMBER: _ClassVar[int]
    EPOCHS_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    id: RaftSnapshotId
    epochs: _containers.RepeatedCompositeFieldContainer[QuorumEpochStart]
    voters: RaftVoterSet
    def __init__(self, id: _Optional[_Union[RaftSnapshotId, _Mapping]] = ..., epochs: _Optional[_Iterable[_Union[QuorumEpochStart, _Mapping]]] = ..., voters: _Optional[_Union[RaftVoterSet, _Mapping]] = ...) -> None: ...

class QuorumEpochStart(_message.Message):
    __slots__ = ("epoch", "start_offset")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    start_offset: int
    def __init__(self, epoch: _Optional[int] = ..., start_offset: _Optional[int] = ...) -> None: ...

class RaftAck(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeQuorumRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class QuorumVoter(_message.Message):
    __slots__ = ("endpoint", "log_end_offset", "last_fetch_age_ms")
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCH_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    endpoint: _common_pb2.Node
    log_end_offset: int
    last_fetch_age_ms: int
    def __init__(self, endpoint: _Optional[_Union[_common_pb2.Node, _Mapping]] = ..., log_end_offset: _Optional[int] = ..., last_fetch_age_ms: _Optional[int] = ...) -> None: ...

class DescribeQuorumResponse(_message.Message):
    __slots__ = ("error", "node_id", "role", "can_vote", "epoch", "leader_id", "leader", "high_watermark", "log_end_offset", "voters", "observers")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CAN_VOTE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    OBSERVERS_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    node_id: int
    role: str
    can_vote: bool
    epoch: int
    leader_id: int
    leader: _common_pb2.Node
    high_watermark: int
    log_end_offset: int
    voters: _containers.RepeatedCompositeFieldContainer[QuorumVoter]
    observers: _containers.RepeatedCompositeFieldContainer[QuorumVoter]
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., node_id: _Optional[int] = ..., role: _Optional[str] = ..., can_vote: _Optional[bool] = ..., epoch: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader: _Optional[_Union[_common_pb2.Node, _Mapping]] = ..., high_watermark: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., voters: _Optional[_Iterable[_Union[QuorumVoter, _Mapping]]] = ..., observers: _Optional[_Iterable[_Union[QuorumVoter, _Mapping]]] = ...) -> None: ...

class AlterClientQuotasRequest(_message.Message):
    __slots__ = ("changes",)
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[_metadata_pb2.ClientQuotaRecord]
    def __init__(self, changes: _Optional[_Iterable[_Union[_metadata_pb2.ClientQuotaRecord, _Mapping]]] = ...) -> None: ...

class AlterClientQuotasResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_common_pb2.Error]
    def __init__(self, results: _Optional[_Iterable[_Union[_common_pb2.Error, _Mapping]]] = ...) -> None: ...

class DescribeClientQuotasRequest(_message.Message):
    __slots__ = ("entity",)
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    entity: _containers.RepeatedCompositeFieldContainer[_metadata_pb2.QuotaEntityPart]
    def __init__(self, entity: _Optional[_Iterable[_Union[_metadata_pb2.QuotaEntityPart, _Mapping]]] = ...) -> None: ...

class DescribeClientQuotasResponse(_message.Message):
    __slots__ = ("quotas",)
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    quotas: _containers.RepeatedCompositeFieldContainer[_metadata_pb2.ClientQuotaRecord]
    def __init__(self, quotas: _Optional[_Iterable[_Union[_metadata_pb2.ClientQuotaRecord, _Mapping]]] = ...) -> None: ...

class AlterUserScramCredentialsRequest(_message.Message):
    __slots__ = ("deletions", "upsertions")
    DELETIONS_FIELD_NUMBER: _ClassVar[int]
    UPSERTIONS_FIELD_NUMBER: _ClassVar[int]
    deletions: _containers.RepeatedCompositeFieldContainer[ScramCredentialDeletion]
    upsertions: _containers.RepeatedCompositeFieldContainer[ScramCredentialUpsertion]
    def __init__(self, deletions: _Optional[_Iterable[_Union[ScramCredentialDeletion, _Mapping]]] = ..., upsertions: _Optional[_Iterable[_Union[ScramCredentialUpsertion, _Mapping]]] = ...) -> None: ...

class ScramCredentialDeletion(_message.Message):
    __slots__ = ("name", "mechanism")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: str
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[str] = ...) -> None: ...

class ScramCredentialUpsertion(_message.Message):
    __slots__ = ("name", "mechanism", "iterations", "salt", "salted_password")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    SALTED_PASSWORD_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: str
    iterations: int
    salt: bytes
    salted_password: bytes
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[str] = ..., iterations: _Optional[int] = ..., salt: _Optional[bytes] = ..., salted_password: _Optional[bytes] = ...) -> None: ...

class AlterUserScramCredentialsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AlterUserScramCredentialsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AlterUserScramCredentialsResult, _Mapping]]] = ...) -> None: ...

class AlterUserScramCredentialsResult(_message.Message):
    __slots__ = ("name", "error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    error: _common_pb2.Error
    def __init__(self, name: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class DescribeUserScramCredentialsRequest(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeUserScramCredentialsResponse(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[UserScramCredentials]
    def __init__(self, users: _Optional[_Iterable[_Union[UserScramCredentials, _Mapping]]] = ...) -> None: ...

class UserScramCredentials(_message.Message):
    __slots__ = ("name", "error", "credentials")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    name: str
    error: _common_pb2.Error
    credentials: _containers.RepeatedCompositeFieldContainer[ScramCredentialInfo]
    def __init__(self, name: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., credentials: _Optional[_Iterable[_Union[ScramCredentialInfo, _Mapping]]] = ...) -> None: ...

class ScramCredentialInfo(_message.Message):
    __slots__ = ("mechanism", "iterations")
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    mechanism: str
    iterations: int
    def __init__(self, mechanism: _Optional[str] = ..., iterations: _Optional[int] = ...) -> None: ...

class CreateAclsRequest(_message.Message):
    __slots__ = ("creations",)
    CREATIONS_FIELD_NUMBER: _ClassVar[int]
    creations: _containers.RepeatedCompositeFieldContainer[_common_pb2.AclBinding]
    def __init__(self, creations: _Optional[_Iterable[_Union[_common_pb2.AclBinding, _Mapping]]] = ...) -> None: ...

class CreateAclsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_common_pb2.Error]
    def __init__(self, results: _Optional[_Iterable[_Union[_common_pb2.Error, _Mapping]]] = ...) -> None: ...

class DescribeAclsRequest(_message.Message):
    __slots__ = ("filter",)
    FILTER_FIELD_NUMBER: _ClassVar[int]
    filter: _common_pb2.AclBinding
    def __init__(self, filter: _Optional[_Union[_common_pb2.AclBinding, _Mapping]] = ...) -> None: ...

class DescribeAclsResponse(_message.Message):
    __slots__ = ("acls",)
    ACLS_FIELD_NUMBER: _ClassVar[int]
    acls: _containers.RepeatedCompositeFieldContainer[_common_pb2.AclBinding]
    def __init__(self, acls: _Optional[_Iterable[_Union[_common_pb2.AclBinding, _Mapping]]] = ...) -> None: ...

class DeleteAclsRequest(_message.Message):
    __slots__ = ("filters",)
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    filters: _containers.RepeatedCompositeFieldContainer[_common_pb2.AclBinding]
    def __init__(self, filters: _Optional[_Iterable[_Union[_common_pb2.AclBinding, _Mapping]]] = ...) -> None: ...

class DeleteAclsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DeleteAclsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[DeleteAclsResult, _Mapping]]] = ...) -> None: ...

class DeleteAclsResult(_message.Message):
    __slots__ = ("error", "removed")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    removed: _containers.RepeatedCompositeFieldContainer[_common_pb2.AclBinding]
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., removed: _Optional[_Iterable[_Union[_common_pb2.AclBinding, _Mapping]]] = ...) -> None: ...

class AddControllerRequest(_message.Message):
    __slots__ = ("controller",)
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    controller: _common_pb2.Node
    def __init__(self, controller: _Optional[_Union[_common_pb2.Node, _Mapping]] = ...) -> None: ...

class RemoveControllerRequest(_message.Message):
    __slots__ = ("node_id",)
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    def __init__(self, node_id: _Optional[int] = ...) -> None: ...

class ChangeControllersResponse(_message.Message):
    __slots__ = ("error", "quorum")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    QUORUM_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    quorum: DescribeQuorumResponse
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., quorum: _Optional[_Union[DescribeQuorumResponse, _Mapping]] = ...) -> None: ...

class RegisterBrokerRequest(_message.Message):
    __slots__ = ("broker_id", "incarnation_id", "cluster_id", "endpoint", "log_dirs", "previous_broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    LOG_DIRS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    incarnation_id: str
    cluster_id: str
    endpoint: _common_pb2.Node
    log_dirs: _containers.RepeatedScalarFieldContainer[str]
    previous_broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., incarnation_id: _Optional[str] = ..., cluster_id: _Optional[str] = ..., endpoint: _Optional[_Union[_common_pb2.Node, _Mapping]] = ..., log_dirs: _Optional[_Iterable[str]] = ..., previous_broker_epoch: _Optional[int] = ...) -> None: ...

class RegisterBrokerResponse(_message.Message):
    __slots__ = ("error", "broker_epoch", "cluster_id")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    broker_epoch: int
    cluster_id: str
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., broker_epoch: _Optional[int] = ..., cluster_id: _Optional[str] = ...) -> None: ...

class BrokerHeartbeatRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "current_metadata_offset", "want_fence", "want_shut_down")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CURRENT_METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    WANT_FENCE_FIELD_NUMBER: _ClassVar[int]
    WANT_SHUT_DOWN_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., current_metadata_offset: _Optional[int] = ..., want_fence: _Optional[bool] = ..., want_shut_down: _Optional[bool] = ...) -> None: ...

class BrokerHeartbeatResponse(_message.Message):
    __slots__ = ("error", "is_caught_up", "is_fenced", "should_shut_down", "heartbeat_interval_ms", "session_timeout_ms")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    IS_FENCED_FIELD_NUMBER: _ClassVar[int]
    SHOULD_SHUT_DOWN_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    SESSION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool
    heartbeat_interval_ms: int
    session_timeout_ms: int
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., is_caught_up: _Optional[bool] = ..., is_fenced: _Optional[bool] = ..., should_shut_down: _Optional[bool] = ..., heartbeat_interval_ms: _Optional[int] = ..., session_timeout_ms: _Optional[int] = ...) -> None: ...

class WatchMetadataRequest(_message.Message):
    __slots__ = ("node_id", "node_epoch", "from_offset", "applied_offset", "applied_epoch")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FROM_OFFSET_FIELD_NUMBER: _ClassVar[int]
    APPLIED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    APPLIED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    node_epoch: int
    from_offset: int
    applied_offset: int
    applied_epoch: int
    def __init__(self, node_id: _Optional[int] = ..., node_epoch: _Optional[int] = ..., from_offset: _Optional[int] = ..., applied_offset: _Optional[int] = ..., applied_epoch: _Optional[int] = ...) -> None: ...

class MetadataUpdate(_message.Message):
    __slots__ = ("snapshot", "base_offset", "records", "next_offset", "log_end_offset", "last_epoch", "applied_offset_epoch")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    BASE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_EPOCH_FIELD_NUMBER: _ClassVar[int]
    APPLIED_OFFSET_EPOCH_FIELD_NUMBER: _ClassVar[int]
    snapshot: bool
    base_offset: int
    records: _containers.RepeatedCompositeFieldContainer[_metadata_pb2.MetadataRecord]
    next_offset: int
    log_end_offset: int
    last_epoch: int
    applied_offset_epoch: int
    def __init__(self, snapshot: _Optional[bool] = ..., base_offset: _Optional[int] = ..., records: _Optional[_Iterable[_Union[_metadata_pb2.MetadataRecord, _Mapping]]] = ..., next_offset: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., last_epoch: _Optional[int] = ..., applied_offset_epoch: _Optional[int] = ...) -> None: ...

class CreateTopicsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms", "validate_only")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatableTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatableTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class CreatableTopic(_message.Message):
    __slots__ = ("name", "num_partitions", "replication_factor", "assignments", "configs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    num_partitions: int
    replication_factor: int
    assignments: _containers.RepeatedCompositeFieldContainer[ReplicaAssignment]
    configs: _containers.RepeatedCompositeFieldContainer[_common_pb2.ConfigValue]
    def __init__(self, name: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ..., assignments: _Optional[_Iterable[_Union[ReplicaAssignment, _Mapping]]] = ..., configs: _Optional[_Iterable[_Union[_common_pb2.ConfigValue, _Mapping]]] = ...) -> None: ...

class ReplicaAssignment(_message.Message):
    __slots__ = ("partition", "broker_ids")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    BROKER_IDS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    broker_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition: _Optional[int] = ..., broker_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class CreateTopicsResponse(_message.Message):
    __slots__ = ("topics", "throttle_time_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatableTopicResult]
    throttle_time_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatableTopicResult, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class CreatableTopicResult(_message.Message):
    __slots__ = ("name", "topic_id", "error", "num_partitions", "replication_factor", "configs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    topic_id: str
    error: _common_pb2.Error
    num_partitions: int
    replication_factor: int
    configs: _containers.RepeatedCompositeFieldContainer[_common_pb2.ConfigEntry]
    def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ..., configs: _Optional[_Iterable[_Union[_common_pb2.ConfigEntry, _Mapping]]] = ...) -> None: ...

class DeleteTopicsRequest(_message.Message):
    __slots__ = ("names", "topic_ids", "timeout_ms")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    TOPIC_IDS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    topic_ids: _containers.RepeatedScalarFieldContainer[str]
    timeout_ms: int
    def __init__(self, names: _Optional[_Iterable[str]] = ..., topic_ids: _Optional[_Iterable[str]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class DeleteTopicsResponse(_message.Message):
    __slots__ = ("topics", "throttle_time_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[DeletableTopicResult]
    throttle_time_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[DeletableTopicResult, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class DeletableTopicResult(_message.Message):
    __slots__ = ("name", "topic_id", "error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    topic_id: str
    error: _common_pb2.Error
    def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class CreatePartitionsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms", "validate_only")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatePartitionsTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatePartitionsTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class CreatePartitionsTopic(_message.Message):
    __slots__ = ("name", "count", "assignments")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    assignments: _containers.RepeatedCompositeFieldContainer[ReplicaAssignment]
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ..., assignments: _Optional[_Iterable[_Union[ReplicaAssignment, _Mapping]]] = ...) -> None: ...

class CreatePartitionsResponse(_message.Message):
    __slots__ = ("topics", "throttle_time_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatePartitionsTopicResult]
    throttle_time_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatePartitionsTopicResult, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class CreatePartitionsTopicResult(_message.Message):
    __slots__ = ("name", "error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    error: _common_pb2.Error
    def __init__(self, name: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class DescribeTopicsRequest(_message.Message):
    __slots__ = ("names", "include_internal", "include_authorized_operations")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_INTERNAL_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_AUTHORIZED_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    include_internal: bool
    include_authorized_operations: bool
    def __init__(self, names: _Optional[_Iterable[str]] = ..., include_internal: _Optional[bool] = ..., include_authorized_operations: _Optional[bool] = ...) -> None: ...

class DescribeTopicsResponse(_message.Message):
    __slots__ = ("topics", "metadata_offset")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicDescription]
    metadata_offset: int
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicDescription, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class TopicDescription(_message.Message):
    __slots__ = ("name", "topic_id", "error", "is_internal", "partitions", "authorized_operations")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_INTERNAL_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZED_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    topic_id: str
    error: _common_pb2.Error
    is_internal: bool
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionDescription]
    authorized_operations: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., is_internal: _Optional[bool] = ..., partitions: _Optional[_Iterable[_Union[PartitionDescription, _Mapping]]] = ..., authorized_operations: _Optional[_Iterable[str]] = ...) -> None: ...

class PartitionDescription(_message.Message):
    __slots__ = ("partition", "leader_id", "leader_epoch", "partition_epoch", "replicas", "isr", "offline_replicas")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    leader_id: int
    leader_epoch: int
    partition_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    offline_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class DescribeClusterRequest(_message.Message):
    __slots__ = ("include_fenced",)
    INCLUDE_FENCED_FIELD_NUMBER: _ClassVar[int]
    include_fenced: bool
    def __init__(self, include_fenced: _Optional[bool] = ...) -> None: ...

class DescribeClusterResponse(_message.Message):
    __slots__ = ("error", "cluster_id", "controller", "brokers", "coordinators", "metadata_offset", "quorum")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    COORDINATORS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    QUORUM_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    cluster_id: str
    controller: _common_pb2.Node
    brokers: _containers.RepeatedCompositeFieldContainer[BrokerDescription]
    coordinators: _containers.RepeatedCompositeFieldContainer[CoordinatorDescription]
    metadata_offset: int
    quorum: DescribeQuorumResponse
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., cluster_id: _Optional[str] = ..., controller: _Optional[_Union[_common_pb2.Node, _Mapping]] = ..., brokers: _Optional[_Iterable[_Union[BrokerDescription, _Mapping]]] = ..., coordinators: _Optional[_Iterable[_Union[CoordinatorDescription, _Mapping]]] = ..., metadata_offset: _Optional[int] = ..., quorum: _Optional[_Union[DescribeQuorumResponse, _Mapping]] = ...) -> None: ...

class BrokerDescription(_message.Message):
    __slots__ = ("endpoint", "broker_epoch", "fenced", "shutting_down", "last_heartbeat_ms", "leader_count", "replica_count")
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    SHUTTING_DOWN_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_MS_FIELD_NUMBER: _ClassVar[int]
    LEADER_COUNT_FIELD_NUMBER: _ClassVar[int]
    REPLICA_COUNT_FIELD_NUMBER: _ClassVar[int]
    endpoint: _common_pb2.Node
    broker_epoch: int
    fenced: bool
    shutting_down: bool
    last_heartbeat_ms: int
    leader_count: int
    replica_count: int
    def __init__(self, endpoint: _Optional[_Union[_common_pb2.Node, _Mapping]] = ..., broker_epoch: _Optional[int] = ..., fenced: _Optional[bool] = ..., shutting_down: _Optional[bool] = ..., last_heartbeat_ms: _Optional[int] = ..., leader_count: _Optional[int] = ..., replica_count: _Optional[int] = ...) -> None: ...

class CoordinatorDescription(_message.Message):
    __slots__ = ("endpoint", "coordinator_epoch", "fenced", "last_heartbeat_ms", "shards")
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_MS_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    endpoint: _common_pb2.Node
    coordinator_epoch: int
    fenced: bool
    last_heartbeat_ms: int
    shards: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, endpoint: _Optional[_Union[_common_pb2.Node, _Mapping]] = ..., coordinator_epoch: _Optional[int] = ..., fenced: _Optional[bool] = ..., last_heartbeat_ms: _Optional[int] = ..., shards: _Optional[_Iterable[int]] = ...) -> None: ...

class AlterConfigsRequest(_message.Message):
    __slots__ = ("resources", "validate_only")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[AlterConfigsResource]
    validate_only: bool
    def __init__(self, resources: _Optional[_Iterable[_Union[AlterConfigsResource, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class AlterConfigsResource(_message.Message):
    __slots__ = ("resource_type", "resource_name", "configs")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    resource_type: _common_pb2.ConfigResourceType
    resource_name: str
    configs: _containers.RepeatedCompositeFieldContainer[AlterableConfig]
    def __init__(self, resource_type: _Optional[_Union[_common_pb2.ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., configs: _Optional[_Iterable[_Union[AlterableConfig, _Mapping]]] = ...) -> None: ...

class AlterableConfig(_message.Message):
    __slots__ = ("name", "op", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    op: AlterConfigOp
    value: str
    def __init__(self, name: _Optional[str] = ..., op: _Optional[_Union[AlterConfigOp, str]] = ..., value: _Optional[str] = ...) -> None: ...

class AlterConfigsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AlterConfigsResourceResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AlterConfigsResourceResult, _Mapping]]] = ...) -> None: ...

class AlterConfigsResourceResult(_message.Message):
    __slots__ = ("resource_type", "resource_name", "error")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    resource_type: _common_pb2.ConfigResourceType
    resource_name: str
    error: _common_pb2.Error
    def __init__(self, resource_type: _Optional[_Union[_common_pb2.ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class DescribeConfigsRequest(_message.Message):
    __slots__ = ("resources", "include_documentation", "include_synonyms")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DOCUMENTATION_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SYNONYMS_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[DescribeConfigsResource]
    include_documentation: bool
    include_synonyms: bool
    def __init__(self, resources: _Optional[_Iterable[_Union[DescribeConfigsResource, _Mapping]]] = ..., include_documentation: _Optional[bool] = ..., include_synonyms: _Optional[bool] = ...) -> None: ...

class DescribeConfigsResource(_message.Message):
    __slots__ = ("resource_type", "resource_name", "names")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    resource_type: _common_pb2.ConfigResourceType
    resource_name: str
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, resource_type: _Optional[_Union[_common_pb2.ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., names: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeConfigsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DescribeConfigsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[DescribeConfigsResult, _Mapping]]] = ...) -> None: ...

class DescribeConfigsResult(_message.Message):
    __slots__ = ("resource_type", "resource_name", "error", "configs")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    resource_type: _common_pb2.ConfigResourceType
    resource_name: str
    error: _common_pb2.Error
    configs: _containers.RepeatedCompositeFieldContainer[_common_pb2.ConfigEntry]
    def __init__(self, resource_type: _Optional[_Union[_common_pb2.ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., configs: _Optional[_Iterable[_Union[_common_pb2.ConfigEntry, _Mapping]]] = ...) -> None: ...

class AlterPartitionRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "topics")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    topics: _containers.RepeatedCompositeFieldContainer[AlterPartitionTopic]
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[AlterPartitionTopic, _Mapping]]] = ...) -> None: ...

class AlterPartitionTopic(_message.Message):
    __slots__ = ("topic_id", "partitions")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    partitions: _containers.RepeatedCompositeFieldContainer[AlterPartitionProposal]
    def __init__(self, topic_id: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[AlterPartitionProposal, _Mapping]]] = ...) -> None: ...

class AlterPartitionProposal(_message.Message):
    __slots__ = ("partition", "leader_epoch", "partition_epoch", "new_isr", "new_isr_broker_epochs")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    NEW_ISR_FIELD_NUMBER: _ClassVar[int]
    NEW_ISR_BROKER_EPOCHS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: _containers.RepeatedScalarFieldContainer[int]
    new_isr_broker_epochs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ..., new_isr: _Optional[_Iterable[int]] = ..., new_isr_broker_epochs: _Optional[_Iterable[int]] = ...) -> None: ...

class AlterPartitionResponse(_message.Message):
    __slots__ = ("error", "topics")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    topics: _containers.RepeatedCompositeFieldContainer[AlterPartitionTopicResult]
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[AlterPartitionTopicResult, _Mapping]]] = ...) -> None: ...

class AlterPartitionTopicResult(_message.Message):
    __slots__ = ("topic_id", "partitions")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    partitions: _containers.RepeatedCompositeFieldContainer[AlterPartitionResult]
    def __init__(self, topic_id: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[AlterPartitionResult, _Mapping]]] = ...) -> None: ...

class AlterPartitionResult(_message.Message):
    __slots__ = ("partition", "error", "leader_id", "leader_epoch", "isr", "partition_epoch")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error: _common_pb2.Error
    leader_id: int
    leader_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    partition_epoch: int
    def __init__(self, partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ...) -> None: ...

class ElectLeadersRequest(_message.Message):
    __slots__ = ("election_type", "partitions", "timeout_ms")
    ELECTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    election_type: ElectionType
    partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartitions]
    timeout_ms: int
    def __init__(self, election_type: _Optional[_Union[ElectionType, str]] = ..., partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartitions, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class ElectLeadersResponse(_message.Message):
    __slots__ = ("error", "results")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    results: _containers.RepeatedCompositeFieldContainer[ElectionResult]
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., results: _Optional[_Iterable[_Union[ElectionResult, _Mapping]]] = ...) -> None: ...

class ElectionResult(_message.Message):
    __slots__ = ("topic", "partition", "error")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error: _common_pb2.Error
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ...) -> None: ...

class RegisterCoordinatorRequest(_message.Message):
    __slots__ = ("coordinator_id", "incarnation_id", "cluster_id", "endpoint")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: int
    incarnation_id: str
    cluster_id: str
    endpoint: _common_pb2.Node
    def __init__(self, coordinator_id: _Optional[int] = ..., incarnation_id: _Optional[str] = ..., cluster_id: _Optional[str] = ..., endpoint: _Optional[_Union[_common_pb2.Node, _Mapping]] = ...) -> None: ...

class RegisterCoordinatorResponse(_message.Message):
    __slots__ = ("error", "coordinator_epoch", "cluster_id")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    coordinator_epoch: int
    cluster_id: str
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., coordinator_epoch: _Optional[int] = ..., cluster_id: _Optional[str] = ...) -> None: ...

class CoordinatorHeartbeatRequest(_message.Message):
    __slots__ = ("coordinator_id", "coordinator_epoch", "current_metadata_offset", "loaded_shards", "want_shut_down")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CURRENT_METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOADED_SHARDS_FIELD_NUMBER: _ClassVar[int]
    WANT_SHUT_DOWN_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: int
    coordinator_epoch: int
    current_metadata_offset: int
    loaded_shards: _containers.RepeatedScalarFieldContainer[int]
    want_shut_down: bool
    def __init__(self, coordinator_id: _Optional[int] = ..., coordinator_epoch: _Optional[int] = ..., current_metadata_offset: _Optional[int] = ..., loaded_shards: _Optional[_Iterable[int]] = ..., want_shut_down: _Optional[bool] = ...) -> None: ...

class CoordinatorHeartbeatResponse(_message.Message):
    __slots__ = ("error", "is_fenced", "should_shut_down", "heartbeat_interval_ms", "session_timeout_ms")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_FENCED_FIELD_NUMBER: _ClassVar[int]
    SHOULD_SHUT_DOWN_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    SESSION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    is_fenced: bool
    should_shut_down: bool
    heartbeat_interval_ms: int
    session_timeout_ms: int
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., is_fenced: _Optional[bool] = ..., should_shut_down: _Optional[bool] = ..., heartbeat_interval_ms: _Optional[int] = ..., session_timeout_ms: _Optional[int] = ...) -> None: ...

class AllocateProducerIdsRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class AllocateProducerIdsResponse(_message.Message):
    __slots__ = ("error", "producer_id_start", "producer_id_len")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_START_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_LEN_FIELD_NUMBER: _ClassVar[int]
    error: _common_pb2.Error
    producer_id_start: int
    producer_id_len: int
    def __init__(self, error: _Optional[_Union[_common_pb2.Error, _Mapping]] = ..., producer_id_start: _Optional[int] = ..., producer_id_len: _Optional[int] = ...) -> None: ...
