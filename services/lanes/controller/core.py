"""The controller's decisions: which metadata records a request or an event produces.

Pure like the state machine it reads: ``MetadataImage``, randomness and id generation are
injected, and nothing here writes anything. The service shell validates a request here, appends
the returned records to the metadata log, applies them to the state, then answers. Decisions
are taken one at a time against the current state, so the records of one decision are valid
when applied in order.

Leadership rules (docs/architecture.md#the-controller):

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

from lanes.controller.config_control import INTERNAL_TOPIC_MANAGED_CONFIGS, ConfigControl
from lanes.controller.decisions import TOPIC, ConfigOp, ControllerDecision, MetadataRecord, NewTopic
from lanes.controller.partition_changes import new_partition, partition_change, partitions_in_order
from lanes.controller.placement import BrokerSlot, assign_replicas, check_assignments
from lanes.controller.security_control import MAX_ACLS, MAX_QUOTA_ENTITIES, MAX_USERS, SecurityControl
from lanes.controller.shard_control import ShardControl, coordinator_fenced
from lanes.errors import ErrorCode, LanesError
from lanes.metadata.image import (
    NO_LEADER,
    BrokerImage,
    CoordinatorImage,
    MetadataImage,
    NodeKind,
    PartitionImage,
    ProducerIdBlock,
    TopicImage,
)
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC, collision_key, validate_topic_name
from lanes.security import scram
from lanes.security.acls import AclBinding
from lanes.security.quota_entities import QuotaEntity
from lanes.topic_configs import MIN_SEGMENT_BYTES
from lanes.v1 import common_pb2, metadata_pb2

__all__ = [
    "INTERNAL_TOPIC_MANAGED_CONFIGS",
    "MAX_ACLS",
    "MAX_PARTITIONS",
    "MAX_QUOTA_ENTITIES",
    "MAX_USERS",
    "ConfigOp",
    "ControllerCore",
    "ControllerDecision",
    "NewTopic",
]

#: the most partitions one CreateTopics or CreatePartitions entry may make (Kafka's controller
#: refuses user operations of more than 10,000 records)
MAX_PARTITIONS_PER_REQUEST = 10_000
#: the most partitions (internal topics included) a cluster holds by default
MAX_PARTITIONS = 100_000


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
        self.configs = ConfigControl(lambda: self.image, min_segment_bytes=min_segment_bytes)
        self.shards = ShardControl(lambda: self.image)
        self.security = SecurityControl(lambda: self.image)
        self.offsets_topic_partitions = offsets_topic_partitions
        self.max_partitions = max_partitions
        self._rng = rng
        self._new_id = new_id
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.producer_id_block_size = producer_id_block_size

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
        kafka_port: int = 0,
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
                decision.records.append(coordinator_fenced(node_id, existing.epoch, "re-registered"))
        epoch = self._next_offset(decision)
        endpoint = common_pb2.Node(
            node_id=node_id,
            host=host,
            port=port,
            rack=rack if kind == "broker" else "",
            internal_port=internal_port,
            certificate_port=certificate_port,
            kafka_port=kafka_port,
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
        decision.records.extend(self.shards.moves(live, restarted={node_id}))
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
        for topic, partition in partitions_in_order(self.image):
            if partition.leader == NO_LEADER and node_id in partition.isr:
                decision.records.append(partition_change(partition, leader=node_id, reason="leader returned"))
            elif partition.leader == NO_LEADER and node_id in partition.replicas and self._unclean(topic):
                decision.records.append(
                    partition_change(partition, leader=node_id, isr=[node_id], reason="unclean election")
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
            decision = ControllerDecision([coordinator_fenced(node_id, node.epoch, reason)])
            live = {c.coordinator_id for c in self.image.live_coordinators()} - {node_id}
            decision.records.extend(self.shards.moves(live))
            return decision
        fenced = metadata_pb2.BrokerFencedRecord(broker_id=node_id, broker_epoch=node.epoch, reason=reason)
        decision = ControllerDecision([MetadataRecord(broker_fenced=fenced)])
        for topic, partition in partitions_in_order(self.image):
            if node_id not in partition.isr and partition.leader != node_id:
                continue
            isr = [b for b in partition.isr if b != node_id] or [node_id]
            if partition.leader != node_id:
                if isr != partition.isr:
                    decision.records.append(partition_change(partition, isr=isr, reason=f"broker {node_id} {reason}"))
                continue
            leader, isr = self._elect(topic, partition, isr, exclude=node_id)
            decision.records.append(partition_change(partition, leader=leader, isr=isr, reason=f"leader {reason}"))
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
        decision.records.extend(self.shards.moves(live, shard_count=self.offsets_topic_partitions))
        return decision

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
        refused = self.configs.refusal(dict(request.configs))
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
            refused = check_assignments(request.assignments, len(request.assignments[0]), self.image.brokers)
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
            records.append(MetadataRecord(partition=new_partition(topic_id, partition, replicas, live)))
        return ControllerDecision(records)

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
            refused = check_assignments(assignments, factor, self.image.brokers)
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
                MetadataRecord(partition=new_partition(topic.topic_id, current + index, replicas, live_ids))
                for index, replicas in enumerate(placed)
            ]
        )

    # -----------------------------------------------------------------------------------------
    # configs, users, ACLs and quotas (their control classes decide)

    def alter_topic_configs(
        self, name: str, ops: Sequence[ConfigOp], *, validate_only: bool = False
    ) -> ControllerDecision:
        return self.configs.alter_topic_configs(name, ops, validate_only=validate_only)

    def bootstrap_users(self, users: Sequence[tuple[str, scram.ScramCredential]]) -> ControllerDecision:
        return self.security.bootstrap_users(users)

    def set_user_credential(
        self, name: str, mechanism: str, iterations: int, salt: bytes, salted_password: bytes
    ) -> ControllerDecision:
        return self.security.set_user_credential(name, mechanism, iterations, salt, salted_password)

    def remove_user_credential(self, name: str, mechanism: str) -> ControllerDecision:
        return self.security.remove_user_credential(name, mechanism)

    def create_acls(self, bindings: Sequence[AclBinding]) -> list[ControllerDecision]:
        return self.security.create_acls(bindings)

    def delete_acls(self, filter_: AclBinding) -> ControllerDecision:
        return self.security.delete_acls(filter_)

    def alter_client_quota(self, entity: QuotaEntity | None, key: str, value: float | None) -> ControllerDecision:
        return self.security.alter_client_quota(entity, key, value)

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
        return ControllerDecision([partition_change(partition, isr=isr, reason="isr change")])

    def elect_preferred_leaders(
        self, partitions: Iterable[tuple[str, int]] | None = None
    ) -> tuple[ControllerDecision, dict[tuple[str, int], ErrorCode]]:
        """Move leadership back to each partition's preferred (first) replica where it is live
        and in sync; returns the records and an outcome per partition."""
        decision = ControllerDecision()
        outcomes: dict[tuple[str, int], ErrorCode] = {}
        wanted = None if partitions is None else set(partitions)
        live = {b.broker_id for b in self.image.live_brokers()}
        for topic, partition in partitions_in_order(self.image):
            key = (topic.name, partition.partition)
            if wanted is not None and key not in wanted:
                continue
            preferred = partition.replicas[0]
            if partition.leader == preferred:
                outcomes[key] = ErrorCode.ELECTION_NOT_NEEDED
            elif preferred in partition.isr and preferred in live:
                decision.records.append(partition_change(partition, leader=preferred, reason="preferred election"))
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
        for topic, partition in partitions_in_order(self.image):
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
