"""``TopicPartition``: the one name for "partition N of topic T", on both sides of the wire.

A named tuple, so it is as cheap as the ``(topic, partition)`` tuples it replaces, hashes and
orders by topic then partition, and compares equal to the plain tuple with the same fields.
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic."""

    topic: str
    partition: int
