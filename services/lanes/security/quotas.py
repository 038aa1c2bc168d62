"""Client quotas on a broker, Kafka's model (KIP-13, KIP-219), as a pure core: time comes in as
an argument.

A quota bounds the bytes per second an entity may produce (``producer_byte_rate``) or fetch
(``consumer_byte_rate``) on this broker, or the share of a service's event loop its calls take
(``request_percentage``): the quota a call falls under is Kafka's precedence of user and
client-id entities (``lanes.metadata.image.MetadataImage.client_quota``), and what is measured is
that entity with its defaults filled in (each user, or each client, on its own:
``lanes.security.quota_entities.measured_as``), over ``SAMPLES`` windows of ``SAMPLE_S`` seconds.

An entity over its rate owes the time its excess takes to drain at the quota's rate (Kafka's
``(rate - quota) / quota * window``, ``owed_ms``), computed when an amount is recorded. The
service mutes the entity for exactly that long, as Kafka mutes a connection for the throttle
time it computed (KIP-219), not until a fresh measure says nothing is owed: within the first
window the measure's span is fixed at ten seconds, so waiting would not lower it, and a client
that paused for the time it was told would find itself muted for the rest of the window. A
request of a muted entity waits, before doing any work, until the mute ends (``muted_ms``; the
broker's ``_admit``, ``lanes.runtime.quotas.request_quota``), so concurrent requests or streams cannot
add up past the quota; the request's amount is then recorded and its answer, sent at once, says
in ``throttle_time_ms`` what the entity owes now. A fetch reads at most
``window_bytes`` (Kafka's ``getMaxValueInQuotaWindow``), so one answer cannot carry more than
the quota's window.

The controller mutation quota (KIP-599: partitions created, added or deleted per second, on the
active controller) is a token bucket instead, as Kafka's (``MutationBuckets``): an entity may spend
its whole burst at once, a change is accepted while the bucket is not negative (the last one may
take it below zero), and the time to wait is exactly what refills it.

Memory: one window (and mute) per entity that sent something within the last window, one
bucket per entity not yet refilled; all pruned as time passes. Owned by one event loop (a broker's, the
controller's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lanes.security.quota_entities import QuotaEntity

#: The largest ``throttle_time_ms`` a response carries (an int32).
MAX_WIRE_MS = 2**31 - 1

#: Kafka's ``quota.window.num`` and ``quota.window.size.seconds``.
SAMPLES = 11
SAMPLE_S = 1.0
#: The longest a throttle is told (``throttle_time_ms``), and the longest one wait of ``admit``
#: (it checks again after it).
MAX_THROTTLE_MS = 10_000


#: A caller's quota: what it is measured as, and the rate it may use.
Limited = tuple[QuotaEntity, float]


def window_bytes(quota: float) -> int:
    """The most bytes one fetch answer may carry under ``quota``: the quota's whole window."""
    return max(1, int(quota * (SAMPLES - 1) * SAMPLE_S))


@dataclass
class RateWindow:
    """Amounts recorded in ``SAMPLES`` consecutive windows of ``SAMPLE_S`` seconds."""

    started_s: float
    samples: dict[int, float] = field(default_factory=dict)  # window index -> amount

    def _index(self, now_s: float) -> int:
        return int((now_s - self.started_s) // SAMPLE_S)

    def record(self, amount: float, now_s: float) -> None:
        """Add ``amount`` at ``now_s`` (negative: take back what was recorded)."""
        index = self._index(now_s)
        for old in [i for i in self.samples if i <= index - SAMPLES]:
            del self.samples[old]
        self.samples[index] = self.samples.get(index, 0.0) + amount

    def window_s(self, now_s: float) -> float:
        """The time the rate is measured over: since the oldest window kept, and at least
        ``SAMPLES - 1`` windows (Kafka's Rate, so a first burst is not measured over an instant)."""
        oldest = min(self.samples, default=self._index(now_s))
        elapsed = now_s - (self.started_s + oldest * SAMPLE_S)
        return max(elapsed, (SAMPLES - 1) * SAMPLE_S)

    def rate(self, now_s: float) -> float:
        """Amount per second over the window."""
        index = self._index(now_s)
        total = sum(amount for i, amount in self.samples.items() if i > index - SAMPLES)
        return total / self.window_s(now_s)

    def idle(self, now_s: float) -> bool:
        """Nothing recorded within the last ``SAMPLES`` windows."""
        index = self._index(now_s)
        return all(i <= index - SAMPLES for i in self.samples)


class ClientQuotas:
    """Per (measured entity, quota key): its rate window, and the throttle a new amount earns."""

    def __init__(self) -> None:
        self._windows: dict[tuple[QuotaEntity, str], RateWindow] = {}
        self._muted_until_s: dict[tuple[QuotaEntity, str], float] = {}
        self._pruned_s = 0.0

    def record(self, who: QuotaEntity, key: str, amount: float, quota: float | None, now_s: float) -> int:
        """Record ``amount`` for ``who`` under ``key`` and return what it owes now in
        milliseconds (0 within the quota, or without one: then nothing is recorded)."""
        if quota is None:
            return 0
        self._prune(now_s)
        window = self._windows.get((who, key))
        if window is None:
            window = self._windows[(who, key)] = RateWindow(started_s=now_s)
        window.record(amount, now_s)
        owed_ms = self.owed_ms(who, key, quota, now_s)
        if owed_ms:
            self._muted_until_s[(who, key)] = now_s + owed_ms / 1000
        else:
            self._muted_until_s.pop((who, key), None)
        return owed_ms

    def muted_ms(self, who: QuotaEntity, key: str, now_s: float) -> int:
        """How long ``who``'s requests under ``key`` still wait: what the last recorded amount
        left it owing, counted from then (0: not muted)."""
        until_s = self._muted_until_s.get((who, key))
        if until_s is None:
            return 0
        if until_s <= now_s:
            del self._muted_until_s[(who, key)]
            return 0
        return math.ceil((until_s - now_s) * 1000)

    def owed_ms(self, who: QuotaEntity, key: str, quota: float | None, now_s: float) -> int:
        """How long ``who`` must wait under ``key`` for what it used to fit its quota (0: it is
        within it): the excess drained at the quota's rate."""
        window = self._windows.get((who, key))
        if quota is None or window is None:
            return 0
        rate = window.rate(now_s)
        if rate <= quota:
            return 0
        return min(MAX_THROTTLE_MS, int((rate - quota) / quota * window.window_s(now_s) * 1000))

    def _prune(self, now_s: float) -> None:
        if now_s - self._pruned_s < SAMPLES * SAMPLE_S:
            return
        self._pruned_s = now_s
        for entity in [e for e, window in self._windows.items() if window.idle(now_s)]:
            del self._windows[entity]
        for entity in [e for e, until_s in self._muted_until_s.items() if until_s <= now_s]:
            del self._muted_until_s[entity]

    def __len__(self) -> int:
        return len(self._windows)


@dataclass
class _Bucket:
    tokens: float
    at_s: float
    quota: float  # the last one it was charged under (to tell when an idle bucket is full)

    def now(self, quota: float, now_s: float) -> float:
        """The tokens at ``now_s``: refilled at ``quota`` (the current one: a raised quota helps
        at once, as Kafka's) up to its burst."""
        return min(burst(quota), self.tokens + (now_s - self.at_s) * quota)


def burst(quota: float) -> float:
    """A token bucket's capacity under ``quota`` per second: Kafka's ``quota * samples * window``."""
    return quota * SAMPLES * SAMPLE_S


class MutationBuckets:
    """Per measured entity, a token bucket of partition mutations (KIP-599), full when first seen."""

    def __init__(self) -> None:
        self._buckets: dict[QuotaEntity, _Bucket] = {}
        self._pruned_s = 0.0

    def _tokens(self, user: QuotaEntity, quota: float, now_s: float) -> float:
        bucket = self._buckets.get(user)
        return bucket.now(quota, now_s) if bucket is not None else burst(quota)

    def owed_ms(self, user: QuotaEntity, quota: float, now_s: float) -> int:
        """How long ``user`` must wait before a mutation is accepted: 0 while its bucket is not
        negative, else until it refills to zero."""
        tokens = self._tokens(user, quota, now_s)
        return 0 if tokens >= 0 else min(MAX_WIRE_MS, math.ceil(-tokens / quota * 1000))

    def record(self, user: QuotaEntity, amount: float, quota: float, now_s: float) -> int:
        """Take ``amount`` from ``user``'s bucket (it may go below zero); what it owes now."""
        self._prune(now_s)
        self._buckets[user] = _Bucket(self._tokens(user, quota, now_s) - amount, now_s, quota)
        return self.owed_ms(user, quota, now_s)

    def _prune(self, now_s: float) -> None:
        if now_s - self._pruned_s < SAMPLES * SAMPLE_S:
            return
        self._pruned_s = now_s
        for user in [
            u for u, bucket in self._buckets.items() if bucket.now(bucket.quota, now_s) >= burst(bucket.quota)
        ]:
            del self._buckets[user]

    def __len__(self) -> int:
        return len(self._buckets)
