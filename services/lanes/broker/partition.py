"""One partition replica on this broker, and the one owner of its state (Kafka's ``Partition``).

A ``Partition`` owns:

- the log (``PartitionLog``), and with it the high-water mark, which only ``Partition`` moves
  (``_sync_high_watermark`` as leader, ``apply_fetched`` as follower), never backwards except by
  a truncation;
- the role: ``Leading`` (the leader epoch, the ``LeaderReplica`` core: ISR, follower positions,
  the mark's candidate; the partition epoch of that ISR; the ISR proposal in flight),
  ``Following`` (the leader and its epoch, the leader's mark last heard) or none (the partition
  has no leader, or this broker is no longer a replica);
- the producer-state table, in both roles: every append applies its batch headers, a leader's or
  a follower's, so a follower that becomes leader has the table at once; a truncation reloads it
  from a snapshot (``ProducerSnapshots``).

Concurrency rule: one lock per partition (``_lock``, a ``threading.Lock``). Every change of the
state above takes it, together with the check that the role the change was made for still holds:
role changes (on the event loop), appends (a leader's, in a worker thread, at the epoch the
request was accepted for; a follower's fetched records, at the epoch and log end they were
fetched for), truncations, follower positions and ISR changes. So a role change drains in-flight
writes (it waits for the one under way; the ones after it see the new role and are refused), and
the leader epoch is checked under the append lock. Readers on the event loop (Metadata, metrics,
the checks before a request) read ``role`` and the log's offsets without the lock: ``role`` is
replaced whole, never mutated in a way that changes its identity, and the offsets are single
attributes.

``append_queue`` (an ``asyncio.Lock``, event-loop owned) orders produce requests: they reach the
log in the order they were started (a stream's requests in stream order).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lanes.broker.metrics import ReplicaState
from lanes.broker.producer_snapshots import ProducerSnapshots
from lanes.broker.producer_state import ProducerStateTable, Verdict
from lanes.broker.replication import LeaderReplica, follower_truncation
from lanes.errors import ErrorCode, LanesError
from lanes.invariants import InvariantError
from lanes.protocol.records import BatchHeader
from lanes.runtime.serving.logs import fields
from lanes.storage.log import AppendInfo, PartitionLog
from lanes.topic_partition import TopicPartition

_log = logging.getLogger(__name__)
#: AlterPartition refusals that prove the proposal was never applied (the controller checks the
#: partition epoch first: an earlier attempt that was applied makes a retry INVALID_UPDATE_VERSION)
_NEVER_APPLIED = frozenset({ErrorCode.INELIGIBLE_REPLICA, ErrorCode.INVALID_REQUEST})
#: refusals of this broker's registration, not of the proposal: it is sent again as it was
#: (an earlier attempt may have been applied) once the broker has registered again
_RESEND = frozenset({ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED})


@dataclass
class Leading:
    """This broker leads the partition at ``leader_epoch``."""

    leader_epoch: int
    replica: LeaderReplica
    #: the partition epoch of the ISR ``replica`` holds (from the metadata or an AlterPartition
    #: answer, whichever is newer: an image that lags never puts an older ISR back)
    partition_epoch: int
    #: the last AlterPartition got no answer: its proposal is sent again as it was
    isr_proposal_unanswered: bool = False


@dataclass
class Following:
    """This broker follows ``leader_id`` at ``leader_epoch``."""

    leader_id: int
    leader_epoch: int
    #: the leader's high-water mark as last fetched (-1 until then; the lag metric reads it)
    leader_high_watermark: int = -1


@dataclass(frozen=True)
class IsrProposal:
    """An ISR the leader asks the controller for, at its leader and partition epoch."""

    leader_epoch: int
    partition_epoch: int
    isr: list[int]
    #: per member of ``isr``, the broker epoch it last fetched with (-1: the leader, or unknown)
    broker_epochs: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class FetchedPartition:
    """A leader's answer for one partition of a ReplicaFetch, as the follower applies it."""

    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    records: bytes = b""
    #: the (epoch, end offset) the follower's log diverged from, if it did
    diverging: tuple[int, int] | None = None


class Partition:
    """One partition replica; see the module docstring for what it owns and its lock rule."""

    def __init__(
        self,
        key: TopicPartition,
        topic_id: str,
        log: PartitionLog,
        *,
        on_isr_changed: Callable[[int, int], None] = lambda before, after: None,
    ) -> None:
        """Open over ``log`` (its producer state is loaded here: call in a worker thread).
        ``on_isr_changed(before, after)``: called with the ISR sizes whenever an ISR is applied."""
        self.key = key
        self.topic_id = topic_id
        self.log = log
        self.role: Leading | Following | None = None
        self.append_queue = asyncio.Lock()
        self._lock = threading.Lock()
        self._on_isr_changed = on_isr_changed
        self._snapshots = ProducerSnapshots(log.directory, log.take_names_at_open())  # (the open's listing)
        self._producers = self._snapshots.load(log)
        self._snapshot_segment = log.active_segment_base_offset  # snapshot written when it changes

    # -----------------------------------------------------------------------------------------
    # reading (any thread, no lock: see the module docstring)

    @property
    def leader_epoch(self) -> int | None:
        """The epoch this broker leads the partition at, None when it does not lead it."""
        role = self.role
        return role.leader_epoch if isinstance(role, Leading) else None

    @property
    def partition_epoch(self) -> int | None:
        """The partition epoch (ISR version) this broker leads at, None when it does not lead."""
        role = self.role
        return role.partition_epoch if isinstance(role, Leading) else None

    @property
    def leader_epoch_start_offset(self) -> int:
        """Where the current leadership's epoch starts in the log (leaders only)."""
        role = self.role
        return role.replica.epoch_start_offset if isinstance(role, Leading) else -1

    @property
    def producer_count(self) -> int:
        return len(self._producers)

    def replica_state(self) -> ReplicaState:
        """As a metrics scrape or DescribeLogs sees it."""
        log, role = self.log, self.role
        end = log.log_end_offset
        leading = role if isinstance(role, Leading) else None
        lag = max(0, role.leader_high_watermark - end) if isinstance(role, Following) else 0
        return ReplicaState(
            topic=self.key.topic,
            partition=self.key.partition,
            log_start_offset=log.log_start_offset,
            log_end_offset=end,
            high_watermark=log.high_watermark,
            size_bytes=log.size_bytes,
            segments=log.segment_count,
            leader=leading is not None,
            replicas=len(leading.replica.followers) + 1 if leading else 0,
            in_sync_replicas=len(leading.replica.isr) if leading else 0,
            min_insync_replicas=leading.replica.min_insync_replicas if leading else 0,
            lag_records=lag,
        )

    # -----------------------------------------------------------------------------------------
    # role changes (event loop; each waits for the write under way)

    def make_leader(
        self,
        *,
        leader_epoch: int,
        partition_epoch: int,
        replicas: Sequence[int],
        isr: Sequence[int],
        min_insync_replicas: int,
        leader_id: int,
        now_ms: int,
        replica_lag_time_max_ms: int,
    ) -> bool:
        """Lead at ``leader_epoch`` from the log's end; whether this is a new leadership. Already
        leading at that epoch, only a newer ISR (by partition epoch) and ``min.insync.replicas``
        are applied."""
        with self._lock:
            role = self.role
            if isinstance(role, Leading) and role.leader_epoch == leader_epoch:
                if partition_epoch > role.partition_epoch:
                    role.partition_epoch = partition_epoch
                    self._apply_isr(role, isr)
                role.replica.min_insync_replicas = min_insync_replicas
                return False
            log = self.log
            log.epochs.assign(leader_epoch, log.log_end_offset)  # where this epoch starts
            self.role = leading = Leading(
                leader_epoch=leader_epoch,
                replica=LeaderReplica(
                    leader_id=leader_id,
                    replicas=replicas,
                    isr=isr,
                    leader_epoch_start_offset=log.log_end_offset,
                    log_end_offset=log.log_end_offset,
                    high_watermark=log.high_watermark,
                    now_ms=now_ms,
                    replica_lag_time_max_ms=replica_lag_time_max_ms,
                    min_insync_replicas=min_insync_replicas,
                ),
                partition_epoch=partition_epoch,
            )
            self._sync_high_watermark(leading)
            return True

    def make_follower(self, leader_id: int, leader_epoch: int) -> bool:
        """Follow ``leader_id`` at ``leader_epoch``; whether that is a change."""
        with self._lock:
            role = self.role
            if isinstance(role, Following) and (role.leader_id, role.leader_epoch) == (leader_id, leader_epoch):
                return False
            self.role = Following(leader_id, leader_epoch)
            return True

    def make_offline(self) -> bool:
        """Neither lead nor follow (no leader, not a replica any more, deleted, closing); whether
        that is a change."""
        with self._lock:
            changed = self.role is not None
            self.role = None
            return changed

    def close(self) -> None:
        """Stop every role and leave a snapshot at the log end (the next start replays nothing);
        the log itself is closed by its manager."""
        with self._lock:
            self.role = None
            if self.log.log_end_offset not in self._snapshots.offsets:
                self._write_snapshot(self.log.log_end_offset, durable=False)

    # -----------------------------------------------------------------------------------------
    # as leader

    def append_as_leader(
        self, records: bytes, headers: list[BatchHeader], *, leader_epoch: int, acks_all: bool, wait: bool = True
    ) -> AppendInfo | Verdict | None:
        """Append validated producer batches if this broker still leads at ``leader_epoch``
        (NOT_LEADER_OR_FOLLOWER otherwise) and, for ``acks_all``, the ISR has
        ``min.insync.replicas`` members (NOT_ENOUGH_REPLICAS otherwise). Returns what was appended,
        or the producer-state verdict against it (a retry of an earlier batch, or a refusal)
        (a worker thread; or the event loop with ``wait=False``: None, nothing done, when another
        thread holds the partition or its log, decision 0041)."""
        if not self._lock.acquire(blocking=wait):
            return None
        try:
            leading = self._leading_at(leader_epoch)
            if acks_all and leading.replica.check_acks_all() is not ErrorCode.NONE:
                isr = leading.replica.isr
                raise LanesError(
                    f"{self.key.topic}-{self.key.partition} has {len(isr)} in-sync replicas {isr}, fewer than "
                    f"min.insync.replicas {leading.replica.min_insync_replicas}",
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                )
            for header in headers:
                verdict = self._producers.check(header)
                if not verdict.append:
                    return verdict
            info = self.log.append_as_leader(records, leader_epoch, validated=headers, wait=wait)
            if info is None:
                return None
            self._record_producers(info)
            leading.replica.on_append(self.log.log_end_offset)
            self._sync_high_watermark(leading)
            return info
        finally:
            self._lock.release()

    def delete_records_before(self, leader_epoch: int, offset: int) -> int:
        """DeleteRecords at the leader of ``leader_epoch``: the new log start (worker thread).
        Refused (POLICY_VIOLATION) unless cleanup.policy includes delete, as Kafka's
        ``Partition.deleteRecordsOnLeader`` does: a compacted log keeps every key's latest value."""
        with self._lock:
            self._leading_at(leader_epoch)
            if not self.log.config.delete:
                raise LanesError(
                    f"DeleteRecords needs cleanup.policy to include delete; {self.key.topic}-{self.key.partition} is "
                    "compacted only (deleting its records would lose keys' latest values)",
                    ErrorCode.POLICY_VIOLATION,
                )
            return self.log.delete_records_before(offset)

    def acks_all_outcome(self, leader_epoch: int, required_offset: int) -> ErrorCode | None:
        """For an acks=all batch appended at ``leader_epoch`` and ending before
        ``required_offset``: None while it waits for the high-water mark, else the answer
        (NOT_LEADER_OR_FOLLOWER once the leadership ended: the producer retries at the new one)."""
        role = self.role  # read without the lock (event loop): the mark and the ISR only grow stale
        if not isinstance(role, Leading) or role.leader_epoch != leader_epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return role.replica.acks_all_outcome(required_offset)

    def followed_within(self, now_ms: int, window_ms: int) -> bool:
        """Whether every other ISR member fetched from this leader within ``window_ms``."""
        role = self.role  # read without the lock (event loop), as ``acks_all_outcome``
        return isinstance(role, Leading) and role.replica.followed_within(now_ms, window_ms)

    def on_follower_fetch(
        self, replica_id: int, broker_epoch: int, leader_epoch: int, fetch_offset: int, now_ms: int
    ) -> tuple[bool, bool] | None:
        """A follower fetched from ``fetch_offset`` (its log end) at ``leader_epoch``: (whether the
        high-water mark moved, whether an ISR expansion is due now); None when the fetch does not
        count: ``replica_id`` is no replica, or an older incarnation than one that fetched (worker
        thread)."""
        with self._lock:
            role = self.role
            if not isinstance(role, Leading) or role.leader_epoch != leader_epoch:
                return False, False
            if not role.replica.on_follower_fetch(replica_id, fetch_offset, now_ms, broker_epoch=broker_epoch):
                return None
            advanced = self._sync_high_watermark(role)
            expansion_due = replica_id not in role.replica.isr and role.replica.proposed_isr(now_ms) is not None
            return advanced, expansion_due

    def isr_proposal(self, now_ms: int) -> IsrProposal | None:
        """The ISR to ask the controller for now, if any: an unanswered proposal again as it was,
        or a new one (which counts as pending from now: one change at a time)."""
        with self._lock:
            role = self.role
            if not isinstance(role, Leading):
                return None
            replica = role.replica
            if role.isr_proposal_unanswered and replica.pending_isr is not None:
                isr: list[int] | None = replica.pending_isr
            else:
                isr = replica.proposed_isr(now_ms)
                if isr is not None:
                    replica.on_isr_proposed(isr)
            if isr is None:
                return None
            return IsrProposal(role.leader_epoch, role.partition_epoch, isr, replica.broker_epochs(isr))

    def on_isr_answer(
        self, proposal: IsrProposal, code: ErrorCode | None, isr: Sequence[int] = (), partition_epoch: int = -1
    ) -> None:
        """The controller's answer to ``proposal`` (``code`` None: no answer). Accepted
        (``isr`` at ``partition_epoch``): applied. Unanswered, or a refusal of this broker's
        registration: sent again as it was (it may have been applied). A refusal proving nothing
        was applied: the committed ISR alone counts again. Any other refusal: left pending until
        the metadata says what the ISR is (``LeaderReplica.on_isr_proposal_failed``). Ignored when
        the leadership changed meanwhile."""
        with self._lock:
            role = self.role
            if not isinstance(role, Leading) or role.leader_epoch != proposal.leader_epoch:
                return
            role.isr_proposal_unanswered = code is None or code in _RESEND
            if code is ErrorCode.NONE and partition_epoch > role.partition_epoch:
                # (an answer that arrives after the metadata brought a newer ISR is history: the
                # replication simulation found a late answer putting a fenced broker back)
                role.partition_epoch = partition_epoch
                self._apply_isr(role, isr)
            elif code in _NEVER_APPLIED:
                role.replica.on_isr_proposal_failed()
                self._sync_high_watermark(role)

    def _apply_isr(self, role: Leading, isr: Sequence[int]) -> None:
        """The controller accepted ``isr`` (heard from AlterPartition's answer or the metadata,
        whichever comes first: the second is no change and is not counted again)."""
        self._on_isr_changed(len(role.replica.isr), len(isr))
        role.isr_proposal_unanswered = False
        role.replica.on_isr_changed(isr)
        self._sync_high_watermark(role)

    def _leading_at(self, leader_epoch: int) -> Leading:
        role = self.role
        if not isinstance(role, Leading) or role.leader_epoch != leader_epoch:
            raise LanesError(
                f"{self.key.topic}-{self.key.partition}: this broker no longer leads it at epoch {leader_epoch}",
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
            )
        return role

    def _sync_high_watermark(self, role: Leading) -> bool:
        """Move the log's high-water mark to the replica core's (never backwards); whether it moved."""
        before = self.log.high_watermark
        after = self.log.maybe_increment_high_watermark(role.replica.high_watermark)
        if after < before:  # (not ``invariant``: its message would be built on every append)
            raise InvariantError(f"{self.key}: the leader's high-water mark moved back from {before} to {after}")
        return after > before

    # -----------------------------------------------------------------------------------------
    # as follower

    def apply_fetched(self, leader_epoch: int, fetched_from: int, fetched: FetchedPartition) -> bool:
        """Apply a leader's answer to a fetch made at ``leader_epoch`` from ``fetched_from`` (this
        log's end then); whether it made normal progress (worker thread). Applied only while this
        broker still follows at that epoch and the log still ends where the fetch started (as
        Kafka's fetcher checks): an answer about a log that moved meanwhile, a diverging epoch
        above all, would cut records it never saw. Raises LanesError when the disk refuses."""
        with self._lock:
            role = self.role
            log = self.log
            if not isinstance(role, Following) or role.leader_epoch != leader_epoch:
                return True
            if log.log_end_offset != fetched_from:
                return True
            if fetched.diverging is not None:
                target = follower_truncation(
                    log.epochs.entries, log.log_end_offset, log.high_watermark, fetched.diverging
                )
                _log.info(
                    "%s-%d diverged from its leader: truncating to %d",
                    self.key.topic,
                    self.key.partition,
                    target,
                    extra=fields(topic=self.key.topic, partition=self.key.partition),
                )
                self._truncate_to(target)
                return fetched.diverging[1] >= 0  # an undefined end: pause before fetching again
            if fetched.error is ErrorCode.OFFSET_OUT_OF_RANGE and log.log_end_offset < fetched.log_start_offset:
                log.truncate_fully_and_start_at(fetched.log_start_offset)  # fell behind the leader's log start
                self._snapshots.delete_all()
                self._producers = ProducerStateTable()
                self._snapshot_segment = log.active_segment_base_offset
                return True
            if fetched.error is not ErrorCode.NONE:
                return False
            role.leader_high_watermark = fetched.high_watermark
            if fetched.records:
                self._record_producers(log.append_as_follower(fetched.records))
            before = log.high_watermark
            after = log.maybe_increment_high_watermark(min(fetched.high_watermark, log.log_end_offset))
            if after < before:
                raise InvariantError(f"{self.key}: a follower's high-water mark moved back from {before} to {after}")
            if fetched.log_start_offset > log.log_start_offset:
                log.delete_records_before(min(fetched.log_start_offset, log.high_watermark))
            return True

    def _truncate_to(self, offset: int) -> None:
        """Cut the log at ``offset`` and reload the producer state of what is left (nothing to
        reload when nothing was cut). A reload that fails leaves an empty table, never one that
        still knows the cut batches (a retry of one would be answered as written): producers
        then start over (UNKNOWN_PRODUCER_ID, a new epoch)."""
        before = self.log.log_end_offset
        if self.log.truncate_to(offset) == before:
            return
        try:
            self._producers = self._snapshots.load(self.log)
        except (OSError, LanesError):
            self._producers = ProducerStateTable()
            raise
        finally:
            self._snapshot_segment = self.log.active_segment_base_offset

    # -----------------------------------------------------------------------------------------
    # producer state

    def _record_producers(self, info: AppendInfo) -> None:
        """Apply an append's batch headers; first, if the append began a segment, snapshot the
        state below it (every batch before ``info.first_offset``)."""
        segment = self.log.active_segment_base_offset
        if segment != self._snapshot_segment:
            self._snapshot_segment = segment
            self._write_snapshot(info.first_offset, durable=True)
        for header in info.headers:
            self._producers.apply(header)

    def _write_snapshot(self, offset: int, *, durable: bool) -> None:
        """Best effort: the records are written already, and a missing snapshot only costs a
        longer replay (a failed write must not leave the table behind the log)."""
        try:
            self._snapshots.write(offset, self._producers, durable=durable)
        except OSError:
            _log.exception(
                "%s-%d: writing the producer snapshot at %d failed", self.key.topic, self.key.partition, offset
            )

    def maintain(self, now_ms: int, producer_id_expiration_ms: int) -> int:
        """Forget producers idle for ``producer_id_expiration_ms`` and snapshots retention made
        useless; how many producers went (maintenance thread)."""
        with self._lock:
            expired = self._producers.expire(now_ms, producer_id_expiration_ms)
            self._snapshots.retain_from(self.log.log_start_offset)
            return expired
