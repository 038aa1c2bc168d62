"""Replication logic of one partition, as a pure core (docs/architecture.md#the-broker).

``LeaderReplica`` is the leader's view: where each follower's log ends, the high-water mark, which
followers to drop from or add to the ISR, and when an ``acks=all`` produce may complete. The
broker feeds it events (appends, follower fetches, ISR changes confirmed by the controller) and
the time; it returns decisions. ``truncation_offset`` is the follower's rule for where its log
diverged from a new leader's.

Rules (as Kafka's):

- a follower's log end offset is the offset it asks to fetch from;
- it is *caught up* at a fetch whose offset reaches the leader's log end offset as it was at the
  follower's previous fetch; ``last_caught_up_ms`` records when;
- an ISR member not caught up for more than ``replica.lag.time.max.ms`` should leave the ISR; a
  non-member whose log end reaches the high-water mark (and the start of the leader's epoch)
  should join;
- the high-water mark is the smallest log end offset over the *maximal* ISR (the ISR and the
  members whose addition the leader has proposed and the controller not yet answered, as
  Kafka's), and never decreases: a joining member is never admitted lacking committed records;
- ``acks=all`` needs ``min.insync.replicas`` ISR members when the batch is appended
  (NOT_ENOUGH_REPLICAS otherwise, nothing appended), and completes when the high-water mark passes
  the batch; if the ISR shrinks below the minimum meanwhile, NOT_ENOUGH_REPLICAS_AFTER_APPEND.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lanes.errors import ErrorCode
from lanes.invariants import invariant


@dataclass
class FollowerPosition:
    """What the leader knows of one follower."""

    broker_id: int
    #: the broker epoch (registration) of the incarnation that fetched last (-1: none yet); an
    #: ISR expansion names it, so the controller refuses a broker that restarted since (KIP-903)
    broker_epoch: int = -1
    log_end_offset: int = -1
    last_caught_up_ms: int = -1
    last_fetch_ms: int = -1
    leader_end_at_last_fetch: int = -1


class LeaderReplica:
    """The leader's replication state of one partition. Not thread-safe: one owner."""

    def __init__(
        self,
        *,
        leader_id: int,
        replicas: Sequence[int],
        isr: Sequence[int],
        leader_epoch_start_offset: int,
        log_end_offset: int,
        high_watermark: int,
        now_ms: int,
        replica_lag_time_max_ms: int,
        min_insync_replicas: int,
    ) -> None:
        self.leader_id = leader_id
        self.isr = list(isr)
        self.epoch_start_offset = leader_epoch_start_offset
        self.log_end_offset = log_end_offset
        self.high_watermark = min(high_watermark, log_end_offset)
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.min_insync_replicas = min_insync_replicas
        # A new leader gives every follower a fresh chance to catch up.
        self.followers = {b: FollowerPosition(b, last_caught_up_ms=now_ms) for b in replicas if b != leader_id}
        #: an ISR proposed to the controller and not answered yet (its additions count for the mark)
        self.pending_isr: list[int] | None = None
        self._advance_high_watermark()  # a leader alone in its ISR owns the mark at once

    # -----------------------------------------------------------------------------------------
    # events

    def on_append(self, log_end_offset: int) -> None:
        """The leader appended: its log now ends at ``log_end_offset``."""
        self.log_end_offset = log_end_offset
        self._advance_high_watermark()

    def on_follower_fetch(self, follower_id: int, fetch_offset: int, now_ms: int, *, broker_epoch: int = -1) -> bool:
        """A follower fetched from ``fetch_offset``: its log ends there. Whether the fetch counts:
        not from a broker that is no replica, nor from an incarnation older than one that
        fetched already (KIP-903: its log may be an older one's)."""
        follower = self.followers.get(follower_id)
        if follower is None or broker_epoch < follower.broker_epoch:
            return False
        follower.broker_epoch = broker_epoch
        if fetch_offset >= self.log_end_offset:
            follower.last_caught_up_ms = now_ms
        elif fetch_offset >= follower.leader_end_at_last_fetch >= 0:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.log_end_offset = fetch_offset
        follower.last_fetch_ms = now_ms
        follower.leader_end_at_last_fetch = self.log_end_offset
        self._advance_high_watermark()
        return True

    def on_isr_proposed(self, isr: Sequence[int]) -> None:
        """The leader asked the controller for ``isr``: until the outcome is known, the members it
        adds hold the high-water mark as members do."""
        self.pending_isr = list(isr)

    def on_isr_proposal_failed(self) -> None:
        """The controller refused the proposal *and it was never applied* (it found a replica
        ineligible or the ISR invalid at the current partition epoch): the committed ISR alone
        counts again. Not for an unanswered proposal, nor for a stale-epoch refusal of a retry:
        an earlier attempt may have been applied, and reverting would let the mark pass a member
        the controller counts as in sync (Kafka keeps the pending state until the metadata says
        what happened: ``on_isr_changed``, or a new leadership)."""
        self.pending_isr = None
        self._advance_high_watermark()

    def on_isr_changed(self, isr: Sequence[int]) -> None:
        """The controller accepted a new ISR (answering a proposal, or in the metadata)."""
        invariant(self.leader_id in isr, f"the ISR {list(isr)} leaves out its leader {self.leader_id}")
        self.isr = list(isr)
        self.pending_isr = None
        self._advance_high_watermark()

    def maximal_isr(self) -> list[int]:
        """The ISR and the members a pending proposal adds."""
        added = [b for b in self.pending_isr or () if b not in self.isr]
        return self.isr + added

    def _advance_high_watermark(self) -> None:
        ends = [self.log_end_offset]
        ends.extend(self.followers[b].log_end_offset for b in self.maximal_isr() if b in self.followers)
        candidate = min(ends)
        self.high_watermark = max(self.high_watermark, candidate)

    # -----------------------------------------------------------------------------------------
    # decisions

    def followed_within(self, now_ms: int, window_ms: int) -> bool:
        """Whether every other ISR member fetched from this leader within ``window_ms``: they
        still follow it (a new leader, always an ISR member, stops fetching), so its high-water
        mark can still advance."""
        return all(
            b in self.followers
            and self.followers[b].last_fetch_ms >= 0
            and now_ms - self.followers[b].last_fetch_ms <= window_ms
            for b in self.isr
            if b != self.leader_id
        )

    def proposed_isr(self, now_ms: int) -> list[int] | None:
        """The ISR the leader should ask the controller for, or None when it is right or a
        proposal is still pending (one change at a time)."""
        if self.pending_isr is not None:
            return None
        shrink = {
            b
            for b in self.isr
            if b in self.followers and now_ms - self.followers[b].last_caught_up_ms > self.replica_lag_time_max_ms
        }
        expand = [
            b
            for b, follower in sorted(self.followers.items())
            if b not in self.isr
            and follower.log_end_offset >= self.high_watermark
            and follower.log_end_offset >= self.epoch_start_offset
            and now_ms - follower.last_caught_up_ms <= self.replica_lag_time_max_ms
        ]
        proposal = [b for b in self.isr if b not in shrink] + expand
        if self.leader_id not in proposal:
            proposal.insert(0, self.leader_id)
        return proposal if proposal != self.isr else None

    def broker_epochs(self, isr: Sequence[int]) -> list[int]:
        """The broker epoch each member of ``isr`` last fetched with (-1: the leader, or none)."""
        return [self.followers[b].broker_epoch if b in self.followers else -1 for b in isr]

    def check_acks_all(self) -> ErrorCode:
        """Whether an acks=all produce may be appended now (before appending)."""
        if len(self.isr) < self.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return ErrorCode.NONE

    def acks_all_outcome(self, required_offset: int) -> ErrorCode | None:
        """For an appended acks=all batch ending before ``required_offset``: None while waiting;
        once the high-water mark covers it, NONE if the ISR still has min.insync.replicas members
        (the mark is the smallest end over the ISR, so that many replicas hold the batch), else
        NOT_ENOUGH_REPLICAS_AFTER_APPEND (a shrunken ISR moves the mark without copies).
        """
        if self.high_watermark < required_offset and len(self.isr) >= self.min_insync_replicas:
            return None
        if len(self.isr) < self.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE


def divergence(
    last_fetched_epoch: int, fetch_offset: int, leader_end_of_epoch: tuple[int, int]
) -> tuple[int, int] | None:
    """The leader's check of a follower fetch (KIP-320's diverging epoch). The follower's log ends
    at ``fetch_offset`` with a batch of ``last_fetched_epoch``; ``leader_end_of_epoch`` is the
    leader's ``end_offset_for(last_fetched_epoch)``. None when the follower's log is a prefix of
    the leader's as far as that epoch tells; else the (epoch, end offset) to send back, by which the
    follower truncates (``follower_truncation``)."""
    epoch, end = leader_end_of_epoch
    if last_fetched_epoch >= 0 and (end < fetch_offset or epoch < last_fetched_epoch):
        return epoch, end
    return None


def follower_truncation(
    local_epochs: Sequence[tuple[int, int]],
    local_log_end_offset: int,
    local_high_watermark: int,
    diverging: tuple[int, int],
) -> int:
    """Where a follower truncates when its leader answered a fetch with the diverging
    ``(epoch, end offset)``: ``truncation_offset``, or, when the leader cannot say where the
    epoch ends (end -1), the follower's high-water mark (only what every replica holds is kept,
    as Kafka does)."""
    epoch, end = diverging
    if end < 0:
        return min(local_high_watermark, local_log_end_offset)
    return truncation_offset(local_epochs, local_log_end_offset, epoch, end)


def truncation_offset(
    local_epochs: Sequence[tuple[int, int]],
    local_log_end_offset: int,
    leader_epoch: int,
    leader_end_offset: int,
) -> int:
    """Where a follower must truncate its log before fetching from a new leader.

    ``local_epochs`` is the follower's epoch cache ((epoch, start offset), oldest first); the
    leader answered OffsetForLeaderEpoch(follower's latest epoch) with (``leader_epoch``,
    ``leader_end_offset``): the largest epoch it has at or below the one asked, and where that
    epoch ends in its log. Everything at or after the returned offset diverged and goes.
    """
    if leader_epoch < 0 or leader_end_offset < 0:
        return 0 if local_epochs else local_log_end_offset  # the leader knows none of our epochs
    local_end_of_epoch = local_log_end_offset
    for index, (epoch, _) in enumerate(local_epochs):
        if epoch > leader_epoch:
            local_end_of_epoch = local_epochs[index][1]
            break
    return min(leader_end_offset, local_end_of_epoch, local_log_end_offset)
