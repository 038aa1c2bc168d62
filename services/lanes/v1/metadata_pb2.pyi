from lanes.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MetadataRecord(_message.Message):
    __slots__ = ("cluster_created", "broker_registered", "broker_fenced", "broker_unfenced", "broker_unregistered", "topic_created", "partition", "partition_change", "topic_deleted", "config", "coordinator_registered", "coordinator_fenced", "shard_assigned", "producer_ids", "user_scram_credential", "user_scram_credential_removed", "acl", "acl_removed", "controller_registered", "client_quota")
    CLUSTER_CREATED_FIELD_NUMBER: _ClassVar[int]
    BROKER_REGISTERED_FIELD_NUMBER: _ClassVar[int]
    BROKER_FENCED_FIELD_NUMBER: _ClassVar[int]
    BROKER_UNFENCED_FIELD_NUMBER: _ClassVar[int]
    BROKER_UNREGISTERED_FIELD_NUMBER: _ClassVar[int]
    TOPIC_CREATED_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PARTITION_CHANGE_FIELD_NUMBER: _ClassVar[int]
    TOPIC_DELETED_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_REGISTERED_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_FENCED_FIELD_NUMBER: _ClassVar[int]
    SHARD_ASSIGNED_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_IDS_FIELD_NUMBER: _ClassVar[int]
    USER_SCRAM_CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    USER_SCRAM_CREDENTIAL_REMOVED_FIELD_NUMBER: _ClassVar[int]
    ACL_FIELD_NUMBER: _ClassVar[int]
    ACL_REMOVED_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_REGISTERED_FIELD_NUMBER: _ClassVar[int]
    CLIENT_QUOTA_FIELD_NUMBER: _ClassVar[int]
    cluster_created: ClusterCreatedRecord
    broker_registered: BrokerRegisteredRecord
    broker_fenced: BrokerFencedRecord
    broker_unfenced: BrokerUnfencedRecord
    broker_unregistered: BrokerUnregisteredRecord
    topic_created: TopicCreatedRecord
    partition: PartitionRecord
    partition_change: PartitionChangeRecord
    topic_deleted: TopicDeletedRecord
    config: ConfigRecord
    coordinator_registered: CoordinatorRegisteredRecord
    coordinator_fenced: CoordinatorFencedRecord
    shard_assigned: ShardAssignedRecord
    producer_ids: ProducerIdsRecord
    user_scram_credential: UserScramCredentialRecord
    user_scram_credential_removed: UserScramCredentialRemovedRecord
    acl: AclRecord
    acl_removed: AclRemovedRecord
    controller_registered: ControllerRegisteredRecord
    client_quota: ClientQuotaRecord
    def __init__(self, cluster_created: _Optional[_Union[ClusterCreatedRecord, _Mapping]] = ..., broker_registered: _Optional[_Union[BrokerRegisteredRecord, _Mapping]] = ..., broker_fenced: _Optional[_Union[BrokerFencedRecord, _Mapping]] = ..., broker_unfenced: _Optional[_Union[BrokerUnfencedRecord, _Mapping]] = ..., broker_unregistered: _Optional[_Union[BrokerUnregisteredRecord, _Mapping]] = ..., topic_created: _Optional[_Union[TopicCreatedRecord, _Mapping]] = ..., partition: _Optional[_Union[PartitionRecord, _Mapping]] = ..., partition_change: _Optional[_Union[PartitionChangeRecord, _Mapping]] = ..., topic_deleted: _Optional[_Union[TopicDeletedRecord, _Mapping]] = ..., config: _Optional[_Union[ConfigRecord, _Mapping]] = ..., coordinator_registered: _Optional[_Union[CoordinatorRegisteredRecord, _Mapping]] = ..., coordinator_fenced: _Optional[_Union[CoordinatorFencedRecord, _Mapping]] = ..., shard_assigned: _Optional[_Union[ShardAssignedRecord, _Mapping]] = ..., producer_ids: _Optional[_Union[ProducerIdsRecord, _Mapping]] = ..., user_scram_credential: _Optional[_Union[UserScramCredentialRecord, _Mapping]] = ..., user_scram_credential_removed: _Optional[_Union[UserScramCredentialRemovedRecord, _Mapping]] = ..., acl: _Optional[_Union[AclRecord, _Mapping]] = ..., acl_removed: _Optional[_Union[AclRemovedRecord, _Mapping]] = ..., controller_registered: _Optional[_Union[ControllerRegisteredRecord, _Mapping]] = ..., client_quota: _Optional[_Union[ClientQuotaRecord, _Mapping]] = ...) -> None: ...

class ClusterCreatedRecord(_message.Message):
    __slots__ = ("cluster_id", "created_ms")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    created_ms: int
    def __init__(self, cluster_id: _Optional[str] = ..., created_ms: _Optional[int] = ...) -> None: ...

class BrokerRegisteredRecord(_message.Message):
    __slots__ = ("broker_id", "incarnation_id", "broker_epoch", "endpoint", "fenced")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    endpoint: _common_pb2.Node
    fenced: bool
    def __init__(self, broker_id: _Optional[int] = ..., incarnation_id: _Optional[str] = ..., broker_epoch: _Optional[int] = ..., endpoint: _Optional[_Union[_common_pb2.Node, _Mapping]] = ..., fenced: _Optional[bool] = ...) -> None: ...

class BrokerFencedRecord(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "reason")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    reason: str
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class BrokerUnfencedRecord(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class BrokerUnregisteredRecord(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class TopicCreatedRecord(_message.Message):
    __slots__ = ("name", "topic_id", "is_internal")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    IS_INTERNAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    topic_id: str
    is_internal: bool
    def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., is_internal: _Optional[bool] = ...) -> None: ...

class PartitionRecord(_message.Message):
    __slots__ = ("topic_id", "partition", "replicas", "isr", "leader_id", "leader_epoch", "partition_epoch")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    partition: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    leader_id: int
    leader_epoch: int
    partition_epoch: int
    def __init__(self, topic_id: _Optional[str] = ..., partition: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ...) -> None: ...

class PartitionChangeRecord(_message.Message):
    __slots__ = ("topic_id", "partition", "leader_id", "isr", "replicas", "leader_epoch", "partition_epoch", "reason")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    partition: int
    leader_id: int
    isr: IsrList
    replicas: IsrList
    leader_epoch: int
    partition_epoch: int
    reason: str
    def __init__(self, topic_id: _Optional[str] = ..., partition: _Optional[int] = ..., leader_id: _Optional[int] = ..., isr: _Optional[_Union[IsrList, _Mapping]] = ..., replicas: _Optional[_Union[IsrList, _Mapping]] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class IsrList(_message.Message):
    __slots__ = ("broker_ids",)
    BROKER_IDS_FIELD_NUMBER: _ClassVar[int]
    broker_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, broker_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class TopicDeletedRecord(_message.Message):
    __slots__ = ("topic_id", "name")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    name: str
    def __init__(self, topic_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ConfigRecord(_message.Message):
    __slots__ = ("resource_type", "resource_name", "name", "value")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    resource_type: _common_pb2.ConfigResourceType
    resource_name: str
    name: str
    value: str
    def __init__(self, resource_type: _Optional[_Union[_common_pb2.ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class CoordinatorRegisteredRecord(_message.Message):
    __slots__ = ("coordinator_id", "incarnation_id", "coordinator_epoch", "endpoint")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: int
    incarnation_id: str
    coordinator_epoch: int
    endpoint: _common_pb2.Node
    def __init__(self, coordinator_id: _Optional[int] = ..., incarnation_id: _Optional[str] = ..., coordinator_epoch: _Optional[int] = ..., endpoint: _Optional[_Union[_common_pb2.Node, _Mapping]] = ...) -> None: ...

class CoordinatorFencedRecord(_message.Message):
    __slots__ = ("coordinator_id", "coordinator_epoch", "reason")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: int
    coordinator_epoch: int
    reason: str
    def __init__(self, coordinator_id: _Optional[int] = ..., coordinator_epoch: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ShardAssignedRecord(_message.Message):
    __slots__ = ("shard", "coordinator_id", "shard_epoch", "producer_id")
    SHARD_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    SHARD_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    shard: int
    coordinator_id: int
    shard_epoch: int
    producer_id: int
    def __init__(self, shard: _Optional[int] = ..., coordinator_id: _Optional[int] = ..., shard_epoch: _Optional[int] = ..., producer_id: _Optional[int] = ...) -> None: ...

class ProducerIdsRecord(_message.Message):
    __slots__ = ("node_id", "node_epoch", "next_producer_id")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    NEXT_PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    node_epoch: int
    next_producer_id: int
    def __init__(self, node_id: _Optional[int] = ..., node_epoch: _Optional[int] = ..., next_producer_id: _Optional[int] = ...) -> None: ...

class UserScramCredentialRecord(_message.Message):
    __slots__ = ("name", "mechanism", "salt", "iterations", "stored_key", "server_key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    STORED_KEY_FIELD_NUMBER: _ClassVar[int]
    SERVER_KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[str] = ..., salt: _Optional[bytes] = ..., iterations: _Optional[int] = ..., stored_key: _Optional[bytes] = ..., server_key: _Optional[bytes] = ...) -> None: ...

class UserScramCredentialRemovedRecord(_message.Message):
    __slots__ = ("name", "mechanism")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: str
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[str] = ...) -> None: ...

class AclRecord(_message.Message):
    __slots__ = ("binding",)
    BINDING_FIELD_NUMBER: _ClassVar[int]
    binding: _common_pb2.AclBinding
    def __init__(self, binding: _Optional[_Union[_common_pb2.AclBinding, _Mapping]] = ...) -> None: ...

class AclRemovedRecord(_message.Message):
    __slots__ = ("binding",)
    BINDING_FIELD_NUMBER: _ClassVar[int]
    binding: _common_pb2.AclBinding
    def __init__(self, binding: _Optional[_Union[_common_pb2.AclBinding, _Mapping]] = ...) -> None: ...

class ControllerRegisteredRecord(_message.Message):
    __slots__ = ("endpoint",)
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    endpoint: _common_pb2.Node
    def __init__(self, endpoint: _Optional[_Union[_common_pb2.Node, _Mapping]] = ...) -> None: ...

class QuotaEntityPart(_message.Message):
    __slots__ = ("type", "name")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ClientQuotaRecord(_message.Message):
    __slots__ = ("key", "value", "entity")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: float
    entity: _containers.RepeatedCompositeFieldContainer[QuotaEntityPart]
    def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ..., entity: _Optional[_Iterable[_Union[QuotaEntityPart, _Mapping]]] = ...) -> None: ...
