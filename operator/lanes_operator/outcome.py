"""What one reconciliation found and did, written back when it ends: Events for the changes made,
the status fields that changed, the conditions, metrics. Errors of the Lanes cluster become the
Ready condition instead of a crash: a retriable one (the cluster is unreachable, a leader is
moving) is retried by kopf after ``RETRY_DELAY_S``; any other (Lanes refused the change) waits for
the spec to change or the next periodic reconciliation, with one Warning Event."""

from __future__ import annotations

import time
from typing import Any

import kopf

from lanes.errors import LanesError, RetriableError
from lanes_operator.conditions import condition_of, set_condition
from lanes_operator.context import Context, now_rfc3339, status_changes

RETRY_DELAY_S = 5.0
#: Ready=False reasons that pass by themselves (not counted as refusals).
TRANSIENT_REASONS = frozenset({"ClusterUnavailable", "Creating", "OfflinePartitions"})


class Outcome:
    """``async with Outcome(...) as outcome:`` around one reconciliation; set ``fields``, call
    ``condition`` (Ready at least) and append to ``events`` inside."""

    def __init__(
        self, context: Context, kind: str, *, body: kopf.Body, status: kopf.Status, patch: kopf.Patch, meta: kopf.Meta
    ) -> None:
        self.context = context
        self.kind = kind
        self.body = body
        self.status = status
        self.patch = patch
        self.generation = meta.get("generation")
        self.events: list[tuple[str, str]] = []
        self.fields: dict[str, Any] = {}
        self.conditions: dict[str, tuple[str, str, str]] = {}
        self._started_s = 0.0

    def condition(self, type_: str, state: str, reason: str, message: str) -> None:
        self.conditions[type_] = (state, reason, message)

    def ready(self, state: str, reason: str, message: str) -> None:
        self.condition("Ready", state, reason, message)

    async def __aenter__(self) -> Outcome:
        self._started_s = time.perf_counter()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        self.context.metrics.duration.labels(self.kind).observe(time.perf_counter() - self._started_s)
        retry: kopf.TemporaryError | None = None
        if isinstance(exc, RetriableError):
            self.ready("False", "ClusterUnavailable", f"the Lanes cluster did not answer: {exc}; retrying")
            retry = kopf.TemporaryError(str(exc), delay=RETRY_DELAY_S)
        elif isinstance(exc, LanesError):
            self.ready("False", reason_of(exc), str(exc))
        elif exc is not None:
            self.context.metrics.reconciliations.labels(self.kind, "error").inc()
            return False  # unexpected: kopf logs it and retries with its backoff
        for reason, message in self.events:
            kopf.info(self.body, reason=reason, message=message)
            self.context.metrics.actions.labels(self.kind, reason).inc()
        self._write_status()
        if retry is not None:
            raise retry from exc
        return exc is not None

    def _write_status(self) -> None:
        if "Ready" not in self.conditions:
            return
        previous = condition_of(self.status.get("conditions"), "Ready")
        conditions = self.status.get("conditions")
        now = now_rfc3339()
        for type_, (state, reason, message) in self.conditions.items():
            conditions = set_condition(conditions, type_, state, reason, message, now=now, generation=self.generation)
        fields = dict(self.fields, conditions=conditions, observedGeneration=self.generation)
        self.patch.status.update(status_changes(self.status, fields))
        state, reason, message = self.conditions["Ready"]
        if state == "False" and (previous is None or previous.get("reason") != reason):
            kopf.warn(self.body, reason=reason, message=message)
        if reason == "Conflict":
            result = "conflict"
        elif state == "False" and reason not in TRANSIENT_REASONS:
            result = "refused"
        else:
            result = {"True": "ready", "Unknown": "paused"}.get(state, "not_ready")
        self.context.metrics.reconciliations.labels(self.kind, result).inc()


def reason_of(error: LanesError) -> str:
    """INVALID_CONFIG -> InvalidConfig: the condition reason of a Lanes error."""
    return "".join(word.capitalize() for word in error.code.name.split("_"))
