"""Which records a batch or a micro-batch reads: pure functions over offsets (no Spark, no I/O).

- ``resolve``: a starting or ending spec (earliest, latest, explicit offsets with -2/-1) against
  the partitions' current log start and end offsets;
- ``admit``: admission control for ``maxRecordsPerTrigger``: at most ``limit`` records in total,
  shared among partitions in proportion to what each has waiting (largest remainders), never
  past a partition's end;
- ``ranges``: the offset ranges between two offset maps, split so that there are at least
  ``minPartitions`` Spark tasks when the data allows;
- ``lost``: where a range starts before the log start (records deleted by retention or
  compaction before they were read).

A partition is ``(topic, partition)``; an offset map is ``{(topic, partition): offset}``; ranges
are half open, ``[start, end)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from lanes.topic_partition import TopicPartition
from lanes_spark.options import EARLIEST, LATEST, PartitionOffsets

Offsets = dict[TopicPartition, int]


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def resolve(
    spec: str | PartitionOffsets,
    partitions: list[TopicPartition],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
) -> Offsets:
    """Offsets for ``partitions`` from ``spec``. Partitions the JSON spec does not name start at
    the earliest offset (as Spark's Kafka source does for starting offsets)."""
    resolved: Offsets = {}
    for partition in partitions:
        if spec == "earliest":
            resolved[partition] = earliest[partition]
        elif spec == "latest":
            resolved[partition] = latest[partition]
        else:
            assert isinstance(spec, dict)
            wanted = spec.get(partition[0], {}).get(partition[1], EARLIEST)
            resolved[partition] = (
                earliest[partition] if wanted == EARLIEST else latest[partition] if wanted == LATEST else wanted
            )
    return resolved


def admit(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], limit: int | None) -> Offsets:
    """End offsets of the next micro-batch: everything up to ``latest``, or at most ``limit``
    records over all partitions, in proportion to each partition's backlog."""
    backlog = {p: max(0, latest[p] - start.get(p, latest[p])) for p in latest}
    total = sum(backlog.values())
    if limit is None or total <= limit:
        return dict(latest)
    shares = {p: limit * waiting / total for p, waiting in backlog.items()}
    taken = {p: math.floor(share) for p, share in shares.items()}
    leftover = limit - sum(taken.values())
    for p in sorted(shares, key=lambda p: (-(shares[p] - taken[p]), p)):
        if leftover <= 0:
            break
        if taken[p] < backlog[p]:
            taken[p] += 1
            leftover -= 1
    return {p: start.get(p, latest[p]) + taken[p] for p in latest}


def ranges(
    start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int], min_partitions: int | None = None
) -> list[OffsetRange]:
    """The non-empty ranges from ``start`` to ``end`` (a partition missing from ``start``
    begins at 0: it is new), split into at least ``min_partitions`` tasks when there are enough
    records: a range gets pieces in proportion to its size."""
    whole = [
        OffsetRange(topic, partition, start.get(tp, 0), offset)
        for tp, offset in sorted(end.items())
        for topic, partition in [tp]
        if offset > start.get(tp, 0)
    ]
    total = sum(r.size for r in whole)
    if not min_partitions or len(whole) >= min_partitions or total == 0:
        return whole
    pieces: list[OffsetRange] = []
    for whole_range in whole:
        count = min(whole_range.size, max(1, math.ceil(whole_range.size * min_partitions / total)))
        step = whole_range.size / count
        bounds = [whole_range.start + round(step * i) for i in range(count)] + [whole_range.end]
        pieces.extend(
            OffsetRange(whole_range.topic, whole_range.partition, low, high)
            for low, high in itertools.pairwise(bounds)
            if high > low
        )
    return pieces


def lost(
    start: Mapping[TopicPartition, int], earliest: Mapping[TopicPartition, int]
) -> dict[TopicPartition, tuple[int, int]]:
    """Partitions whose ``start`` is before the log start: {partition: (start, log start)}."""
    return {p: (offset, earliest[p]) for p, offset in start.items() if p in earliest and offset < earliest[p]}


def to_checkpoint(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets as the JSON object a stream keeps in Spark's checkpoint:
    ``{"topic": {"partition": offset}}`` (Kafka's layout; JSON keys are strings)."""
    document: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        document.setdefault(topic, {})[str(partition)] = int(offset)
    return document


def from_checkpoint(document: Mapping[str, Mapping[str, int]]) -> Offsets:
    """The inverse of ``to_checkpoint``."""
    return {TopicPartition(topic, int(p)): int(o) for topic, parts in document.items() for p, o in parts.items()}
