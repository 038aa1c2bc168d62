"""Deterministic simulation of the controllers' Raft core (issue #22): election safety, leader
completeness, state-machine safety, log matching and liveness after healing, under message
loss, duplication, delay, one-way and two-way cuts, pauses, crashes and crashes before a step's
writes were durable, with snapshots, log trimming and snapshot transfer, and voters added and
removed one at a time (``tests/simulation/raft_world.py``).

``LANES_SIM_SEEDS`` sets how many seeds run (default 2,000, about 20 ms each); ``LANES_SIM_SEED``
replays one.
A seed that ever fails belongs in ``REGRESSIONS``.
"""

from __future__ import annotations

import pytest

from lanes.controller.raft import RaftCore, Role, Voter, VoteRequest, VoteResponse
from tests.simulation.harness import PROCESSES, failing_seeds, seeds_to_run
from tests.simulation.raft_world import FAULT_PHASE_MS, SETTLE_MS, World, run

#: seeds that once failed: 57 and 793 found a voter whose epoch ran ahead in a lost election left
#: out for good (its pre-votes refused, the leader's announcements ignored as older: it now
#: answers them with its epoch and the leader steps down); 74 found a restarted leader naming
#: itself as the leader to follow; 3754 found a snapshot transfer slower than the snapshot interval
#: restarting for ever (the leader now keeps snapshots in transfer, and the log after them)
REGRESSIONS: list[int] = [57, 74, 793, 3754]


def test_every_seed_keeps_raft_safe_and_converges() -> None:
    failures = failing_seeds(run, seeds_to_run(REGRESSIONS, default=2_000), processes=PROCESSES)
    assert not failures, "; ".join(f"seed {seed}: {v[:3]}" for seed, v in failures.items())


def test_followers_behind_the_log_start_catch_up_by_snapshot_in_many_worlds() -> None:
    """The snapshot path is exercised, not just present: in 300 worlds, voters install the
    leader's snapshot dozens of times (and the checkers held for each, above)."""
    installs = 0
    for seed in range(300):
        world = World(seed)
        world.start()
        world.run_until(FAULT_PHASE_MS)
        world.heal()
        world.run_until(FAULT_PHASE_MS + SETTLE_MS)
        installs += world.installs
    assert installs >= 50, installs


def _votes_twice_in_an_epoch(self: RaftCore, request: VoteRequest) -> None:
    if request.pre_vote or request.epoch < self.epoch:
        return original_vote(self, request)
    if request.epoch > self.epoch:
        self._become_follower(request.epoch, -1)
    self.voted_for = request.sender  # the mutation: no check of the vote already given
    self.outbox.append(VoteResponse(self.node_id, request.sender, self.epoch, True, False))
    return None


def _never_truncates(self: RaftCore, leader_epoch: int, leader_end: int) -> int:
    return self.log.end_offset  # the mutation: a diverged follower keeps its log


def _votes_for_any_log(self: RaftCore, last_epoch: int, end_offset: int) -> bool:
    return True  # the mutation: no up-to-date check


def _changes_any_voters_any_time(self: RaftCore, voters: tuple[Voter, ...]) -> str | None:
    return None if self.role is Role.LEADER else "not the leader"  # the mutation: no single-change rules


def _counts_itself_when_removed(self: RaftCore) -> None:
    leading = self._leading
    if leading is None:
        return
    candidate = leading.majority_end(self.log.end_offset, self.quorum)  # the mutation: itself always
    if candidate > leading.epoch_start_offset:
        self.high_watermark = max(self.high_watermark, candidate)


def _never_sends_snapshots(self: RaftCore, fetch_offset: int, last_fetched_epoch: int) -> bool:
    return False  # the mutation: a follower behind the log start is sent what the log holds


original_vote = RaftCore._on_vote_request


@pytest.mark.parametrize(
    ("name", "mutant"),
    [
        ("_on_vote_request", _votes_twice_in_an_epoch),
        ("_truncation_offset", _never_truncates),
        ("_log_at_least", _votes_for_any_log),
        ("_needs_snapshot", _never_sends_snapshots),
        ("voters_change_refusal", _changes_any_voters_any_time),
        ("_leader_progress", _counts_itself_when_removed),
    ],
)
def test_the_simulation_finds_a_mutated_raft_core_within_1000_seeds(
    monkeypatch: pytest.MonkeyPatch, name: str, mutant: object
) -> None:
    monkeypatch.setattr(RaftCore, name, mutant)
    failures = failing_seeds(run, range(1000), stop_after=1)
    assert failures, f"1,000 seeds did not notice {name} mutated"
    seed, violations = next(iter(failures.items()))
    print(f"\nmutated {name}: seed {seed} found {violations[0]}")
