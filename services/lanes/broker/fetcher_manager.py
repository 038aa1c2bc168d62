"""The follower side of replication on one broker: one ``FollowerFetcher`` per leader it follows
partitions from (Kafka's ``ReplicaFetcherManager``).

``sync`` is called after every role change: it starts a fetcher for each leader that has none
(a fetcher ends by itself once nothing is left to follow from its leader). What a fetcher
follows is worked out once per role change (``roles_changed``), not per fetch: with thousands of
partitions that walk would otherwise be an idle broker's main cost.

Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from lanes.broker.follower import Followed, FollowerFetcher
from lanes.broker.partition import Following, Partition
from lanes.metadata.image import MetadataImage
from lanes.runtime.quotas.loop_time import service_task
from lanes.topic_partition import TopicPartition

_log = logging.getLogger(__name__)
#: the longest a follower's fetch waits at the leader for new records
FOLLOWER_MAX_WAIT_MS = 2_000


class FetcherManager:
    """The follower fetchers of broker ``broker_id``; see the module docstring."""

    def __init__(
        self,
        broker_id: int,
        partitions: dict[TopicPartition, Partition],
        *,
        broker_epoch: Callable[[], int],
        replica_lag_time_max_ms: int,
        on_fetcher_ended: Callable[[], object],
    ) -> None:
        """``partitions``: the replica manager's (read, never changed here); ``on_fetcher_ended``:
        a fetcher stopped or failed (the next metadata pass starts one again if needed)."""
        self._broker_id = broker_id
        self._partitions = partitions
        self._broker_epoch = broker_epoch
        # an idle follower asks every 2 s (each ask costs per partition: with thousands of them,
        # this is an idle broker's main cost), and always well within replica.lag.time.max.ms
        # (Kafka requires replica.fetch.wait.max.ms below it)
        self._max_wait_ms = min(FOLLOWER_MAX_WAIT_MS, max(50, replica_lag_time_max_ms // 4))
        self._on_fetcher_ended = on_fetcher_ended
        self._fetchers: dict[int, asyncio.Task[None]] = {}
        #: counts role changes: what the fetchers follow is worked out again after one
        self._roles_generation = 0
        #: per leader: (the roles generation it was worked out at, what is followed from it)
        self._followed_cache: dict[int, tuple[int, Followed]] = {}

    def roles_changed(self) -> None:
        """A partition's role changed, or a partition was added or dropped."""
        self._roles_generation += 1

    def sync(self, image: MetadataImage) -> None:
        """One fetcher per leader this broker follows partitions from."""
        leaders = {role.leader_id for p in self._partitions.values() if isinstance(role := p.role, Following)}
        for leader_id in leaders:
            task = self._fetchers.get(leader_id)
            broker = image.brokers.get(leader_id)
            if (task is None or task.done()) and broker is not None:
                fetcher = FollowerFetcher(
                    broker_id=self._broker_id,
                    broker_epoch=self._broker_epoch,
                    leader_address=broker.internal_address,
                    partitions=functools.partial(self._followed_from, leader_id),
                    max_wait_ms=self._max_wait_ms,
                )
                task = service_task(fetcher.run())
                task.add_done_callback(self._ended)
                self._fetchers[leader_id] = task

    def stop(self) -> None:
        for task in self._fetchers.values():
            task.cancel()

    def _ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            _log.error("a follower fetcher failed; starting it again", exc_info=task.exception())
        self._on_fetcher_ended()

    def _followed_from(self, leader_id: int) -> Followed:
        """What this broker follows from ``leader_id``, with the epochs."""
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
