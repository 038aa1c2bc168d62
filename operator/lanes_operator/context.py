"""What every handler shares: settings, the Lanes admin client, the workloads and Secrets clients,
metrics.
Created at the operator's startup and kept in kopf's memo (``memo.lanes``)."""

from __future__ import annotations

import asyncio
import datetime
import os
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import kopf

from lanes.aio import Admin
from lanes_operator.metrics import OperatorMetrics
from lanes_operator.secrets import Secrets
from lanes_operator.settings import OperatorSettings
from lanes_operator.workloads import Workloads

#: Settings are read when the handlers are registered (kopf fixes timer intervals then).
SETTINGS = OperatorSettings.from_env(os.environ)

#: Setting this annotation to "true" stops reconciling the resource (and deleting it keeps its topic).
PAUSE_ANNOTATION = "lanes.dev/paused"


@dataclass
class Context:
    settings: OperatorSettings
    admin: Admin
    workloads: Workloads
    secrets: Secrets
    metrics: OperatorMetrics


def context_of(memo: kopf.Memo) -> Context:
    context: Context = memo["lanes"]
    return context


def object_lock(memo: MutableMapping[str, Any]) -> asyncio.Lock:
    """One lock per resource (kopf gives each its own memo): a change handler and the resource's
    timer never reconcile it at the same time."""
    lock: asyncio.Lock | None = memo.get("lock")
    if lock is None:
        lock = memo["lock"] = asyncio.Lock()
    return lock


#: Lets a Topic take over a topic that exists and that it did not create (``lanes_operator.topics``).
ADOPT_ANNOTATION = "lanes.dev/adopt"


def paused(meta: kopf.Meta) -> bool:
    return str(meta.annotations.get(PAUSE_ANNOTATION, "")).lower() == "true"


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_changes(current: kopf.Status, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields whose value differs from the current status: only they are patched, so a
    reconciliation that changes nothing writes nothing (no resourceVersion churn)."""
    return {key: value for key, value in fields.items() if current.get(key) != value}


def reconcile_on_every_trigger(
    resource: tuple[str, str, str], reconcile: Callable[..., Awaitable[None]], *, every_s: float, timer_id: str
) -> None:
    """Register ``reconcile`` for the resource's creation, changes, the operator's start (resume),
    and a timer every ``every_s`` seconds (``timer_id``): one idempotent reconciliation serves all.
    A resource being deleted is not reconciled: its delete handler decides, and a timer that ran
    after it would make again what it removed (a user's password and ACLs)."""

    async def handler(**kwargs: Any) -> None:
        if (kwargs.get("body") or {}).get("metadata", {}).get("deletionTimestamp"):
            return
        await reconcile(**kwargs)

    kopf.on.resume(*resource, id="resume")(handler)
    kopf.on.create(*resource, id="create")(handler)
    kopf.on.update(*resource, id="update")(handler)
    kopf.timer(*resource, id=timer_id, interval=every_s, initial_delay=every_s)(handler)
