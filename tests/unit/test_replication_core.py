"""The replication core: high-water mark, ISR proposals, acks=all, and the truncation rule, under
random fetch/append/time sequences with a checker of the guarantees."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from lanes.broker.replication import LeaderReplica, truncation_offset
from lanes.errors import ErrorCode

LAG_MS = 10_000


def leader(isr: list[int], min_isr: int = 2) -> LeaderReplica:
    return LeaderReplica(
        leader_id=1,
        replicas=[1, 2, 3],
        isr=isr,
        leader_epoch_start_offset=0,
        log_end_offset=0,
        high_watermark=0,
        now_ms=0,
        replica_lag_time_max_ms=LAG_MS,
        min_insync_replicas=min_isr,
    )


def test_the_high_watermark_is_the_smallest_isr_log_end_and_never_moves_back() -> None:
    replica = leader([1, 2, 3])
    replica.on_append(10)
    assert replica.high_watermark == 0
    replica.on_follower_fetch(2, 10, now_ms=1)
    assert replica.high_watermark == 0, "follower 3 has nothing yet"
    replica.on_follower_fetch(3, 7, now_ms=1)
    assert replica.high_watermark == 7
    replica.on_follower_fetch(3, 5, now_ms=2)  # a follower that truncated
    assert replica.high_watermark == 7


def test_fetches_of_an_older_incarnation_or_of_no_replica_do_not_count() -> None:
    """KIP-903: once broker 2 fetched at broker epoch 9, a fetch at epoch 8 (an incarnation
    before a restart) moves nothing; a proposal names the epoch each member fetched with."""
    replica = leader([1, 2])
    replica.on_append(10)
    assert replica.on_follower_fetch(2, 4, now_ms=1, broker_epoch=9)
    assert not replica.on_follower_fetch(2, 10, now_ms=2, broker_epoch=8)
    assert replica.high_watermark == 4
    assert not replica.on_follower_fetch(7, 10, now_ms=2, broker_epoch=9), "7 is no replica"
    assert replica.on_follower_fetch(3, 10, now_ms=2, broker_epoch=5)
    assert replica.broker_epochs([1, 2, 3]) == [-1, 9, 5]


def test_a_lagging_follower_leaves_the_isr_and_rejoins_once_caught_up() -> None:
    replica = leader([1, 2, 3])
    replica.on_append(10)
    replica.on_follower_fetch(2, 10, now_ms=100)
    replica.on_follower_fetch(3, 10, now_ms=100)
    replica.on_append(20)
    replica.on_follower_fetch(2, 20, now_ms=LAG_MS + 200)  # follower 3 is paused
    assert replica.proposed_isr(now_ms=LAG_MS + 200) == [1, 2]
    replica.on_isr_changed([1, 2])
    assert replica.high_watermark == 20
    assert replica.check_acks_all() is ErrorCode.NONE
    strict = leader([1, 2], min_isr=3)
    assert strict.check_acks_all() is ErrorCode.NOT_ENOUGH_REPLICAS
    replica.on_follower_fetch(3, 20, now_ms=LAG_MS + 300)  # resumed and caught up
    assert replica.proposed_isr(now_ms=LAG_MS + 300) == [1, 2, 3]


def test_acks_all_completes_at_the_high_watermark_or_fails_after_a_shrink() -> None:
    replica = leader([1, 2, 3])
    replica.on_append(5)
    assert replica.acks_all_outcome(5) is None
    replica.on_follower_fetch(2, 5, now_ms=1)
    replica.on_follower_fetch(3, 5, now_ms=1)
    assert replica.acks_all_outcome(5) is ErrorCode.NONE
    replica.on_append(9)
    replica.on_isr_changed([1])
    assert replica.high_watermark == 9, "a lone leader's ISR: the high-water mark follows it"
    assert replica.acks_all_outcome(9) is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, "but acks=all is not met"
    shrinking = leader([1, 2, 3])
    shrinking.on_append(5)
    shrinking.isr = [1]  # shrank (min.insync.replicas 2) while waiting, before the mark moved
    assert shrinking.acks_all_outcome(5) is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_truncation_finds_where_a_follower_diverged() -> None:
    # The follower led epoch 3 from offset 50 and wrote to 60; the new leader (epoch 4) ended epoch 2 at 55.
    assert truncation_offset([(1, 0), (2, 20), (3, 50)], 60, leader_epoch=2, leader_end_offset=55) == 50
    # Same epochs on both sides: keep what the leader also has.
    assert truncation_offset([(1, 0), (2, 20)], 40, leader_epoch=2, leader_end_offset=35) == 35
    assert truncation_offset([(1, 0), (2, 20)], 30, leader_epoch=2, leader_end_offset=35) == 30
    # The leader knows none of our epochs: start over.
    assert truncation_offset([(5, 0)], 10, leader_epoch=-1, leader_end_offset=-1) == 0


class ReplicationMachine(RuleBasedStateMachine):
    """A leader and two followers holding prefixes of the leader's log; random appends, fetches,
    pauses and ISR changes. Checker: an acks=all record is on at least min.insync.replicas."""

    @initialize()
    def start(self) -> None:
        self.now = 0
        self.replica = leader([1, 2, 3])
        self.follower_ends = {2: 0, 3: 0}
        self.acked: list[int] = []  # end offsets of acknowledged acks=all appends
        self.pending: list[int] = []

    @rule(records=st.integers(1, 5))
    def produce(self, records: int) -> None:
        if self.replica.check_acks_all() is not ErrorCode.NONE:
            return
        self.replica.on_append(self.replica.log_end_offset + records)
        self.pending.append(self.replica.log_end_offset)

    @rule(follower=st.sampled_from([2, 3]), progress=st.integers(0, 10), advance=st.integers(0, 4000))
    def fetch(self, follower: int, progress: int, advance: int) -> None:
        self.now += advance
        end = min(self.replica.log_end_offset, self.follower_ends[follower] + progress)
        self.follower_ends[follower] = end
        self.replica.on_follower_fetch(follower, end, self.now)

    @rule(advance=st.integers(0, 8000))
    def isr_change(self, advance: int) -> None:
        self.now += advance
        proposal = self.replica.proposed_isr(self.now)
        if proposal is not None:
            self.replica.on_isr_changed(proposal)

    @rule()
    def complete(self) -> None:
        still = []
        for end in self.pending:
            outcome = self.replica.acks_all_outcome(end)
            if outcome is ErrorCode.NONE:
                self.acked.append(end)
            elif outcome is None:
                still.append(end)
        self.pending = still

    @invariant()
    def guarantees(self) -> None:
        if not hasattr(self, "replica"):
            return
        replica = self.replica
        assert replica.leader_id in replica.isr
        assert replica.high_watermark <= replica.log_end_offset
        for member in replica.isr:
            if member != replica.leader_id:
                assert self.follower_ends[member] >= replica.high_watermark, "the mark is in every ISR log"
        for end in self.acked:
            holders = 1 + sum(1 for e in self.follower_ends.values() if e >= end)
            assert holders >= 2, f"an acknowledged record ending at {end} is on {holders} replica(s)"


ReplicationMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=50, deadline=None)
TestReplicationMachine = ReplicationMachine.TestCase


def test_a_leader_alone_in_its_isr_sets_the_mark_when_it_takes_over() -> None:
    alone = LeaderReplica(
        leader_id=1,
        replicas=[1, 2],
        isr=[1],
        leader_epoch_start_offset=9,
        log_end_offset=9,
        high_watermark=0,
        now_ms=0,
        replica_lag_time_max_ms=LAG_MS,
        min_insync_replicas=1,
    )
    assert alone.high_watermark == 9
    with_followers = leader([1, 2, 3])
    assert with_followers.high_watermark == 0, "followers in the ISR must fetch first"


def test_the_high_watermark_waits_for_a_member_whose_addition_is_pending() -> None:
    """Issue #21, mechanism 3 (Kafka's "maximal ISR"): once the leader proposes to add a caught-up
    follower, the high-water mark is computed over the ISR *and* the pending addition. Otherwise
    it moves past the joining follower while the proposal is in flight, the controller then
    admits a member that lacks committed records, and acks=all counts a copy that is not there."""
    replica = leader([1, 2], min_isr=2)
    replica.on_append(10)
    replica.on_follower_fetch(2, 10, now_ms=1)
    replica.on_follower_fetch(3, 10, now_ms=1)  # caught up: 3 may join
    assert replica.high_watermark == 10
    proposal = replica.proposed_isr(now_ms=1)
    assert proposal == [1, 2, 3]
    replica.on_isr_proposed(proposal)
    replica.on_append(20)
    replica.on_follower_fetch(2, 20, now_ms=2)  # follower 2 keeps up, 3 is slower
    assert replica.high_watermark == 10, "the pending member 3 holds the mark at its log end"
    replica.on_isr_changed([1, 2, 3])  # the controller accepted the addition
    replica.on_follower_fetch(3, 20, now_ms=3)
    assert replica.high_watermark == 20


def test_a_refused_proposal_stops_holding_the_high_watermark() -> None:
    replica = leader([1, 2], min_isr=2)
    replica.on_append(10)
    replica.on_follower_fetch(2, 10, now_ms=1)
    replica.on_follower_fetch(3, 10, now_ms=1)
    replica.on_isr_proposed([1, 2, 3])
    replica.on_append(20)
    replica.on_follower_fetch(2, 20, now_ms=2)
    assert replica.high_watermark == 10
    replica.on_isr_proposal_failed()
    assert replica.high_watermark == 20, "back to the committed ISR"


def test_a_leader_is_followed_while_every_other_isr_member_fetched_within_the_window() -> None:
    replica = leader([1, 2, 3])
    assert not replica.followed_within(now_ms=100, window_ms=1000), "nobody fetched yet"
    replica.on_follower_fetch(2, 0, now_ms=100)
    replica.on_follower_fetch(3, 0, now_ms=200)
    assert replica.followed_within(now_ms=1100, window_ms=1000)
    assert not replica.followed_within(now_ms=1101, window_ms=1000), "follower 2 went quiet"
    replica.on_isr_changed([1, 3])  # the quiet one left the ISR: the rest still follow
    assert replica.followed_within(now_ms=1101, window_ms=1000)
    alone = leader([1], min_isr=1)
    assert alone.followed_within(now_ms=10**9, window_ms=1), "a leader alone in its ISR has no one to lose"


def test_a_pending_proposal_holds_until_its_outcome_is_known() -> None:
    """Found by the replication simulation (issue #21): an AlterPartition that timed out may have
    been applied. Reverting to the committed ISR let the mark pass the member the controller had
    just added, which was then elected without the acknowledged records. The proposal stays
    pending (no new one is made) until the controller's answer or the metadata settles it."""
    replica = leader([1, 2], min_isr=2)
    replica.on_follower_fetch(3, 0, now_ms=1)
    proposal = replica.proposed_isr(now_ms=1)
    assert proposal == [1, 2, 3]
    replica.on_isr_proposed(proposal)
    replica.on_append(10)
    replica.on_follower_fetch(2, 10, now_ms=2)
    assert replica.proposed_isr(now_ms=2) is None, "one proposal at a time"
    assert replica.high_watermark == 0, "member 3 may be in the ISR already: it holds the mark"
    replica.on_isr_changed([1, 2, 3])  # the metadata says the first attempt was applied
    assert replica.pending_isr is None
