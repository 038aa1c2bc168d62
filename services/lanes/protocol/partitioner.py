"""Which partition a record goes to (docs/architecture.md#partitioning).

In order of precedence:

1. an explicit partition given with the record;
2. a user partitioner: any callable ``(topic, key, num_partitions) -> partition``;
3. keyed records: ``(mmh3.hash(key, seed=0, signed=False) & 0x7fffffff) % num_partitions``.
   The same key always lands in the same partition *as long as the partition count is
   unchanged*: growing a topic remaps keys (existing records stay where they are);
4. keyless records: sticky. The producer fills a batch for one partition, then moves to the
   next partition (round-robin across batches, from a random start), so keyless traffic
   spreads over every partition batch by batch while batches stay large.

Note: Kafka's Java client hashes keys with murmur2; Lanes uses murmur3 (mmh3). Keys therefore
map to different partitions than in a Kafka cluster with the same partition count.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import mmh3

from lanes.errors import ErrorCode, error_for

#: A user partitioner: ``(topic, key, num_partitions) -> partition``.
PartitionerFn = Callable[[str, bytes | None, int], int]


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition of a keyed record: ``(murmur3_32(key, seed 0) & 0x7fffffff) % num_partitions``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, not {num_partitions}")
    return (mmh3.hash(key, seed=0, signed=False) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    """The keyless partition of each topic: stays put until the producer completes a batch.

    ``rng`` is injected (the producer seeds it; tests fix it); it only picks the starting
    partition of each topic. Not thread-safe: owned by the producer's accumulator.
    """

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._current: dict[str, int] = {}

    def partition(self, topic: str, num_partitions: int) -> int:
        """The partition keyless records of ``topic`` go to now."""
        current = self._current.get(topic)
        if current is None or current >= num_partitions:
            current = self._rng.randrange(num_partitions)
            self._current[topic] = current
        return current

    def batch_completed(self, topic: str, partition: int, num_partitions: int) -> None:
        """A batch of ``topic``'s ``partition`` was closed: if keyless records were going there,
        they move to the next partition. (Batches of other partitions, closed by keyed records or
        by linger, do not move them: each partition gets a full batch in its turn.)"""
        current = self.partition(topic, num_partitions)
        if partition == current:
            self._current[topic] = (current + 1) % num_partitions


class Partitioner:
    """Chooses partitions by the precedence in the module docstring."""

    def __init__(self, rng: random.Random, user_partitioner: PartitionerFn | None = None) -> None:
        self._sticky = StickyPartitioner(rng)
        self._user = user_partitioner

    @property
    def keys_by_hash(self) -> bool:
        """Whether a keyed record without an explicit partition goes to ``partition_for_key``
        (no user partitioner): the producer's accumulator then computes it inline."""
        return self._user is None

    def partition(
        self, topic: str, key: bytes | None, num_partitions: int, explicit_partition: int | None = None
    ) -> int:
        """The partition for one record of ``topic`` (which has ``num_partitions`` partitions)."""
        if num_partitions <= 0:
            raise ValueError(f"topic {topic!r} has no partitions")
        if explicit_partition is not None:
            return _checked(topic, explicit_partition, num_partitions, "partition")
        if self._user is not None:
            return _checked(topic, self._user(topic, key, num_partitions), num_partitions, "the partitioner's choice")
        if key is not None:
            return partition_for_key(key, num_partitions)
        return self._sticky.partition(topic, num_partitions)

    def batch_completed(self, topic: str, partition: int, num_partitions: int) -> None:
        """Tell the sticky partitioner a batch of ``topic``'s ``partition`` closed."""
        self._sticky.batch_completed(topic, partition, num_partitions)


def _checked(topic: str, partition: object, num_partitions: int, source: str) -> int:
    if not isinstance(partition, int) or isinstance(partition, bool) or not 0 <= partition < num_partitions:
        raise error_for(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"{source} {partition!r} does not exist: topic {topic!r} has partitions 0..{num_partitions - 1}",
        )
    return partition
