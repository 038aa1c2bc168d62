"""The leader side of replication: followers' ReplicaFetch long-polls (Kafka's
``ReplicaManager.fetchMessages`` for a follower, with its fetch sessions).

A ReplicaFetch belongs to the follower's fetch session (KIP-227, ``lanes.broker.fetch_session``):
a full request opens one, an incremental one names only what changed and is answered only with
what changed. Each pass (``_serve``, in a worker thread) records the follower's position in every
partition it names (``Partition.on_follower_fetch``: the high-water mark and the ISR follow from
them) and reads what the follower lacks; a follower whose log diverged is told where
(``divergence``) and truncates. The request parks in the ``Purgatory`` until it has
``min_bytes``, a partition must answer at once, or its wait ends.

Who may fetch (KIP-903): a broker this one knows, at its registered broker epoch or newer; only
positions at the registered epoch count for high-water marks and ISRs.

Owned by the broker's event loop; passes run in worker threads.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lanes.broker.fetch_limits import FetchLimits
from lanes.broker.fetch_session import FetchPosition, FetchSession, FetchSessionCache, SessionPartition
from lanes.broker.partition import Partition
from lanes.broker.replica_manager import ReplicaManager
from lanes.broker.replication import divergence
from lanes.clock import Clock
from lanes.deadline import Deadline
from lanes.errors import ErrorCode
from lanes.rpc.wire import wire_error
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2


@dataclass
class ServedReplicaFetch:
    """One pass of a ReplicaFetch long-poll over the partitions a follower asked for."""

    response: broker_pb2.ReplicaFetchResponse
    bytes_read: int = 0
    #: a partition must answer at once (an error, or a divergence the follower must truncate)
    urgent: bool = False
    #: the fetching follower, outside an ISR, has caught up: expand the ISR now
    isr_expansion_due: bool = False
    #: (partition, high-water mark, log start) of each partition the answer names with offsets
    answered: list[tuple[TopicPartition, int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class _FetchingFollower:
    """Who a ReplicaFetch comes from: its broker id and epoch, whether its positions count
    (``ReplicaFetches._standing``), and how a worker thread announces a mark it moved."""

    replica_id: int
    broker_epoch: int
    counts: bool
    notify: Callable[[TopicPartition], object]


@dataclass(frozen=True)
class ReplicaFetchAsk:
    """A ReplicaFetch, decoded."""

    replica_id: int
    broker_epoch: int
    session_id: int
    session_epoch: int
    #: the partitions the request names, with the follower's positions
    named: dict[TopicPartition, FetchPosition]
    forgotten: list[TopicPartition]
    limits: FetchLimits

    @classmethod
    def of(cls, request: broker_pb2.ReplicaFetchRequest, cap_bytes: int) -> ReplicaFetchAsk:
        """``request`` with its sizes and wait capped (``cap_bytes``: the broker's
        ``replica.fetch.response.max.bytes``)."""
        named = {
            TopicPartition(topic.topic, wanted.partition): FetchPosition(
                topic.topic_id,
                wanted.current_leader_epoch,
                wanted.fetch_offset,
                wanted.last_fetched_epoch,
                wanted.log_start_offset,
                wanted.partition_max_bytes,
            )
            for topic in request.topics
            for wanted in topic.partitions
        }
        return cls(
            request.replica_id,
            request.broker_epoch,
            request.session_id,
            request.session_epoch,
            named,
            [TopicPartition(f.topic, p) for f in request.forgotten for p in f.partitions],
            FetchLimits.clamp(request.max_bytes, request.min_bytes, request.max_wait_ms, cap_bytes=cap_bytes),
        )


@dataclass(frozen=True)
class _OpenFetch:
    """A fetch admitted into its session: what each pass serves."""

    follower: _FetchingFollower
    session: FetchSession
    entries: list[tuple[TopicPartition, SessionPartition]]
    #: the partitions an incremental request named (None: a full request)
    named: Mapping[TopicPartition, FetchPosition] | None
    max_bytes: int

    @property
    def keys(self) -> list[TopicPartition]:
        return [key for key, _ in self.entries]


class ReplicaFetches:
    """Answers the followers' ReplicaFetch requests; see the module docstring."""

    def __init__(
        self,
        replicas: ReplicaManager,
        clock: Clock,
        *,
        expand_isr_now: Callable[[], object],
        new_session_id: Callable[[], int] = lambda: secrets.randbelow(2**31 - 1) + 1,
    ) -> None:
        """``expand_isr_now``: a follower outside an ISR caught up (``AlterPartitionManager.check_now``);
        ``new_session_id``: the randomness of session ids."""
        self._replicas = replicas
        self._expand_isr_now = expand_isr_now
        self._clock = clock
        #: the followers' fetch sessions with this broker as leader (one per follower broker)
        self._sessions = FetchSessionCache(new_session_id)

    async def fetch(self, ask: ReplicaFetchAsk) -> broker_pb2.ReplicaFetchResponse:
        """Serve ``ask`` within its session, parked until there is something to say."""
        purgatory = self._replicas.purgatory
        loop = asyncio.get_running_loop()
        # from the worker thread: a mark it moved wakes its waiters even if this call is cancelled
        opened = self.open(ask, lambda key: purgatory.moved_from_thread(loop, key))
        if not isinstance(opened, _OpenFetch):
            return opened
        limits = ask.limits
        deadline = Deadline(limits.max_wait_ms / 1000)  # in real time, as the wait on the signal
        last_pass: ServedReplicaFetch | None = None  # the latest pass that did not answer

        async def attempt() -> broker_pb2.ReplicaFetchResponse | None:
            nonlocal last_pass
            served = await asyncio.to_thread(self.serve_pass, opened)
            if served.isr_expansion_due:  # a follower outside the ISR caught up: expand now, not periodically
                self._expand_isr_now()
            if not (served.bytes_read >= limits.min_bytes or served.urgent or deadline.expired()):
                last_pass = served
                return None
            return self.finish(opened, served)

        def as_found() -> broker_pb2.ReplicaFetchResponse:
            assert last_pass is not None  # (park answers unchanged only after an attempt found nothing)
            return self.finish(opened, last_pass)

        # A wait that ends with none of the partitions moved answers what the last pass found (an
        # idle follower's fetch is one pass over its session, not two; as in Kafka, its position
        # is recorded when the request arrives, not again when it completes)
        while (answered := await purgatory.park(opened.keys, attempt, deadline, unchanged=as_found)) is None:
            pass  # (the deadline passed between the last pass and the check: one more pass answers)
        return answered

    def answer_now(
        self, ask: ReplicaFetchAsk, notify: Callable[[TopicPartition], object]
    ) -> broker_pb2.ReplicaFetchResponse:
        """``fetch`` without waiting: one pass, answered whatever it found (the deterministic
        simulation's leaders answer so; ``notify``: a partition whose mark moved)."""
        opened = self.open(ask, notify)
        if not isinstance(opened, _OpenFetch):
            return opened
        served = self.serve_pass(opened)
        if served.isr_expansion_due:
            self._expand_isr_now()
        return self.finish(opened, served)

    def open(
        self, ask: ReplicaFetchAsk, notify: Callable[[TopicPartition], object]
    ) -> _OpenFetch | broker_pb2.ReplicaFetchResponse:
        """Admit ``ask`` into its fetch session; the answer instead when it is refused or names
        nothing to wait for (Kafka answers those at once too)."""
        refusal, counts = self._standing(ask.replica_id, ask.broker_epoch)
        if refusal is not None:
            return broker_pb2.ReplicaFetchResponse(error=refusal)
        resolved = self._sessions.resolve(ask.replica_id, ask.session_id, ask.session_epoch, ask.named, ask.forgotten)
        if isinstance(resolved, ErrorCode):
            return broker_pb2.ReplicaFetchResponse(error=wire_error(resolved))
        session, full = resolved
        entries = list(session.partitions.items())  # served in worker threads: a copy
        if not entries:
            return broker_pb2.ReplicaFetchResponse(error=wire_error(ErrorCode.NONE), session_id=session.session_id)
        follower = _FetchingFollower(ask.replica_id, ask.broker_epoch, counts, notify)
        return _OpenFetch(follower, session, entries, None if full else ask.named, ask.limits.max_bytes)

    def serve_pass(self, opened: _OpenFetch) -> ServedReplicaFetch:
        """One pass over the fetch's partitions (worker thread)."""
        return self._serve(opened.follower, opened.entries, opened.session, opened.named, opened.max_bytes)

    @staticmethod
    def finish(opened: _OpenFetch, served: ServedReplicaFetch) -> broker_pb2.ReplicaFetchResponse:
        """The answer of ``served``, remembered by the session (an incremental fetch is then
        answered only with what changed)."""
        for key, high_watermark, log_start_offset in served.answered:
            opened.session.answered(key, high_watermark, log_start_offset)
        served.response.session_id = opened.session.session_id
        return served.response

    def _standing(self, replica_id: int, broker_epoch: int) -> tuple[common_pb2.Error | None, bool]:
        """Whether a ReplicaFetch claiming to come from ``replica_id`` at ``broker_epoch`` is
        refused (the error), and else whether its positions count for high-water marks and ISRs
        (KIP-903). A broker this one does not know, or an epoch older than its registration here
        (an incarnation before a restart), is refused; a newer epoch (this broker's metadata
        lags a re-registration) is served, and counts once the metadata names it. (The epoch is
        in the metadata anyone may watch: only the internal listener's mutual TLS proves who
        calls.)"""
        broker = self._replicas.image.brokers.get(replica_id)
        if replica_id == self._replicas.broker_id or broker is None:
            return wire_error(ErrorCode.STALE_BROKER_EPOCH, f"no broker {replica_id} is registered to fetch as"), False
        if broker_epoch < broker.epoch:
            message = f"broker {replica_id}'s registration is epoch {broker.epoch} here, not {broker_epoch}"
            return wire_error(ErrorCode.STALE_BROKER_EPOCH, message), False
        return None, broker_epoch == broker.epoch

    def _serve(
        self,
        follower: _FetchingFollower,
        entries: list[tuple[TopicPartition, SessionPartition]],
        session: FetchSession,
        named: Mapping[TopicPartition, FetchPosition] | None,
        max_bytes: int,
    ) -> ServedReplicaFetch:
        """Record the follower's positions and read what it lacks (see ``ServedReplicaFetch``).
        ``named``: the partitions an incremental request named (None: a full request, whose
        answer names every partition); an incremental answer names those, and the others only
        with records, an error, a divergence or offsets the session has not told yet.

        Only a moved mark wakes the other long-polls: waking them on every fetch would make the
        followers' long-polls wake each other in a loop."""
        now = self._clock.monotonic_ms()
        replica_id, broker_epoch = follower.replica_id, follower.broker_epoch
        budget = max_bytes
        served = ServedReplicaFetch(broker_pb2.ReplicaFetchResponse())
        topics: dict[str, Any] = {}

        def answer(key: TopicPartition, topic_id: str) -> broker_pb2.ReplicaFetchPartitionResponse:
            partitions = topics.get(key.topic)
            if partitions is None:
                partitions = topics[key.topic] = served.response.topics.add(
                    topic=key.topic, topic_id=topic_id
                ).partitions
            result: broker_pb2.ReplicaFetchPartitionResponse = partitions.add(partition=key.partition)
            return result

        for key, entry in entries:
            wanted = entry.position
            led = self._replicas.led(key.topic, key.partition, wanted.current_leader_epoch)
            leader_epoch = led.leader_epoch if isinstance(led, Partition) else None
            if not isinstance(led, Partition) or leader_epoch is None:
                error = (
                    led
                    if not isinstance(led, Partition)
                    else self._replicas.unknown_or_not_leader(key.topic, key.partition)
                )
                answer(key, wanted.topic_id).error.CopyFrom(error)
                served.urgent = True
                continue
            log = led.log
            diverging = divergence(
                wanted.last_fetched_epoch,
                wanted.fetch_offset,
                log.epochs.end_offset_for(wanted.last_fetched_epoch, log.log_end_offset),
            )
            if diverging is not None:
                result = answer(key, wanted.topic_id)
                result.error.CopyFrom(wire_error(ErrorCode.NONE))
                result.log_start_offset = log.log_start_offset
                result.diverging_epoch.CopyFrom(
                    broker_pb2.EpochEndOffset(leader_epoch=diverging[0], end_offset=diverging[1])
                )
                result.high_watermark = log.high_watermark
                served.urgent = True
                continue
            if not log.log_start_offset <= wanted.fetch_offset <= log.log_end_offset:
                result = answer(key, wanted.topic_id)
                result.log_start_offset = log.log_start_offset
                result.error.CopyFrom(
                    wire_error(ErrorCode.OFFSET_OUT_OF_RANGE, f"offset {wanted.fetch_offset} is outside the log")
                )
                served.urgent = True
                continue
            counted = (
                led.on_follower_fetch(replica_id, broker_epoch, leader_epoch, wanted.fetch_offset, now)
                if follower.counts
                else (False, False)
            )
            if counted is None:
                answer(key, wanted.topic_id).error.CopyFrom(
                    wire_error(
                        ErrorCode.NOT_LEADER_OR_FOLLOWER,
                        f"broker {replica_id} (epoch {broker_epoch}) is not a current replica of "
                        f"{key.topic}-{key.partition}",
                    )
                )
                served.urgent = True
                continue
            advanced, expansion_due = counted
            if advanced:
                follower.notify(key)  # producers waiting for acks=all, consumers
            served.isr_expansion_due |= expansion_due
            high_watermark, log_start_offset = log.high_watermark, log.log_start_offset
            behind = wanted.fetch_offset < log.log_end_offset
            if not (
                named is None or behind or key in named or session.must_answer(key, high_watermark, log_start_offset)
            ):
                continue  # an idle partition of an incremental request: nothing to say
            result = answer(key, wanted.topic_id)
            result.error.CopyFrom(wire_error(ErrorCode.NONE))
            result.high_watermark = high_watermark
            result.log_start_offset = log_start_offset
            served.answered.append((key, high_watermark, log_start_offset))
            if behind:
                read = log.read(wanted.fetch_offset, min(wanted.partition_max_bytes or budget, budget))
                result.records = read.records
                served.bytes_read += len(read.records)
                budget = max(0, budget - len(read.records))
        return served
