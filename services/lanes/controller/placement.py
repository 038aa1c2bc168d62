"""Replica placement: round-robin from a random start, rack-aware when brokers declare racks.

Pure: brokers and randomness are arguments. As in Kafka's assignment:

- brokers are ordered so racks alternate (rack A's first broker, rack B's first, ..., rack A's
  second, ...); without racks, by id;
- partition p's first replica (its preferred leader) is broker ``(start + p) mod n``, so
  leadership spreads evenly; the other replicas follow at a shift that changes every n
  partitions, so followers spread too;
- with racks, each partition's replicas take a broker from every rack before reusing one.

``start`` and the shift are random per call (``rng`` injected), so topics created one after the
other do not all lead on the same broker.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lanes.controller.decisions import ControllerDecision
from lanes.errors import ErrorCode, LanesError


@dataclass(frozen=True)
class BrokerSlot:
    """A broker as placement sees it."""

    broker_id: int
    rack: str = ""


def rack_alternated(brokers: Sequence[BrokerSlot]) -> list[BrokerSlot]:
    """Brokers ordered so consecutive ones sit in different racks when possible."""
    by_rack: dict[str, list[BrokerSlot]] = {}
    for broker in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(broker.rack, []).append(broker)
    racks = sorted(by_rack)
    ordered: list[BrokerSlot] = []
    for index in range(max((len(v) for v in by_rack.values()), default=0)):
        ordered.extend(by_rack[rack][index] for rack in racks if index < len(by_rack[rack]))
    return ordered


def assign_replicas(
    num_partitions: int,
    replication_factor: int,
    brokers: Sequence[BrokerSlot],
    rng: random.Random,
    *,
    first_partition: int = 0,
) -> list[list[int]]:
    """Replica lists (preferred leader first) for partitions ``first_partition`` onwards."""
    if num_partitions <= 0:
        raise LanesError(f"the partition count must be positive, not {num_partitions}", ErrorCode.INVALID_PARTITIONS)
    if replication_factor <= 0:
        raise LanesError(
            f"the replication factor must be positive, not {replication_factor}", ErrorCode.INVALID_REPLICATION_FACTOR
        )
    if replication_factor > len(brokers):
        raise LanesError(
            f"replication factor {replication_factor} is larger than the {len(brokers)} available brokers; "
            "start more brokers or lower the replication factor",
            ErrorCode.INVALID_REPLICATION_FACTOR,
        )
    ordered = rack_alternated(brokers)
    count = len(ordered)
    racks = {b.rack for b in ordered}
    start = rng.randrange(count)
    shift = rng.randrange(count)
    assignments = []
    for partition in range(first_partition, first_partition + num_partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first_index = (start + partition) % count
        candidates = [ordered[first_index]]
        for step in range(count - 1):
            candidates.append(ordered[(first_index + 1 + (shift + step) % (count - 1)) % count])
        assignments.append([b.broker_id for b in _spread_over_racks(candidates, replication_factor, len(racks))])
    return assignments


def _spread_over_racks(candidates: list[BrokerSlot], replication_factor: int, rack_count: int) -> list[BrokerSlot]:
    """The first ``replication_factor`` candidates, preferring a new rack while any is unused."""
    chosen = [candidates[0]]
    used_racks = {candidates[0].rack}
    remaining = candidates[1:]
    while len(chosen) < replication_factor:
        all_racks_used = len(used_racks) >= rack_count
        pick = next(b for b in remaining if all_racks_used or b.rack not in used_racks)
        remaining.remove(pick)
        chosen.append(pick)
        used_racks.add(pick.rack)
    return chosen


def check_assignments(
    assignments: Sequence[Sequence[int]], factor: int, registered: Mapping[int, object]
) -> ControllerDecision | None:
    """Why explicit replica assignments are refused, if they are: each partition has ``factor``
    distinct replicas, all of them ``registered`` brokers."""
    for partition, replicas in enumerate(assignments):
        problem = None
        if len(replicas) != factor or not replicas:
            problem = f"partition {partition} has {len(replicas)} replicas where the others have {factor}"
        elif len(set(replicas)) != len(replicas):
            problem = f"partition {partition} lists a broker twice: {list(replicas)}"
        elif any(b not in registered for b in replicas):
            unknown = sorted(b for b in replicas if b not in registered)
            problem = f"partition {partition} names unregistered brokers {unknown}"
        if problem is not None:
            return ControllerDecision.refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
    return None
