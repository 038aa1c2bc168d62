"""Applies the cluster metadata to this broker's replicas (Kafka's ``ReplicaManager.applyDelta``
with ``TopicsDelta.localChanges``).

Each metadata update the node's controller link applies is summed up as a ``LocalChanges``: the
topics whose partitions or configs it touched, whether topics were deleted, whether brokers
changed. A pass then looks at those topics only, so its cost follows what changed, not the size
of the image: a broker holding thousands of replicas does not walk them all when one ISR moves.
A snapshot that replaced the image, a change of the node's own epoch, and the first image are
applied in full.

A pass, in order: partitions of deleted or recreated topics stop at once; the logs it lacks are
opened, with their producer state, in a worker thread (a broker taking over thousands of
partitions must go on heartbeating), ``OPEN_CHUNK_PARTITIONS`` at a time, the roles of each chunk's
topics applied as it opens (a restarted broker serves its first partitions while it opens the
rest); roles change on the loop (cheap: a follower's producer
state is current, so a new leader serves at once); the partitions a pass made this broker lead
are then prepared for their first appends in a worker thread, a chunk per call (the active
segment's first timestamp read, ``PartitionLog.prepare_for_appends``: else each first append after
a restart takes a hop to a thread of its own; the new epoch that append writes itself, in place);
logs of deleted topics are removed in a worker thread. What failed (a log that would
not open) is tried again shortly, in full.

Owned by the broker's event loop; one pass runs at a time (``lock``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from lanes.broker.fetcher_manager import FetcherManager
from lanes.broker.metrics import BrokerMetrics
from lanes.broker.partition import Partition
from lanes.broker.replica_manager import ReplicaManager
from lanes.clock import Clock
from lanes.errors import LanesError
from lanes.metadata.image import NO_LEADER, MetadataImage, TopicImage
from lanes.runtime.serving.logs import fields
from lanes.storage.log import LogConfig
from lanes.storage.manager import LogManager
from lanes.topic_configs import topic_config_values
from lanes.topic_partition import TopicPartition
from lanes.v1 import common_pb2, metadata_pb2

_log = logging.getLogger(__name__)
#: how soon a metadata pass that failed in part (a log that would not open) is tried again
RETRY_S = 1.0
#: logs opened per worker-thread call: a broker taking over 10,000 partitions serves each
#: thousand as it opens (their roles applied in between), not all of them after the last one
OPEN_CHUNK_PARTITIONS = 1000
#: a metadata pass that makes this broker lead more partitions logs a line per topic, not per partition
LOGGED_LEADERSHIPS = 20
_BROKER_RECORDS = frozenset({"broker_registered", "broker_fenced", "broker_unfenced", "broker_unregistered"})


@dataclass
class LocalChanges:
    """What metadata updates since the last pass may change for this broker's replicas."""

    #: ids of the topics whose partitions or configs changed; None: look at everything
    topic_ids: set[str] | None = field(default_factory=set)
    #: a topic was deleted: logs of partitions gone are removed
    topics_deleted: bool = False
    #: brokers registered, were fenced or went away: the fetchers' leaders may have moved
    brokers_changed: bool = False

    @classmethod
    def everything(cls) -> LocalChanges:
        return cls(topic_ids=None, topics_deleted=True, brokers_changed=True)

    def add(self, applied: list[tuple[int, metadata_pb2.MetadataRecord]], image: MetadataImage) -> None:
        """Sum up records applied to ``image`` (an empty list: the image was replaced, or this
        node's epoch changed; everything is looked at)."""
        if not applied:
            self.topic_ids, self.topics_deleted, self.brokers_changed = None, True, True
            return
        for _, record in applied:
            kind = record.WhichOneof("record")
            if kind in ("topic_created", "partition", "partition_change", "topic_deleted"):
                self._touch(getattr(record, kind).topic_id)
                self.topics_deleted |= kind == "topic_deleted"
            elif kind == "config" and record.config.resource_type == common_pb2.CONFIG_RESOURCE_TYPE_TOPIC:
                topic_id = image.topic_ids.get(record.config.resource_name)
                if topic_id is not None:
                    self._touch(topic_id)
            elif kind in _BROKER_RECORDS:
                self.brokers_changed = True

    def _touch(self, topic_id: str) -> None:
        if self.topic_ids is not None:
            self.topic_ids.add(topic_id)

    def topics(self, image: MetadataImage) -> Iterable[TopicImage]:
        """The topics of ``image`` to look at."""
        if self.topic_ids is None:
            return list(image.topics.values())
        return [image.topics[topic_id] for topic_id in self.topic_ids if topic_id in image.topics]

    def concerns(self, partition: Partition) -> bool:
        return self.topic_ids is None or partition.topic_id in self.topic_ids


class _TopicSettings:
    """A topic's configs as the broker applies them to its partitions, worked out on first use
    (once per topic per pass, not once per partition)."""

    def __init__(self, image: MetadataImage, topic: str) -> None:
        self._image = image
        self._topic = topic

    @functools.cached_property
    def log_config(self) -> LogConfig:
        return LogConfig.from_topic_configs(self._image.topic_configs(self._topic))

    @functools.cached_property
    def min_insync_replicas(self) -> int:
        return int(topic_config_values(self._image.topic_configs(self._topic))["min.insync.replicas"])


class MetadataPublisher:
    """Keeps ``replicas`` in line with the metadata; see the module docstring."""

    def __init__(
        self,
        replicas: ReplicaManager,
        logs: LogManager,
        fetchers: FetcherManager,
        clock: Clock,
        metrics: BrokerMetrics,
        *,
        replica_lag_time_max_ms: int,
    ) -> None:
        self._replicas = replicas
        self._logs = logs
        self._fetchers = fetchers
        self._clock = clock
        self._metrics = metrics
        self._replica_lag_time_max_ms = replica_lag_time_max_ms
        self.lock = asyncio.Lock()
        self._pending = LocalChanges.everything()
        #: set by every metadata change (``on_update``); ``run`` applies what changed since
        self._changed = asyncio.Event()
        #: the data directory was cleaned of stray logs once (the first image: topics deleted while down)
        self._strays_removed = False
        #: worker-thread calls preparing new leaders for their first appends (``_prepare_leaders``)
        self._preparing: set[asyncio.Future[None]] = set()

    @property
    def _partitions(self) -> dict[TopicPartition, Partition]:
        return self._replicas.partitions

    def on_update(self, applied: list[tuple[int, metadata_pb2.MetadataRecord]]) -> None:
        """The controller link applied ``applied`` (its listener)."""
        self._pending.add(applied, self._replicas.image)
        self._changed.set()

    def resync_fetchers(self) -> None:
        """A fetcher ended: the next pass starts one again if something is left to follow."""
        self._pending.brokers_changed = True
        self._changed.set()

    async def run(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            async with self.lock:
                try:
                    await self.apply_pending()
                except Exception:  # a disk error, a bug: log it and keep applying later changes
                    _log.exception("applying the metadata failed; retrying at the next change")

    async def apply_pending(self) -> None:
        """Apply what changed since the last pass (call under ``lock``)."""
        self._changed.clear()
        changes, self._pending = self._pending, LocalChanges()
        if not await self._apply(changes, self._replicas.image):
            self._pending.topic_ids = None  # tried again in full: what failed is not tracked
            asyncio.get_running_loop().call_later(RETRY_S, self._changed.set)

    async def _apply(self, changes: LocalChanges, image: MetadataImage) -> bool:
        """One pass; whether it completed (what did not is tried again shortly, even if no
        metadata changes meanwhile)."""
        self._drop_gone(changes, image)
        missing = self._partitions_to_open(changes, image)
        opened_count = 0
        for start in range(0, len(missing), OPEN_CHUNK_PARTITIONS):
            chunk = missing[start : start + OPEN_CHUNK_PARTITIONS]
            opened = await asyncio.to_thread(self._open_partitions, chunk)
            opened_count += len(opened)
            for partition in opened:
                if partition.key not in self._partitions:  # (a pass in between cannot open it too)
                    self._partitions[partition.key] = partition
                    self._fetchers.roles_changed()
            if start + OPEN_CHUNK_PARTITIONS < len(missing):  # serve these while the rest open
                chunk_topics = LocalChanges(topic_ids={topic_id for _, _, topic_id in chunk})
                self._prepare_leaders(self._apply_roles(chunk_topics, self._replicas.image).led)
        image = self._replicas.image
        complete = opened_count == len(missing)
        applied = self._apply_roles(changes, image)
        self._prepare_leaders(applied.led)
        complete &= applied.complete
        if image.last_offset >= 0 and (not self._strays_removed or changes.topics_deleted):
            # on the first image and when topics went away: remove their logs (listing the data
            # directory finds those of topics deleted while this broker was down, too)
            existing = {(t.name, p) for t in image.topics.values() for p in t.partitions}
            try:
                await asyncio.to_thread(self._delete_stray_logs, existing)
                self._strays_removed = True
            except (OSError, LanesError):
                _log.exception("removing the logs of deleted partitions failed; retrying")
                self._pending.topics_deleted = True
                complete = False
        return complete

    def _drop_gone(self, changes: LocalChanges, image: MetadataImage) -> None:
        """Stop and forget the partitions whose topic is gone or was recreated (another topic id):
        no write of theirs lands after this, and their logs may be deleted or replaced."""
        if image.last_offset < 0:
            return
        for key, partition in list(self._partitions.items()):
            if not changes.concerns(partition):
                continue
            topic = image.topic(key.topic)
            if topic is None or topic.topic_id != partition.topic_id or key.partition not in topic.partitions:
                partition.make_offline()
                del self._partitions[key]
                self._fetchers.roles_changed()
                self._replicas.purgatory.moved(key)  # its waiters answer that it is gone

    def _partitions_to_open(
        self, changes: LocalChanges, image: MetadataImage
    ) -> list[tuple[TopicPartition, LogConfig, str]]:
        """The replicas this broker holds that have no open ``Partition`` yet (worked out on the
        loop, where the image changes)."""
        broker_id = self._replicas.broker_id
        missing = []
        for topic in changes.topics(image):
            settings: _TopicSettings | None = None
            for partition in topic.partitions.values():
                if broker_id not in partition.replicas or partition.leader == NO_LEADER:
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
                log = self._logs.open_log(key.topic, key.partition, config, topic_id=topic_id)
                if log.config != config:
                    log.update_config(config)
                opened.append(Partition(key, topic_id, log, on_isr_changed=self._metrics.isr_changed))
            except (OSError, LanesError):
                _log.exception("opening the log of %s-%d failed; retrying", key.topic, key.partition)
        return opened

    def _prepare_leaders(self, led: list[Partition]) -> None:
        """Prepare ``led`` (partitions just led) for their first appends in a worker thread, not
        awaited: an append arriving first does the same work itself."""
        if not led:
            return
        preparing = asyncio.ensure_future(asyncio.to_thread(_prepare_for_appends, led))
        self._preparing.add(preparing)
        preparing.add_done_callback(self._preparing.discard)

    async def wait_prepared(self) -> None:
        """Until the new leaders of the passes so far are prepared for appends (tests)."""
        await asyncio.gather(*self._preparing, return_exceptions=True)

    def _delete_stray_logs(self, existing: set[tuple[str, int]]) -> None:
        for topic_name, partition_index in self._logs.discover():
            if (topic_name, partition_index) not in existing:
                self._logs.delete_log(topic_name, partition_index)

    def _apply_roles(self, changes: LocalChanges, image: MetadataImage) -> _RolesApplied:
        """Roles and configs of the changed topics (on the loop); the new leaderships are logged
        even when the pass fails half way."""
        led: list[Partition] = []
        try:
            complete = self._set_roles(changes, image, led)
        finally:
            _log_leaderships([(partition.key, partition.leader_epoch or 0) for partition in led])
        return _RolesApplied(complete, led)

    def _set_roles(self, changes: LocalChanges, image: MetadataImage, led: list[Partition]) -> bool:
        """``_apply_roles``' work: the partitions it makes this broker lead are added to ``led``;
        whether every replica the changed topics name had an open partition."""
        broker_id = self._replicas.broker_id
        purgatory = self._replicas.purgatory
        complete = True
        changed = False
        now_ms = self._clock.monotonic_ms()
        seen: set[TopicPartition] = set()
        for topic in changes.topics(image):
            settings = _TopicSettings(image, topic.name)  # worked out once per topic, if needed
            for state in topic.partitions.values():
                if broker_id not in state.replicas or state.leader == NO_LEADER:
                    continue
                key = TopicPartition(topic.name, state.partition)
                partition = self._partitions.get(key)
                if partition is None or partition.topic_id != topic.topic_id:  # opened for a deleted topic
                    complete = False
                    continue
                seen.add(key)
                if partition.log.config != settings.log_config:  # configs altered meanwhile
                    partition.log.update_config(settings.log_config)
                if state.leader != broker_id:
                    changed |= partition.make_follower(state.leader, state.leader_epoch)
                    continue
                before = (partition.partition_epoch, partition.log.high_watermark)
                if partition.make_leader(
                    leader_epoch=state.leader_epoch,
                    partition_epoch=state.partition_epoch,
                    replicas=state.replicas,
                    isr=state.isr,
                    min_insync_replicas=settings.min_insync_replicas,
                    leader_id=broker_id,
                    now_ms=now_ms,
                    replica_lag_time_max_ms=self._replica_lag_time_max_ms,
                ):
                    changed = True
                    led.append(partition)
                    purgatory.moved(key)
                elif (partition.partition_epoch, partition.log.high_watermark) != before:
                    purgatory.moved(key)  # a newer ISR from the metadata may move the mark
        for key, partition in self._partitions.items():
            if key not in seen and changes.concerns(partition):  # no leader, or no longer a replica here
                changed |= partition.make_offline()
        if changed:
            self._fetchers.roles_changed()
            purgatory.all_moved()  # whoever waits on an ended leadership answers NOT_LEADER_OR_FOLLOWER
        if changed or changes.brokers_changed:
            self._fetchers.sync(image)
        return complete


@dataclass(frozen=True)
class _RolesApplied:
    """What ``_apply_roles`` did."""

    #: every replica the changed topics name had an open partition (one still missing is opened
    #: at the next pass)
    complete: bool
    #: the partitions it made this broker lead (a new leadership)
    led: list[Partition]


def _log_leaderships(led: list[tuple[TopicPartition, int]]) -> None:
    """A line per new leadership (partition, leader epoch), or, when a pass took over more than
    ``LOGGED_LEADERSHIPS`` (a restart), a line per topic naming its partitions and epochs."""
    if len(led) <= LOGGED_LEADERSHIPS:
        for (topic, index), epoch in led:
            _log.info("leading %s-%d at epoch %d", topic, index, epoch, extra=fields(topic=topic, partition=index))
        return
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, index), epoch in led:
        by_topic.setdefault(topic, []).append((index, epoch))
    for topic, partitions in by_topic.items():
        epochs = sorted({epoch for _, epoch in partitions})
        _log.info(
            "leading %d partition%s of %s (%s) at epoch %s",
            len(partitions),
            "" if len(partitions) == 1 else "s",
            topic,
            number_ranges(index for index, _ in partitions),
            str(epochs[0]) if len(epochs) == 1 else f"{epochs[0]} to {epochs[-1]}",
            extra=fields(topic=topic),
        )


def number_ranges(numbers: Iterable[int]) -> str:
    """``0-3, 7, 9-12`` for 0, 1, 2, 3, 7, 9, 10, 11, 12 (in any order, repeats ignored)."""
    ranges: list[list[int]] = []
    for number in sorted(set(numbers)):
        if ranges and ranges[-1][1] == number - 1:
            ranges[-1][1] = number
        else:
            ranges.append([number, number])
    return ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in ranges)


def _prepare_for_appends(led: list[Partition]) -> None:
    """``PartitionLog.prepare_for_appends`` of each (worker thread); one that fails is left to its
    first append, which does the same work and answers the producer with the error."""
    for partition in led:
        try:
            partition.log.prepare_for_appends()
        except (OSError, LanesError) as exc:
            _log.debug("preparing %s for appends: %s", partition.key, exc)
