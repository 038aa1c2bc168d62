"""Deterministic simulation of replication on the broker's and the controller's own code: real
``Partition``s over real logs, the broker engine's leader and follower sides, ``ControllerCore``,
under message loss, duplication, delay, one-way and two-way cuts, pauses, crashes and restarts,
one seeded world per run (``tests/simulation/replication_world.py``).

``LANES_SIM_SEEDS`` sets how many seeds run (default 600: a seed runs the real logs on disk, about
80 ms); ``LANES_SIM_SEED`` replays one. A seed that ever fails belongs in ``REGRESSIONS``.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from lanes.broker import partition
from lanes.broker.fetch_session import NO_SESSION, FetchPosition, FetchSessionBuilder
from lanes.broker.replication import LeaderReplica
from lanes.errors import ErrorCode
from lanes.storage.log import PartitionLog
from lanes.topic_partition import TopicPartition
from tests.simulation.harness import PROCESSES, failing_seeds, seeds_to_run
from tests.simulation.replication_world import run

#: seeds that once failed: 120, 128, 137 found a demoted leader that wrote nothing in its epoch
#: diverging on every fetch (PartitionLog.truncate_to now drops such an epoch); 3901 (the first
#: sweep over the real Partition) found a late AlterPartition answer putting a fenced broker back
#: into the leader's ISR after the metadata had taken it out (the ISR never healed)
REGRESSIONS: list[int] = [120, 128, 137, 3901]


SEEDS = seeds_to_run(REGRESSIONS, default=600)


@pytest.mark.timeout(max(300, len(SEEDS) // 10))  # about 80 ms a seed: 10,000 take longer than the default
def test_every_seed_keeps_acknowledged_records_and_replicas_consistent() -> None:
    failures = failing_seeds(run, SEEDS, processes=PROCESSES)
    assert not failures, "; ".join(f"seed {seed}: {v[:3]}" for seed, v in failures.items())


def _acknowledges_before_the_high_watermark(self: LeaderReplica, required_offset: int) -> ErrorCode | None:
    if len(self.isr) < self.min_insync_replicas:
        return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return ErrorCode.NONE  # the mutation: does not wait for the high-water mark


def _high_watermark_over_the_leader_alone(self: LeaderReplica) -> None:
    self.high_watermark = max(self.high_watermark, self.log_end_offset)  # the mutation: ignores followers


def _names_only_advances(
    self: FetchSessionBuilder, positions: Mapping[TopicPartition, FetchPosition]
) -> tuple[dict[TopicPartition, FetchPosition], list[TopicPartition]]:
    if self.session_id == NO_SESSION:
        return dict(positions), []
    sent = self._sent  # the mutation: a position that moved back (a truncation) is not named
    return {k: p for k, p in positions.items() if k not in sent or p.fetch_offset > sent[k].fetch_offset}, []


def _never_truncates(epochs: object, log_end_offset: int, high_watermark: int, diverging: object) -> int:
    return log_end_offset  # the mutation: a diverged follower keeps its log


def _high_watermark_set_as_given(self: PartitionLog, offset: int) -> int:
    return self.update_high_watermark(offset)  # the mutation: the mark may move back


@pytest.mark.parametrize(
    ("owner", "name", "mutant"),
    [
        (LeaderReplica, "acks_all_outcome", _acknowledges_before_the_high_watermark),
        (LeaderReplica, "_advance_high_watermark", _high_watermark_over_the_leader_alone),
        (partition, "follower_truncation", _never_truncates),
        (FetchSessionBuilder, "request", _names_only_advances),
        (PartitionLog, "maybe_increment_high_watermark", _high_watermark_set_as_given),
    ],
)
def test_the_simulation_finds_a_mutated_core_within_1000_seeds(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, mutant: object
) -> None:
    monkeypatch.setattr(owner, name, mutant)
    failures = failing_seeds(run, range(1000), stop_after=1)
    assert failures, f"1,000 seeds did not notice {name} mutated"
    seed, violations = next(iter(failures.items()))
    print(f"\nmutated {name}: seed {seed} found {violations[0]}")


def _fails_on_multiples_of_seven(seed: int) -> list[str]:
    return [f"seed {seed} is a multiple of 7"] if seed % 7 == 0 and seed else []


def test_a_sweep_over_processes_reports_the_first_failing_seeds_in_seed_order() -> None:
    """What the sweeps above rely on: shared among processes, the seeds' failures come back
    as a serial sweep would report them."""
    serial = failing_seeds(_fails_on_multiples_of_seven, range(100))
    assert list(serial) == [7, 14, 21]
    assert failing_seeds(_fails_on_multiples_of_seven, range(100), processes=2) == serial
