"""The cluster metadata state machine: a pure core fed by metadata records.

``MetadataImage.apply(offset, record)`` is deterministic and does no I/O and reads no clock: every
node that applies the same ``lanes.v1.MetadataRecord`` sequence holds the same state (the
controller from its metadata log, brokers and coordinators from WatchMetadata). Decisions (what
records to write) are made elsewhere (``lanes.controller.core``); this module only applies them.

Invariants, checked by ``check_invariants`` (tests run it after every step):

- every partition's ISR is a subset of its replicas, and its leader is in the ISR or -1;
- a fenced broker leads nothing;
- leader epochs and partition epochs only grow;
- topic names and ids map one to one.

``to_records`` turns the state back into records (a snapshot): applying them to an empty state
rebuilds an equal state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from lanes.security.acls import AclBinding
from lanes.security.quota_entities import QuotaEntity, candidates, measured_as
from lanes.security.scram import ScramCredential
from lanes.v1 import common_pb2, metadata_pb2

NO_LEADER = -1

#: Client quota keys (Kafka's names): bytes per second on each broker, the percentage of one
#: event loop's time a service process spends on the calls (Kafka's request handler time), and
#: partitions created, added or deleted per second through the active controller (KIP-599).
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE)

#: The two kinds of node that register with the controller and keep a session by heartbeats.
NodeKind = Literal["broker", "coordinator"]


class ProducerIdBlock(NamedTuple):
    """A range of producer ids the controller handed to one broker: ``first_id`` and the
    ``size - 1`` ids after it. Blocks never overlap (``MetadataImage.next_producer_id``)."""

    first_id: int
    size: int

    def ids(self) -> range:
        """Every id of the block, in order."""
        return range(self.first_id, self.first_id + self.size)


@dataclass
class BrokerImage:
    """A registered broker."""

    broker_id: int
    incarnation_id: str
    epoch: int
    host: str
    port: int
    rack: str
    fenced: bool
    internal_port: int = 0
    certificate_port: int = 0
    #: its Kafka listener (0: none)
    kafka_port: int = 0

    @property
    def internal_address(self) -> str:
        """Where other nodes dial it: its internal listener, else its only one."""
        return f"{self.host}:{self.internal_port or self.port}"

    def client_port(self, certificates: bool) -> int:
        """The port clients are told: see ``client_port``."""
        return client_port(self.port, self.certificate_port, certificates)


@dataclass
class PartitionImage:
    """A partition's placement and leadership."""

    topic_id: str
    partition: int
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int


@dataclass
class TopicImage:
    """A topic and its partitions."""

    name: str
    topic_id: str
    internal: bool
    partitions: dict[int, PartitionImage] = field(default_factory=dict)


@dataclass
class CoordinatorImage:
    """A registered group coordinator."""

    coordinator_id: int
    incarnation_id: str
    epoch: int
    host: str
    port: int
    fenced: bool
    internal_port: int = 0
    certificate_port: int = 0

    def client_port(self, certificates: bool) -> int:
        """The port clients are told: see ``client_port``."""
        return client_port(self.port, self.certificate_port, certificates)


@dataclass(frozen=True)
class ControllerImage:
    """Where a controller that has been active listens: ``port`` for clients, ``internal_port``
    (0: none) for nodes, ``certificate_port`` (0: none) for clients with certificates."""

    controller_id: int
    host: str
    port: int
    internal_port: int
    certificate_port: int = 0

    @property
    def internal_address(self) -> str:
        """Where nodes dial it (what ``--voters`` and ``--controller`` name)."""
        return f"{self.host}:{self.internal_port or self.port}"

    def client_port(self, certificates: bool) -> int:
        """The port clients are told: see ``client_port``."""
        return client_port(self.port, self.certificate_port, certificates)


def client_port(port: int, certificate_port: int, certificates: bool) -> int:
    """The port of a node a client is told, as Kafka answers with the listener a request came
    in on: its certificate listener's to a client that called on a certificate listener
    (``certificates``) when the node has one, else its client listener's."""
    return certificate_port if certificates and certificate_port else port


@dataclass(frozen=True)
class ShardImage:
    """Who owns a shard of ``__consumer_offsets`` (coordinator -1: nobody), since which shard
    epoch, and the producer id its owners write with."""

    coordinator_id: int
    shard_epoch: int
    producer_id: int


class MetadataImage:
    """The whole cluster's metadata, as of ``last_offset``."""

    def __init__(self) -> None:
        self.cluster_id = ""
        self.created_ms = 0
        self.last_offset = -1
        self.brokers: dict[int, BrokerImage] = {}
        self.topics: dict[str, TopicImage] = {}  # by topic id
        self.topic_ids: dict[str, str] = {}  # name -> topic id
        self.configs: dict[tuple[int, str], dict[str, str]] = {}  # (resource type, name) -> overrides
        self.coordinators: dict[int, CoordinatorImage] = {}
        self.shards: dict[int, ShardImage] = {}  # shard (partition of __consumer_offsets) -> owner
        self.next_producer_id = 0
        self.scram_credentials: dict[str, dict[str, ScramCredential]] = {}  # user -> mechanism -> credential
        self.acls: set[AclBinding] = set()
        self.acls_offset = -1  # the metadata offset of the last ACL change: a new authorizer is due past it
        self.controllers: dict[int, ControllerImage] = {}
        self.client_quotas: dict[QuotaEntity, dict[str, float]] = {}  # entity -> key -> rate

    # -----------------------------------------------------------------------------------------
    # queries

    def topic(self, name: str) -> TopicImage | None:
        """The topic named ``name``, if it exists."""
        topic_id = self.topic_ids.get(name)
        return self.topics.get(topic_id) if topic_id is not None else None

    def live_coordinators(self) -> list[CoordinatorImage]:
        """Unfenced coordinators, by id."""
        return [c for _, c in sorted(self.coordinators.items()) if not c.fenced]

    def live_brokers(self) -> list[BrokerImage]:
        """Unfenced brokers, by id."""
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]

    def topic_configs(self, name: str) -> dict[str, str]:
        """A topic's config overrides."""
        return dict(self.configs.get((common_pb2.CONFIG_RESOURCE_TYPE_TOPIC, name), {}))

    # -----------------------------------------------------------------------------------------
    # apply

    def apply(self, offset: int, record: metadata_pb2.MetadataRecord) -> None:
        """Apply one record written at metadata ``offset`` (offsets must increase). An empty
        record is the controller quorum's leader-change entry: it changes nothing but the offset."""
        if offset <= self.last_offset:
            raise ValueError(f"metadata offset {offset} is not after {self.last_offset}")
        kind = record.WhichOneof("record")
        if kind is not None:
            getattr(self, f"_apply_{kind}")(getattr(record, kind))
            if kind in ("acl", "acl_removed"):
                self.acls_offset = offset
        self.last_offset = offset

    def _apply_cluster_created(self, record: metadata_pb2.ClusterCreatedRecord) -> None:
        self.cluster_id = record.cluster_id
        self.created_ms = record.created_ms

    def _apply_broker_registered(self, record: metadata_pb2.BrokerRegisteredRecord) -> None:
        self.brokers[record.broker_id] = BrokerImage(
            broker_id=record.broker_id,
            incarnation_id=record.incarnation_id,
            epoch=record.broker_epoch,
            host=record.endpoint.host,
            port=record.endpoint.port,
            rack=record.endpoint.rack,
            fenced=record.fenced,
            internal_port=record.endpoint.internal_port,
            certificate_port=record.endpoint.certificate_port,
            kafka_port=record.endpoint.kafka_port,
        )

    def _apply_broker_fenced(self, record: metadata_pb2.BrokerFencedRecord) -> None:
        broker = self.brokers.get(record.broker_id)
        if broker is not None and broker.epoch == record.broker_epoch:
            broker.fenced = True

    def _apply_broker_unfenced(self, record: metadata_pb2.BrokerUnfencedRecord) -> None:
        broker = self.brokers.get(record.broker_id)
        if broker is not None and broker.epoch == record.broker_epoch:
            broker.fenced = False

    def _apply_broker_unregistered(self, record: metadata_pb2.BrokerUnregisteredRecord) -> None:
        broker = self.brokers.get(record.broker_id)
        if broker is not None and broker.epoch == record.broker_epoch:
            del self.brokers[record.broker_id]

    def _apply_topic_created(self, record: metadata_pb2.TopicCreatedRecord) -> None:
        self.topics[record.topic_id] = TopicImage(record.name, record.topic_id, record.is_internal)
        self.topic_ids[record.name] = record.topic_id

    def _apply_partition(self, record: metadata_pb2.PartitionRecord) -> None:
        topic = self.topics[record.topic_id]
        topic.partitions[record.partition] = PartitionImage(
            topic_id=record.topic_id,
            partition=record.partition,
            replicas=list(record.replicas),
            isr=list(record.isr),
            leader=record.leader_id,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
        )

    def _apply_partition_change(self, record: metadata_pb2.PartitionChangeRecord) -> None:
        partition = self.topics[record.topic_id].partitions[record.partition]
        if record.HasField("leader_id"):
            partition.leader = record.leader_id
        if record.HasField("isr"):
            partition.isr = list(record.isr.broker_ids)
        if record.HasField("replicas"):
            partition.replicas = list(record.replicas.broker_ids)
        partition.leader_epoch = record.leader_epoch
        partition.partition_epoch = record.partition_epoch

    def _apply_topic_deleted(self, record: metadata_pb2.TopicDeletedRecord) -> None:
        topic = self.topics.pop(record.topic_id, None)
        if topic is not None:
            del self.topic_ids[topic.name]
            self.configs.pop((common_pb2.CONFIG_RESOURCE_TYPE_TOPIC, topic.name), None)

    def _apply_config(self, record: metadata_pb2.ConfigRecord) -> None:
        key = (record.resource_type, record.resource_name)
        values = self.configs.setdefault(key, {})
        if record.HasField("value"):
            values[record.name] = record.value
        else:
            values.pop(record.name, None)
        if not values:
            del self.configs[key]

    def _apply_coordinator_registered(self, record: metadata_pb2.CoordinatorRegisteredRecord) -> None:
        self.coordinators[record.coordinator_id] = CoordinatorImage(
            coordinator_id=record.coordinator_id,
            incarnation_id=record.incarnation_id,
            epoch=record.coordinator_epoch,
            host=record.endpoint.host,
            port=record.endpoint.port,
            fenced=False,
            internal_port=record.endpoint.internal_port,
            certificate_port=record.endpoint.certificate_port,
        )

    def _apply_coordinator_fenced(self, record: metadata_pb2.CoordinatorFencedRecord) -> None:
        coordinator = self.coordinators.get(record.coordinator_id)
        if coordinator is not None and coordinator.epoch == record.coordinator_epoch:
            coordinator.fenced = True

    def _apply_shard_assigned(self, record: metadata_pb2.ShardAssignedRecord) -> None:
        self.shards[record.shard] = ShardImage(record.coordinator_id, record.shard_epoch, record.producer_id)

    def _apply_producer_ids(self, record: metadata_pb2.ProducerIdsRecord) -> None:
        self.next_producer_id = max(self.next_producer_id, record.next_producer_id)

    def _apply_controller_registered(self, record: metadata_pb2.ControllerRegisteredRecord) -> None:
        endpoint = record.endpoint
        self.controllers[endpoint.node_id] = ControllerImage(
            endpoint.node_id, endpoint.host, endpoint.port, endpoint.internal_port, endpoint.certificate_port
        )

    def _apply_client_quota(self, record: metadata_pb2.ClientQuotaRecord) -> None:
        entity = QuotaEntity.from_proto(list(record.entity))
        if entity is None:  # a record of an older, never released shape: no entity to hold it
            return
        quotas = self.client_quotas.setdefault(entity, {})
        if record.HasField("value"):
            quotas[record.key] = record.value
        else:
            quotas.pop(record.key, None)
        if not quotas:
            del self.client_quotas[entity]

    def client_quota(self, user: str, client_id: str, key: str) -> tuple[QuotaEntity, float] | None:
        """The quota a call of ``user`` with ``client_id`` falls under for ``key`` (Kafka's
        precedence, ``lanes.security.quota_entities``): what it is measured as, and the rate;
        None without one."""
        if not self.client_quotas:
            return None
        for entity in candidates(user, client_id):
            rate = self.client_quotas.get(entity, {}).get(key)
            if rate is not None:
                return measured_as(entity, user, client_id), rate
        return None

    def controller_at(self, internal_address: str) -> ControllerImage | None:
        """The controller nodes dial at ``internal_address``, if it registered."""
        return next((c for c in self.controllers.values() if c.internal_address == internal_address), None)

    def _apply_user_scram_credential(self, record: metadata_pb2.UserScramCredentialRecord) -> None:
        self.scram_credentials.setdefault(record.name, {})[record.mechanism] = ScramCredential(
            record.mechanism, record.salt, record.iterations, record.stored_key, record.server_key
        )

    def _apply_user_scram_credential_removed(self, record: metadata_pb2.UserScramCredentialRemovedRecord) -> None:
        credentials = self.scram_credentials.get(record.name, {})
        credentials.pop(record.mechanism, None)
        if not credentials:
            self.scram_credentials.pop(record.name, None)

    def _apply_acl(self, record: metadata_pb2.AclRecord) -> None:
        self.acls.add(AclBinding.from_proto(record.binding))

    def _apply_acl_removed(self, record: metadata_pb2.AclRemovedRecord) -> None:
        self.acls.discard(AclBinding.from_proto(record.binding))

    # -----------------------------------------------------------------------------------------
    # snapshots and checks

    @classmethod
    def from_snapshot(cls, records: list[metadata_pb2.MetadataRecord], at_offset: int) -> MetadataImage:
        """The state a snapshot (``to_records()`` output) describes, as of metadata ``at_offset``."""
        state = cls()
        for index, record in enumerate(records):
            state.apply(index, record)  # snapshot records carry no offsets of their own
        state.last_offset = at_offset
        state.acls_offset = at_offset if state.acls else -1
        return state

    def to_records(self) -> list[metadata_pb2.MetadataRecord]:
        """Records that rebuild this state from empty (a snapshot)."""
        records = []
        if self.cluster_id:
            records.append(
                metadata_pb2.MetadataRecord(
                    cluster_created=metadata_pb2.ClusterCreatedRecord(
                        cluster_id=self.cluster_id, created_ms=self.created_ms
                    )
                )
            )
        for broker in sorted(self.brokers.values(), key=lambda b: b.broker_id):
            records.append(
                metadata_pb2.MetadataRecord(
                    broker_registered=metadata_pb2.BrokerRegisteredRecord(
                        broker_id=broker.broker_id,
                        incarnation_id=broker.incarnation_id,
                        broker_epoch=broker.epoch,
                        endpoint=common_pb2.Node(
                            node_id=broker.broker_id,
                            host=broker.host,
                            port=broker.port,
                            rack=broker.rack,
                            internal_port=broker.internal_port,
                            certificate_port=broker.certificate_port,
                            kafka_port=broker.kafka_port,
                        ),
                        fenced=broker.fenced,
                    )
                )
            )
        for topic in sorted(self.topics.values(), key=lambda t: t.name):
            records.append(
                metadata_pb2.MetadataRecord(
                    topic_created=metadata_pb2.TopicCreatedRecord(
                        name=topic.name, topic_id=topic.topic_id, is_internal=topic.internal
                    )
                )
            )
            for partition in sorted(topic.partitions.values(), key=lambda p: p.partition):
                records.append(metadata_pb2.MetadataRecord(partition=partition_record(partition)))
        for (resource_type, name), values in sorted(self.configs.items()):
            for config_name, value in sorted(values.items()):
                records.append(
                    metadata_pb2.MetadataRecord(
                        config=metadata_pb2.ConfigRecord(
                            resource_type=resource_type,  # type: ignore[arg-type]
                            resource_name=name,
                            name=config_name,
                            value=value,
                        )
                    )
                )
        for coordinator in sorted(self.coordinators.values(), key=lambda c: c.coordinator_id):
            records.append(
                metadata_pb2.MetadataRecord(
                    coordinator_registered=metadata_pb2.CoordinatorRegisteredRecord(
                        coordinator_id=coordinator.coordinator_id,
                        incarnation_id=coordinator.incarnation_id,
                        coordinator_epoch=coordinator.epoch,
                        endpoint=common_pb2.Node(
                            node_id=coordinator.coordinator_id,
                            host=coordinator.host,
                            port=coordinator.port,
                            internal_port=coordinator.internal_port,
                            certificate_port=coordinator.certificate_port,
                        ),
                    )
                )
            )
            if coordinator.fenced:
                records.append(
                    metadata_pb2.MetadataRecord(
                        coordinator_fenced=metadata_pb2.CoordinatorFencedRecord(
                            coordinator_id=coordinator.coordinator_id, coordinator_epoch=coordinator.epoch
                        )
                    )
                )
        for shard, owner in sorted(self.shards.items()):
            records.append(
                metadata_pb2.MetadataRecord(
                    shard_assigned=metadata_pb2.ShardAssignedRecord(
                        shard=shard,
                        coordinator_id=owner.coordinator_id,
                        shard_epoch=owner.shard_epoch,
                        producer_id=owner.producer_id,
                    )
                )
            )
        for controller in sorted(self.controllers.values(), key=lambda c: c.controller_id):
            records.append(
                metadata_pb2.MetadataRecord(
                    controller_registered=metadata_pb2.ControllerRegisteredRecord(
                        endpoint=common_pb2.Node(
                            node_id=controller.controller_id,
                            host=controller.host,
                            port=controller.port,
                            internal_port=controller.internal_port,
                            certificate_port=controller.certificate_port,
                        )
                    )
                )
            )
        for name, credentials in sorted(self.scram_credentials.items()):
            records.extend(credential_record(name, stored) for _, stored in sorted(credentials.items()))
        for entity, quotas in sorted(self.client_quotas.items(), key=lambda item: item[0].sort_key()):
            for key, rate in sorted(quotas.items()):
                records.append(
                    metadata_pb2.MetadataRecord(
                        client_quota=metadata_pb2.ClientQuotaRecord(entity=entity.to_proto(), key=key, value=rate)
                    )
                )
        for acl in sorted(self.acls):
            records.append(metadata_pb2.MetadataRecord(acl=metadata_pb2.AclRecord(binding=acl.to_proto())))
        if self.next_producer_id:
            records.append(
                metadata_pb2.MetadataRecord(
                    producer_ids=metadata_pb2.ProducerIdsRecord(next_producer_id=self.next_producer_id)
                )
            )
        return records

    def check_invariants(self) -> None:
        """Raise AssertionError naming the first broken invariant (see the module docstring)."""
        if {t.name: t.topic_id for t in self.topics.values()} != self.topic_ids:
            raise AssertionError("topic names and ids do not map one to one")
        for topic in self.topics.values():
            for partition in topic.partitions.values():
                where = f"{topic.name}-{partition.partition}"
                if not set(partition.isr) <= set(partition.replicas):
                    raise AssertionError(f"{where}: ISR {partition.isr} not within replicas {partition.replicas}")
                if partition.leader != NO_LEADER and partition.leader not in partition.isr:
                    raise AssertionError(f"{where}: leader {partition.leader} not in ISR {partition.isr}")
                leader = self.brokers.get(partition.leader)
                if partition.leader != NO_LEADER and (leader is None or leader.fenced):
                    raise AssertionError(f"{where}: leader {partition.leader} is fenced or unknown")


def credential_record(name: str, stored: ScramCredential) -> metadata_pb2.MetadataRecord:
    """The record that sets user ``name``'s credential of ``stored.mechanism``."""
    return metadata_pb2.MetadataRecord(
        user_scram_credential=metadata_pb2.UserScramCredentialRecord(
            name=name,
            mechanism=stored.mechanism,
            salt=stored.salt,
            iterations=stored.iterations,
            stored_key=stored.stored_key,
            server_key=stored.server_key,
        )
    )


def partition_record(partition: PartitionImage) -> metadata_pb2.PartitionRecord:
    """The full record of a partition's state."""
    return metadata_pb2.PartitionRecord(
        topic_id=partition.topic_id,
        partition=partition.partition,
        replicas=partition.replicas,
        isr=partition.isr,
        leader_id=partition.leader,
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition.partition_epoch,
    )
