"""A broker's Prometheus metrics (docs/operations.md lists them all, with the alerts on them).

Counted as requests are answered (one increment per partition per request, never per record):

- ``lanes_broker_records_in_total`` / ``lanes_broker_bytes_in_total`` {topic}: appended by
  producers on this broker as leader (bytes as stored: record batches, compressed);
- ``lanes_broker_bytes_out_total`` / ``lanes_broker_records_out_total`` {topic}: record batches
  answered to consumers' fetches (whole batches: a fetch from the middle of a batch counts all of it);
- ``lanes_broker_partition_errors_total`` {rpc, code}: per-partition errors of Produce and Fetch;
- (time calls waited for quotas is the service-wide ``lanes_throttle_seconds_total``,
  ``lanes.runtime.metrics``);
- ``lanes_broker_isr_shrinks_total`` / ``lanes_broker_isr_expands_total``: ISR changes of
  partitions this broker leads, as the controller accepted them;
- ``lanes_broker_fsync_duration_seconds``: a histogram of each fsync pass of a partition log.

Reported at each scrape from the broker's state (``BrokerSnapshot``):

- per partition replica stored here {topic, partition} (``partition_series``, on by default):
  ``lanes_partition_log_start_offset``, ``lanes_partition_log_end_offset``,
  ``lanes_partition_high_watermark``, ``lanes_partition_size_bytes``,
  ``lanes_partition_segments``, ``lanes_partition_leader`` (1 where this broker leads it),
  ``lanes_partition_in_sync_replicas``; on followers ``lanes_partition_replica_lag_records``
  (the leader's high-water mark as last heard, minus this replica's log end offset, at least 0);
- per broker: ``lanes_broker_partitions``, ``lanes_broker_leader_partitions``,
  ``lanes_broker_under_replicated_partitions`` and ``lanes_broker_under_min_isr_partitions``
  (of those it leads), ``lanes_broker_log_size_bytes``, ``lanes_broker_log_segments``,
  ``lanes_broker_replica_max_lag_records``; ``lanes_broker_disk_free_bytes`` and
  ``lanes_broker_disk_total_bytes`` of the data directory's filesystem.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import Counter, Histogram
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from lanes.errors import ErrorCode, error_code
from lanes.runtime.metrics import ServiceMetrics


@dataclass(frozen=True)
class DiskSpace:
    """The data directory's filesystem (``os.statvfs``): what the broker may still write."""

    free_bytes: int  # available to an unprivileged writer
    total_bytes: int

    @classmethod
    def of(cls, path: Path) -> DiskSpace:
        stats = os.statvfs(path)
        return cls(stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize)


@dataclass(frozen=True)
class ReplicaState:
    """One partition replica stored on this broker, as a scrape sees it."""

    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int
    segments: int
    leader: bool
    replicas: int  # assigned replicas (leaders only; 0 on followers)
    in_sync_replicas: int  # the ISR's size (leaders only; 0 on followers)
    min_insync_replicas: int
    lag_records: int  # followers: the leader's high-water mark last heard minus this log's end


class BrokerMetrics:
    """The broker's counters, on the service's registry; ``snapshot`` turns replica states into
    gauges."""

    def __init__(self, metrics: ServiceMetrics, *, partition_series: bool = True) -> None:
        self.service = metrics
        self.partition_series = partition_series
        registry = metrics.registry
        self.records_in = Counter(
            "lanes_broker_records_in", "Records appended by producers, by topic.", ["topic"], registry=registry
        )
        self.bytes_in = Counter(
            "lanes_broker_bytes_in", "Record batch bytes appended by producers, by topic.", ["topic"], registry=registry
        )
        self.bytes_out = Counter(
            "lanes_broker_bytes_out", "Record batch bytes sent to consumers, by topic.", ["topic"], registry=registry
        )
        self.records_out = Counter(
            "lanes_broker_records_out",
            "Records sent to consumers (in whole batches), by topic.",
            ["topic"],
            registry=registry,
        )
        self.partition_errors = Counter(
            "lanes_broker_partition_errors",
            "Per-partition errors answered, by RPC and error code.",
            ["rpc", "code"],
            registry=registry,
        )
        self.isr_shrinks = Counter(
            "lanes_broker_isr_shrinks", "ISR shrinks of partitions this broker leads.", registry=registry
        )
        self.isr_expands = Counter(
            "lanes_broker_isr_expands", "ISR expansions of partitions this broker leads.", registry=registry
        )
        self.fsync_duration = Histogram(
            "lanes_broker_fsync_duration_seconds",
            "Time of each fsync pass of a partition log (flush.messages, flush.ms, rolls, clean stops).",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=registry,
        )

    def appended(self, topic: str, records: int, size_bytes: int) -> None:
        self.records_in.labels(topic).inc(records)
        self.bytes_in.labels(topic).inc(size_bytes)

    def fetched(self, topic: str, size_bytes: int, records: int) -> None:
        if size_bytes:
            self.bytes_out.labels(topic).inc(size_bytes)
            self.records_out.labels(topic).inc(records)

    def partition_error(self, rpc: str, code: int) -> None:
        known = error_code(code)
        self.partition_errors.labels(rpc, (known or ErrorCode.UNKNOWN_SERVER_ERROR).name).inc()

    def isr_changed(self, before: int, after: int) -> None:
        if after < before:
            self.isr_shrinks.inc()
        elif after > before:
            self.isr_expands.inc()

    def gauges(self, replicas: Iterable[ReplicaState], disk: DiskSpace | None = None) -> list[Metric]:
        """The scrape-time gauges of ``replicas`` (every replica this broker stores) and of the
        data directory's filesystem."""
        labels = ["topic", "partition"]
        per_partition = {
            name: GaugeMetricFamily(f"lanes_partition_{name}", text, labels=labels)
            for name, text in (
                ("log_start_offset", "The partition replica's log start offset (low-water mark)."),
                ("log_end_offset", "The partition replica's log end offset (next offset to write)."),
                ("high_watermark", "The partition replica's high-water mark (consumers read below it)."),
                ("size_bytes", "Bytes of the partition replica's segments on disk."),
                ("segments", "Segments of the partition replica."),
                ("leader", "1 where this broker leads the partition, else 0."),
                ("in_sync_replicas", "The ISR's size, reported by the partition's leader."),
                ("replica_lag_records", "Follower replicas: records behind the leader's high-water mark."),
            )
        }
        totals = dict.fromkeys(
            ("partitions", "leader", "under_replicated", "under_min_isr", "size_bytes", "segments"), 0
        )
        max_lag = 0
        for replica in replicas:
            totals["partitions"] += 1
            totals["size_bytes"] += replica.size_bytes
            totals["segments"] += replica.segments
            if replica.leader:
                totals["leader"] += 1
                totals["under_replicated"] += replica.in_sync_replicas < replica.replicas
                totals["under_min_isr"] += replica.in_sync_replicas < replica.min_insync_replicas
            else:
                max_lag = max(max_lag, replica.lag_records)
            if not self.partition_series:
                continue
            values = [replica.topic, str(replica.partition)]
            per_partition["log_start_offset"].add_metric(values, replica.log_start_offset)
            per_partition["log_end_offset"].add_metric(values, replica.log_end_offset)
            per_partition["high_watermark"].add_metric(values, replica.high_watermark)
            per_partition["size_bytes"].add_metric(values, replica.size_bytes)
            per_partition["segments"].add_metric(values, replica.segments)
            per_partition["leader"].add_metric(values, int(replica.leader))
            if replica.leader:
                per_partition["in_sync_replicas"].add_metric(values, replica.in_sync_replicas)
            else:
                per_partition["replica_lag_records"].add_metric(values, replica.lag_records)
        broker = [
            GaugeMetricFamily("lanes_broker_partitions", "Partition replicas stored here.", totals["partitions"]),
            GaugeMetricFamily("lanes_broker_leader_partitions", "Partitions this broker leads.", totals["leader"]),
            GaugeMetricFamily(
                "lanes_broker_under_replicated_partitions",
                "Partitions this broker leads whose ISR is smaller than their replica set.",
                totals["under_replicated"],
            ),
            GaugeMetricFamily(
                "lanes_broker_under_min_isr_partitions",
                "Partitions this broker leads whose ISR is below min.insync.replicas (acks=all fails).",
                totals["under_min_isr"],
            ),
            GaugeMetricFamily("lanes_broker_log_size_bytes", "Bytes of every log stored here.", totals["size_bytes"]),
            GaugeMetricFamily("lanes_broker_log_segments", "Segments of every log on this broker.", totals["segments"]),
            GaugeMetricFamily(
                "lanes_broker_replica_max_lag_records",
                "The largest lag, in records, of the replicas this broker follows.",
                max_lag,
            ),
        ]
        if disk is not None:
            broker += [
                GaugeMetricFamily(
                    "lanes_broker_disk_free_bytes",
                    "Bytes free for the broker on its data directory's filesystem.",
                    disk.free_bytes,
                ),
                GaugeMetricFamily(
                    "lanes_broker_disk_total_bytes", "Size of the data directory's filesystem.", disk.total_bytes
                ),
            ]
        return [*broker, *(per_partition.values() if self.partition_series else ())]
