"""The shards a group coordinator owns, and routing to them: the coordinator's engine, behind
the gRPC face in ``service``.

The controller assigns shards of ``__consumer_offsets``; for each shard that becomes this
coordinator's own, ``Shards`` fences the previous owner and replays the shard (``ShardLog``),
then serves its groups from a ``GroupCoordinatorCore`` (``LoadedShard``); a shard that moves
away, or whose epoch changes, is dropped at once, and one that failed under an epoch is not
retried under it. A group lives on shard ``mmh3(group id) mod shards``: ``route`` answers
NOT_COORDINATOR for groups on other shards and COORDINATOR_LOAD_IN_PROGRESS while a shard loads
(both retriable). ``decide`` returns only once a decision is durable in the shard. A timer fences
members whose session or rebalance timeout passed and expires offsets.

**The lease**: the controller moves a coordinator's shards a session timeout after the last
heartbeat it received; the coordinator's lease (``ControllerLink.lease_held``, measured from when
the last accepted heartbeat was *sent*) lapses no later. Without it, ``route`` answers
NOT_COORDINATOR for every group and the timer decides nothing, so a coordinator cut off from the
controllers never serves a shard that another coordinator may already serve (two coordinators
would hand one partition to two members).

Owned by the coordinator's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from lanes.clock import Clock
from lanes.coordinator.brokers import BrokerAccess
from lanes.coordinator.core import GroupConfig, GroupCoordinatorCore, GroupDecision, Instant, VisibleTopics
from lanes.coordinator.metrics import CoordinatorMetrics
from lanes.coordinator.patterns import resolve_patterns
from lanes.coordinator.shard import LoadedShard
from lanes.coordinator.shard_log import ShardFencedError, ShardLog, ShardUnavailableError
from lanes.errors import ErrorCode, LanesError
from lanes.metadata.image import ShardImage
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC, validate_group_id
from lanes.protocol.partitioner import partition_for_key
from lanes.runtime.link.controller_link import ControllerLink
from lanes.runtime.quotas.loop_time import service_task
from lanes.runtime.serving.logs import fields

_log = logging.getLogger(__name__)
T = TypeVar("T")
_DURABLE_TIMEOUT_S = 10.0


def now(clock: Clock) -> Instant:
    """This moment on both of ``clock``'s clocks (the group core's time)."""
    return Instant(clock.now_ms(), clock.monotonic_ms())


class GroupRouteError(LanesError):
    """The group cannot be served here now (the code says why and what the client does)."""


class Shards:
    """The loaded shards of one coordinator (``loaded``: shard -> LoadedShard)."""

    def __init__(
        self,
        coordinator_id: int,
        link: ControllerLink,
        *,
        clock: Clock,
        config: GroupConfig,
        metrics: CoordinatorMetrics,
        expire_interval_ms: int,
        visible_topics: VisibleTopics | None = None,
    ) -> None:
        self.coordinator_id = coordinator_id
        self._visible_topics = visible_topics
        self.link = link
        self.config = config
        self.metrics = metrics
        self._clock = clock
        self.brokers = BrokerAccess(lambda: self.link.image)
        self.loaded: dict[int, LoadedShard] = {}
        self._failed_epochs: dict[int, int] = {}  # shard -> epoch it failed under (not retried)
        self._expire_interval_s = expire_interval_ms / 1000
        self._timer: asyncio.Task[None] | None = None
        self._counts: dict[str, int] = {}
        self._counts_at: tuple[int, int] = (0, -2)
        # Subscription patterns are matched against the topics here, one shard at a time.
        self._pattern_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lanes-patterns")
        self._resolving: dict[int, asyncio.Lock] = {}  # shard -> held while its patterns resolve
        link.on_update(lambda applied: self._sync_shards())  # from the link's first update on

    def start(self) -> None:
        """Load the shards given to this coordinator; expire members from now on."""
        self._sync_shards()
        self._timer = service_task(self._expire_loop())

    def stop_expiring(self) -> None:
        """No more expiry decisions (before the shards are handed back)."""
        if self._timer is not None:
            self._timer.cancel()

    async def close(self) -> None:
        """Close every shard (after the controller moved them away)."""
        self.stop_expiring()
        for shard in list(self.loaded.values()):
            shard.close(GroupRouteError("the coordinator is shutting down", ErrorCode.NOT_COORDINATOR))
        self.loaded.clear()
        self._pattern_thread.shutdown(wait=False, cancel_futures=True)
        await self.brokers.close()

    # -----------------------------------------------------------------------------------------
    # shards

    def _owned_shards(self) -> dict[int, ShardImage]:
        image = self.link.image
        me = image.coordinators.get(self.coordinator_id)
        if me is None or me.fenced or me.epoch != self.link.node_epoch:
            return {}
        return {s: info for s, info in image.shards.items() if info.coordinator_id == self.coordinator_id}

    def _sync_shards(self) -> None:
        owned = self._owned_shards()
        for shard, loaded in list(self.loaded.items()):
            info = owned.get(shard)
            if info is None or info.shard_epoch != loaded.info.shard_epoch:
                _log.info("shard %d moved away (epoch %d)", shard, loaded.info.shard_epoch)
                loaded.close(GroupRouteError(f"shard {shard} moved to another coordinator", ErrorCode.NOT_COORDINATOR))
                del self.loaded[shard]
        for shard, info in sorted(owned.items()):
            if shard in self.loaded or self._failed_epochs.get(shard) == info.shard_epoch:
                continue
            log = ShardLog(
                self.brokers, self._clock, shard=shard, producer_id=info.producer_id, shard_epoch=info.shard_epoch
            )
            loaded = LoadedShard(
                shard, info, GroupCoordinatorCore(self.config, self._visible_topics), log, self._shard_failed
            )
            self.loaded[shard] = loaded
            loaded.start_loading(self._load(loaded))

    async def _load(self, loaded: LoadedShard) -> None:
        started = self._clock.monotonic_ms()
        try:
            records = await loaded.log.fence_and_read()
        except (ShardFencedError, ShardUnavailableError) as exc:
            _log.warning("shard %d not loaded: %s", loaded.shard, exc)
            self._shard_failed(loaded)
            return
        loaded.activate(records, now(self._clock))
        _log.info(
            "loaded shard %d (epoch %d): %d groups from %d records in %d ms",
            loaded.shard,
            loaded.info.shard_epoch,
            len(loaded.core.store.groups),
            len(records),
            self._clock.monotonic_ms() - started,
        )

    def _shard_failed(self, loaded: LoadedShard) -> None:
        if self.loaded.get(loaded.shard) is loaded:
            del self.loaded[loaded.shard]
            self._failed_epochs[loaded.shard] = loaded.info.shard_epoch
            loaded.close(GroupRouteError(f"shard {loaded.shard} failed", ErrorCode.NOT_COORDINATOR))

    async def _expire_loop(self) -> None:
        while True:
            await asyncio.sleep(self._expire_interval_s)
            if not self.link.lease_held():
                continue  # cut off from the controller: no decisions (the shards may be another's)
            for loaded in list(self.loaded.values()):
                if not loaded.active:
                    continue
                fenced, _ = loaded.decide(self._expiring(now(self._clock)))
                for group_id, member_id, reason in fenced:
                    _log.info(
                        "group %s: member %s removed: %s", group_id, member_id, reason, extra=fields(group=group_id)
                    )

    @staticmethod
    def _expiring(
        now: Instant,
    ) -> Callable[[GroupCoordinatorCore], tuple[list[tuple[str, str, str]], GroupDecision]]:
        return lambda core: core.expire(now)

    # -----------------------------------------------------------------------------------------
    # routing

    def lease_lapsed(self) -> str:
        """Why a coordinator whose controller lease lapsed serves nothing."""
        return (
            f"coordinator {self.coordinator_id} has not reached the controller within its session timeout: "
            "its shards may have moved (ask another coordinator)"
        )

    def shard_count(self) -> int:
        """Partitions of __consumer_offsets (0 while it does not exist)."""
        topic = self.link.image.topic(CONSUMER_OFFSETS_TOPIC)
        return len(topic.partitions) if topic is not None else 0

    def route(self, group_id: str) -> LoadedShard:
        """The active shard serving ``group_id``; GroupRouteError says why not and what to do."""
        try:
            validate_group_id(group_id)
        except LanesError as exc:
            raise GroupRouteError(exc.message, ErrorCode.INVALID_GROUP_ID) from None
        if not self.link.lease_held():
            raise GroupRouteError(self.lease_lapsed(), ErrorCode.NOT_COORDINATOR)
        count = self.shard_count()
        if count == 0:
            raise GroupRouteError(f"{CONSUMER_OFFSETS_TOPIC} does not exist yet", ErrorCode.COORDINATOR_NOT_AVAILABLE)
        shard = partition_for_key(group_id.encode(), count)
        loaded = self.loaded.get(shard)
        if loaded is None:
            raise GroupRouteError(
                f"group {group_id!r} is on shard {shard}, not served by coordinator {self.coordinator_id}",
                ErrorCode.NOT_COORDINATOR,
            )
        if not loaded.active:
            raise GroupRouteError(f"shard {shard} is still loading", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return loaded

    async def decide(self, group_id: str, decide: Callable[[GroupCoordinatorCore], tuple[T, GroupDecision]]) -> T:
        """Route, decide, and wait until the decision (and all before it) is durable."""
        loaded = self.route(group_id)
        before = loaded.core.store.get(group_id)
        epoch_before = before.group_epoch if before is not None else 0
        result, position = loaded.decide(decide)
        after = loaded.core.store.get(group_id)
        if after is not None and after.group_epoch > epoch_before:
            self.metrics.rebalances.inc()
        await self.durable(loaded, position)
        return result

    async def durable(self, loaded: LoadedShard, position: int) -> None:
        """Until ``position`` of the shard is durable (GroupRouteError after a while)."""
        try:
            await loaded.durable(position, _DURABLE_TIMEOUT_S)
        except TimeoutError:
            raise GroupRouteError(
                f"shard {loaded.shard} is not writable yet (its partition has no leader or too few replicas)",
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
            ) from None
        except LanesError as exc:
            raise GroupRouteError(exc.message, ErrorCode.NOT_COORDINATOR) from None

    def partition_counts(self) -> dict[str, int]:
        """Partition count of every topic in the metadata image. The same object, never mutated,
        while the topics and their partition counts stay the same (``TopicPatterns`` remembers
        what patterns matched by its identity); a new one when they change."""
        image = self.link.image
        if self._counts_at != (id(image), image.last_offset):
            counts = {topic.name: len(topic.partitions) for topic in image.topics.values()}
            if counts != self._counts:
                self._counts = counts
            self._counts_at = (id(image), image.last_offset)
        return self._counts

    async def resolve_patterns(self, group_id: str, regex: str, partition_counts: dict[str, int]) -> None:
        """Match, on the pattern thread and not on the loop, the subscription patterns a heartbeat
        of ``group_id`` naming ``regex`` needs (its own and its group's) that its shard has not
        matched against these topics yet. One shard resolves one batch at a time: heartbeats
        needing the same patterns wait for it and find them resolved."""
        try:
            loaded = self.route(group_id)
        except GroupRouteError:
            return  # the decision answers why
        if not loaded.core.unresolved_patterns(group_id, regex, partition_counts):
            return
        lock = self._resolving.setdefault(loaded.shard, asyncio.Lock())
        async with lock:
            missing = loaded.core.unresolved_patterns(group_id, regex, partition_counts)
            if missing:
                loop = asyncio.get_running_loop()
                resolved = await loop.run_in_executor(self._pattern_thread, resolve_patterns, missing, partition_counts)
                loaded.core.patterns.remember(partition_counts, resolved)
