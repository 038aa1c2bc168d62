"""Time, injected: cores take a ``Clock`` instead of reading the system time.

``SystemClock`` is the real thing; ``ManualClock`` is advanced by tests, so time-based
behaviour (retention, segment.ms, flush.ms, session timeouts) is tested without sleeping.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock milliseconds (timestamps, retention) and a monotonic clock (timeouts)."""

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        ...

    def monotonic_ms(self) -> int:
        """Milliseconds on a clock that never goes backwards (for measuring intervals)."""
        ...


class SystemClock:
    """The system's clocks."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = now_ms
        self._monotonic_ms = 0

    def now_ms(self) -> int:
        return self._now_ms

    def monotonic_ms(self) -> int:
        return self._monotonic_ms

    def advance(self, ms: int) -> None:
        """Move both clocks forward by ``ms``."""
        if ms < 0:
            raise ValueError("a clock cannot go backwards")
        self._now_ms += ms
        self._monotonic_ms += ms


#: The system's clocks, for every default ``clock`` parameter.
SYSTEM_CLOCK: Clock = SystemClock()
