"""Kubernetes status conditions (``metav1.Condition``), kept the way the API conventions ask: one
entry per ``type``; ``lastTransitionTime`` changes only when ``status`` does, so a condition that
stays True keeps the time it became True however often it is reconciled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def set_condition(
    conditions: Sequence[Mapping[str, Any]] | None,
    type_: str,
    status: str,
    reason: str,
    message: str,
    *,
    now: str,
    generation: int | None = None,
) -> list[dict[str, Any]]:
    """``conditions`` with the ``type_`` entry set (added last when new, others unchanged).
    ``now``: RFC 3339 time of this reconciliation."""
    result: list[dict[str, Any]] = []
    found = False
    for existing in conditions or ():
        if existing.get("type") != type_:
            result.append(dict(existing))
            continue
        found = True
        changed = existing.get("status") != status
        result.append(
            _condition(
                type_,
                status,
                reason,
                message,
                since=now if changed else existing.get("lastTransitionTime", now),
                generation=generation,
            )
        )
    if not found:
        result.append(_condition(type_, status, reason, message, since=now, generation=generation))
    return result


def condition_of(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    """The ``type_`` entry of ``conditions``, or None."""
    return next((c for c in conditions or () if c.get("type") == type_), None)


def _condition(
    type_: str, status: str, reason: str, message: str, *, since: str, generation: int | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }
    if generation is not None:
        entry["observedGeneration"] = generation
    return entry
