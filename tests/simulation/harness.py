"""What every seeded world shares: a simulated clock with an event queue, and the seed loop.

``LANES_SIM_SEEDS`` sets how many seeds a simulation test runs (by default what fits ``make
test``'s time: each simulation says how many; long runs set more, 10,000 before a release);
``LANES_SIM_SEED`` replays one. The seed sweeps run on every core (``failing_seeds``'s
``processes``): each seed's world is independent and deterministic, so the outcome is the same.
"""

from __future__ import annotations

import concurrent.futures
import heapq
import itertools
import multiprocessing
import os
import random
from collections.abc import Callable, Sequence

from lanes.invariants import InvariantError

#: the seeds a sweep runs when ``LANES_SIM_SEEDS`` is set (else the simulation's own default)
SEEDS = int(os.environ["LANES_SIM_SEEDS"]) if os.environ.get("LANES_SIM_SEEDS") else None


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


def seeds_to_run(regressions: list[int], default: int) -> list[int]:
    """The regression seeds and ``SEEDS`` (else ``default``) more, or only ``LANES_SIM_SEED``."""
    only = os.environ.get("LANES_SIM_SEED")
    return [int(only)] if only else [*regressions, *range(default if SEEDS is None else SEEDS)]


#: Processes a seed sweep runs in: ``LANES_SIM_PROCESSES``, else every core, or one under a
#: pytest-xdist worker (the other worker's tests, fault scenarios among them, must not be starved
#: of CPU; make test runs the simulations beside the workers with 1 for the same reason).
PROCESSES = int(
    os.environ.get("LANES_SIM_PROCESSES")
    or (1 if os.environ.get("PYTEST_XDIST_WORKER") else max(1, os.cpu_count() or 1))
)


def failing_seeds(
    run: Callable[[int], list[str]], seeds: range | list[int], stop_after: int = 3, *, processes: int = 1
) -> dict[int, list[str]]:
    """The first ``stop_after`` seeds (in seed order) whose run finds violations (a checker's, or
    an invariant the code under test checks itself, ``lanes.invariants``), with them;
    with ``processes`` above 1, the seeds are shared among that many fresh processes (``run``
    must be a module-level function; none of the caller's patches reach them)."""
    if processes <= 1 or len(seeds) < 2:
        return _failing_in(run, list(seeds), stop_after)
    shares = [list(seeds)[i::processes] for i in range(processes)]
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = list(pool.map(_failing_in, [run] * processes, shares, [stop_after] * processes))
    failures = dict(sorted(item for share in found for item in share.items()))
    return dict(list(failures.items())[:stop_after])


def _failing_in(run: Callable[[int], list[str]], seeds: list[int], stop_after: int) -> dict[int, list[str]]:
    failures: dict[int, list[str]] = {}
    for seed in seeds:
        try:
            violations = run(seed)
        except InvariantError as broken:  # the code under test caught itself in a wrong state
            violations = [f"invariant broken: {broken}"]
        if violations:
            failures[seed] = violations
            if len(failures) >= stop_after:
                break
    return failures
