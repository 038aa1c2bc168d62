"""What every seeded world shares: a simulated clock with an event queue, and the seed loop.

``LANES_SIM_SEEDS`` sets how many seeds a simulation test runs (default 10,000);
``LANES_SIM_SEED`` replays one.
"""

from __future__ import annotations

import heapq
import itertools
import os
from collections.abc import Callable

SEEDS = int(os.environ.get("LANES_SIM_SEEDS", "10000"))


class EventLoop:
    """Actions at simulated times (ms), run in time order (ties in scheduling order)."""

    def __init__(self) -> None:
        self.now = 0
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._order = itertools.count()

    def at(self, delay_ms: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (self.now + max(0, delay_ms), next(self._order), action))

    def run_until(self, end_ms: int) -> None:
        while self._queue and self._queue[0][0] <= end_ms:
            when, _, action = heapq.heappop(self._queue)
            self.now = when
            action()
        self.now = end_ms


def seeds_to_run(regressions: list[int]) -> list[int]:
    """The regression seeds and ``SEEDS`` more, or only ``LANES_SIM_SEED``."""
    only = os.environ.get("LANES_SIM_SEED")
    return [int(only)] if only else [*regressions, *range(SEEDS)]


def failing_seeds(
    run: Callable[[int], list[str]], seeds: range | list[int], stop_after: int = 3
) -> dict[int, list[str]]:
    """The first ``stop_after`` seeds whose run finds violations, with them."""
    failures: dict[int, list[str]] = {}
    for seed in seeds:
        violations = run(seed)
        if violations:
            failures[seed] = violations
            if len(failures) >= stop_after:
                break
    return failures
