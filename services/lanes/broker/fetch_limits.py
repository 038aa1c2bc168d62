"""What one fetch may take from a broker: Kafka's server-side clamps, and a memory budget for the
record bytes consumer fetches hold while they are answered.

A fetch names its sizes and its wait; the broker caps them (Kafka's ``fetch.max.bytes`` for
consumers, ``replica.fetch.response.max.bytes`` for followers), raises ``min_bytes`` to at least
one byte and lowers it to the capped ``max_bytes`` (a fetch asking for more than it may take
would wait out every poll), and caps the wait. Asking for more is not an error: as in Kafka, the
answer is just no larger than the cap.

Kafka sends record bytes from the page cache with ``sendfile``, so a fetch costs it no heap.
Lanes reads them into memory to put them in a gRPC message, so a broker also bounds what all
consumer fetches hold at once (``FetchMemory``), from their read until gRPC has sent their
answer, and what one user's fetches hold (half of it): eight fetches of 2 GiB each must not hold
a large partition in memory each, nor one user's answers the whole budget. A fetch waiting for
``min_bytes`` holds nothing (``lanes.broker.consumer_fetch``). Followers stay outside that budget:
replication must not wait behind consumers, and there are few followers, each capped.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Kafka's ``fetch.max.bytes`` default: the largest consumer fetch answer.
FETCH_MAX_BYTES = 55 * 1024 * 1024
#: Kafka's ``replica.fetch.response.max.bytes`` default: the largest answer to a follower.
REPLICA_FETCH_RESPONSE_MAX_BYTES = 10 * 1024 * 1024
#: The longest a fetch long-polls, whatever it asks (a client's request timeout is 30 s).
MAX_WAIT_MS_CAP = 30_000
#: Record bytes all consumer fetches on a broker hold at once, by default.
FETCH_MEMORY_BYTES = 128 * 1024 * 1024
#: The part of it the fetches of one user may hold.
HOLDER_SHARE = 0.5


@dataclass(frozen=True)
class FetchLimits:
    """A fetch's sizes and wait after the broker's caps."""

    max_bytes: int
    min_bytes: int
    max_wait_ms: int

    @classmethod
    def clamp(cls, max_bytes: int, min_bytes: int, max_wait_ms: int, *, cap_bytes: int) -> FetchLimits:
        """``max_bytes`` at most ``cap_bytes`` (0 or less: the cap), ``min_bytes`` in
        1..``max_bytes``, ``max_wait_ms`` in 0..``MAX_WAIT_MS_CAP``."""
        capped = cap_bytes if max_bytes <= 0 else min(max_bytes, cap_bytes)
        return cls(capped, min(max(min_bytes, 1), capped), min(max(max_wait_ms, 0), MAX_WAIT_MS_CAP))


class FetchMemory:
    """The record bytes consumer fetches hold, against ``capacity_bytes``, and by holder (a
    principal), against ``holder_share`` of it. Owned by the event loop: ``grant`` and ``settle``
    are called on it, never from a worker thread.

    A fetch asks for a grant just before it reads and settles it after with what it read (the
    read may exceed the grant by its first batch: a fetch always gets one whole batch), then
    holds that until gRPC has sent its answer. The bytes held stay under the capacity plus one
    batch per read in progress, and one holder's under its share plus the same: a user whose
    answers are not taken off the wire (a client that stops reading its socket) holds at most
    its share, and everyone else fetches from the rest. With nothing left to grant a fetch waits
    for memory to be freed (or its wait to end), holding none."""

    def __init__(self, capacity_bytes: int, holder_share: float = HOLDER_SHARE) -> None:
        if capacity_bytes <= 0:
            raise ValueError("the fetch memory capacity must be positive")
        self.capacity_bytes = capacity_bytes
        self.holder_capacity_bytes = max(1, int(capacity_bytes * holder_share))
        self.held_bytes = 0
        self._held_by: dict[str, int] = {}  # holders holding something (none: no entry)

    def grant(self, wanted_bytes: int, holder: str = "") -> int:
        """Reserve up to ``wanted_bytes`` for ``holder`` (0 when nothing is left to it)."""
        free = min(self.capacity_bytes - self.held_bytes, self.holder_capacity_bytes - self._held_by.get(holder, 0))
        granted = max(0, min(wanted_bytes, free))
        self._hold(holder, granted)
        return granted

    def settle(self, granted_bytes: int, read_bytes: int, holder: str = "") -> None:
        """Hold what a read took instead of what it was granted; a sent answer settles all it
        held with nothing read."""
        self._hold(holder, read_bytes - granted_bytes)
        if self.held_bytes < 0:
            raise AssertionError(f"fetch memory settled below zero ({self.held_bytes} bytes held)")

    def held_by(self, holder: str) -> int:
        return self._held_by.get(holder, 0)

    def _hold(self, holder: str, change_bytes: int) -> None:
        self.held_bytes += change_bytes
        held = self._held_by.get(holder, 0) + change_bytes
        if held:
            self._held_by[holder] = held
        else:
            self._held_by.pop(holder, None)
