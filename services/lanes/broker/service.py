"""The Broker gRPC service: partition leaders over the log engine.

The broker registers with the controller and follows its metadata through a ``ControllerLink``;
whenever the image changes it reconciles: it leads (with a ``LeaderReplica``) every partition the
image says it leads, opening the log with the topic's configs, drops what it no longer leads, and
deletes the logs of deleted topics. Clients see:

- ``Metadata`` from the image (the controller is never on the data path);
- ``Produce``: validated, offset-assigned appends (lanes.storage) with acks 0, 1 and all
  (``min.insync.replicas`` checked before the append, completion when the high-water mark covers
  the batch, REQUEST_TIMED_OUT after ``timeout_ms``);
- ``Fetch``: whole batches up to the high-water mark, long-polling for ``min_bytes`` up to
  ``max_wait_ms``;
- ``ListOffsets``: earliest, latest (the high-water mark), by timestamp;
- ``DescribeLogs``: offsets, size and segments of every replica the broker stores.

- ``ReplicaFetch`` (followers long-poll the leader; divergence is detected from the follower's
  last fetched epoch), ``OffsetForLeaderEpoch``, ``DeleteRecords`` (followers adopt the new log
  start from ReplicaFetch); ISR changes are proposed to the controller as followers lag or catch up.

- idempotent producers: ``InitProducerId`` hands out ids from blocks the controller allocates;
  each partition checks a batch's producer id, epoch and sequence and appends it under its lock;
  a retried batch is answered DUPLICATE_SEQUENCE_NUMBER with its original offset.

Each partition replica is a ``Partition`` (lanes.broker.partition), the one owner of its log,
role, high-water mark and producer state; this service routes requests to them, applies the
metadata (role changes), runs the follower fetchers and proposes ISR changes. Retention, flush.ms,
checkpoints and producer-id expiry run every ``maintenance_interval_s``; compaction runs in a
background thread. Owned by one asyncio event loop; log I/O runs in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from prometheus_client.metrics_core import Metric

from lanes.broker.consumer_fetch import ConsumerFetch
from lanes.broker.fetch_limits import (
    FETCH_MAX_BYTES,
    FETCH_MEMORY_BYTES,
    REPLICA_FETCH_RESPONSE_MAX_BYTES,
    FetchLimits,
    FetchMemory,
)
from lanes.broker.fetch_session import FetchPosition, FetchSession, FetchSessionCache, SessionPartition
from lanes.broker.follower import Followed, FollowerFetcher
from lanes.broker.metrics import BrokerMetrics, DiskSpace, ReplicaState
from lanes.broker.partition import Following, Partition
from lanes.broker.producer_state import Verdict
from lanes.broker.replication import divergence
from lanes.clock import Clock
from lanes.deadline import Deadline
from lanes.errors import (
    CorruptRecordError,
    ErrorCode,
    LanesError,
    MessageTooLargeError,
    error_code,
)
from lanes.metadata.image import CONSUMER_BYTE_RATE, NO_LEADER, PRODUCER_BYTE_RATE, MetadataImage, PartitionImage
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.protocol.records import BatchHeader
from lanes.rpc.tls import caller_identity, callers_verified, check_claim, node_identity
from lanes.rpc.wire import ServicerContext, wire_error
from lanes.runtime.broadcast import Broadcast, KeyedBroadcast, KeyedTicket
from lanes.runtime.controller_link import ControllerLink
from lanes.runtime.data_directory import DataDirectory
from lanes.runtime.guard import caller_quota, on_certificate_listener
from lanes.runtime.logs import fields
from lanes.runtime.loop_time import service_task
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.request_quota import muted
from lanes.security.quota_entities import QuotaEntity
from lanes.security.quotas import ClientQuotas, window_bytes
from lanes.storage.cleaner import CleanerThread, LogCleaner
from lanes.storage.log import AppendInfo, LogConfig
from lanes.storage.manager import LogManager
from lanes.topic_configs import topic_config_values
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2

_log = logging.getLogger(__name__)
#: the longest a follower's fetch waits at the leader for new records
FOLLOWER_MAX_WAIT_MS = 2_000
#: how often an acks=all wait checks that this broker can still vouch for its leadership
_VOUCH_CHECK_INTERVAL_S = 0.25
#: how soon a metadata pass that failed in part (a log that would not open) is tried again
_RECONCILE_RETRY_S = 1.0
#: Produce requests one stream may have waiting for their answers (``ProduceStream``).
STREAM_UNANSWERED_BYTES = 64 * 1024 * 1024
#: Kafka's producer.id.expiration.ms default: a producer idle for a day is forgotten
PRODUCER_ID_EXPIRATION_MS = 86_400_000


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
    (``BrokerService._replica_standing``), and how a worker thread announces a mark it moved."""

    replica_id: int
    broker_epoch: int
    counts: bool
    notify: Callable[[TopicPartition], object]


class _TopicSettings:
    """A topic's configs as the broker applies them to its partitions, worked out on first use
    (once per topic per metadata update, not once per partition)."""

    def __init__(self, image: MetadataImage, topic: str) -> None:
        self._image = image
        self._topic = topic

    @functools.cached_property
    def log_config(self) -> LogConfig:
        return LogConfig.from_topic_configs(self._image.topic_configs(self._topic))

    @functools.cached_property
    def min_insync_replicas(self) -> int:
        return int(topic_config_values(self._image.topic_configs(self._topic))["min.insync.replicas"])


class BrokerService(broker_pb2_grpc.BrokerServicer):
    """Serves the partitions this broker leads. Call ``start`` before serving and ``stop`` after."""

    def __init__(
        self,
        broker_id: int,
        data_dir: Path,
        *,
        controller_addresses: str,
        endpoint: common_pb2.Node,
        clock: Clock,
        replica_lag_time_max_ms: int = 30_000,
        maintenance_interval_s: float = 5.0,
        producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS,
        metrics: BrokerMetrics | None = None,
        fetch_max_bytes: int = FETCH_MAX_BYTES,
        replica_fetch_response_max_bytes: int = REPLICA_FETCH_RESPONSE_MAX_BYTES,
        fetch_memory_bytes: int = FETCH_MEMORY_BYTES,
    ) -> None:
        self.broker_id = broker_id
        self.metrics = metrics or BrokerMetrics(ServiceMetrics("broker"))
        self._clock = clock
        #: locked for this service's life; bound to the cluster of the first registration
        self.directory = DataDirectory(data_dir)
        self.logs = LogManager(data_dir / "logs", clock=clock, on_flush_s=self.metrics.fsync_duration.observe)
        self.link = ControllerLink(
            controller_addresses,
            node_id=broker_id,
            incarnation_id=str(uuid.uuid4()),
            endpoint=endpoint,
            cluster_id=self.directory.cluster_id,
            on_cluster_id=self.directory.adopt_cluster_id,
            applied=self.directory.applied,
            on_applied=self.directory.record_applied,
            clock=clock,
        )
        #: set by every metadata change; the reconciler applies the newest image (``_reconcile_pass``)
        self._image_changed = asyncio.Event()
        self.link.on_update(lambda applied: self._image_changed.set())
        self._reconcile_lock = asyncio.Lock()
        self._reconciler: asyncio.Task[None] | None = None
        self._replica_lag_time_max_ms = replica_lag_time_max_ms
        self._producer_id_expiration_ms = producer_id_expiration_ms
        #: every partition replica whose log is open, by (topic, partition): changed on the loop only
        self._partitions: dict[TopicPartition, Partition] = {}
        #: counts role changes: what the follower fetchers follow is worked out again after one
        self._roles_generation = 0
        #: per partition: appends, high-water mark advances, ISR changes (all: leaderships moved)
        self._partition_signals: KeyedBroadcast[TopicPartition] = KeyedBroadcast()
        self._fetch_max_bytes = fetch_max_bytes
        self._replica_fetch_response_max_bytes = replica_fetch_response_max_bytes
        self._fetch_memory = FetchMemory(fetch_memory_bytes)
        self._quotas = ClientQuotas()  # produce and fetch byte rates per user (lanes.security.quotas)
        self._fetch_memory_freed = Broadcast()  # consumer fetches gave memory back
        self.maintenance_interval_s = maintenance_interval_s
        self._maintenance: asyncio.Task[None] | None = None
        self._cleaner = CleanerThread(LogCleaner(clock), self.logs.logs, interval_s=maintenance_interval_s)
        self._fetchers: dict[int, asyncio.Task[None]] = {}
        #: the followers' fetch sessions with this broker as leader (one per follower broker)
        self._fetch_sessions = FetchSessionCache(lambda: secrets.randbelow(2**31 - 1) + 1)
        self.isr_check_interval_s = max(0.05, replica_lag_time_max_ms / 4000)
        self._isr_check_now = asyncio.Event()  # set when a follower caught up: expansions need no wait
        self._producer_ids: list[int] = []  # the rest of the current block, next first
        self._producer_ids_lock = asyncio.Lock()
        self._isr_updates: asyncio.Task[None] | None = None
        self._known_partitions: set[tuple[str, int]] | None = None  # of the last image reconciled
        #: per leader: (the roles generation it was worked out at, what is followed from it)
        self._followed_cache: dict[int, tuple[int, Followed]] = {}

    async def start(self) -> None:
        """Register with the controller, follow its metadata, run maintenance and compaction."""
        self.metrics.service.add_snapshot(self._metrics_snapshot)
        await self.link.start()
        async with self._reconcile_lock:  # serve knowing its partitions (logs opened, roles taken)
            self._image_changed.clear()
            await self._reconcile_pass()
        self._reconciler = service_task(self._reconcile_forever())
        self._maintenance = service_task(self._maintain())
        self._isr_updates = service_task(self._update_isrs())
        self._cleaner.start()

    async def stop(self) -> None:
        """Hand leadership away (controlled shutdown), then close every log cleanly."""
        async with self._reconcile_lock:  # a pass under way finishes its worker threads first
            if self._reconciler is not None:
                self._reconciler.cancel()
        for task in [self._maintenance, self._isr_updates, *self._fetchers.values()]:
            if task is not None:
                task.cancel()
        await asyncio.to_thread(self._cleaner.stop)
        await self.link.stop(controlled=True)
        await asyncio.to_thread(self._close_partitions, list(self._partitions.values()))
        await asyncio.to_thread(self.logs.close)
        self.directory.close()

    @staticmethod
    def _close_partitions(partitions: list[Partition]) -> None:
        for partition in partitions:
            try:
                partition.close()
            except OSError:  # only a snapshot is lost: the next start replays more of the log
                _log.exception("writing the producer snapshot of %s failed", partition.key)

    def in_sync(self) -> bool:
        """Ready to take traffic and safe to restart the next broker: registered and unfenced,
        and in the ISR of every partition it replicates that has a leader (a broker that just
        restarted is not, until it has caught up). Pods' readiness probes ask this, through the
        ``lanes.broker.InSync`` health service, so a rolling restart waits for it."""
        if self.link.fenced:
            return False
        return all(
            self.broker_id in partition.isr
            for topic in self.image.topics.values()
            for partition in topic.partitions.values()
            if self.broker_id in partition.replicas and partition.leader != NO_LEADER
        )

    async def _maintain(self) -> None:
        """Retention, flush.ms, checkpoints (the high-water mark among them) and producer-id
        expiry, periodically."""
        while True:
            await asyncio.sleep(self.maintenance_interval_s)
            try:
                await asyncio.to_thread(self._maintenance_pass, list(self._partitions.values()))
            except (OSError, LanesError):
                _log.exception("log maintenance failed")

    def _maintenance_pass(self, partitions: list[Partition]) -> None:
        self.logs.maintenance()
        now_ms = self._clock.now_ms()
        for partition in partitions:
            partition.maintain(now_ms, self._producer_id_expiration_ms)

    # -----------------------------------------------------------------------------------------
    # reconciling with the metadata image

    @property
    def image(self) -> MetadataImage:
        return self.link.image

    async def _reconcile_forever(self) -> None:
        while True:
            await self._image_changed.wait()
            self._image_changed.clear()
            async with self._reconcile_lock:
                try:
                    await self._reconcile_pass()
                except Exception:  # a disk error, a bug: log it and keep applying later changes
                    _log.exception("applying the metadata failed; retrying at the next change")

    async def _reconcile_pass(self) -> None:
        """Bring roles and logs in line with the newest image, keeping disk work off the event
        loop (a broker taking over thousands of partitions must go on heartbeating): partitions of
        deleted or recreated topics stop at once; the logs it lacks are opened, with their
        producer state, in a worker thread; roles change on the loop (cheap: a follower's producer
        state is current, so a new leader serves at once); logs of partitions gone are deleted in
        a worker thread."""
        self._drop_gone(self.image)
        missing = self._partitions_to_open(self.image)
        opened = await asyncio.to_thread(self._open_partitions, missing) if missing else []
        for partition in opened:
            if partition.key not in self._partitions:  # (a pass in between cannot open it too)
                self._partitions[partition.key] = partition
        failed = len(opened) < len(missing)
        image = self.image
        failed |= not self._reconcile(image)
        existing = {(t.name, p) for t in image.topics.values() for p in t.partitions}
        if image.last_offset >= 0 and (self._known_partitions is None or self._known_partitions - existing):
            # on the first image and when partitions went away: remove their logs (listing the
            # data directory finds those of topics deleted while this broker was down, too)
            try:
                await asyncio.to_thread(self._delete_stray_logs, existing)
                self._known_partitions = existing
            except (OSError, LanesError):
                _log.exception("removing the logs of deleted partitions failed; retrying")
                failed = True
        elif image.last_offset >= 0:
            self._known_partitions = existing
        if failed:  # what failed is tried again shortly, even if no metadata changes meanwhile
            asyncio.get_running_loop().call_later(_RECONCILE_RETRY_S, self._image_changed.set)

    def _drop_gone(self, image: MetadataImage) -> None:
        """Stop and forget the partitions whose topic is gone or was recreated (another topic id):
        no write of theirs lands after this, and their logs may be deleted or replaced."""
        if image.last_offset < 0:
            return
        for key, partition in list(self._partitions.items()):
            topic = image.topic(key.topic)
            if topic is None or topic.topic_id != partition.topic_id or key.partition not in topic.partitions:
                partition.make_offline()
                del self._partitions[key]
                self._roles_generation += 1

    def _partitions_to_open(self, image: MetadataImage) -> list[tuple[TopicPartition, LogConfig, str]]:
        """The replicas this broker holds that have no open ``Partition`` yet (worked out on the
        loop, where the image changes)."""
        missing = []
        for topic in image.topics.values():
            settings: _TopicSettings | None = None
            for partition in topic.partitions.values():
                if self.broker_id not in partition.replicas or partition.leader == NO_LEADER:
                    continue
                key = TopicPartition(topic.name, partition.partition)
                if key not in self._partitions:
                    settings = settings or _TopicSettings(image, topic.name)
                    missing.append((key, settings.log_config, topic.topic_id))
        return missing

    def _open_partitions(self, missing: list[tuple[TopicPartition, LogConfig, str]]) -> list[Partition]:
        """Open each log and load its producer state (worker thread); the partitions that opened
        (one failing stops no other)."""
        opened = []
        for key, config, topic_id in missing:
            try:
                log = self.logs.open_log(key.topic, key.partition, config, topic_id=topic_id)
                if log.config != config:
                    log.update_config(config)
                opened.append(Partition(key, topic_id, log, on_isr_changed=self.metrics.isr_changed))
            except (OSError, LanesError):
                _log.exception("opening the log of %s-%d failed; retrying", key.topic, key.partition)
        return opened

    def _delete_stray_logs(self, existing: set[tuple[str, int]]) -> None:
        for topic_name, partition_index in self.logs.discover():
            if (topic_name, partition_index) not in existing:
                self.logs.delete_log(topic_name, partition_index)

    def _reconcile(self, image: MetadataImage) -> bool:
        """Roles and configs from ``image`` (on the loop); whether every replica it names had an
        open partition (one still missing is opened at the next pass)."""
        complete = True
        changed = False
        now_ms = self._clock.monotonic_ms()
        seen: set[TopicPartition] = set()
        for topic in image.topics.values():
            settings = _TopicSettings(image, topic.name)  # worked out once per topic, if needed
            for state in topic.partitions.values():
                if self.broker_id not in state.replicas or state.leader == NO_LEADER:
                    continue
                key = TopicPartition(topic.name, state.partition)
                partition = self._partitions.get(key)
                if partition is None or partition.topic_id != topic.topic_id:  # opened for a deleted topic
                    complete = False
                    continue
                seen.add(key)
                if partition.log.config != settings.log_config:  # configs altered meanwhile
                    partition.log.update_config(settings.log_config)
                if state.leader != self.broker_id:
                    changed |= partition.make_follower(state.leader, state.leader_epoch)
                    continue
                before = (partition.partition_epoch, partition.log.high_watermark)
                if partition.make_leader(
                    leader_epoch=state.leader_epoch,
                    partition_epoch=state.partition_epoch,
                    replicas=state.replicas,
                    isr=state.isr,
                    min_insync_replicas=settings.min_insync_replicas,
                    leader_id=self.broker_id,
                    now_ms=now_ms,
                    replica_lag_time_max_ms=self._replica_lag_time_max_ms,
                ):
                    changed = True
                    self._partition_signals.notify(key)
                    _log.info(
                        "leading %s-%d at epoch %d",
                        topic.name,
                        state.partition,
                        state.leader_epoch,
                        extra=fields(topic=topic.name, partition=state.partition),
                    )
                elif (partition.partition_epoch, partition.log.high_watermark) != before:
                    self._partition_signals.notify(key)  # a newer ISR from the metadata may move the mark
        for key, partition in self._partitions.items():
            if key not in seen:  # no leader, or no longer a replica here
                changed |= partition.make_offline()
        if changed:
            self._roles_generation += 1
            self._partition_signals.notify_all()  # whoever waits on an ended leadership answers NOT_LEADER_OR_FOLLOWER
        self._start_fetchers(image)
        return complete

    def _start_fetchers(self, image: MetadataImage) -> None:
        """One fetcher per leader this broker follows partitions from (it ends when none is left)."""
        leaders = {role.leader_id for p in self._partitions.values() if isinstance(role := p.role, Following)}
        for leader_id in leaders:
            task = self._fetchers.get(leader_id)
            broker = image.brokers.get(leader_id)
            if (task is None or task.done()) and broker is not None:
                fetcher = FollowerFetcher(
                    broker_id=self.broker_id,
                    broker_epoch=lambda: self.link.node_epoch,
                    leader_address=broker.internal_address,
                    partitions=functools.partial(self._followed_from, leader_id),
                    # an idle follower asks every 2 s (each ask costs per partition: with
                    # thousands of them, this is an idle broker's main cost), and always well
                    # within replica.lag.time.max.ms (Kafka requires replica.fetch.wait.max.ms below it)
                    max_wait_ms=min(FOLLOWER_MAX_WAIT_MS, max(50, self._replica_lag_time_max_ms // 4)),
                )
                task = service_task(fetcher.run())
                task.add_done_callback(self._fetcher_ended)
                self._fetchers[leader_id] = task

    def _fetcher_ended(self, task: asyncio.Task[None]) -> None:
        """A fetcher stops when nothing is left to follow from its leader, or fails: the next
        metadata pass starts one again if something is (a role may have changed as it stopped)."""
        if not task.cancelled() and task.exception() is not None:
            _log.error("a follower fetcher failed; starting it again", exc_info=task.exception())
        self._image_changed.set()

    async def hand_off(self, timeout_s: float = 10) -> None:
        """Controlled shutdown while still serving: the controller moves every leadership away,
        the metadata stream tells this broker, and requests waiting on its leaderships end with
        NOT_LEADER_OR_FOLLOWER, so producers retry at the new leaders at once (Kafka's controlled
        shutdown). The gRPC server stops only after this."""
        if not await self.link.shut_down(timeout_s):
            _log.warning("controlled shutdown not confirmed by the controller within %.0f s", timeout_s)
            return
        with contextlib.suppress(TimeoutError):
            await self.link.wait_for(lambda image: not self._leads_any(image), timeout_s)

    def _leads_any(self, image: MetadataImage) -> bool:
        return any(p.leader == self.broker_id for t in image.topics.values() for p in t.partitions.values())

    def _followed_from(self, leader_id: int) -> Followed:
        """What this broker follows from ``leader_id``, with the epochs (worked out once per role
        change, not per fetch)."""
        cached = self._followed_cache.get(leader_id)
        if cached is not None and cached[0] == self._roles_generation:
            return cached[1]
        followed = {
            key: (partition, role.leader_epoch)
            for key, partition in self._partitions.items()
            if isinstance(role := partition.role, Following) and role.leader_id == leader_id
        }
        self._followed_cache[leader_id] = (self._roles_generation, followed)
        return followed

    async def _update_isrs(self) -> None:
        """Ask the controller to shrink or expand the ISRs of led partitions as followers lag or
        catch up (the controller fences stale proposals by epoch). One proposal per partition at a
        time; the partition decides what an answer means (``Partition.on_isr_answer``)."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._isr_check_now.wait(), self.isr_check_interval_s)
            self._isr_check_now.clear()
            now = self._clock.monotonic_ms()
            for partition in list(self._partitions.values()):
                proposal = partition.isr_proposal(now)
                if proposal is None:
                    continue
                result = await self.link.alter_partition(
                    partition.topic_id,
                    partition.key.partition,
                    leader_epoch=proposal.leader_epoch,
                    partition_epoch=proposal.partition_epoch,
                    new_isr=proposal.isr,
                    new_isr_broker_epochs=proposal.broker_epochs,
                )
                if result is None:
                    partition.on_isr_answer(proposal, None)
                else:
                    code = error_code(result.error.code)
                    partition.on_isr_answer(
                        proposal,
                        ErrorCode.UNKNOWN_SERVER_ERROR if code is None else code,
                        result.isr,
                        result.partition_epoch,
                    )
                self._partition_signals.notify(partition.key)  # producers waiting for acks=all

    def _led(self, topic: str, partition: int, current_leader_epoch: int = -1) -> Partition | common_pb2.Error:
        """The partition if this broker leads it, or the error to answer: not led here, or the
        caller's ``current_leader_epoch`` is older (FENCED_LEADER_EPOCH) or newer
        (UNKNOWN_LEADER_EPOCH) than this leader's; -1 skips the epoch check (as Kafka)."""
        led = self._partitions.get(TopicPartition(topic, partition))
        leader_epoch = led.leader_epoch if led is not None else None
        if led is None or leader_epoch is None:
            return self._unknown_or_not_leader(topic, partition)
        if current_leader_epoch >= 0 and current_leader_epoch != leader_epoch:
            code = (
                ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < leader_epoch else ErrorCode.UNKNOWN_LEADER_EPOCH
            )
            return wire_error(code, f"{topic}-{partition}: leader epoch is {leader_epoch}")
        return led

    def _leading(self, topic: str, partition: int, current_leader_epoch: int = -1) -> Partition | common_pb2.Error:
        """As ``_led``, for clients: also NOT_LEADER_OR_FOLLOWER when this broker can no longer
        vouch for its leadership (``_vouched``), so that clients look for the new leader."""
        led = self._led(topic, partition, current_leader_epoch)
        if isinstance(led, Partition) and not self._vouched(led):
            return self._not_vouched(topic, partition)
        return led

    def _not_vouched(self, topic: str, partition: int) -> common_pb2.Error:
        return wire_error(
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            f"{topic}-{partition}: broker {self.broker_id} lost touch with the controller and its followers; "
            "another broker may lead it now",
        )

    def _vouched(self, partition: Partition) -> bool:
        """Whether this broker may still act as the partition's leader: its controller lease holds
        (no other leader can have been elected), or every other ISR member still fetches from it
        (so the controller is away, not this broker cut off: followers stop fetching from a
        leader they no longer follow). A broker cut from both stops answering clients as the
        leader once its lease lapses, instead of holding their requests until they time out."""
        if self.link.lease_held():
            return True
        window_ms = int((self.link.session_timeout_s or 0) * 1000)
        return partition.followed_within(self._clock.monotonic_ms(), window_ms)

    def _partition_metadata(
        self, topic: str, partition: PartitionImage, fenced: set[int]
    ) -> broker_pb2.PartitionMetadata:
        """One partition as this broker's Metadata names it: no leader while it is offline, or
        while this broker is still taking it over."""
        leader = NO_LEADER if self._taking_over(topic, partition) else partition.leader
        return broker_pb2.PartitionMetadata(
            partition=partition.partition,
            error=wire_error(ErrorCode.NONE if leader != NO_LEADER else ErrorCode.LEADER_NOT_AVAILABLE),
            leader_id=leader,
            leader_epoch=partition.leader_epoch,
            replicas=partition.replicas,
            isr=partition.isr,
            offline_replicas=[b for b in partition.replicas if b in fenced],
        )

    def _taking_over(self, topic: str, partition: PartitionImage) -> bool:
        """Whether the image names this broker leader of ``partition`` and it does not serve as
        such yet (its log still opening): its own Metadata says no leader until then, so nobody
        is sent here to be told it does not lead."""
        if partition.leader != self.broker_id:
            return False
        led = self._partitions.get(TopicPartition(topic, partition.partition))
        return led is None or led.leader_epoch != partition.leader_epoch

    def _unknown_or_not_leader(self, topic: str, partition: int) -> common_pb2.Error:
        found = self.image.topic(topic)
        if found is None or partition not in found.partitions:
            return wire_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist")
        if self._taking_over(topic, found.partitions[partition]):
            return wire_error(
                ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition}: broker {self.broker_id} is taking over"
            )
        leader = found.partitions[partition].leader
        where = "no broker (offline)" if leader == NO_LEADER else f"broker {leader}"
        return wire_error(
            ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{topic}-{partition} is led by {where}, not broker {self.broker_id}"
        )

    def _leader_hint(self, topic: str, partition: int) -> common_pb2.LeaderHint | None:
        found = self.image.topic(topic)
        if found is None or partition not in found.partitions:
            return None
        state = found.partitions[partition]
        return common_pb2.LeaderHint(leader_id=state.leader, leader_epoch=state.leader_epoch)

    # -----------------------------------------------------------------------------------------
    # Metadata

    async def Metadata(  # noqa: N802 - gRPC method names
        self, request: broker_pb2.MetadataRequest, context: ServicerContext
    ) -> broker_pb2.MetadataResponse:
        image = self.image
        if request.topics:
            names = list(dict.fromkeys(request.topics))  # a name given again is answered once (issue #23)
        else:
            names = sorted(t.name for t in image.topics.values() if request.include_internal or not t.internal)
        topics = []
        for name in names:
            topic = image.topic(name)
            if topic is None:
                topics.append(
                    broker_pb2.TopicMetadata(
                        name=name,
                        error=wire_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"),
                    )
                )
                continue
            fenced = {b.broker_id for b in image.brokers.values() if b.fenced}
            topics.append(
                broker_pb2.TopicMetadata(
                    name=name,
                    topic_id=topic.topic_id,
                    error=wire_error(ErrorCode.NONE),
                    is_internal=topic.internal,
                    partitions=[self._partition_metadata(name, p, fenced) for _, p in sorted(topic.partitions.items())],
                )
            )
        # clients dial the active controller's client listener, once it registered one; a controller
        # without an internal listener is dialled where nodes dial it; else port 0: not known yet
        # (the certificate listener's ports to a caller on a certificate listener)
        certificates = on_certificate_listener()
        active = self.link.controllers.address
        registered = image.controller_at(active)
        host, _, port = (
            f"{registered.host}:{registered.client_port(certificates)}" if registered is not None else active
        ).rpartition(":")
        if registered is None and any(c.internal_port or c.certificate_port for c in image.controllers.values()):
            port = "0"
        return broker_pb2.MetadataResponse(
            cluster_id=image.cluster_id,
            controller=common_pb2.Node(node_id=0, host=host, port=int(port)),
            brokers=[
                common_pb2.Node(node_id=b.broker_id, host=b.host, port=b.client_port(certificates), rack=b.rack)
                for b in image.live_brokers()
            ],
            coordinators=[
                common_pb2.Node(node_id=c.coordinator_id, host=c.host, port=c.client_port(certificates))
                for c in image.live_coordinators()
            ],
            topics=topics,
            metadata_offset=image.last_offset,
        )

    # -----------------------------------------------------------------------------------------
    # Produce

    async def Produce(  # noqa: N802
        self, request: broker_pb2.ProduceRequest, context: ServicerContext
    ) -> broker_pb2.ProduceResponse:
        limited = self._quota_of(PRODUCER_BYTE_RATE, [t.topic for t in request.topics])
        throttle_ms = await self._admit(PRODUCER_BYTE_RATE, limited, request.ByteSize())
        response = await self._start_produce(request, caller=caller_identity(context))
        response.throttle_time_ms = throttle_ms
        return response

    def _quota_of(self, key: str, topics: list[str]) -> tuple[QuotaEntity, float] | None:
        """(what the caller is measured as, quota) when the caller's requests under ``key`` are limited
        (``caller_quota``); never for internal topics (only coordinators read and write them,
        also where they share the client listener)."""
        if all(topic == CONSUMER_OFFSETS_TOPIC for topic in topics):
            return None
        return caller_quota(self.image, key)

    async def _admit(self, key: str, limited: tuple[QuotaEntity, float] | None, size: int) -> int:
        """Mute a caller over its quota (``limited``: ``_quota_of``'s answer; KIP-219): wait,
        before any work, while it is muted under ``key``; then record ``size`` bytes (with no
        await in between, so waiters go one at a time as the rate allows) and return what it owes
        now, for ``throttle_time_ms``."""
        if limited is None:
            return 0
        await muted(self._quotas, key, limited, self.metrics.service)
        who, quota = limited
        return self._quotas.record(who, key, size, quota, time.monotonic())

    async def ProduceStream(  # noqa: N802
        self, requests: AsyncIterator[broker_pb2.ProduceRequest], context: ServicerContext
    ) -> AsyncIterator[broker_pb2.ProduceResponse]:
        """Each request is started as soon as it is read, so a partition's appends happen in
        stream order (``_start_produce``) while earlier ones wait for replication; the answers
        go back in request order. At most ``STREAM_UNANSWERED_BYTES`` of requests wait for their
        answers: beyond them the stream is not read (HTTP/2 flow control then holds the client
        back), so a client cannot pile up requests in a broker's memory."""
        answers: asyncio.Queue[tuple[int, int, Coroutine[None, None, broker_pb2.ProduceResponse]] | None] = (
            asyncio.Queue()
        )
        unanswered_bytes = 0
        room = asyncio.Event()

        async def read() -> None:
            nonlocal unanswered_bytes
            try:
                async for request in requests:
                    size = request.ByteSize()
                    while unanswered_bytes and unanswered_bytes + size > STREAM_UNANSWERED_BYTES:
                        room.clear()
                        await room.wait()
                    unanswered_bytes += size
                    limited = self._quota_of(PRODUCER_BYTE_RATE, [t.topic for t in request.topics])
                    throttle_ms = await self._admit(PRODUCER_BYTE_RATE, limited, size)
                    answers.put_nowait((throttle_ms, size, self._start_produce(request, stream=True, caller=caller)))
            finally:
                answers.put_nowait(None)

        caller = caller_identity(context)
        reader = asyncio.create_task(read())
        try:
            while (started := await answers.get()) is not None:
                throttle_ms, size, answer = started
                response = await answer
                response.throttle_time_ms = throttle_ms
                yield response
                unanswered_bytes -= size
                room.set()
        finally:
            reader.cancel()
            while not answers.empty():  # the client left: the appends go on, nobody hears of them
                if (unheard := answers.get_nowait()) is not None:
                    unheard[2].close()

    def _start_produce(
        self, request: broker_pb2.ProduceRequest, *, stream: bool = False, caller: str | None = None
    ) -> Coroutine[None, None, broker_pb2.ProduceResponse]:
        """Start every partition's append of ``request`` now; the returned awaitable gives the
        answer. Appends queue on their partition's (FIFO) append lock in the order requests are
        started: no ``await`` comes before it in ``_produce_partition``. A ``stream`` request's
        answer time is recorded here (the interceptor times unary calls only)."""
        started_s = time.perf_counter()
        acks = request.acks or common_pb2.ACKS_ALL
        timeout_s = (request.timeout_ms or 30_000) / 1000
        loop = asyncio.get_running_loop()
        started = [
            (
                topic.topic,
                [
                    loop.create_task(self._produce_partition(topic.topic, p, acks, timeout_s, caller=caller))
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]

        async def answer() -> broker_pb2.ProduceResponse:
            response = broker_pb2.ProduceResponse()
            for topic, partitions in started:
                answered = response.topics.add(topic=topic).partitions
                for result in await asyncio.gather(*partitions):
                    answered.append(result)
                    if result.error.code:
                        self.metrics.partition_error("Produce", result.error.code)
            if stream:
                self.metrics.service.observe_rpc("ProduceStream", time.perf_counter() - started_s)
            return response

        return answer()

    def _check_internal_writer(
        self, topic: str, partition: int, headers: list[BatchHeader], caller: str | None
    ) -> None:
        """Only a shard's coordinator writes ``__consumer_offsets``: with the shard's producer id
        (header-only check; the producer epoch check that follows fences old owners) and, with
        TLS, the certificate of the coordinator owning the shard (a batch naming the shard's
        producer id with a newer epoch would otherwise fence it)."""
        if topic != CONSUMER_OFFSETS_TOPIC:
            return
        shard = self.image.shards.get(partition)
        owner = node_identity("coordinator", shard.coordinator_id) if shard is not None else None
        if callers_verified() and caller != owner:
            if caller is not None and caller.startswith("coordinator-"):  # this broker's metadata may lag a move
                raise LanesError(
                    f"shard {partition} is {owner}'s in this broker's metadata, not {caller}'s (yet): retry",
                    ErrorCode.NOT_COORDINATOR,
                )
            raise LanesError(
                f"{topic} is internal: only the group coordinator owning shard {partition} ({owner}) writes it, "
                f"not {caller or 'a caller without a certificate'}",
                ErrorCode.INVALID_TOPIC_EXCEPTION,
            )
        if shard is None or any(h.producer_id != shard.producer_id for h in headers):
            raise LanesError(
                f"{topic} is internal: only the group coordinator owning shard {partition} writes it",
                ErrorCode.INVALID_TOPIC_EXCEPTION,
            )

    async def _produce_partition(
        self, topic: str, data: broker_pb2.PartitionProduceData, acks: int, timeout_s: float, *, caller: str | None
    ) -> broker_pb2.PartitionProduceResponse:
        response = broker_pb2.PartitionProduceResponse(partition=data.partition, base_offset=-1, log_append_time_ms=-1)
        led = self._leading(topic, data.partition)
        leader_epoch = led.leader_epoch if isinstance(led, Partition) else None
        if not isinstance(led, Partition) or leader_epoch is None:
            response.error.CopyFrom(
                led if not isinstance(led, Partition) else self._unknown_or_not_leader(topic, data.partition)
            )
            hint = self._leader_hint(topic, data.partition)
            if hint is not None:
                response.current_leader.CopyFrom(hint)
            return response
        acks_all = acks == common_pb2.ACKS_ALL
        try:
            async with led.append_queue:
                appended = await asyncio.to_thread(
                    functools.partial(self._validate_and_append, caller=caller),
                    led,
                    leader_epoch,
                    topic,
                    data,
                    acks_all,
                )
        except LanesError as exc:
            response.error.CopyFrom(wire_error(exc.code, exc.message))
            return response
        if isinstance(appended, Verdict):
            if appended.duplicate_of is None:  # refused: a sequence or epoch error
                response.error.CopyFrom(wire_error(appended.error, appended.message))
                return response
            # a retry of an earlier batch is answered as the original was, with its offset
            response.base_offset = appended.duplicate_of.first_offset
            response.error.CopyFrom(
                wire_error(ErrorCode.DUPLICATE_SEQUENCE_NUMBER, "already written: the original offset is returned")
            )
            last_offset = appended.duplicate_of.last_offset
        else:
            self._partition_signals.notify(led.key)  # followers' long-polls wait for new records
            self.metrics.appended(topic, appended.records, appended.size_bytes)
            response.base_offset = appended.first_offset
            response.log_append_time_ms = appended.log_append_time_ms
            response.log_start_offset = led.log.log_start_offset
            response.error.CopyFrom(wire_error(ErrorCode.NONE))
            last_offset = appended.last_offset
        if acks_all:
            # Also for a retry (Kafka parks it the same way): the original may still be on this
            # leader alone, and is acknowledged only once the high-water mark covers it.
            outcome = await self._await_replication(led, leader_epoch, last_offset + 1, timeout_s)
            if outcome is not ErrorCode.NONE:
                response.error.CopyFrom(wire_error(outcome, f"{topic}-{data.partition}: {outcome.hint}"))
        return response

    def _validate_and_append(
        self,
        partition: Partition,
        leader_epoch: int,
        topic: str,
        data: broker_pb2.PartitionProduceData,
        acks_all: bool,
        *,
        caller: str | None,
    ) -> AppendInfo | Verdict:
        """Validate the batches and check their writer, then append them at ``leader_epoch``
        (``Partition.append_as_leader``): one hop off the event loop per request."""
        records = data.records  # each read of a bytes field copies it: read once
        headers = partition.log.validate_produce(records)
        self._check_internal_writer(topic, data.partition, headers, caller)
        return partition.append_as_leader(records, headers, leader_epoch=leader_epoch, acks_all=acks_all)

    async def InitProducerId(  # noqa: N802
        self, request: broker_pb2.InitProducerIdRequest, context: ServicerContext
    ) -> broker_pb2.InitProducerIdResponse:
        if request.transactional_id:
            return broker_pb2.InitProducerIdResponse(
                error=wire_error(ErrorCode.UNSUPPORTED_VERSION, "transactions are not supported yet"), producer_id=-1
            )
        # Without a transactional id, every call gets a new producer id, whatever id and epoch it
        # names (as Kafka's coordinator does): bumping the epoch of a named id let anyone fence
        # any producer (issue #23).
        async with self._producer_ids_lock:
            if not self._producer_ids:
                block = await self.link.allocate_producer_ids()
                if block is None:
                    return broker_pb2.InitProducerIdResponse(
                        error=wire_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the controller is unreachable; retry"),
                        producer_id=-1,
                    )
                self._producer_ids = list(block.ids())
            producer_id = self._producer_ids.pop(0)
        return broker_pb2.InitProducerIdResponse(
            error=wire_error(ErrorCode.NONE), producer_id=producer_id, producer_epoch=0
        )

    async def _await_replication(
        self, partition: Partition, leader_epoch: int, required_offset: int, timeout_s: float
    ) -> ErrorCode:
        async def outcome() -> ErrorCode:
            while True:
                with self._partition_signals.ticket((partition.key,)) as ticket:
                    result = partition.acks_all_outcome(leader_epoch, required_offset)
                    if result is not None:
                        return result  # committed before any lapse below is answered as such
                    if not self._vouched(partition):
                        return ErrorCode.NOT_LEADER_OR_FOLLOWER
                    await ticket.wait(_VOUCH_CHECK_INTERVAL_S)

        try:
            return await asyncio.wait_for(outcome(), timeout_s)
        except TimeoutError:
            return ErrorCode.REQUEST_TIMED_OUT

    # -----------------------------------------------------------------------------------------
    # Fetch

    async def Fetch(  # noqa: N802
        self, request: broker_pb2.FetchRequest, context: ServicerContext
    ) -> broker_pb2.FetchResponse:
        """Read what is there; while that is under ``min_bytes``, wait for a named partition to
        move and read what arrived (``lanes.broker.consumer_fetch``), until the wait ends. Sizes
        and wait are capped (``lanes.broker.fetch_limits``); the record bytes held come out of
        the broker's fetch memory."""
        limited = self._quota_of(CONSUMER_BYTE_RATE, [topic.topic for topic in request.topics])
        cap_bytes = self._fetch_max_bytes if limited is None else min(self._fetch_max_bytes, window_bytes(limited[1]))
        limits = FetchLimits.clamp(request.max_bytes, request.min_bytes, request.max_wait_ms, cap_bytes=cap_bytes)
        fetch = ConsumerFetch(request, limits.max_bytes)
        if not fetch.keys:
            return fetch.response  # nothing to wait for (Kafka answers at once too)
        # muted while it owes; then what it may read is reserved, so concurrent fetches of the user
        # wait their turn too, and the reservation is corrected by what was sent (or nothing)
        reserved = limits.max_bytes if limited is not None else 0
        await self._admit(CONSUMER_BYTE_RATE, limited, reserved)
        sent_bytes = 0
        deadline = Deadline(limits.max_wait_ms / 1000)  # in real time, as the wait on the signal
        held = 0  # what this fetch holds of the broker's fetch memory, its grant in flight included
        try:
            due = True  # a pass is due: the first, or a partition moved, or memory was freed
            while True:
                # tickets before reading: a move or a release meanwhile wakes us
                with self._partition_signals.ticket(fetch.keys) as ticket:
                    memory_freed = self._fetch_memory_freed.ticket()
                    if due or fetch.moved(self._partitions):
                        due = False
                        granted = self._fetch_memory.grant(limits.max_bytes - fetch.read_bytes)
                        if granted == 0:
                            due = True  # nothing to read into: wait for a release, not for a move
                        else:
                            held += granted
                            read = await asyncio.to_thread(fetch.read_pass, self._fetchable, granted)
                            held += read - granted
                            self._settle_fetch_memory(granted, read)
                            if fetch.read_bytes >= limits.min_bytes or fetch.urgent:
                                break
                    if deadline.expired():
                        break
                    await self._wait_for_either(ticket, memory_freed if due else None, deadline.remaining_s())
            response, sent = fetch.answer()
            sent_bytes = sum(size for size, _ in sent.values())
        finally:
            self._settle_fetch_memory(held, 0)
            if limited is not None:
                who, quota = limited
                owed_ms = self._quotas.record(who, CONSUMER_BYTE_RATE, sent_bytes - reserved, quota, time.monotonic())
        if limited is not None:
            response.throttle_time_ms = owed_ms
        for code in fetch.errors:
            self.metrics.partition_error("Fetch", code)
        for topic, (size, records) in sent.items():
            self.metrics.fetched(topic, size, records)
        return response

    def _settle_fetch_memory(self, granted_bytes: int, read_bytes: int) -> None:
        """A read took ``read_bytes`` of a ``granted_bytes`` grant (an answered fetch: 0 of what
        it held); fetches waiting for memory try again when some was freed."""
        self._fetch_memory.settle(granted_bytes, read_bytes)
        if read_bytes < granted_bytes:
            self._fetch_memory_freed.notify_all()

    @staticmethod
    async def _wait_for_either(
        ticket: KeyedTicket[TopicPartition], other: asyncio.Event | None, timeout_s: float
    ) -> None:
        """Until a partition of ``ticket`` moves, ``other`` is set (a Broadcast ticket), or ``timeout_s``."""
        if other is None:
            await ticket.wait(timeout_s)
            return
        waits = [asyncio.ensure_future(ticket.wait(timeout_s)), asyncio.ensure_future(other.wait())]
        try:
            await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()

    def _fetchable(self, key: TopicPartition, current_leader_epoch: int, offset: int) -> Partition | common_pb2.Error:
        """The partition a consumer may read from ``offset``: committed records are served by any
        leader that has them; a consumer that waits for new ones is sent on once this broker
        cannot vouch for leading."""
        led = self._led(key.topic, key.partition, current_leader_epoch)
        if isinstance(led, Partition) and offset >= led.log.high_watermark and not self._vouched(led):
            return self._not_vouched(key.topic, key.partition)
        return led

    # -----------------------------------------------------------------------------------------
    # Replication (leader side)

    async def ReplicaFetch(  # noqa: N802
        self, request: broker_pb2.ReplicaFetchRequest, context: ServicerContext
    ) -> broker_pb2.ReplicaFetchResponse:
        """Within the follower's fetch session (``lanes.broker.fetch_session``): a full request
        opens one, an incremental one names only what changed and is answered only with what
        changed."""
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
        forgotten = [TopicPartition(f.topic, p) for f in request.forgotten for p in f.partitions]
        await check_claim(context, node_identity("broker", request.replica_id))
        refusal, counts = self._replica_standing(request.replica_id, request.broker_epoch)
        if refusal is not None:
            return broker_pb2.ReplicaFetchResponse(error=refusal)
        resolved = self._fetch_sessions.resolve(
            request.replica_id, request.session_id, request.session_epoch, named, forgotten
        )
        if isinstance(resolved, ErrorCode):
            return broker_pb2.ReplicaFetchResponse(error=wire_error(resolved))
        session, full = resolved
        entries = list(session.partitions.items())  # served in worker threads: a copy
        keys = [key for key, _ in entries]
        if not keys:  # nothing to wait for (Kafka answers at once too)
            return broker_pb2.ReplicaFetchResponse(error=wire_error(ErrorCode.NONE), session_id=session.session_id)
        limits = FetchLimits.clamp(
            request.max_bytes, request.min_bytes, request.max_wait_ms, cap_bytes=self._replica_fetch_response_max_bytes
        )
        deadline = Deadline(limits.max_wait_ms / 1000)  # in real time, as the wait on the signal
        loop = asyncio.get_running_loop()
        follower = _FetchingFollower(
            request.replica_id,
            request.broker_epoch,
            counts,
            # from the worker thread: a mark it moved wakes its waiters even if this call is
            # cancelled meanwhile (the move is made; nothing would announce it again)
            lambda key: loop.call_soon_threadsafe(self._partition_signals.notify, key),
        )
        while True:
            with self._partition_signals.ticket(keys) as ticket:
                served = await asyncio.to_thread(
                    self._serve_replica, follower, entries, session, named if not full else None, limits.max_bytes
                )
                if served.isr_expansion_due:  # a follower outside the ISR caught up: expand now, not periodically
                    self._isr_check_now.set()
                if served.bytes_read >= limits.min_bytes or served.urgent or deadline.expired():
                    for key, high_watermark, log_start_offset in served.answered:
                        session.answered(key, high_watermark, log_start_offset)
                    served.response.session_id = session.session_id
                    return served.response
                await ticket.wait(deadline.remaining_s())

    def _replica_standing(self, replica_id: int, broker_epoch: int) -> tuple[common_pb2.Error | None, bool]:
        """Whether a ReplicaFetch claiming to come from ``replica_id`` at ``broker_epoch`` is
        refused (the error), and else whether its positions count for high-water marks and ISRs
        (KIP-903). A broker this one does not know, or an epoch older than its registration here
        (an incarnation before a restart), is refused; a newer epoch (this broker's metadata
        lags a re-registration) is served, and counts once the metadata names it. (The epoch is
        in the metadata anyone may watch: only the internal listener's mutual TLS proves who
        calls.)"""
        broker = self.image.brokers.get(replica_id)
        if replica_id == self.broker_id or broker is None:
            return wire_error(ErrorCode.STALE_BROKER_EPOCH, f"no broker {replica_id} is registered to fetch as"), False
        if broker_epoch < broker.epoch:
            message = f"broker {replica_id}'s registration is epoch {broker.epoch} here, not {broker_epoch}"
            return wire_error(ErrorCode.STALE_BROKER_EPOCH, message), False
        return None, broker_epoch == broker.epoch

    def _serve_replica(
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
            led = self._led(key.topic, key.partition, wanted.current_leader_epoch)
            leader_epoch = led.leader_epoch if isinstance(led, Partition) else None
            if not isinstance(led, Partition) or leader_epoch is None:
                error = led if not isinstance(led, Partition) else self._unknown_or_not_leader(key.topic, key.partition)
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

    async def OffsetForLeaderEpoch(  # noqa: N802
        self, request: broker_pb2.OffsetForLeaderEpochRequest, context: ServicerContext
    ) -> broker_pb2.OffsetForLeaderEpochResponse:
        topics = []
        for topic in request.topics:
            partitions = []
            for wanted in topic.partitions:
                result = broker_pb2.OffsetForLeaderEpochPartitionResponse(partition=wanted.partition)
                led = self._led(topic.topic, wanted.partition, wanted.current_leader_epoch)
                if not isinstance(led, Partition):
                    result.error.CopyFrom(led)
                else:
                    epoch, end = led.log.epochs.end_offset_for(wanted.leader_epoch, led.log.log_end_offset)
                    result.error.CopyFrom(wire_error(ErrorCode.NONE))
                    result.end.CopyFrom(broker_pb2.EpochEndOffset(leader_epoch=epoch, end_offset=end))
                partitions.append(result)
            topics.append(broker_pb2.OffsetForLeaderEpochTopicResponse(topic=topic.topic, partitions=partitions))
        return broker_pb2.OffsetForLeaderEpochResponse(topics=topics)

    async def DeleteRecords(  # noqa: N802
        self, request: broker_pb2.DeleteRecordsRequest, context: ServicerContext
    ) -> broker_pb2.DeleteRecordsResponse:
        topics = []
        for topic in request.topics:
            partitions = []
            for wanted in topic.partitions:
                result = broker_pb2.DeleteRecordsPartitionResponse(partition=wanted.partition, low_watermark=-1)
                led = self._leading(topic.topic, wanted.partition)
                leader_epoch = led.leader_epoch if isinstance(led, Partition) else None
                if not isinstance(led, Partition) or leader_epoch is None:
                    result.error.CopyFrom(
                        led
                        if not isinstance(led, Partition)
                        else self._unknown_or_not_leader(topic.topic, wanted.partition)
                    )
                else:
                    target = led.log.high_watermark if wanted.offset == -1 else wanted.offset
                    try:
                        result.low_watermark = await asyncio.to_thread(led.delete_records_before, leader_epoch, target)
                        result.error.CopyFrom(wire_error(ErrorCode.NONE))
                    except LanesError as exc:
                        result.error.CopyFrom(wire_error(exc.code, exc.message))
                partitions.append(result)
            topics.append(broker_pb2.DeleteRecordsTopicResponse(topic=topic.topic, partitions=partitions))
        return broker_pb2.DeleteRecordsResponse(topics=topics)

    # -----------------------------------------------------------------------------------------
    # ListOffsets

    async def ListOffsets(  # noqa: N802
        self, request: broker_pb2.ListOffsetsRequest, context: ServicerContext
    ) -> broker_pb2.ListOffsetsResponse:
        topics = []
        listed: set[tuple[str, int]] = set()
        for topic in request.topics:
            partitions = []
            for wanted in topic.partitions:
                result = broker_pb2.ListOffsetsPartitionResponse(
                    partition=wanted.partition, offset=-1, timestamp_ms=-1, leader_epoch=-1
                )
                led = self._led(topic.topic, wanted.partition, wanted.current_leader_epoch)
                # A lookup by timestamp reads the log: one per partition per request (Kafka allows
                # each partition once); the earliest and latest offsets cost nothing to repeat.
                by_time = wanted.spec == broker_pb2.OFFSET_SPEC_TIMESTAMP
                if by_time and (topic.topic, wanted.partition) in listed:
                    result.error.CopyFrom(
                        wire_error(
                            ErrorCode.INVALID_REQUEST,
                            f"{topic.topic}-{wanted.partition} is looked up by timestamp more than once",
                        )
                    )
                elif not isinstance(led, Partition):
                    result.error.CopyFrom(led)
                elif wanted.spec == broker_pb2.OFFSET_SPEC_EARLIEST:
                    result.offset = led.log.log_start_offset
                elif led.log.high_watermark < led.leader_epoch_start_offset:
                    # A new leader learns the high-water mark from its followers' next fetches;
                    # until then "latest" would be too low (as Kafka: OFFSET_NOT_AVAILABLE).
                    result.error.CopyFrom(
                        wire_error(
                            ErrorCode.OFFSET_NOT_AVAILABLE,
                            f"{topic.topic}-{wanted.partition} has a new leader that has not yet established its "
                            "high-water mark; retry shortly",
                        )
                    )
                elif wanted.spec == broker_pb2.OFFSET_SPEC_LATEST:
                    result.offset = led.log.high_watermark
                elif wanted.spec == broker_pb2.OFFSET_SPEC_TIMESTAMP:
                    try:
                        found = await asyncio.to_thread(led.log.offset_for_timestamp, wanted.timestamp_ms)
                    except (CorruptRecordError, MessageTooLargeError) as exc:  # a batch it cannot decode
                        result.error.CopyFrom(wire_error(exc.code, f"{topic.topic}-{wanted.partition}: {exc.message}"))
                        found = None
                    if found is not None and found.offset < led.log.high_watermark:
                        result.offset, result.timestamp_ms, result.leader_epoch = (
                            found.offset,
                            found.timestamp_ms,
                            found.leader_epoch,
                        )
                else:
                    result.error.CopyFrom(
                        wire_error(ErrorCode.UNSUPPORTED_VERSION, "use OFFSET_SPEC_EARLIEST, _LATEST or _TIMESTAMP")
                    )
                if not result.HasField("error"):
                    result.error.CopyFrom(wire_error(ErrorCode.NONE))
                if by_time:
                    listed.add((topic.topic, wanted.partition))
                partitions.append(result)
            topics.append(broker_pb2.ListOffsetsTopicResponse(topic=topic.topic, partitions=partitions))
        return broker_pb2.ListOffsetsResponse(topics=topics)

    # -----------------------------------------------------------------------------------------
    # DescribeLogs

    async def DescribeLogs(  # noqa: N802
        self, request: broker_pb2.DescribeLogsRequest, context: ServicerContext
    ) -> broker_pb2.DescribeLogsResponse:
        wanted = set(request.topics)
        replicas = [
            broker_pb2.ReplicaLog(
                topic=replica.topic,
                partition=replica.partition,
                is_leader=replica.leader,
                log_start_offset=replica.log_start_offset,
                log_end_offset=replica.log_end_offset,
                high_watermark=replica.high_watermark,
                size_bytes=replica.size_bytes,
                segments=replica.segments,
            )
            for replica in self.replica_states()
            if not wanted or replica.topic in wanted
        ]
        return broker_pb2.DescribeLogsResponse(broker_id=self.broker_id, replicas=replicas)

    # -----------------------------------------------------------------------------------------
    # Metrics

    def replica_states(self) -> list[ReplicaState]:
        """Every partition replica stored here, sorted (call on the service's loop)."""
        return [partition.replica_state() for _, partition in sorted(self._partitions.items())]

    async def _metrics_snapshot(self) -> list[Metric]:
        return self.metrics.gauges(self.replica_states(), DiskSpace.of(self.logs.data_dir))


def add_to_server(service: BrokerService, server: grpc.aio.Server) -> None:
    """Register ``service`` on ``server`` (the generated helper is untyped)."""
    broker_pb2_grpc.add_BrokerServicer_to_server(service, server)  # type: ignore[no-untyped-call]
