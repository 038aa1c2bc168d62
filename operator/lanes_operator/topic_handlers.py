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
- A topic that exists and that this resource did not create (its id is not the status's) is left
  alone (Ready=False NotAdopted, the status forgetting any id it held) until the resource is
  annotated ``lanes.dev/adopt: "true"``; adopting records the topic's id and removes the
  annotation (it adopts that topic, not one made later). A creation that finds the topic made
  meanwhile by someone else is the same case. A created topic's id is recorded as soon as the
  topic exists, also if a later step fails.
- A namespace other than the operator's may only claim topic names under prefixes granted to it
  (``lanes_operator.tenancy``): any other is Ready=False NotGranted, changes nothing, is never
  deleted, and does not count as a claim.
- Deletion (the ``lanes.dev/finalizer`` finalizer holds the resource until it is done):
  ``deletionPolicy: Delete`` deletes the topic, ``Retain`` (the default) keeps it; a paused or
  conflicting resource never deletes it, nor one whose status does not hold the id of the topic
  that exists now (it never managed it, or the topic was replaced behind its back).
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
from lanes_operator.tenancy import NOT_GRANTED
from lanes_operator.topics import (
    NOT_ADOPTED,
    RETAIN,
    Claim,
    ObservedTopic,
    TopicSpec,
    claim_of,
    not_adopted,
    owner,
    plan,
    ready_condition,
)
from lanes_operator.topics import status as topic_status

TOPICS = ("lanes.dev", "v1alpha1", "topics")
KIND = "Topic"


@kopf.index(*TOPICS)
def topic_claims(*, name: str, namespace: str | None, spec: kopf.Spec, meta: kopf.Meta, **_: Any) -> dict[str, Claim]:
    """Which resources name which topic (kopf keeps this index current from its watch); a resource
    whose namespace may not claim the name is none (it must not make the rightful one conflict)."""
    topic_name = TopicSpec.of(name, spec).topic_name
    if SETTINGS.grants.refusal(namespace, "topic", topic_name) is not None:
        return {}
    return {topic_name: claim_of(namespace, name, meta)}


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
        refusal = context.settings.grants.refusal(namespace, "topic", topic.topic_name)
        if refusal is not None:
            outcome.ready("False", NOT_GRANTED, refusal + "; nothing changed")
            outcome.fields = {"topicName": topic.topic_name}
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
        if todo.refusals and todo.refusals[0].reason == NOT_ADOPTED:
            _not_adopted(outcome, topic, observed)
            return
        if observed is None and managed_id:
            outcome.events.append(("Recreating", f"topic {topic.topic_name} was deleted outside the operator"))
        elif observed is not None and observed.topic_id != managed_id:  # adopt: asked for by the annotation
            outcome.events.append(("Adopted", f"topic {topic.topic_name} existed; it is managed now"))
            outcome.fields = {"topicName": topic.topic_name, "topicId": observed.topic_id}
            patch.metadata.annotations[ADOPT_ANNOTATION] = None  # leave to adopt this topic, not a later one
        ours = observed.topic_id if observed is not None else None
        created: list[str] = []
        try:
            await cluster.carry_out(context.admin, topic, todo, outcome.events, created)
        finally:
            if created:  # recorded even if waiting for its leaders fails: the topic is this resource's
                ours = created[0]
                outcome.fields = {"topicName": topic.topic_name, "topicId": ours}
        if todo.changes:
            observed = await cluster.observe_topic(context.admin, topic.topic_name)
        if observed is not None and observed.topic_id != ours:  # made meanwhile by someone else
            _not_adopted(outcome, topic, observed)
            return
        outcome.ready(*ready_condition(todo.refusals, observed))
        outcome.fields = topic_status(topic, observed)


def _not_adopted(outcome: Outcome, topic: TopicSpec, observed: ObservedTopic | None) -> None:
    """Report a topic that is not this resource's: nothing changed, and the status forgets any
    topic id it held (the topic it named is gone; deleting the resource must not touch this one)."""
    outcome.ready(*ready_condition((not_adopted(topic),), observed))
    outcome.fields = {"topicName": topic.topic_name, "topicId": None}


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
        if context.settings.grants.refusal(namespace, "topic", topic.topic_name) is not None:
            kopf.info(body, reason="Retained", message=f"namespace not granted topic {topic.topic_name}: kept")
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
            observed = await cluster.observe_topic(context.admin, topic.topic_name)
            if observed is not None and observed.topic_id != status.get("topicId"):
                message = f"topic {topic.topic_name} is not the one this resource created or adopted; kept"
                kopf.info(body, reason="Retained", message=message)
                return
            existed = observed is not None and await cluster.delete_topic(context.admin, topic.topic_name)
        except RetriableError as exc:
            message = f"cannot delete topic {topic.topic_name} yet: {exc}"
            raise kopf.TemporaryError(message, delay=RETRY_DELAY_S) from exc
        if existed:
            kopf.info(body, reason="Deleted", message=f"deleted topic {topic.topic_name} and its records")
            context.metrics.actions.labels(KIND, "Deleted").inc()


reconcile_on_every_trigger(TOPICS, reconcile, every_s=SETTINGS.topic_resync_s, timer_id="resync")
