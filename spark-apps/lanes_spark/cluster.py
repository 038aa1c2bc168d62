"""What the data source asks the Lanes cluster, through the client library: the partitions of the
topics a query reads, their log start and end offsets, offsets for a time, and commits of a
query's progress to a consumer group. Runs in Spark's driver-side Python worker."""

from __future__ import annotations

import logging

from lanes import Admin, Consumer, TopicPartition
from lanes_spark.options import ReadOptions
from lanes_spark.planning import Offsets

_log = logging.getLogger("lanes_spark")


class LanesOffsets:
    """Offsets of the partitions a query reads. Holds a consumer for its lookups; ``close`` it."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._admin = Admin(options.bootstrap, **options.access.client_settings())
        self._consumer = Consumer(options.bootstrap, enable_auto_commit=False, **options.access.client_settings())

    def partitions(self) -> list[TopicPartition]:
        """Every partition the query reads now (new partitions of subscribed topics included)."""
        if self.options.assign is not None:
            return sorted(TopicPartition(topic, p) for topic, parts in self.options.assign.items() for p in parts)
        topics = [t for t in self._admin.list_topics() if self.options.wants(t)]
        if not topics:
            return []
        return sorted(
            TopicPartition(info.name, p.partition)
            for info in self._admin.describe_topics(topics)
            for p in info.partitions
        )

    def earliest(self, partitions: list[TopicPartition]) -> Offsets:
        return self._consumer.beginning_offsets(partitions)

    def latest(self, partitions: list[TopicPartition]) -> Offsets:
        """High-water marks: a query reads only records every in-sync replica has."""
        return self._consumer.end_offsets(partitions)

    def at_time(self, partitions: list[TopicPartition], timestamp_ms: int) -> Offsets:
        """The first offset at or after ``timestamp_ms`` (the end when there is none)."""
        wanted = dict.fromkeys(partitions, timestamp_ms)
        found = self._consumer.offsets_for_times(wanted)
        latest = self.latest(partitions)
        return {tp: hit[0] if hit is not None else latest[tp] for tp, hit in found.items()}

    def commit(self, group_id: str, offsets: Offsets) -> None:
        """Store the query's progress as ``group_id``'s committed offsets (the group has no
        members: the query is not one), so lag shows in ``lanes groups describe`` and metrics."""
        with Consumer(
            self.options.bootstrap, group_id=group_id, enable_auto_commit=False, **self.options.access.client_settings()
        ) as committer:
            committer.commit(offsets)

    def close(self) -> None:
        self._consumer.close()
        self._admin.close()
