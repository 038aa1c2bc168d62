"""ConsumerGroup resources (the decisions are ``lanes_operator.groups``).

Every ``LANES_OPERATOR_GROUP_INTERVAL_SECONDS``, and at once when the resource changes:

1. describe the group (DescribeGroups with offsets): state, members, lag per partition;
2. offset reset: ``spec.resetOffsets`` is applied once per ``requestId``, only while the group has
   no members (GroupActive=True says it waits); ``status.lastAppliedReset`` records it;
3. autoscaling: the target's ``scale`` subresource gets the stabilized recommendation;
4. the status: state, members, lag (records, seconds), partitions, replicas, conditions Ready,
   GroupActive, (with autoscale) ScalingActive and (with an assignor) AssignorMatches: members
   choose the assignor when they join, so the spec's is checked, not imposed.

A namespace other than the operator's may only name group ids under prefixes granted to it
(``lanes_operator.tenancy``): any other is Ready=False NotGranted, and nothing is read or changed.

Deleting a ConsumerGroup resource leaves the Lanes group and its offsets alone (``lanes groups
delete`` removes them); there is no finalizer.
"""

from __future__ import annotations

import time
from typing import Any

import kopf

from lanes.errors import ErrorCode, LanesError
from lanes_operator import cluster
from lanes_operator.context import (
    SETTINGS,
    Context,
    context_of,
    now_rfc3339,
    object_lock,
    paused,
    reconcile_on_every_trigger,
)
from lanes_operator.groups import (
    Autoscale,
    bounded,
    desired_replicas,
    group_status,
    reset_decision,
    reset_target,
    stabilized,
)
from lanes_operator.outcome import Outcome
from lanes_operator.tenancy import NOT_GRANTED

GROUPS = ("lanes.dev", "v1alpha1", "consumergroups")
KIND = "ConsumerGroup"


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
    **_: Any,
) -> None:
    context = context_of(memo)
    async with object_lock(memo), Outcome(context, KIND, body=body, status=status, patch=patch, meta=meta) as outcome:
        group_id = str(spec.get("groupId") or name)
        if paused(meta):
            outcome.ready("Unknown", "Paused", "reconciliation is paused: remove the lanes.dev/paused annotation")
            return
        refusal = context.settings.grants.refusal(namespace, "group", group_id)
        if refusal is not None:  # another team's group: neither its offsets nor its lag
            outcome.ready("False", NOT_GRANTED, refusal + "; nothing observed or changed")
            outcome.fields = {"groupId": group_id}
            return
        description = await cluster.describe_group(context.admin, group_id)
        outcome.fields = {"groupId": group_id, **group_status(description)}
        topics = [str(t) for t in spec.get("topics") or ()]
        if not topics and description is not None:
            topics = sorted({p.topic for p in description.offsets})

        reset = spec.get("resetOffsets")
        decision = reset_decision(
            reset, (status.get("lastAppliedReset") or {}).get("requestId"), outcome.fields["members"]
        )
        waiting = decision.waiting
        if decision.apply and reset is not None:
            waiting = await _reset(context, outcome, group_id, reset, [str(t) for t in reset.get("topics") or topics])
            if waiting is None:
                outcome.fields.update(group_status(await cluster.describe_group(context.admin, group_id)))
        members = outcome.fields["members"]
        if waiting:
            outcome.condition("GroupActive", "True", "ResetWaiting", waiting)
        elif members:
            outcome.condition("GroupActive", "True", "MembersActive", f"{members} members consume")
        else:
            outcome.condition("GroupActive", "False", "Empty", "no member consumes")

        wanted_assignor = spec.get("assignor")
        if wanted_assignor and description is not None and description.assignor:
            if description.assignor == wanted_assignor:
                outcome.condition("AssignorMatches", "True", "AssignorMatches", f"the group uses {wanted_assignor}")
            else:
                outcome.condition(
                    "AssignorMatches",
                    "False",
                    "AssignorMismatch",
                    f"the members use {description.assignor}, the spec says {wanted_assignor}: members choose the "
                    "assignor when they join (the consumers' assignor setting): change their configuration",
                )

        if spec.get("autoscale"):
            await _autoscale(
                context, outcome, memo=memo, namespace=namespace or "default", spec=spec["autoscale"], topics=topics
            )
        outcome.ready("True", "Observed", f"group {group_id} is {outcome.fields['state']}")


async def _reset(
    context: Context, outcome: Outcome, group_id: str, reset: kopf.Spec | Any, topics: list[str]
) -> str | None:
    """Apply the reset; None when done, else why it waits."""
    target = reset_target(reset)
    partitions = await cluster.partitions_of(context.admin, topics)
    try:
        errors = await cluster.reset_offsets(context.admin, group_id, target, partitions)
    except LanesError as exc:
        if exc.code == ErrorCode.NON_EMPTY_GROUP:
            return f"reset {reset['requestId']!r} waits: {exc}"
        raise
    outcome.fields["lastAppliedReset"] = {
        "requestId": str(reset["requestId"]),
        "appliedAt": now_rfc3339(),
        "to": target,
        "partitions": len(partitions) - len(errors),
    }
    message = f"reset {reset['requestId']!r}: offsets of {len(partitions) - len(errors)} partitions moved to {target}"
    if errors:
        message += "; not moved: " + "; ".join(errors)
    outcome.events.append(("OffsetsReset", message))
    return None


async def _autoscale(
    context: Context, outcome: Outcome, *, memo: kopf.Memo, namespace: str, spec: Any, topics: list[str]
) -> None:
    autoscale = Autoscale.of(spec)
    kind, target = str(spec["targetRef"]["kind"]), str(spec["targetRef"]["name"])
    current = await context.workloads.replicas(namespace, kind, target)
    if current is None:
        outcome.condition("ScalingActive", "False", "TargetNotFound", f"{kind} {namespace}/{target} does not exist")
        return
    partitions = len(await cluster.partitions_of(context.admin, topics))
    recommended = desired_replicas(autoscale, outcome.fields["lag"], outcome.fields["lagSeconds"], partitions)
    now_s = time.monotonic()
    history: list[tuple[float, int]] = memo.setdefault("recommendations", [])
    if not history:
        history.append((now_s, current))  # after a start, no scale-down before a window has passed
    history.append((now_s, recommended))
    window_s = autoscale.scale_down_stabilization_s
    history[:] = [(at_s, replicas) for at_s, replicas in history if at_s >= now_s - window_s] or history[-1:]
    desired = bounded(autoscale, stabilized(history, now_s, window_s), partitions)
    if desired != current:
        await context.workloads.scale(namespace, kind, target, desired)
        outcome.events.append(
            (
                "Scaled",
                f"{kind} {target} scaled from {current} to {desired} replicas (lag {outcome.fields['lag']} records, "
                f"{outcome.fields['lagSeconds']:.1f} s; {partitions} partitions)",
            )
        )
    outcome.fields.update(currentReplicas=desired, desiredReplicas=recommended)
    reason = "Stabilizing" if recommended < desired else "Scaled"
    message = f"{desired} replicas; lag asks for {recommended} (max {autoscale.max_replicas})"
    outcome.condition("ScalingActive", "True", reason, message)


reconcile_on_every_trigger(GROUPS, reconcile, every_s=SETTINGS.group_interval_s, timer_id="refresh")
