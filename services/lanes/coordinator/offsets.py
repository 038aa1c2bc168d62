"""A group's committed offsets against the logs: the lag of each partition (records and
milliseconds behind the log end) and where an offset reset lands. Reads end offsets and record
times from the partition leaders (``BrokerAccess``); used by DescribeGroups, ResetOffsets and the
lag metrics. Runs on the coordinator's event loop.
"""

from __future__ import annotations

from collections.abc import Mapping

from lanes.clock import Clock
from lanes.coordinator.brokers import BrokerAccess
from lanes.coordinator.group import Group, OffsetCommit
from lanes.errors import ErrorCode
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, coordinator_pb2


async def offset_states(
    group: Group, brokers: BrokerAccess, partition_counts: Mapping[str, int], clock: Clock
) -> list[coordinator_pb2.PartitionOffsetState]:
    """The group's committed offset, the log end and the lag (records and milliseconds; -1 where
    unknown) of every partition it has an offset for or a member owns, with the owning member
    (partitions of deleted topics left out)."""
    owners: dict[TopicPartition, str] = {}
    for member_id in group.members:
        for partition in group.assignment(member_id).assigned:
            owners[partition] = member_id
    partitions = sorted({p for p in set(group.offsets) | set(owners) if p[1] < partition_counts.get(p[0], 0)})
    ends = await brokers.list_offsets(partitions, broker_pb2.OFFSET_SPEC_LATEST)
    now_ms = clock.now_ms()
    states = []
    for partition in partitions:
        commit = group.offsets.get(partition)
        end = ends.get(partition)
        log_end = end.offset if end is not None and end.error is ErrorCode.NONE else -1
        committed = commit.offset if commit is not None else -1
        lag = max(0, log_end - committed) if log_end >= 0 and committed >= 0 else -1
        lag_ms = -1
        if lag > 0:
            appended = await brokers.record_timestamp(partition[0], partition[1], committed)
            lag_ms = max(0, now_ms - appended) if appended is not None else -1
        elif lag == 0:
            lag_ms = 0
        states.append(
            coordinator_pb2.PartitionOffsetState(
                topic=partition[0],
                partition=partition[1],
                committed_offset=committed,
                metadata=commit.metadata if commit is not None else "",
                log_end_offset=log_end,
                lag=lag,
                lag_ms=lag_ms,
                member_id=owners.get(partition, ""),
            )
        )
    return states


async def reset_targets(
    brokers: BrokerAccess,
    partitions: list[TopicPartition],
    kind: str,
    to: coordinator_pb2.OffsetResetSpec,
    committed: Mapping[TopicPartition, OffsetCommit],
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, tuple[ErrorCode, str]]]:
    """Where a reset of ``partitions`` lands (``kind``: earliest, latest, offset, timestamp_ms or
    shift_by, as in ``to``), clamped to each log's bounds, and the partitions whose bounds could
    not be read, with why."""
    earliest = await brokers.list_offsets(partitions, broker_pb2.OFFSET_SPEC_EARLIEST)
    latest = await brokers.list_offsets(partitions, broker_pb2.OFFSET_SPEC_LATEST)
    by_time = (
        await brokers.list_offsets(partitions, broker_pb2.OFFSET_SPEC_TIMESTAMP, to.timestamp_ms)
        if kind == "timestamp_ms"
        else {}
    )
    targets: dict[TopicPartition, int] = {}
    errors: dict[TopicPartition, tuple[ErrorCode, str]] = {}
    for partition in partitions:
        low, high = earliest.get(partition), latest.get(partition)
        if low is None or high is None or low.error is not ErrorCode.NONE or high.error is not ErrorCode.NONE:
            failed = low if low is not None and low.error is not ErrorCode.NONE else high
            code = failed.error if failed is not None else ErrorCode.LEADER_NOT_AVAILABLE
            errors[partition] = (code, f"could not read the offsets of {partition[0]}-{partition[1]}")
            continue
        previous = getattr(committed.get(partition), "offset", None)
        if kind == "earliest":
            target = low.offset
        elif kind == "latest":
            target = high.offset
        elif kind == "offset":
            target = to.offset
        elif kind == "timestamp_ms":
            found = by_time.get(partition)
            target = (
                found.offset
                if found is not None and found.error is ErrorCode.NONE and found.offset >= 0
                else high.offset
            )
        else:  # shift_by
            target = (previous if previous is not None else low.offset) + to.shift_by
        targets[partition] = min(max(target, low.offset), high.offset)
    return targets, errors
