"""The operator's side of the Lanes cluster: what a topic or group is now, and carrying a plan out,
through the asynchronous admin client. No decisions here (they are in ``topics`` and ``groups``)."""

from __future__ import annotations

from lanes import GroupDescription, TopicPartition
from lanes.aio import Admin
from lanes.deadline import Deadline, attempts
from lanes.errors import ErrorCode, LanesError, TopicAlreadyExistsError, UnknownTopicOrPartitionError
from lanes_operator.topics import ObservedTopic, TopicPlan, TopicSpec

LEADERS_WAIT_S = 10.0  # after creating or growing a topic, how long to wait for its new leaders


async def observe_topic(admin: Admin, name: str) -> ObservedTopic | None:
    """The topic as the cluster has it, or None when there is no such topic."""
    try:
        info = await admin.describe_topic(name)
        configs = await admin.describe_configs(name)
    except UnknownTopicOrPartitionError:
        return None
    return ObservedTopic(
        topic_id=info.topic_id,
        partitions=len(info.partitions),
        replication_factor=max((len(p.replicas) for p in info.partitions), default=0),
        config_overrides={c.name: c.value for c in configs.values() if not c.is_default and c.value is not None},
        under_replicated_partitions=sum(1 for p in info.partitions if len(p.isr) < len(p.replicas)),
        offline_partitions=sum(1 for p in info.partitions if p.leader < 0),
    )


async def carry_out(
    admin: Admin, spec: TopicSpec, plan: TopicPlan, done: list[tuple[str, str]], created: list[str]
) -> None:
    """Make the plan's changes, appending (reason, message) of each to ``done`` as it is made (for
    Events, also when a later step fails), and the id of a topic it created to ``created`` as soon
    as it exists. A topic created meanwhile by someone else is left alone (not ``created``: the
    caller sees a topic that is not its own)."""
    name = spec.topic_name
    if plan.create:
        try:
            topic_id = await admin.create_topic(
                name,
                partitions=spec.partitions if spec.partitions is not None else -1,
                replication_factor=spec.replication_factor if spec.replication_factor is not None else -1,
                config=dict(spec.config),
            )
        except TopicAlreadyExistsError:
            return
        created.append(topic_id)
        done.append(("Created", f"created topic {name}" + _shape(spec)))
        await wait_for_leaders(admin, name)
        return
    if plan.grow_partitions_to is not None:
        await admin.create_partitions(name, plan.grow_partitions_to)
        done.append(("PartitionsAdded", f"topic {name} grown to {plan.grow_partitions_to} partitions"))
        await wait_for_leaders(admin, name)
    if plan.set_configs or plan.delete_configs:
        await admin.alter_configs(name, set=plan.set_configs, delete=plan.delete_configs)
        changes = [f"{k}={v}" for k, v in sorted(plan.set_configs.items())] + [
            f"{k} (back to default)" for k in plan.delete_configs
        ]
        done.append(("ConfigChanged", f"topic {name}: " + ", ".join(changes)))


def _shape(spec: TopicSpec) -> str:
    parts = []
    if spec.partitions is not None:
        parts.append(f"{spec.partitions} partitions")
    if spec.replication_factor is not None:
        parts.append(f"replication factor {spec.replication_factor}")
    return f" ({', '.join(parts)})" if parts else " (cluster defaults)"


async def wait_for_leaders(admin: Admin, name: str, timeout_s: float = LEADERS_WAIT_S) -> None:
    """Until every partition of the topic has a leader, or ``timeout_s`` (then the status says
    which partitions are offline, and the next reconciliation looks again)."""
    async for _ in attempts(Deadline(timeout_s), 0.1):
        info = await admin.describe_topic(name)
        if all(p.leader >= 0 for p in info.partitions):
            return


async def delete_topic(admin: Admin, name: str) -> bool:
    """Delete the topic; False when it did not exist."""
    try:
        await admin.delete_topic(name)
    except UnknownTopicOrPartitionError:
        return False
    return True


async def describe_group(admin: Admin, group_id: str) -> GroupDescription | None:
    """The group with its per-partition lag, or None when it does not exist (yet)."""
    try:
        return await admin.describe_group(group_id)
    except LanesError as exc:
        if exc.code == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        raise


async def partitions_of(admin: Admin, topics: list[str]) -> list[TopicPartition]:
    """Every partition of ``topics`` (unknown topics have none)."""
    found: list[TopicPartition] = []
    for topic in topics:
        try:
            info = await admin.describe_topic(topic)
        except UnknownTopicOrPartitionError:
            continue
        found.extend(TopicPartition(topic, p.partition) for p in info.partitions)
    return found


async def reset_offsets(admin: Admin, group_id: str, target: str, partitions: list[TopicPartition]) -> list[str]:
    """Move the (empty) group's offsets of ``partitions`` to ``target``; per partition errors."""
    results = await admin.reset_offsets(group_id, target, partitions=partitions, dry_run=False)
    return [f"{r.topic}/{r.partition}: {r.error}" for r in results if r.error]
