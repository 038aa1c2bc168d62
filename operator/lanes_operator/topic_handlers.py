"""Topic resources, carried out on the Lanes cluster (the decisions are ``lanes_operator.topics``).

One reconciliation, the same from every trigger (creation, change, operator start, and a timer
every ``LANES_OPERATOR_TOPIC_RESYNC_SECONDS`` that repairs changes made behind the operator's
back): describe the topic, plan, carry the plan out, describe again, write the status. It is
idempotent: a restart at any moment repeats at most a step whose effect is already there.

- Paused (annotation ``lanes.dev/paused: "true"``): nothing is touched; Ready is Unknown/Paused.
- Several Topic resources naming one topic: the oldest manages it; the others are Ready=False
  with reason Conflict and never change the topic (nor delete it).
- Lanes refuses a change (an invalid config...): Ready=False with Lanes' reason and message,
  a Warning Event once, no retry until the spec changes or the next resync.
- The cluster is unreachable: Ready=False ClusterUnavailable, retried with a backoff.
- A topic that exists and that this resource did not create is left alone (Ready=False
  NotAdopted) until the resource is annotated ``lanes.dev/adopt: "true"``.
- Deletion (the ``lanes.dev/finalizer`` finalizer holds the resource until it is done):
  ``deletionPolicy: Delete`` deletes the topic, ``Retain`` (the default) keeps it; a paused or
  conflicting resource, or one that never managed the topic (no topic id in its status), never
  deletes it.
"""

from __future__ import annotations

from typing import Any

import kopf

from lanes.errors import RetriableError
from lanes_operator import cluster
from lanes_operator.context import (
    ADOPT_ANNOTATION,
    SETTINGS,
    context_of,
    object_lock,
    paused,
    reconcile_on_every_trigger,
)
from lanes_operator.outcome import RETRY_DELAY_S, Outcome
from lanes_operator.topics import NOT_ADOPTED, RETAIN, Claim, TopicSpec, owner, plan, ready_condition
from lanes_operator.topics import status as topic_status

TOPICS = ("lanes.dev", "v1alpha1", "topics")
KIND = "Topic"


@kopf.index(*TOPICS)
def topic_claims(*, name: str, namespace: str | None, spec: kopf.Spec, meta: kopf.Meta, **_: Any) -> dict[str, Claim]:
    """Which resources name which topic (kopf keeps this index current from its watch)."""
    return {TopicSpec.of(name, spec).topic_name: claim_of(namespace, name, meta)}


def claim_of(namespace: str | None, name: str, meta: kopf.Meta) -> Claim:
    return Claim(str(meta.get("creationTimestamp") or ""), namespace or "", name)


async def reconcile(
    *,
    body: kopf.Body,
    name: str,
    namespace: str | None,
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    patch: kopf.Patch,
    memo: kopf.Memo,
    topic_claims: kopf.Index[str, Claim],
    **_: Any,
) -> None:
    context = context_of(memo)
    async with object_lock(memo), Outcome(context, KIND, body=body, status=status, patch=patch, meta=meta) as outcome:
        topic = TopicSpec.of(name, spec)
        if paused(meta):
            outcome.ready("Unknown", "Paused", "reconciliation is paused: remove the lanes.dev/paused annotation")
            return
        manager = owner(topic_claims.get(topic.topic_name, ()))
        this = claim_of(namespace, name, meta)
        if manager is not None and manager != this:
            outcome.ready(
                "False",
                "Conflict",
                f"topic {topic.topic_name} is managed by Topic {manager.namespace}/{manager.name}, which is older; "
                "this resource changes nothing. Delete it, or name another topic.",
            )
            outcome.fields = {"topicName": topic.topic_name}
            return
        observed = await cluster.observe_topic(context.admin, topic.topic_name)
        managed_id = status.get("topicId") or None
        adopt = str(meta.annotations.get(ADOPT_ANNOTATION, "")).lower() == "true"
        todo = plan(topic, observed, managed_id=managed_id, adopt=adopt)
        if observed is None and managed_id:
            outcome.events.append(("Recreating", f"topic {topic.topic_name} was deleted outside the operator"))
        elif observed is not None and observed.topic_id != managed_id and adopt:
            outcome.events.append(("Adopted", f"topic {topic.topic_name} existed; it is managed now"))
        if todo.refusals and todo.refusals[0].reason == NOT_ADOPTED:
            outcome.ready(*ready_condition(todo.refusals, observed))
            outcome.fields = {"topicName": topic.topic_name}
            return
        await cluster.carry_out(context.admin, topic, todo, outcome.events)
        if todo.changes:
            observed = await cluster.observe_topic(context.admin, topic.topic_name)
        outcome.ready(*ready_condition(todo.refusals, observed))
        outcome.fields = topic_status(topic, observed)


@kopf.on.delete(*TOPICS, id="delete")
async def topic_deleted(**kwargs: Any) -> None:
    await delete(**kwargs)


async def delete(
    *,
    body: kopf.Body,
    name: str,
    namespace: str | None,
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    memo: kopf.Memo,
    topic_claims: kopf.Index[str, Claim],
    **_: Any,
) -> None:
    context = context_of(memo)
    topic = TopicSpec.of(name, spec)
    async with object_lock(memo):
        manager = owner(topic_claims.get(topic.topic_name, ()))
        if paused(meta):
            kopf.info(body, reason="Retained", message=f"paused: topic {topic.topic_name} is kept")
            return
        if manager is not None and manager != claim_of(namespace, name, meta):
            kopf.info(body, reason="Retained", message=f"topic {topic.topic_name} belongs to another Topic; kept")
            return
        if not status.get("topicId"):
            kopf.info(
                body, reason="Retained", message=f"topic {topic.topic_name} was never managed by this resource; kept"
            )
            return
        if topic.deletion_policy == RETAIN:
            kopf.info(body, reason="Retained", message=f"deletionPolicy Retain: topic {topic.topic_name} is kept")
            context.metrics.actions.labels(KIND, "Retained").inc()
            return
        try:
            existed = await cluster.delete_topic(context.admin, topic.topic_name)
        except RetriableError as exc:
            message = f"cannot delete topic {topic.topic_name} yet: {exc}"
            raise kopf.TemporaryError(message, delay=RETRY_DELAY_S) from exc
        if existed:
            kopf.info(body, reason="Deleted", message=f"deleted topic {topic.topic_name} and its records")
            context.metrics.actions.labels(KIND, "Deleted").inc()


reconcile_on_every_trigger(TOPICS, reconcile, every_s=SETTINGS.topic_resync_s, timer_id="resync")
