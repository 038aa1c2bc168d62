"""What every seeded world shares: a simulated clock with an event queue, and the seed loop.

``LANES_SIM_SEEDS`` sets how many seeds a simulation test runs (default 5,000: what fits
``make test``'s time; long runs set more);
``LANES_SIM_SEED`` replays one.
"""

from __future__ import annotations

import heapq
import itertools
import os
import random
from collections.abc import Callable, Sequence

SEEDS = int(os.environ.get("LANES_SIM_SEEDS", "5000"))


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


class Network:
    """The faults every world's network has, drawn from ``rng``: loss, duplication, delay (so
    reordering) while ``faults_on``, and links cut one way (``cuts`` holds (from, to) pairs)."""

    def __init__(
        self,
        rng: random.Random,
        *,
        losses: Sequence[float] = (0.0, 0.01, 0.05, 0.15),
        duplications: Sequence[float] = (0.0, 0.02, 0.1),
        max_delays_ms: Sequence[int] = (2, 10, 40, 120),
    ) -> None:
        self.rng = rng
        self.loss = rng.choice(losses)
        self.duplication = rng.choice(duplications)
        self.max_delay_ms = rng.choice(max_delays_ms)
        self.cuts: set[tuple[int, int]] = set()
        self.faults_on = True

    def transit_ms(self, source: int, target: int) -> list[int]:
        """The delay of each copy of a message from ``source`` to ``target`` that arrives (none:
        lost or cut; two: duplicated)."""
        copies = 1
        if self.faults_on:
            if (source, target) in self.cuts or self.rng.random() < self.loss:
                return []
            if self.rng.random() < self.duplication:
                copies = 2
        return [self.rng.randint(1, self.max_delay_ms) if self.faults_on else 1 for _ in range(copies)]


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
