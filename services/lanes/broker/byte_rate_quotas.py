"""Produce and fetch byte rates per client (Kafka's ``producer_byte_rate`` and
``consumer_byte_rate``), as a broker's faces enforce them.

A caller over its quota is muted (KIP-219): before any work, its request waits while it owes
throttle time; then what the request carries (a produce) or may read (a fetch, reserved before
reading and corrected by what was sent) is recorded into its rate windows
(``lanes.security.quotas``), and what it owes now is answered in ``throttle_time_ms``. The
cluster's own traffic (internal topics only: coordinators reading and writing their shards) is
never measured. All time is the injected clock's.

Owned by the broker's event loop.
"""

from __future__ import annotations

from lanes.clock import Clock
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.quotas.request_quota import muted
from lanes.security.quotas import ClientQuotas, Limited


def measured(topics: list[str]) -> bool:
    """Whether a request on ``topics`` counts against its caller's byte-rate quota (not when it
    names internal topics only)."""
    return not all(topic == CONSUMER_OFFSETS_TOPIC for topic in topics)


class ByteRateQuotas:
    """The byte-rate windows of every client of this broker; see the module docstring."""

    def __init__(self, clock: Clock, metrics: ServiceMetrics | None = None) -> None:
        self._clock = clock
        self._metrics = metrics
        self._quotas = ClientQuotas()

    async def admit(self, key: str, limited: Limited | None, size_bytes: int) -> int:
        """Wait while the caller ``limited`` names is muted under ``key``, then record
        ``size_bytes`` (with no await in between, so waiters go one at a time as the rate allows);
        what it owes now, in ms. Nothing for a caller without a quota (None)."""
        if limited is None:
            return 0
        await muted(self._quotas, key, limited, self._metrics, self._clock)
        return self.record(key, limited, size_bytes)

    def record(self, key: str, limited: Limited, size_bytes: int) -> int:
        """Record ``size_bytes`` (negative: take back part of a reservation); what the caller owes
        now, in ms."""
        who, quota = limited
        return self._quotas.record(who, key, size_bytes, quota, self._clock.monotonic_ms() / 1000)

    def muted_ms(self, key: str, limited: Limited) -> int:
        """How long the caller stays muted under ``key`` from now."""
        return self._quotas.muted_ms(limited[0], key, self._clock.monotonic_ms() / 1000)
