"""The controllers' Raft core, scenario by scenario as the paper tells them (issue #22): elections
with pre-vote, one vote per epoch, the up-to-date rule, commitment by majority and only under an
entry of the leader's own epoch (figure 8), divergence and truncation, leader stickiness and
check-quorum, catching up by snapshot (KIP-630), and membership changes one voter at a time
(KIP-853, the thesis's section 4.1)."""

from __future__ import annotations

import random

from lanes.controller.raft import (
    BeginEpoch,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    MemoryRaftLog,
    Message,
    RaftConfig,
    RaftCore,
    Role,
    SnapshotId,
    Voter,
    VoteRequest,
    VoteResponse,
)

CONFIG = RaftConfig(election_timeout_ms=100, fetch_timeout_ms=30, max_snapshot_chunk_bytes=32)


class Cluster:
    """Cores wired by a network the test controls: messages are delivered in order, except on
    links the test cut."""

    def __init__(self, size: int = 3, logs: dict[int, list[Entry]] | None = None, observers: int = 0) -> None:
        ids = frozenset(range(1, size + 1))
        self.now = 0
        self.cores = {
            n: RaftCore.restart(n, ids, MemoryRaftLog((logs or {}).get(n, [])), random.Random(n), config=CONFIG)
            for n in range(1, size + observers + 1)
        }
        self.cut: set[tuple[int, int]] = set()
        self.in_flight: list[Message] = []
        self.delivered: list[Message] = []

    def isolate(self, node: int) -> None:
        self.cut |= {(node, n) for n in self.cores if n != node} | {(n, node) for n in self.cores if n != node}

    def heal(self) -> None:
        self.cut.clear()

    def apply(self) -> None:
        """Every node's state machine takes what it committed (as the drivers do)."""
        for core in self.cores.values():
            while core.committed():
                pass

    def deliver(self, rounds: int = 50) -> None:
        for _ in range(rounds):
            for core in self.cores.values():
                self.in_flight.extend(core.take_messages())
            if not self.in_flight:
                return
            batch, self.in_flight = self.in_flight, []
            for message in batch:
                if (message.sender, message.to) not in self.cut:
                    self.delivered.append(message)
                    self.cores[message.to].step(message, self.now)

    def run(self, ms: int) -> None:
        """Tick every core every 10 ms, delivering messages between ticks."""
        for _ in range(ms // 10):
            self.now += 10
            for core in self.cores.values():
                core.tick(self.now)
            self.deliver()

    def leaders(self) -> list[int]:
        return [n for n, core in self.cores.items() if core.role is Role.LEADER]


def elect(cluster: Cluster) -> int:
    cluster.run(400)
    leaders = cluster.leaders()
    assert len(leaders) == 1, leaders
    return leaders[0]


def test_a_cluster_without_a_leader_elects_one_after_a_pre_vote_and_commits_its_entry() -> None:
    cluster = Cluster()
    leader = elect(cluster)
    core = cluster.cores[leader]
    assert core.epoch == 1, "pre-votes do not raise the epoch: only the real election did"
    assert core.log.entries(0, 1) == [Entry(1, b"")], "a new leader first appends an entry of its epoch"
    cluster.run(100)
    assert all(c.high_watermark == 1 for c in cluster.cores.values())
    assert all(c.leader == leader for c in cluster.cores.values())


def test_a_proposal_commits_once_a_majority_holds_it_and_is_applied_once_in_order() -> None:
    cluster = Cluster()
    leader = cluster.cores[elect(cluster)]
    offsets = [leader.propose(f"v{i}".encode()) for i in range(3)]
    assert offsets == [1, 2, 3]
    cluster.run(100)
    for core in cluster.cores.values():
        assert [entry.data for _, entry in core.committed()] == [b"", b"v0", b"v1", b"v2"]
        assert core.committed() == [], "each entry is applied once"


def test_a_voter_grants_one_vote_per_epoch() -> None:
    cluster = Cluster()
    voter = cluster.cores[3]
    for candidate in (1, 2):
        voter.step(VoteRequest(candidate, 3, 1, 0, 0, pre_vote=False), 0)
    answers = voter.take_messages()
    assert [(m.to, m.granted) for m in answers] == [(1, True), (2, False)]  # type: ignore[union-attr]
    assert voter.hard_state == (1, 1), "the vote is durable state"


def test_a_candidate_whose_log_is_behind_gets_no_vote() -> None:
    cluster = Cluster(logs={3: [Entry(1, b""), Entry(2, b"")]})
    voter = cluster.cores[3]
    voter.step(VoteRequest(1, 3, 3, last_epoch=1, end_offset=5, pre_vote=False), 0)
    (answer,) = voter.take_messages()
    assert not answer.granted, "a longer log of an older epoch is not more up to date"  # type: ignore[union-attr]


def test_a_leader_never_commits_an_older_epochs_entry_by_counting_replicas_alone() -> None:
    """Figure 8: an entry of epoch 2 on a majority is committed only once an entry of the current
    leader's epoch is on a majority too."""
    old = [Entry(1, b""), Entry(2, b"x")]
    core = RaftCore.restart(
        1, frozenset({1, 2, 3}), MemoryRaftLog(old), random.Random(1), hard_state=(3, None), config=CONFIG
    )
    core.tick(1_000)  # no leader heard: a pre-vote, then (with node 2's votes) the election
    core.step(VoteResponse(2, 1, 3, granted=True, pre_vote=True), 1_000)
    core.step(VoteResponse(2, 1, 4, granted=True, pre_vote=False), 1_000)
    assert (core.role, core.epoch) == (Role.LEADER, 4)
    assert core.log.entries(2, 1) == [Entry(4, b"")]
    core.step(FetchRequest(2, 1, 4, fetch_offset=2, last_fetched_epoch=2), 1_001)
    assert core.high_watermark == 0, "the epoch-2 entry is on a majority, yet not committed"
    core.step(FetchRequest(2, 1, 4, fetch_offset=3, last_fetched_epoch=4), 1_002)
    assert core.high_watermark == 3, "committed with the new epoch's entry"


def test_a_diverged_follower_truncates_to_the_leaders_log() -> None:
    common = [Entry(1, b"")]
    cluster = Cluster(logs={1: [*common, Entry(2, b"a")], 2: [*common, Entry(3, b"b")], 3: [*common, Entry(3, b"b")]})
    for core in cluster.cores.values():
        core.epoch = 3
    leader = elect(cluster)
    assert leader in (2, 3)
    cluster.run(200)
    logs = {n: c.log.entries(0, c.log.end_offset) for n, c in cluster.cores.items()}
    assert logs[1] == logs[2] == logs[3], "node 1's epoch-2 entry, never committed, is gone"
    assert Entry(2, b"a") not in logs[1]


def test_pre_vote_keeps_a_node_that_was_cut_off_from_deposing_the_leader() -> None:
    cluster = Cluster()
    leader = elect(cluster)
    loner = next(n for n in cluster.cores if n != leader)
    cluster.isolate(loner)
    cluster.run(1_000)
    assert cluster.cores[loner].epoch == cluster.cores[leader].epoch, "pre-votes failed: no epoch inflation"
    cluster.heal()
    cluster.run(300)
    assert cluster.leaders() == [leader], "the working leader stays"
    assert cluster.cores[loner].leader == leader


def test_check_quorum_makes_a_cut_off_leader_resign_and_the_others_elect_a_new_one() -> None:
    cluster = Cluster()
    leader = elect(cluster)
    old_epoch = cluster.cores[leader].epoch
    cluster.isolate(leader)
    cluster.run(600)
    assert cluster.cores[leader].role is not Role.LEADER, "it resigned: a majority stopped fetching"
    others = [n for n in cluster.leaders() if n != leader]
    assert len(others) == 1
    assert cluster.cores[others[0]].epoch > old_epoch
    assert cluster.cores[leader].propose(b"late") is None, "the old leader takes no writes"
    cluster.heal()
    cluster.run(300)
    assert cluster.cores[leader].leader == others[0]


def test_voters_that_heard_of_a_dead_leader_only_from_each_other_still_elect_at_once() -> None:
    cluster = Cluster()
    leader = elect(cluster)
    cluster.isolate(leader)  # it died
    a, b = sorted(n for n in cluster.cores if n != leader)
    # a times out first and asks b, which still heard from the leader lately: refused, naming it
    cluster.cores[a]._election_deadline_ms = cluster.now + 10
    cluster.cores[b]._election_deadline_ms = cluster.now + 90
    cluster.run(20)
    assert cluster.cores[a].role is Role.FOLLOWER
    assert cluster.cores[a].leader == leader, "b's refusal named the old leader"
    # Hearing of the leader from b is no contact with it: a does not refuse b (nor b a) for it,
    # so they elect within two election timeouts instead of refusing each other in turn.
    cluster.run(2 * CONFIG.election_timeout_ms)
    assert len([n for n in cluster.leaders() if n != leader]) == 1


def test_a_resigning_leader_has_the_others_elect_at_once() -> None:
    cluster = Cluster()
    leader = elect(cluster)
    epoch = cluster.cores[leader].epoch
    cluster.cores[leader].resign()
    cluster.deliver()
    cluster.isolate(leader)  # it stopped
    cluster.run(CONFIG.fetch_timeout_ms + 30)  # well within an election timeout
    others = [n for n in cluster.leaders() if n != leader]
    assert len(others) == 1, "a successor was elected without waiting for an election timeout"
    assert cluster.cores[others[0]].epoch > epoch


def test_a_stale_fetch_gets_the_new_epoch_and_leader() -> None:
    cluster = Cluster()
    leader = elect(cluster)
    follower = next(n for n in cluster.cores if n != leader)
    cluster.cores[leader].step(FetchRequest(follower, leader, 0, 0, 0), cluster.now)
    (answer,) = cluster.cores[leader].take_messages()
    assert (answer.epoch, answer.leader) == (cluster.cores[leader].epoch, leader)  # type: ignore[union-attr]


def _snapshot_and_trim(core: RaftCore) -> None:
    """What the driver does: snapshot everything applied, drop the log below the snapshot."""
    log = core.log
    assert isinstance(log, MemoryRaftLog)
    state = b"|".join(entry.data for _, entry in core.committed())
    log.trim_to(log.add_snapshot(b"state:" + state, core.applied))


def _leader_trimmed_past_a_loner() -> tuple[Cluster, int, int]:
    """A cluster whose leader committed 20 entries without one voter (cut off), then snapshotted
    and dropped its log below them: (cluster, leader, the cut-off voter)."""
    cluster = Cluster()
    leader_id = elect(cluster)
    leader = cluster.cores[leader_id]
    loner = next(n for n in cluster.cores if n != leader_id)
    cluster.isolate(loner)
    for i in range(20):
        leader.propose(f"value-{i}".encode())
    cluster.run(100)
    _snapshot_and_trim(leader)
    return cluster, leader_id, loner


def test_a_follower_behind_the_leaders_log_start_installs_its_snapshot_in_chunks_and_goes_on() -> None:
    """KIP-630: the leader answers a fetch below its log start with its snapshot id; the
    follower fetches the snapshot chunk by chunk, installs it (its log then starts at the
    snapshot's end) and fetches entries from there."""
    cluster, leader_id, loner = _leader_trimmed_past_a_loner()
    leader = cluster.cores[leader_id]
    assert leader.log.start_offset == 21
    leader.propose(b"after the snapshot")
    cluster.heal()
    cluster.run(600)
    chunks = [m for m in cluster.delivered if isinstance(m, FetchSnapshotResponse)]
    assert len(chunks) > 1, "the snapshot went in several chunks of at most max_snapshot_chunk_bytes"
    assert all(len(m.data) <= CONFIG.max_snapshot_chunk_bytes for m in chunks)
    follower = cluster.cores[loner]
    assert follower.take_installed_snapshot() == SnapshotId(21, leader.epoch)
    assert follower.log.start_offset == 21
    assert follower.log.read_snapshot(SnapshotId(21, leader.epoch), 0, 10_000) == (
        leader.log.read_snapshot(SnapshotId(21, leader.epoch), 0, 10_000)
    )
    assert [e.data for e in follower.log.entries(21, 10)] == [b"after the snapshot"]
    assert [entry.data for _, entry in follower.committed()] == [b"after the snapshot"], (
        "the state machine goes on from the snapshot's end"
    )


def test_a_snapshot_replaced_during_the_transfer_is_fetched_again_from_its_newest_id() -> None:
    cluster, leader_id, loner = _leader_trimmed_past_a_loner()
    leader = cluster.cores[leader_id]
    old = leader.log.latest_snapshot
    leader.step(FetchRequest(loner, leader_id, leader.epoch, 0, 0), cluster.now)
    (answer,) = [m for m in leader.take_messages() if m.to == loner]
    assert isinstance(answer, FetchResponse)
    assert answer.snapshot == old
    leader.propose(b"more")
    cluster.run(50)
    _snapshot_and_trim(leader)  # the old snapshot is gone
    leader.step(FetchSnapshotRequest(loner, leader_id, leader.epoch, old, 0), cluster.now)  # type: ignore[arg-type]
    (refusal,) = [m for m in leader.take_messages() if m.to == loner]
    assert isinstance(refusal, FetchSnapshotResponse)
    assert refusal.size == -1
    cluster.heal()
    cluster.run(300)
    assert cluster.cores[loner].take_installed_snapshot() == leader.log.latest_snapshot
    assert cluster.cores[loner].log.end_offset == leader.log.end_offset


def test_a_follower_fetching_a_snapshot_counts_for_check_quorum() -> None:
    """A leader whose followers all load its snapshot for longer than an election timeout keeps
    leading: those fetches are contact."""
    leader_core = RaftCore.restart(1, frozenset({1, 2, 3}), MemoryRaftLog(), random.Random(1), config=CONFIG)
    leader_core.tick(1_000)
    for voter in (2, 3):
        leader_core.step(VoteResponse(voter, 1, 0, granted=True, pre_vote=True), 1_000)
    for voter in (2, 3):
        leader_core.step(VoteResponse(voter, 1, 1, granted=True, pre_vote=False), 1_000)
    assert leader_core.role is Role.LEADER
    for voter in (2, 3):
        leader_core.step(FetchRequest(voter, 1, 1, 1, 1), 1_000)
    _snapshot_and_trim(leader_core)
    snapshot = leader_core.log.latest_snapshot
    assert snapshot is not None
    for now in range(1_000, 1_000 + 5 * CONFIG.election_timeout_ms, 20):
        for voter in (2, 3):
            leader_core.step(FetchSnapshotRequest(voter, 1, 1, snapshot, 0), now)
        leader_core.tick(now)
    assert leader_core.role is Role.LEADER


def voters(*nodes: int) -> tuple[Voter, ...]:
    return tuple(Voter(node) for node in nodes)


def test_an_observer_fetches_without_voting_until_the_leader_adds_it() -> None:
    cluster = Cluster(observers=1)
    leader_id = elect(cluster)
    leader, newcomer = cluster.cores[leader_id], cluster.cores[4]
    for i in range(5):
        leader.propose(f"v{i}".encode())
    cluster.run(200)
    cluster.apply()
    assert not newcomer.is_voter
    assert newcomer.leader == leader_id, "it asked a voter who leads, then fetched from the leader"
    assert newcomer.log.end_offset == leader.log.end_offset
    assert 4 in leader.observer_progress()
    assert 4 not in leader.voter_progress()
    offset = leader.propose_voters(voters(1, 2, 3, 4))
    assert offset is not None
    assert leader.quorum == 3, "the new configuration counts at once, before it commits"
    cluster.run(100)
    assert all(core.voters == {1, 2, 3, 4} for core in cluster.cores.values())
    assert all(core.high_watermark > offset for core in cluster.cores.values())
    # the newcomer now counts: with two of the old voters gone, no commit; with it back, commits
    others = [n for n in (1, 2, 3) if n != leader_id]
    cluster.isolate(others[0])
    cluster.isolate(4)
    before = leader.high_watermark
    leader.propose(b"needs three of four")
    cluster.run(50)
    assert leader.high_watermark == before
    cluster.heal()
    cluster.isolate(others[0])
    cluster.run(50)
    assert leader.high_watermark > before, "leader, the other old voter and the newcomer: three of four"


def test_a_leader_that_removes_itself_leads_until_the_change_commits_then_the_others_elect() -> None:
    cluster = Cluster()
    leader_id = elect(cluster)
    leader = cluster.cores[leader_id]
    cluster.apply()
    remaining = tuple(n for n in (1, 2, 3) if n != leader_id)
    offset = leader.propose_voters(voters(*remaining))
    assert offset is not None
    assert leader.role is Role.LEADER, "it leads until the removal is committed"
    cluster.run(400)
    assert leader.role is not Role.LEADER
    assert not leader.is_voter
    (successor,) = cluster.leaders()
    assert successor in remaining
    assert cluster.cores[successor].high_watermark > offset
    cluster.run(1_000)
    assert leader.role is Role.FOLLOWER, "removed, it only observes"
    assert leader.leader == successor
    assert cluster.leaders() == [successor]


def test_a_change_of_more_than_one_voter_or_before_the_last_commits_is_refused() -> None:
    cluster = Cluster(observers=2)
    leader_id = elect(cluster)
    leader = cluster.cores[leader_id]
    assert (
        leader.voters_change_refusal(voters(1, 2, 3, 4)) == "this controller is not the active one (or not yet ready)"
    )
    cluster.apply()
    assert leader.voters_change_refusal(voters(1, 2, 3, 4, 5)) == "a change adds or removes exactly one voter"
    assert leader.propose_voters(voters(1, 2, 3, 4, 5)) is None
    cluster.isolate(next(n for n in (1, 2, 3) if n != leader_id))
    cluster.isolate(4)
    assert leader.propose_voters(voters(1, 2, 3, 4)) is not None
    assert leader.voters_change_refusal(voters(1, 2, 3, 4, 5)) == "an earlier change of the quorum is not committed yet"
    follower = cluster.cores[next(n for n in (1, 2, 3) if n != leader_id)]
    assert follower.voters_change_refusal(voters(1, 2)) is not None, "only the leader changes the quorum"


def test_a_restarted_node_takes_the_quorum_from_its_log_and_its_snapshot() -> None:
    cluster = Cluster(observers=1)
    leader_id = elect(cluster)
    leader = cluster.cores[leader_id]
    cluster.run(100)
    cluster.apply()
    assert leader.propose_voters(voters(1, 2, 3, 4)) is not None
    cluster.run(100)
    log = cluster.cores[4].log
    assert isinstance(log, MemoryRaftLog)
    restarted = RaftCore.restart(4, frozenset({1, 2, 3}), log.copy(), random.Random(4), config=CONFIG)
    assert restarted.voters == {1, 2, 3, 4}, "the configuration entry in its log"
    end = cluster.cores[4].high_watermark
    log.trim_to(log.add_snapshot(b"state", end, cluster.cores[4].voters_at(end)))
    assert log.start_offset > 0
    restarted = RaftCore.restart(4, frozenset({1, 2, 3}), log.copy(), random.Random(4), config=CONFIG)
    assert restarted.voters == {1, 2, 3, 4}, "the snapshot's voters once the log no longer holds the entry"


def test_a_late_answer_about_a_log_that_grew_back_to_the_same_length_is_ignored() -> None:
    """The follower truncated and appended back to the same end: an answer to its earlier fetch
    (same offset, another last epoch) no longer describes its log."""
    follower = RaftCore.restart(
        2, frozenset({1, 2, 3}), MemoryRaftLog([Entry(1, b""), Entry(1, b"old")]), random.Random(2), config=CONFIG
    )
    follower.step(BeginEpoch(1, 2, 5), 0)
    follower.take_messages()
    stale = FetchResponse(1, 2, 5, 1, 2, diverging=(1, 1), high_watermark=2, last_fetched_epoch=1)
    follower.step(FetchResponse(1, 2, 5, 1, 2, diverging=(1, 1), high_watermark=0, last_fetched_epoch=1), 1)
    follower.step(FetchResponse(1, 2, 5, 1, 1, entries=(Entry(5, b"new"),), high_watermark=2, last_fetched_epoch=1), 2)
    assert follower.log.entries(0, 5) == [Entry(1, b""), Entry(5, b"new")]
    assert follower.high_watermark == 2
    follower.step(stale, 3)  # delivered late (a duplicate of the first answer)
    assert follower.log.entries(0, 5) == [Entry(1, b""), Entry(5, b"new")], "the committed entry stays"
