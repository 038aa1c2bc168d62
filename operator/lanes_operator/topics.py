"""What to do about one Topic resource: a pure core (no Kubernetes, no gRPC), fed the resource's
spec and what the cluster says about the topic, returning the changes to make and the status to
report. The kopf handlers do the I/O around it.

Rules (docs/kubernetes.md):

- no topic of that name: create it with the spec's partitions, replication factor and configs
  (cluster defaults for what the spec leaves out);
- a topic exists that this resource did not create (someone else's, or made before the
  resource): it is left alone, Ready=False ``NotAdopted``, until the resource is annotated
  ``lanes.dev/adopt: "true"`` (a Topic in one namespace must not take over a topic another team
  made); then it is *adopted* as below;
- a topic exists that this resource created (its id is the one in the resource's status) or
  adopted: grow its partitions up to the spec; make its config overrides exactly the spec's (set what
  differs, remove overrides the spec does not name: changes made behind the operator's back are
  repaired);
- what can never be done is refused, never retried in a loop: fewer partitions than the topic has
  (a topic cannot lose partitions), a different replication factor (Lanes cannot reassign
  replicas yet). The rest of the spec is still applied, and the Ready condition says False with
  the reason and what to do.

A topic's *name* in Lanes is ``spec.topicName`` or else ``metadata.name``. When several Topic
resources name one topic, the oldest manages it (``owner``); the younger ones report a conflict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

DELETE = "Delete"
RETAIN = "Retain"
#: Deleting a resource keeps its topic unless the resource says Delete (records outlive YAML).
DEFAULT_DELETION_POLICY = RETAIN


@dataclass(frozen=True)
class TopicSpec:
    """The Topic resource's spec, with its defaults applied."""

    topic_name: str
    partitions: int | None  # None: the cluster's default
    replication_factor: int | None  # None: the cluster's default
    config: Mapping[str, str] = field(default_factory=dict)
    deletion_policy: str = DEFAULT_DELETION_POLICY

    @classmethod
    def of(cls, name: str, spec: Mapping[str, Any]) -> TopicSpec:
        """From ``metadata.name`` and the resource's ``spec``."""
        return cls(
            topic_name=str(spec.get("topicName") or name),
            partitions=spec.get("partitions"),
            replication_factor=spec.get("replicationFactor"),
            config={str(k): str(v) for k, v in (spec.get("config") or {}).items()},
            deletion_policy=str(spec.get("deletionPolicy") or DEFAULT_DELETION_POLICY),
        )


@dataclass(frozen=True)
class ObservedTopic:
    """The topic as the cluster describes it."""

    topic_id: str
    partitions: int
    replication_factor: int
    config_overrides: Mapping[str, str]  # configs set on the topic (not cluster defaults)
    under_replicated_partitions: int = 0
    offline_partitions: int = 0


#: The reason of a resource naming a topic it did not create and may not adopt.
NOT_ADOPTED = "NotAdopted"


@dataclass(frozen=True)
class Refusal:
    """A part of the spec that cannot be applied: the Ready condition's reason and message."""

    reason: str
    message: str


@dataclass(frozen=True)
class TopicPlan:
    """The changes that bring the topic to the spec, and what cannot be done."""

    create: bool = False
    grow_partitions_to: int | None = None
    set_configs: Mapping[str, str] = field(default_factory=dict)
    delete_configs: tuple[str, ...] = ()
    refusals: tuple[Refusal, ...] = ()

    @property
    def changes(self) -> bool:
        return bool(self.create or self.grow_partitions_to or self.set_configs or self.delete_configs)


def not_adopted(spec: TopicSpec) -> Refusal:
    """The refusal of a resource naming a topic it did not create, without leave to adopt it."""
    return Refusal(
        NOT_ADOPTED,
        f"topic {spec.topic_name} exists and this resource did not create it; nothing is changed. "
        f'Annotate the resource lanes.dev/adopt: "true" to manage it (its partitions and configs '
        "are then brought to this spec), or name another topic.",
    )


def plan(spec: TopicSpec, observed: ObservedTopic | None, *, managed_id: str | None, adopt: bool) -> TopicPlan:
    """What to do so that the topic matches ``spec`` (see the module docstring): ``managed_id``
    is the topic id the resource's status holds (the topic it created or adopted), ``adopt``
    whether it is annotated to take over a topic it did not create."""
    if observed is None:
        return TopicPlan(create=True, set_configs=dict(spec.config))
    if observed.topic_id != managed_id and not adopt:
        return TopicPlan(refusals=(not_adopted(spec),))
    refusals = []
    grow_to = None
    if spec.partitions is not None and spec.partitions > observed.partitions:
        grow_to = spec.partitions
    elif spec.partitions is not None and spec.partitions < observed.partitions:
        refusals.append(
            Refusal(
                "PartitionsCannotShrink",
                f"topic {spec.topic_name} has {observed.partitions} partitions; spec.partitions "
                f"{spec.partitions} would drop records. Set it to {observed.partitions} or more.",
            )
        )
    if spec.replication_factor is not None and spec.replication_factor != observed.replication_factor:
        refusals.append(
            Refusal(
                "ReplicationFactorChangeUnsupported",
                f"topic {spec.topic_name} has replication factor {observed.replication_factor}; Lanes cannot "
                f"reassign replicas yet. Set spec.replicationFactor to {observed.replication_factor}, or create "
                "a new topic with the new factor and move the data.",
            )
        )
    set_configs = {k: v for k, v in spec.config.items() if observed.config_overrides.get(k) != v}
    delete_configs = tuple(sorted(k for k in observed.config_overrides if k not in spec.config))
    return TopicPlan(
        grow_partitions_to=grow_to, set_configs=set_configs, delete_configs=delete_configs, refusals=tuple(refusals)
    )


def ready_condition(refusals: tuple[Refusal, ...], observed: ObservedTopic | None) -> tuple[str, str, str]:
    """(status, reason, message) of the Ready condition after the plan was carried out."""
    if refusals:
        return "False", refusals[0].reason, " ".join(r.message for r in refusals)
    if observed is None:
        return "False", "Creating", "the topic is being created"
    if observed.offline_partitions:
        return (
            "False",
            "OfflinePartitions",
            f"{observed.offline_partitions} partitions have no leader: bring their brokers back",
        )
    return "True", "Ready", "the topic matches the spec"


def status(spec: TopicSpec, observed: ObservedTopic | None) -> dict[str, Any]:
    """The resource's status fields (without conditions and observedGeneration, which the handler
    adds with their times and generation)."""
    fields: dict[str, Any] = {"topicName": spec.topic_name}
    if observed is not None:
        fields.update(
            topicId=observed.topic_id,
            partitions=observed.partitions,
            replicationFactor=observed.replication_factor,
            underReplicatedPartitions=observed.under_replicated_partitions,
            offlinePartitions=observed.offline_partitions,
        )
    return fields


@dataclass(frozen=True, order=True)
class Claim:
    """A Topic resource naming a topic. Claims order oldest first (creation time, then namespace
    and name, so that the order is total and every operator replica agrees on it)."""

    created: str  # metadata.creationTimestamp, RFC 3339 in UTC: orders as text
    namespace: str
    name: str


def claim_of(namespace: str | None, name: str, meta: Mapping[str, Any]) -> Claim:
    """The claim a resource (``meta``: its metadata) makes on the name it manages."""
    return Claim(str(meta.get("creationTimestamp") or ""), namespace or "", name)


def owner(claims: Iterable[Claim]) -> Claim | None:
    """The resource that manages a topic when several name it: the oldest. The others report a
    conflict and change nothing, so two resources never fight over one topic."""
    return min(claims, default=None)
