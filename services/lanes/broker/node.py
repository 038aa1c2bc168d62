"""A broker apart from its faces: the engine every face (gRPC today) serves from.

``BrokerNode`` puts the rooms together and runs their loops:

- the data directory (locked for the node's life) and the logs (``LogManager``);
- the link to the controllers (``ControllerLink``): registration, heartbeats, the metadata;
- ``ReplicaManager``: the partition replicas and what can be asked of them;
- ``MetadataPublisher``: the metadata applied to the replicas, by delta;
- ``FetcherManager``: the follower side of replication;
- ``ReplicaFetches``: the leader side (followers' fetches);
- ``ConsumerFetches``: consumers' fetches within the fetch memory;
- ``AlterPartitionManager``: ISR changes proposed to the controller;
- ``ProducerIds``: producer ids for idempotent producers;
- maintenance (retention, flush.ms, checkpoints, producer-id expiry, every
  ``maintenance_interval_s``) and compaction (a background thread).

Owned by one asyncio event loop; log I/O runs in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from pathlib import Path

from prometheus_client.metrics_core import Metric

from lanes.broker.alter_partition import AlterPartitionManager
from lanes.broker.consumer_fetch import ConsumerFetches
from lanes.broker.fetch_limits import FETCH_MEMORY_BYTES
from lanes.broker.fetcher_manager import FetcherManager
from lanes.broker.metadata_publisher import MetadataPublisher
from lanes.broker.metrics import BrokerMetrics, DiskSpace, ReplicaState
from lanes.broker.partition import Partition
from lanes.broker.producer_ids import ProducerIds
from lanes.broker.purgatory import Purgatory
from lanes.broker.replica_fetch import ReplicaFetches
from lanes.broker.replica_manager import ReplicaManager
from lanes.broker.scans import Scans
from lanes.clock import Clock
from lanes.errors import LanesError
from lanes.metadata.image import MetadataImage
from lanes.runtime.link.controller_link import ControllerLink
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.quotas.loop_time import service_task
from lanes.runtime.serving.data_directory import DataDirectory
from lanes.storage.cleaner import CleanerThread, LogCleaner
from lanes.storage.manager import LogManager
from lanes.v1 import common_pb2

_log = logging.getLogger(__name__)
#: Kafka's producer.id.expiration.ms default: a producer idle for a day is forgotten
PRODUCER_ID_EXPIRATION_MS = 86_400_000


class BrokerNode:
    """One broker's engine; see the module docstring. Call ``start`` before serving and ``stop`` after."""

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
        fetch_memory_bytes: int = FETCH_MEMORY_BYTES,
    ) -> None:
        self.broker_id = broker_id
        self.metrics = metrics or BrokerMetrics(ServiceMetrics("broker"))
        self.clock = clock
        #: locked for this node's life; bound to the cluster of the first registration
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
        self.purgatory = Purgatory()
        self.replicas = ReplicaManager(broker_id, self.link, clock, self.purgatory, self.metrics)
        self.isr_changes = AlterPartitionManager(
            self.replicas.partitions,
            self.link.alter_partition,
            self.purgatory,
            clock,
            replica_lag_time_max_ms=replica_lag_time_max_ms,
        )
        self.fetchers = FetcherManager(
            broker_id,
            self.replicas.partitions,
            broker_epoch=lambda: self.link.node_epoch,
            replica_lag_time_max_ms=replica_lag_time_max_ms,
            on_fetcher_ended=lambda: self.publisher.resync_fetchers(),  # noqa: PLW0108 - made below
        )
        self.publisher = MetadataPublisher(
            self.replicas,
            self.logs,
            self.fetchers,
            clock,
            self.metrics,
            replica_lag_time_max_ms=replica_lag_time_max_ms,
        )
        self.link.on_update(self.publisher.on_update)
        self.replica_fetches = ReplicaFetches(self.replicas, clock, expand_isr_now=self.isr_changes.check_now)
        self.consumer_fetches = ConsumerFetches(self.replicas, fetch_memory_bytes)
        self.scans = Scans(self.replicas)
        self.producer_ids = ProducerIds(self.link.allocate_producer_ids)
        self._producer_id_expiration_ms = producer_id_expiration_ms
        self.maintenance_interval_s = maintenance_interval_s
        self._cleaner = CleanerThread(LogCleaner(clock), self.logs.logs, interval_s=maintenance_interval_s)
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def image(self) -> MetadataImage:
        return self.link.image

    async def start(self) -> None:
        """Register with the controller, follow its metadata, run maintenance and compaction."""
        self.metrics.service.add_snapshot(self._metrics_snapshot)
        await self.link.start()
        async with self.publisher.lock:  # serve knowing its partitions (logs opened, roles taken)
            await self.publisher.apply_pending()
        self._tasks = [
            service_task(self.publisher.run()),
            service_task(self._maintain()),
            service_task(self.isr_changes.run()),
        ]
        self._cleaner.start()

    async def stop(self) -> None:
        """Hand leadership away (controlled shutdown), then close every log cleanly."""
        async with self.publisher.lock:  # a pass under way finishes its worker threads first
            for task in self._tasks:
                task.cancel()
        self.fetchers.stop()
        await asyncio.to_thread(self._cleaner.stop)
        await self.link.stop(controlled=True)
        await asyncio.to_thread(self._close_partitions, list(self.replicas.partitions.values()))
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
        return not self.link.fenced and self.replicas.in_sync()

    async def hand_off(self, timeout_s: float = 10) -> None:
        """Controlled shutdown while still serving: the controller moves every leadership away,
        the metadata stream tells this broker, and requests waiting on its leaderships end with
        NOT_LEADER_OR_FOLLOWER, so producers retry at the new leaders at once (Kafka's controlled
        shutdown). The faces stop only after this."""
        if not await self.link.shut_down(timeout_s):
            _log.warning("controlled shutdown not confirmed by the controller within %.0f s", timeout_s)
            return
        with contextlib.suppress(TimeoutError):
            await self.link.wait_for(lambda image: not self._leads_any(image), timeout_s)

    def _leads_any(self, image: MetadataImage) -> bool:
        return any(p.leader == self.broker_id for t in image.topics.values() for p in t.partitions.values())

    async def _maintain(self) -> None:
        """Retention, flush.ms, checkpoints (the high-water mark among them) and producer-id
        expiry, periodically."""
        while True:
            await asyncio.sleep(self.maintenance_interval_s)
            partitions = list(self.replicas.partitions.values())
            starts = [partition.log.log_start_offset for partition in partitions]
            try:
                await asyncio.to_thread(self._maintenance_pass, partitions)
            except (OSError, LanesError):
                _log.exception("log maintenance failed")
            for partition, start in zip(partitions, starts, strict=True):
                if partition.log.log_start_offset != start:  # retention moved it: waiting fetches tell followers now
                    self.replicas.purgatory.moved(partition.key)

    def _maintenance_pass(self, partitions: list[Partition]) -> None:
        self.logs.maintenance()
        now_ms = self.clock.now_ms()
        for partition in partitions:
            partition.maintain(now_ms, self._producer_id_expiration_ms)

    def replica_states(self) -> list[ReplicaState]:
        """Every partition replica stored here, sorted (call on the node's loop)."""
        return [partition.replica_state() for _, partition in sorted(self.replicas.partitions.items())]

    async def _metrics_snapshot(self) -> list[Metric]:
        return self.metrics.gauges(self.replica_states(), DiskSpace.of(self.logs.data_dir))
