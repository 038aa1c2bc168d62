"""Controller mutation quotas (KIP-599) on the active controller.

A user's topic creations, partition additions and deletions are counted in partitions per
second (``controller_mutation_rate``) in a token bucket per user
(``lanes.security.quotas.MutationBuckets``): a change of a user whose bucket is below zero is
refused with THROTTLING_QUOTA_EXCEEDED and the time until it refills; one whose bucket is not is
accepted even if it takes the bucket below zero (Kafka's bursts). Validate-only and refused
changes count nothing; a new active controller starts with full buckets.

``charged`` runs inside a write's decision (``QuorumController.write``), which are serialised, so
concurrent requests cannot all pass one check. Pure: time is the injected clock's.
"""

from __future__ import annotations

from collections.abc import Callable

from lanes.controller.core import ControllerDecision
from lanes.errors import ErrorCode
from lanes.metadata.image import MetadataImage
from lanes.security.quotas import Limited, MutationBuckets

#: How many partitions a decision creates, adds or deletes.
Mutated = Callable[[ControllerDecision], int]


def new_partitions(decision: ControllerDecision) -> int:
    """Partitions a topic creation or partition addition makes."""
    return sum(1 for record in decision.records if record.WhichOneof("record") == "partition")


def partitions_of(image: Callable[[], MetadataImage], name: str) -> Mutated:
    """How many partitions deleting topic ``name`` removes (read when the decision is made)."""
    return lambda decision: len(topic.partitions) if (topic := image().topic(name)) is not None else 0


class MutationQuotas:
    """The users' mutation buckets; see the module docstring."""

    def __init__(self, monotonic_s: Callable[[], float], on_throttled: Callable[[], object] = lambda: None) -> None:
        """``monotonic_s``: the injected clock's monotonic time in seconds; ``on_throttled``: a
        change was refused for the quota (a metric counts it)."""
        self._monotonic_s = monotonic_s
        self._on_throttled = on_throttled
        self._buckets = MutationBuckets()

    def charged(self, limited: Limited | None, decision: ControllerDecision, mutated: Mutated) -> ControllerDecision:
        """``decision`` under the caller's quota (``limited``): a change the core accepted, of
        ``mutated(decision)`` partitions, is refused while the user's bucket is below zero, else
        charged to it."""
        count = mutated(decision) if decision.error is ErrorCode.NONE and decision.records else 0
        if limited is None or not count:
            return decision
        who, quota = limited
        now_s = self._monotonic_s()
        if owed_ms := self._buckets.owed_ms(who, quota, now_s):
            self._on_throttled()
            return ControllerDecision.refuse(
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"the controller mutation quota of {who} is used up: retry in {owed_ms} ms",
            )
        self._buckets.record(who, count, quota, now_s)
        return decision

    def throttle_ms(self, limited: Limited | None, decision: ControllerDecision) -> int:
        """``throttle_time_ms`` for a change refused for the quota (0 for any other: as Kafka's
        strict quota, an accepted change says nothing of the debt it left)."""
        if limited is None or decision.error is not ErrorCode.THROTTLING_QUOTA_EXCEEDED:
            return 0
        who, quota = limited
        return self._buckets.owed_ms(who, quota, self._monotonic_s())
