"""The controller's decisions: which metadata records a request or an event produces.

Pure like the state machine it reads: ``MetadataImage``, randomness and id generation are
injected, and nothing here writes anything. The service shell validates a request here, appends
the returned records to the metadata log, applies them to the state, then answers. Decisions
are taken one at a time against the current state, so the records of one decision are valid
when applied in order.

Leadership rules (DESIGN.md sections 6-7):

- a new partition's ISR is its replicas, its leader the first (preferred) replica;
- when a broker is fenced it leaves every ISR, except that a partition's last ISR member stays
  in the ISR without leading (the partition is offline): it holds every acknowledged record and
  leads again when it returns; each leader change bumps the leader epoch; every change bumps the
  partition epoch;
- a new leader is the first live ISR member in replica order; with none, the partition stays
  offline unless the topic sets ``unclean.leader.election.enable`` (then any live replica leads,
  alone in the ISR: acknowledged records may be lost);
- ISR changes come from the leader (AlterPartition), fenced by broker epoch, leader epoch and
  partition epoch; added members must be live.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lanes.controller.placement import BrokerSlot, assign_replicas
from lanes.errors import ErrorCode, LanesError
from lanes.metadata.image import (
    NO_LEADER,
    QUOTA_KEYS,
    BrokerImage,
    CoordinatorImage,
    MetadataImage,
    NodeKind,
    PartitionImage,
    ProducerIdBlock,
    ShardImage,
    TopicImage,
    credential_record,
)
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC, collision_key, validate_topic_name
from lanes.security import scram
from lanes.security.acls import NODE_NAME, AclBinding
from lanes.security.quota_entities import QuotaEntity
from lanes.topic_configs import MIN_SEGMENT_BYTES, TOPIC_CONFIGS, parse_topic_configs
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


#: configs of internal topics only the cluster sets (their groups' records must fit and stay)
INTERNAL_TOPIC_MANAGED_CONFIGS = frozenset(
    {"cleanup.policy", "max.message.bytes", "retention.ms", "retention.bytes", "min.insync.replicas", "segment.bytes"}
)
#: the most partitions one CreateTopics or CreatePartitions entry may make (Kafka's controller
#: refuses user operations of more than 10,000 records)
MAX_PARTITIONS_PER_REQUEST = 10_000
#: the most partitions (internal topics included) a cluster holds by default
MAX_PARTITIONS = 100_000
#: the most ACLs, and users with credentials, the metadata log holds (each is in every snapshot)
MAX_ACLS = 100_000
MAX_USERS = 100_000
#: the most quota entities (users, client ids and pairs) it holds
MAX_QUOTA_ENTITIES = 100_000


class ControllerCore:
    """Decides; the caller appends and applies. One instance per active controller."""

    def __init__(
        self,
        image: MetadataImage,
        *,
        rng: random.Random,
        new_id: Callable[[], str],
        default_partitions: int = 1,
        default_replication_factor: int = 1,
        producer_id_block_size: int = 1000,
        offsets_topic_partitions: int = 50,
        max_partitions: int = MAX_PARTITIONS,
        min_segment_bytes: int = MIN_SEGMENT_BYTES,
    ) -> None:
        self.image = image
        self.min_segment_bytes = min_segment_bytes
        self.offsets_topic_partitions = offsets_topic_partitions
        self.max_partitions = max_partitions
        self._rng = rng
        self._new_id = new_id
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.producer_id_block_size = producer_id_block_size

    def _config_refusal(self, overrides: dict[str, str], changed: set[str] | None = None) -> ControllerDecision | None:
        """Why a topic may not have ``overrides``, if it may not: each must parse and keep its
        rule (``lanes.topic_configs``), and ``segment.bytes``, when set now (``changed``: the
        names being changed; None: all), is at least the cluster's ``min_segment_bytes`` (a
        topic made before the floor keeps its segments until they are changed)."""
        try:
            values = parse_topic_configs(overrides)
        except LanesError as exc:
            return ControllerDecision.refuse(exc.code, exc.message)
        if (changed is None or "segment.bytes" in changed) and values.get(
            "segment.bytes", self.min_segment_bytes
        ) < self.min_segment_bytes:
            return ControllerDecision.refuse(
                ErrorCode.INVALID_CONFIG,
                f"segment.bytes={values['segment.bytes']} is invalid: must be at least {self.min_segment_bytes} "
                "(the controller's --min-segment-bytes)",
            )
        return None

    def _next_offset(self, decision: ControllerDecision) -> int:
        """The metadata offset the next record of ``decision`` will get."""
        return self.image.last_offset + 1 + len(decision.records)

    # -----------------------------------------------------------------------------------------
    # cluster and brokers

    def create_cluster(self, now_ms: int) -> ControllerDecision:
        """The first record of a new cluster (nothing when it exists)."""
        if self.image.cluster_id:
            return ControllerDecision()
        created = metadata_pb2.ClusterCreatedRecord(cluster_id=self._new_id(), created_ms=now_ms)
        return ControllerDecision([MetadataRecord(cluster_created=created)])

    def register_controller(self, endpoint: common_pb2.Node) -> ControllerDecision:
        """Record where this (active) controller listens, when the image does not say so yet."""
        known = self.image.controllers.get(endpoint.node_id)
        if known is not None and (known.host, known.port, known.internal_port, known.certificate_port) == (
            endpoint.host,
            endpoint.port,
            endpoint.internal_port,
            endpoint.certificate_port,
        ):
            return ControllerDecision()
        registered = metadata_pb2.ControllerRegisteredRecord(endpoint=endpoint)
        return ControllerDecision([MetadataRecord(controller_registered=registered)])

    def bootstrap_users(self, users: Sequence[tuple[str, scram.ScramCredential]]) -> ControllerDecision:
        """Credentials for users that have none yet (the first administrator of a new cluster,
        Kafka's ``kafka-storage format --add-scram``); existing ones are never replaced."""
        return ControllerDecision(
            [credential_record(name, stored) for name, stored in users if name not in self.image.scram_credentials]
        )

    def _nodes(self, kind: NodeKind) -> Mapping[int, BrokerImage | CoordinatorImage]:
        return self.image.brokers if kind == "broker" else self.image.coordinators

    def register(
        self,
        kind: NodeKind,
        node_id: int,
        incarnation_id: str,
        *,
        cluster_id: str,
        host: str,
        port: int,
        rack: str = "",
        internal_port: int = 0,
        certificate_port: int = 0,
        previous_session_alive: bool = False,
    ) -> ControllerDecision:
        """Register a broker (fenced until it has caught up with the metadata log) or a group
        coordinator (live at once; the shards are rebalanced onto it).

        Its epoch is the offset of its registration record. A new incarnation of a live id is
        refused while the old one's session lasts (``previous_session_alive``); otherwise the old
        registration is fenced first: a broker's leaderships move away, and every shard a
        coordinator owned gets a new shard epoch, since the new process must load it afresh.
        """
        if cluster_id and cluster_id != self.image.cluster_id:
            whose = f"broker {node_id}'s data" if kind == "broker" else f"coordinator {node_id}"
            return ControllerDecision.refuse(
                ErrorCode.INCONSISTENT_CLUSTER_ID,
                f"{whose} belongs to cluster {cluster_id}, this is {self.image.cluster_id}",
            )
        existing = self._nodes(kind).get(node_id)
        decision = ControllerDecision()
        if existing is not None and not existing.fenced:
            if existing.incarnation_id != incarnation_id and previous_session_alive:
                return ControllerDecision.refuse(
                    ErrorCode.DUPLICATE_BROKER_REGISTRATION,
                    f"{kind} id {node_id} is registered by another live process; "
                    "wait for its session to expire or use another id",
                )
            if kind == "broker":
                decision.records.extend(self.fence(kind, node_id, "re-registered").records)
            else:  # its shards move below, with the new registration
                decision.records.append(self._coordinator_fenced(node_id, existing.epoch, "re-registered"))
        epoch = self._next_offset(decision)
        endpoint = common_pb2.Node(
            node_id=node_id,
            host=host,
            port=port,
            rack=rack if kind == "broker" else "",
            internal_port=internal_port,
            certificate_port=certificate_port,
        )
        if kind == "broker":
            registered = metadata_pb2.BrokerRegisteredRecord(
                broker_id=node_id, incarnation_id=incarnation_id, broker_epoch=epoch, endpoint=endpoint, fenced=True
            )
            decision.records.append(MetadataRecord(broker_registered=registered))
            return decision
        coordinator = metadata_pb2.CoordinatorRegisteredRecord(
            coordinator_id=node_id, incarnation_id=incarnation_id, coordinator_epoch=epoch, endpoint=endpoint
        )
        decision.records.append(MetadataRecord(coordinator_registered=coordinator))
        live = {c.coordinator_id for c in self.image.live_coordinators()} | {node_id}
        decision.records.extend(self._shard_moves(live, restarted={node_id}))
        return decision

    def _check(self, kind: NodeKind, node_id: int, epoch: int) -> ControllerDecision | None:
        """A refusal unless ``epoch`` is the node's current registration. A fenced broker may
        still heartbeat (to be unfenced once caught up); a fenced coordinator must register again."""
        node = self._nodes(kind).get(node_id)
        if node is None:
            return ControllerDecision.refuse(ErrorCode.BROKER_ID_NOT_REGISTERED, f"{kind} {node_id} is not registered")
        if kind == "broker" and node.epoch != epoch:
            return ControllerDecision.refuse(
                ErrorCode.STALE_BROKER_EPOCH,
                f"broker {node_id} epoch {epoch} is stale (current {node.epoch}): register again",
            )
        if kind == "coordinator" and (node.epoch != epoch or node.fenced):
            return ControllerDecision.refuse(
                ErrorCode.STALE_BROKER_EPOCH,
                f"coordinator {node_id} epoch {epoch} is stale or fenced: register again",
            )
        return None

    def heartbeat(self, kind: NodeKind, node_id: int, epoch: int, applied_offset: int = -1) -> ControllerDecision:
        """A live node. A fenced broker is unfenced once it has applied its own registration
        (``applied_offset``), and offline partitions whose ISR holds it get it back as leader."""
        refused = self._check(kind, node_id, epoch)
        if refused is not None or kind == "coordinator":
            return refused or ControllerDecision()
        broker = self.image.brokers[node_id]
        if not broker.fenced or applied_offset < broker.epoch:
            return ControllerDecision()
        unfenced = metadata_pb2.BrokerUnfencedRecord(broker_id=node_id, broker_epoch=broker.epoch)
        decision = ControllerDecision([MetadataRecord(broker_unfenced=unfenced)])
        for topic, partition in self._partitions():
            if partition.leader == NO_LEADER and node_id in partition.isr:
                decision.records.append(self._change(partition, leader=node_id, reason="leader returned"))
            elif partition.leader == NO_LEADER and node_id in partition.replicas and self._unclean(topic):
                decision.records.append(
                    self._change(partition, leader=node_id, isr=[node_id], reason="unclean election")
                )
        return decision

    def shut_down(self, kind: NodeKind, node_id: int, epoch: int) -> ControllerDecision:
        """A node asks to leave: fence it, so its leaderships (or shards) move first."""
        return self._check(kind, node_id, epoch) or self.fence(kind, node_id, "controlled shutdown")

    def fence(self, kind: NodeKind, node_id: int, reason: str) -> ControllerDecision:
        """Fence a node (session expired, shutdown). A broker leaves every ISR and its
        leaderships move; a coordinator's shards move to the live ones."""
        node = self._nodes(kind).get(node_id)
        if node is None or node.fenced:
            return ControllerDecision()
        if kind == "coordinator":
            decision = ControllerDecision([self._coordinator_fenced(node_id, node.epoch, reason)])
            live = {c.coordinator_id for c in self.image.live_coordinators()} - {node_id}
            decision.records.extend(self._shard_moves(live))
            return decision
        fenced = metadata_pb2.BrokerFencedRecord(broker_id=node_id, broker_epoch=node.epoch, reason=reason)
        decision = ControllerDecision([MetadataRecord(broker_fenced=fenced)])
        for topic, partition in self._partitions():
            if node_id not in partition.isr and partition.leader != node_id:
                continue
            isr = [b for b in partition.isr if b != node_id] or [node_id]
            if partition.leader != node_id:
                if isr != partition.isr:
                    decision.records.append(self._change(partition, isr=isr, reason=f"broker {node_id} {reason}"))
                continue
            leader, isr = self._elect(topic, partition, isr, exclude=node_id)
            decision.records.append(self._change(partition, leader=leader, isr=isr, reason=f"leader {reason}"))
        return decision

    def _elect(
        self, topic: TopicImage, partition: PartitionImage, isr: list[int], exclude: int
    ) -> tuple[int, list[int]]:
        """(new leader, ISR) after ``exclude`` stops leading; NO_LEADER when none may lead."""
        live = {b.broker_id for b in self.image.live_brokers()} - {exclude}
        for replica in partition.replicas:
            if replica in isr and replica in live:
                return replica, [b for b in isr if b in live or b == replica] or [replica]
        if self._unclean(topic):
            for replica in partition.replicas:
                if replica in live:
                    return replica, [replica]
        return NO_LEADER, isr

    def _unclean(self, topic: TopicImage) -> bool:
        value = self.image.topic_configs(topic.name).get("unclean.leader.election.enable", "false")
        return value.lower() == "true"

    # -----------------------------------------------------------------------------------------
    # group coordinators and their shards

    @staticmethod
    def _coordinator_fenced(coordinator_id: int, epoch: int, reason: str) -> MetadataRecord:
        return MetadataRecord(
            coordinator_fenced=metadata_pb2.CoordinatorFencedRecord(
                coordinator_id=coordinator_id, coordinator_epoch=epoch, reason=reason
            )
        )

    def ensure_offsets_topic(self) -> ControllerDecision:
        """Create ``__consumer_offsets`` once a coordinator exists and as many brokers are live as
        the cluster's default replication factor, and give its shards to the live coordinators.
        Nothing when it exists or cannot be created yet.

        The factor is never lowered to the brokers registered so far (as Kafka's
        ``offsets.topic.replication.factor``): brokers register one by one as a cluster starts,
        and the first one alone must not get every shard's only copy."""
        if self.image.topic(CONSUMER_OFFSETS_TOPIC) is not None or not self.image.live_coordinators():
            return ControllerDecision()
        factor = max(1, self.default_replication_factor)
        if len(self.image.live_brokers()) < factor:
            return ControllerDecision()
        decision = self.create_internal_topic(CONSUMER_OFFSETS_TOPIC, self.offsets_topic_partitions, factor)
        if decision.error is not ErrorCode.NONE:
            return decision
        live = {c.coordinator_id for c in self.image.live_coordinators()}
        decision.records.extend(self._shard_moves(live, shard_count=self.offsets_topic_partitions))
        return decision

    def _shard_moves(
        self, live: set[int], *, restarted: frozenset[int] | set[int] = frozenset(), shard_count: int | None = None
    ) -> list[MetadataRecord]:
        """ShardAssigned records that give every shard to a live coordinator, balanced (owned
        counts differ by at most one) and sticky (a shard moves only when its owner is gone,
        restarted, or holds more than its share). A moved shard gets the next shard epoch."""
        if shard_count is None:
            topic = self.image.topic(CONSUMER_OFFSETS_TOPIC)
            shard_count = len(topic.partitions) if topic is not None else 0
        if shard_count == 0:
            return []
        owner: dict[int, int] = {}
        load = dict.fromkeys(sorted(live), 0)
        ceiling = -(-shard_count // len(live)) if live else 0
        for shard in range(shard_count):
            keeper = self.image.shards[shard].coordinator_id if shard in self.image.shards else -1
            if keeper in load and keeper not in restarted and load[keeper] < ceiling:
                owner[shard] = keeper
                load[keeper] += 1
        for shard in range(shard_count):
            if shard not in owner and load:
                chosen = min(load, key=lambda c: (load[c], c))
                owner[shard] = chosen
                load[chosen] += 1
        while load and max(load.values()) - min(load.values()) > 1:
            donor = max(load, key=lambda c: (load[c], -c))
            receiver = min(load, key=lambda c: (load[c], c))
            shard = max(s for s, c in owner.items() if c == donor)
            owner[shard] = receiver
            load[donor] -= 1
            load[receiver] += 1
        records = []
        next_producer_id = self.image.next_producer_id
        for shard in range(shard_count):
            current = self.image.shards.get(shard)
            new_owner = owner.get(shard, -1)
            moved = current is None or current.coordinator_id != new_owner or new_owner in restarted
            if not moved:
                continue
            if current is None:
                shard_info = ShardImage(new_owner, 1, next_producer_id)
                next_producer_id += 1
            else:
                shard_info = ShardImage(new_owner, current.shard_epoch + 1, current.producer_id)
            records.append(
                MetadataRecord(
                    shard_assigned=metadata_pb2.ShardAssignedRecord(
                        shard=shard,
                        coordinator_id=shard_info.coordinator_id,
                        shard_epoch=shard_info.shard_epoch,
                        producer_id=shard_info.producer_id,
                    )
                )
            )
        if next_producer_id != self.image.next_producer_id:
            records.append(
                MetadataRecord(
                    producer_ids=metadata_pb2.ProducerIdsRecord(node_id=-1, next_producer_id=next_producer_id)
                )
            )
        return records

    # -----------------------------------------------------------------------------------------
    # topics

    def create_topic(self, request: NewTopic, *, validate_only: bool = False) -> ControllerDecision:
        """Create one topic: validated name, configs, partitions and replication factor."""
        try:
            validate_topic_name(request.name)
        except LanesError as exc:
            return ControllerDecision.refuse(exc.code, exc.message)
        if request.name in self.image.topic_ids:
            return ControllerDecision.refuse(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {request.name!r} already exists")
        clash = next(
            (name for name in self.image.topic_ids if collision_key(name) == collision_key(request.name)), None
        )
        if clash is not None:
            return ControllerDecision.refuse(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"topic {request.name!r} collides with existing topic {clash!r}: '.' and '_' are the same in metric "
                "names; choose another name",
            )
        refused = self._config_refusal(dict(request.configs))
        if refused is not None:
            return refused
        assignments, refused = self._assignments(request)
        if refused is not None:
            return refused
        if validate_only:
            return ControllerDecision()
        return self._topic_records(request.name, assignments, request.configs, internal=False)

    def create_internal_topic(self, name: str, num_partitions: int, replication_factor: int) -> ControllerDecision:
        """Create an internal topic (``__`` prefix) such as ``__consumer_offsets``."""
        validate_topic_name(name, allow_internal=True)
        if name in self.image.topic_ids:
            return ControllerDecision.refuse(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        live = self.image.live_brokers()
        replication_factor = min(replication_factor, len(live))
        slots = [BrokerSlot(b.broker_id, b.rack) for b in live]
        try:
            assignments = assign_replicas(num_partitions, replication_factor, slots, self._rng)
        except LanesError as exc:
            return ControllerDecision.refuse(exc.code, exc.message)
        return self._topic_records(name, assignments, (("cleanup.policy", "compact"),), internal=True)

    def _partition_count_refusal(self, new_partitions: int) -> ControllerDecision | None:
        """Bounds on partitions: at most ``MAX_PARTITIONS_PER_REQUEST`` made by one request (placing
        them runs on the controller's loop), at most ``max_partitions`` in the cluster."""
        if new_partitions > MAX_PARTITIONS_PER_REQUEST:
            return ControllerDecision.refuse(
                ErrorCode.INVALID_PARTITIONS,
                f"{new_partitions} new partitions in one request; at most {MAX_PARTITIONS_PER_REQUEST} "
                "(create or grow the topic in steps)",
            )
        existing = sum(len(topic.partitions) for topic in self.image.topics.values())
        if existing + new_partitions > self.max_partitions:
            return ControllerDecision.refuse(
                ErrorCode.POLICY_VIOLATION,
                f"the cluster has {existing} partitions; {new_partitions} more would pass its limit of "
                f"{self.max_partitions} (the controller's --max-partitions)",
            )
        return None

    def _assignments(self, request: NewTopic) -> tuple[list[list[int]], ControllerDecision | None]:
        live = self.image.live_brokers()
        wanted = len(request.assignments) or (
            self.default_partitions if request.num_partitions is None else request.num_partitions
        )
        too_many = self._partition_count_refusal(wanted)
        if too_many is not None:
            return [], too_many
        if request.assignments:
            if request.num_partitions is not None or request.replication_factor is not None:
                return [], ControllerDecision.refuse(
                    ErrorCode.INVALID_REQUEST,
                    "give either explicit replica assignments or partitions and replication factor, not both",
                )
            refused = self._check_assignments(request.assignments, len(request.assignments[0]))
            return [list(a) for a in request.assignments], refused
        partitions = self.default_partitions if request.num_partitions is None else request.num_partitions
        factor = self.default_replication_factor if request.replication_factor is None else request.replication_factor
        if factor > len(live):
            return [], ControllerDecision.refuse(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"replication factor {factor} is larger than the {len(live)} live brokers; "
                "start more brokers or lower the replication factor",
            )
        try:
            slots = [BrokerSlot(b.broker_id, b.rack) for b in live]
            return assign_replicas(partitions, factor, slots, self._rng), None
        except LanesError as exc:
            return [], ControllerDecision.refuse(exc.code, exc.message)

    def _check_assignments(self, assignments: Sequence[Sequence[int]], factor: int) -> ControllerDecision | None:
        for partition, replicas in enumerate(assignments):
            problem = None
            if len(replicas) != factor or not replicas:
                problem = f"partition {partition} has {len(replicas)} replicas where the others have {factor}"
            elif len(set(replicas)) != len(replicas):
                problem = f"partition {partition} lists a broker twice: {list(replicas)}"
            elif any(b not in self.image.brokers for b in replicas):
                unknown = sorted(b for b in replicas if b not in self.image.brokers)
                problem = f"partition {partition} names unregistered brokers {unknown}"
            if problem is not None:
                return ControllerDecision.refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
        return None

    def _topic_records(
        self, name: str, assignments: list[list[int]], configs: Iterable[tuple[str, str]], *, internal: bool
    ) -> ControllerDecision:
        topic_id = self._new_id()
        records = [
            MetadataRecord(
                topic_created=metadata_pb2.TopicCreatedRecord(name=name, topic_id=topic_id, is_internal=internal)
            )
        ]
        for config_name, value in configs:
            records.append(
                MetadataRecord(
                    config=metadata_pb2.ConfigRecord(
                        resource_type=TOPIC, resource_name=name, name=config_name, value=value
                    )
                )
            )
        live = {b.broker_id for b in self.image.live_brokers()}
        for partition, replicas in enumerate(assignments):
            records.append(MetadataRecord(partition=self._new_partition(topic_id, partition, replicas, live)))
        return ControllerDecision(records)

    @staticmethod
    def _new_partition(
        topic_id: str, partition: int, replicas: list[int], live: set[int]
    ) -> metadata_pb2.PartitionRecord:
        isr = [b for b in replicas if b in live] or list(replicas)
        leader = next((b for b in replicas if b in live), NO_LEADER)
        return metadata_pb2.PartitionRecord(
            topic_id=topic_id,
            partition=partition,
            replicas=replicas,
            isr=isr,
            leader_id=leader,
            leader_epoch=0,
            partition_epoch=0,
        )

    def delete_topic(self, name: str) -> ControllerDecision:
        """Delete a topic (brokers remove its data when they see the record)."""
        topic = self.image.topic(name)
        if topic is None:
            return ControllerDecision.refuse(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        if topic.internal:
            return ControllerDecision.refuse(
                ErrorCode.INVALID_TOPIC_EXCEPTION, f"{name!r} is an internal topic and cannot be deleted"
            )
        return ControllerDecision(
            [MetadataRecord(topic_deleted=metadata_pb2.TopicDeletedRecord(topic_id=topic.topic_id, name=name))]
        )

    def create_partitions(
        self, name: str, total: int, assignments: Sequence[Sequence[int]] = (), *, validate_only: bool = False
    ) -> ControllerDecision:
        """Grow a topic to ``total`` partitions."""
        topic = self.image.topic(name)
        if topic is None:
            return ControllerDecision.refuse(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        current = len(topic.partitions)
        if total <= current:
            verb = "already has" if total == current else "has"
            return ControllerDecision.refuse(
                ErrorCode.INVALID_PARTITIONS,
                f"topic {name!r} {verb} {current} partitions; a topic can only grow (removing partitions would "
                f"lose their records and remap keys), so ask for more than {current}",
            )
        too_many = self._partition_count_refusal(total - current)
        if too_many is not None:
            return too_many
        factor = len(topic.partitions[0].replicas)
        if assignments:
            if len(assignments) != total - current:
                return ControllerDecision.refuse(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"{len(assignments)} assignments given for {total - current} new partitions",
                )
            refused = self._check_assignments(assignments, factor)
            if refused is not None:
                return refused
            placed = [list(a) for a in assignments]
        else:
            live = self.image.live_brokers()
            try:
                placed = assign_replicas(
                    total - current,
                    factor,
                    [BrokerSlot(b.broker_id, b.rack) for b in live],
                    self._rng,
                    first_partition=current,
                )
            except LanesError as exc:
                return ControllerDecision.refuse(exc.code, exc.message)
        if validate_only:
            return ControllerDecision()
        live_ids = {b.broker_id for b in self.image.live_brokers()}
        return ControllerDecision(
            [
                MetadataRecord(partition=self._new_partition(topic.topic_id, current + index, replicas, live_ids))
                for index, replicas in enumerate(placed)
            ]
        )

    # -----------------------------------------------------------------------------------------
    # configs

    def alter_topic_configs(
        self, name: str, ops: Sequence[ConfigOp], *, validate_only: bool = False
    ) -> ControllerDecision:
        """Apply incremental config changes to a topic, all or none, validated as a whole. An
        internal topic's ``INTERNAL_TOPIC_MANAGED_CONFIGS`` are the cluster's: changing them broke
        every consumer group (``max.message.bytes=0`` on ``__consumer_offsets``, issue #23)."""
        topic = self.image.topic(name)
        if topic is None:
            return ControllerDecision.refuse(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        managed = sorted({change.name for change in ops} & INTERNAL_TOPIC_MANAGED_CONFIGS) if topic.internal else []
        if managed:
            return ControllerDecision.refuse(
                ErrorCode.POLICY_VIOLATION,
                f"{name} is internal: the cluster manages its {', '.join(managed)}",
            )
        current = self.image.topic_configs(name)
        updated = dict(current)
        for change in ops:
            definition = TOPIC_CONFIGS.get(change.name)
            if definition is None:
                known = ", ".join(sorted(TOPIC_CONFIGS))
                return ControllerDecision.refuse(
                    ErrorCode.INVALID_CONFIG, f"unknown topic config {change.name!r}; known: {known}"
                )
            if change.op == "delete":
                updated.pop(change.name, None)
                continue
            if change.value is None:
                return ControllerDecision.refuse(
                    ErrorCode.INVALID_CONFIG, f"{change.op} of {change.name} needs a value"
                )
            if change.op == "set":
                updated[change.name] = change.value
            elif change.op in {"append", "subtract"}:
                if definition.type != "list":
                    return ControllerDecision.refuse(
                        ErrorCode.INVALID_CONFIG,
                        f"{change.op} works on list configs; {change.name} is a {definition.type}",
                    )
                items = list(definition.parse(updated.get(change.name, definition.render(definition.default))))
                values = [v.strip() for v in change.value.split(",") if v.strip()]
                items = (
                    items + [v for v in values if v not in items]
                    if change.op == "append"
                    else [v for v in items if v not in values]
                )
                updated[change.name] = ",".join(items)
            else:
                return ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, f"unknown config operation {change.op!r}")
        refused = self._config_refusal(updated, {op.name for op in ops})
        if refused is not None:
            return refused
        if validate_only:
            return ControllerDecision()
        records = []
        for config_name in sorted(set(current) | set(updated)):
            if current.get(config_name) == updated.get(config_name):
                continue
            config = metadata_pb2.ConfigRecord(resource_type=TOPIC, resource_name=name, name=config_name)
            if config_name in updated:
                config.value = updated[config_name]
            records.append(MetadataRecord(config=config))
        return ControllerDecision(records)

    # -----------------------------------------------------------------------------------------
    # users and ACLs

    def set_user_credential(
        self, name: str, mechanism: str, iterations: int, salt: bytes, salted_password: bytes
    ) -> ControllerDecision:
        """Create or replace ``name``'s credential of ``mechanism`` from a salted password (the
        password itself never reaches the controller)."""
        problem = scram.credential_problem(name, mechanism, iterations, salt)
        if problem is None and NODE_NAME.fullmatch(name):
            problem = f"{name!r} is a node's name: a user may not take it"
        if problem is not None:
            code = (
                ErrorCode.UNSUPPORTED_SASL_MECHANISM
                if mechanism not in scram.MECHANISMS
                else (ErrorCode.UNACCEPTABLE_CREDENTIAL)
            )
            return ControllerDecision.refuse(code, problem)
        expected = scram.salted_password_bytes(mechanism)
        if len(salted_password) != expected:
            return ControllerDecision.refuse(
                ErrorCode.UNACCEPTABLE_CREDENTIAL, f"a {mechanism} salted password is {expected} bytes"
            )
        if name not in self.image.scram_credentials and len(self.image.scram_credentials) >= MAX_USERS:
            return ControllerDecision.refuse(ErrorCode.POLICY_VIOLATION, f"the cluster holds at most {MAX_USERS} users")
        return ControllerDecision(
            [credential_record(name, scram.credential(mechanism, salt, iterations, salted_password))]
        )

    def remove_user_credential(self, name: str, mechanism: str) -> ControllerDecision:
        """Remove ``name``'s credential of ``mechanism`` (RESOURCE_NOT_FOUND when it has none)."""
        if mechanism not in self.image.scram_credentials.get(name, {}):
            return ControllerDecision.refuse(
                ErrorCode.RESOURCE_NOT_FOUND, f"user {name[:140]!r} has no {mechanism[:40]} credential"
            )
        removed = metadata_pb2.UserScramCredentialRemovedRecord(name=name, mechanism=mechanism)
        return ControllerDecision([MetadataRecord(user_scram_credential_removed=removed)])

    def create_acls(self, bindings: Sequence[AclBinding]) -> list[ControllerDecision]:
        """One decision per binding: refused when malformed, nothing to write when present."""
        decisions = []
        added: set[AclBinding] = set()
        for binding in bindings:
            problem = binding.problem()
            if problem is not None:
                decisions.append(ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, problem))
            elif binding in self.image.acls or binding in added:
                decisions.append(ControllerDecision())
            elif len(self.image.acls) + len(added) >= MAX_ACLS:
                decisions.append(
                    ControllerDecision.refuse(ErrorCode.POLICY_VIOLATION, f"the cluster holds at most {MAX_ACLS} ACLs")
                )
            else:
                added.add(binding)
                decisions.append(
                    ControllerDecision([MetadataRecord(acl=metadata_pb2.AclRecord(binding=binding.to_proto()))])
                )
        return decisions

    def alter_client_quota(self, entity: QuotaEntity | None, key: str, value: float | None) -> ControllerDecision:
        """Set (a positive rate) or remove (None) ``entity``'s quota under ``key`` (None: the
        request named no valid entity)."""
        if key not in QUOTA_KEYS:
            return ControllerDecision.refuse(
                ErrorCode.INVALID_REQUEST, f"unknown quota {key[:60]!r}; known: {', '.join(QUOTA_KEYS)}"
            )
        problem = "a quota's entity has one user part, one client-id part, or one of each" if entity is None else None
        if entity is not None:
            problem = entity.problem()
        if problem is not None:
            return ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, problem)
        assert entity is not None
        if value is not None and not (0 < value < float("inf")):
            return ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, f"a {key} is a positive number per second")
        if entity not in self.image.client_quotas and len(self.image.client_quotas) >= MAX_QUOTA_ENTITIES:
            return ControllerDecision.refuse(
                ErrorCode.POLICY_VIOLATION, f"the cluster holds quotas for at most {MAX_QUOTA_ENTITIES} entities"
            )
        record = metadata_pb2.ClientQuotaRecord(entity=entity.to_proto(), key=key, value=value)
        return ControllerDecision([MetadataRecord(client_quota=record)])

    def delete_acls(self, filter_: AclBinding) -> ControllerDecision:
        """Remove every ACL ``filter_`` matches (their records say which)."""
        return ControllerDecision(
            [
                MetadataRecord(acl_removed=metadata_pb2.AclRemovedRecord(binding=acl.to_proto()))
                for acl in sorted(self.image.acls)
                if acl.matches(filter_)
            ]
        )

    # -----------------------------------------------------------------------------------------
    # partition leadership

    def alter_partition(
        self,
        broker_id: int,
        broker_epoch: int,
        topic_id: str,
        partition_index: int,
        *,
        leader_epoch: int,
        partition_epoch: int,
        new_isr: Sequence[int],
        new_isr_broker_epochs: Sequence[int] = (),
    ) -> ControllerDecision:
        """A leader's ISR proposal, fenced by broker, leader and partition epochs. A member it
        adds must be live and, when the leader names the broker epoch it saw that member fetch
        with, still at that epoch (KIP-903: a broker that restarted since may have lost what it
        had fetched)."""
        refused = self._check("broker", broker_id, broker_epoch)
        if refused is not None:
            return refused
        topic = self.image.topics.get(topic_id)
        partition = topic.partitions.get(partition_index) if topic is not None else None
        if topic is None or partition is None:
            return ControllerDecision.refuse(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"partition {topic_id}/{partition_index} does not exist"
            )
        if partition.leader != broker_id:
            return ControllerDecision.refuse(
                ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {broker_id} does not lead {topic.name}-{partition_index}"
            )
        if leader_epoch != partition.leader_epoch:
            return ControllerDecision.refuse(
                ErrorCode.FENCED_LEADER_EPOCH,
                f"leader epoch {leader_epoch} is not the current {partition.leader_epoch}",
            )
        if partition_epoch != partition.partition_epoch:
            return ControllerDecision.refuse(
                ErrorCode.INVALID_UPDATE_VERSION,
                f"partition epoch {partition_epoch} is stale (current {partition.partition_epoch}): refresh and retry",
            )
        isr = list(dict.fromkeys(new_isr))
        if broker_id not in isr or not set(isr) <= set(partition.replicas):
            return ControllerDecision.refuse(
                ErrorCode.INVALID_REQUEST, f"ISR {isr} must contain the leader and only replicas {partition.replicas}"
            )
        live = {b.broker_id for b in self.image.live_brokers()}
        ineligible = sorted(b for b in set(isr) - set(partition.isr) if b not in live)
        if ineligible:
            return ControllerDecision.refuse(
                ErrorCode.INELIGIBLE_REPLICA, f"brokers {ineligible} are fenced and cannot join the ISR"
            )
        seen = dict(zip(new_isr, new_isr_broker_epochs, strict=False))
        restarted = sorted(
            b for b in set(isr) - set(partition.isr) if seen.get(b, -1) >= 0 and seen[b] != self.image.brokers[b].epoch
        )
        if restarted:
            return ControllerDecision.refuse(
                ErrorCode.INELIGIBLE_REPLICA,
                f"brokers {restarted} registered again since the leader saw them fetch: they cannot join the ISR",
            )
        if isr == partition.isr:
            return ControllerDecision()
        return ControllerDecision([self._change(partition, isr=isr, reason="isr change")])

    def elect_preferred_leaders(
        self, partitions: Iterable[tuple[str, int]] | None = None
    ) -> tuple[ControllerDecision, dict[tuple[str, int], ErrorCode]]:
        """Move leadership back to each partition's preferred (first) replica where it is live
        and in sync; returns the records and an outcome per partition."""
        decision = ControllerDecision()
        outcomes: dict[tuple[str, int], ErrorCode] = {}
        wanted = None if partitions is None else set(partitions)
        live = {b.broker_id for b in self.image.live_brokers()}
        for topic, partition in self._partitions():
            key = (topic.name, partition.partition)
            if wanted is not None and key not in wanted:
                continue
            preferred = partition.replicas[0]
            if partition.leader == preferred:
                outcomes[key] = ErrorCode.ELECTION_NOT_NEEDED
            elif preferred in partition.isr and preferred in live:
                decision.records.append(self._change(partition, leader=preferred, reason="preferred election"))
                outcomes[key] = ErrorCode.NONE
            else:
                outcomes[key] = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        if wanted is not None:
            for key in wanted - set(outcomes):
                outcomes[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return decision, outcomes

    def imbalanced_partitions(self, per_broker_percentage: int) -> list[tuple[str, int]]:
        """Partitions whose leadership should go back to their preferred replica (Kafka's
        ``auto.leader.rebalance.enable`` rule): for each live broker, when more than
        ``per_broker_percentage`` percent of the partitions it prefers are led elsewhere, those of
        them where it is in sync."""
        live = {b.broker_id for b in self.image.live_brokers()}
        preferred_by: dict[int, list[tuple[str, int, bool, bool]]] = {}
        for topic, partition in self._partitions():
            broker = partition.replicas[0]
            preferred_by.setdefault(broker, []).append(
                (topic.name, partition.partition, partition.leader == broker, broker in partition.isr)
            )
        moves: list[tuple[str, int]] = []
        for broker, partitions in sorted(preferred_by.items()):
            elsewhere = [(name, index, in_sync) for name, index, leads, in_sync in partitions if not leads]
            if broker in live and len(elsewhere) * 100 > per_broker_percentage * len(partitions):
                moves.extend((name, index) for name, index, in_sync in elsewhere if in_sync)
        return moves

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> ControllerDecision:
        """A block of producer ids for a broker (``decision.producer_ids``)."""
        refused = self._check("broker", broker_id, broker_epoch)
        if refused is not None:
            return refused
        start = self.image.next_producer_id
        record = metadata_pb2.ProducerIdsRecord(
            node_id=broker_id, node_epoch=broker_epoch, next_producer_id=start + self.producer_id_block_size
        )
        block = ProducerIdBlock(start, self.producer_id_block_size)
        return ControllerDecision([MetadataRecord(producer_ids=record)], producer_ids=block)

    # -----------------------------------------------------------------------------------------
    # helpers

    def _partitions(self) -> Iterable[tuple[TopicImage, PartitionImage]]:
        for topic in sorted(self.image.topics.values(), key=lambda t: t.name):
            for index in sorted(topic.partitions):
                yield topic, topic.partitions[index]

    @staticmethod
    def _change(
        partition: PartitionImage, *, leader: int | None = None, isr: list[int] | None = None, reason: str
    ) -> MetadataRecord:
        change = metadata_pb2.PartitionChangeRecord(
            topic_id=partition.topic_id,
            partition=partition.partition,
            leader_epoch=partition.leader_epoch,
            partition_epoch=partition.partition_epoch + 1,
            reason=reason,
        )
        if leader is not None and leader != partition.leader:
            change.leader_id = leader
            change.leader_epoch = partition.leader_epoch + 1
        if isr is not None and isr != partition.isr:
            change.isr.broker_ids.extend(isr)
        return MetadataRecord(partition_change=change)
