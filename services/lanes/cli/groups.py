"""``lanes groups list|describe|reset-offsets|delete``.

``groups describe`` prints members with their partitions and, per partition, the committed
offset, the end offset and the lag (records, and the age of the oldest unread record). Its JSON
is stable (docs/cli.md). ``reset-offsets`` is a dry run unless ``--execute``; resets and deletes
need an empty group, and ``--wait`` waits (with progress) until the members have left.
"""

from __future__ import annotations

import argparse
from typing import Any

from lanes.cli.common import add_command, add_group, admin_for, emit, missing_topic, progress, table
from lanes.cli.values import UsageError, non_negative_int, parse_reset_target
from lanes.client.admin import Admin, GroupDescription
from lanes.deadline import Deadline, attempts_blocking
from lanes.errors import ErrorCode, LanesError, UnknownTopicOrPartitionError
from lanes.topic_partition import TopicPartition


def _known(value: int) -> int | None:
    return value if value >= 0 else None


def group_document(group: GroupDescription) -> dict[str, Any]:
    """The stable JSON of ``groups describe`` (unknown numbers are null)."""
    return {
        "group_id": group.group_id,
        "state": group.state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor": group.assignor or None,
        "coordinator": group.coordinator,
        "members": [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id or None,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_epoch": m.member_epoch,
                "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(m.assignment)],
            }
            for m in sorted(group.members, key=lambda m: m.member_id)
        ],
        "partitions": [
            {
                "topic": o.topic,
                "partition": o.partition,
                "committed_offset": _known(o.committed_offset),
                "log_end_offset": _known(o.log_end_offset),
                "lag": _known(o.lag),
                "lag_ms": _known(o.lag_ms),
                "member_id": o.member_id or None,
            }
            for o in sorted(group.offsets, key=lambda o: (o.topic, o.partition))
        ],
        "total_lag": group.total_lag,
    }


def _assignment_text(assignment: list[dict[str, Any]]) -> str:
    by_topic: dict[str, list[str]] = {}
    for tp in assignment:
        by_topic.setdefault(tp["topic"], []).append(str(tp["partition"]))
    return " ".join(f"{topic}:{','.join(ps)}" for topic, ps in by_topic.items()) or "(none)"


def _render_group(d: dict[str, Any]) -> str:
    lines = [
        f"group {d['group_id']}  state {d['state']}  epoch {d['group_epoch']}  "
        f"assignor {d['assignor'] or 'default'}  coordinator {d['coordinator']}  total lag {d['total_lag']}",
        "",
    ]
    if d["members"]:
        rows = [
            (m["member_id"][:12], m["client_id"], m["client_host"], m["instance_id"], _assignment_text(m["assignment"]))
            for m in d["members"]
        ]
        lines.append(table(rows, ["member", "client", "host", "instance", "partitions"]))
    else:
        lines.append("no members")
    if d["partitions"]:
        offsets = [
            (
                p["topic"],
                p["partition"],
                p["committed_offset"],
                p["log_end_offset"],
                p["lag"],
                None if p["lag_ms"] is None else f"{p['lag_ms'] / 1000:.1f}s",
                (p["member_id"] or "")[:12] or None,
            )
            for p in d["partitions"]
        ]
        lines += ["", table(offsets, ["topic", "partition", "committed", "end", "lag", "lag-time", "member"])]
    return "\n".join(lines)


def list_groups(options: argparse.Namespace) -> None:
    """Every consumer group with its state and member count."""
    with admin_for(options) as admin:
        groups = admin.list_groups()
    document = [{"group_id": g.group_id, "state": g.state, "members": g.members} for g in groups]
    emit(
        options,
        document,
        lambda gs: (
            table([(g["group_id"], g["state"], g["members"]) for g in gs], ["group", "state", "members"])
            if gs
            else "no consumer groups yet"
        ),
    )


def describe(options: argparse.Namespace) -> None:
    """A group's members, assignments, committed offsets and lag."""
    with admin_for(options) as admin:
        group = admin.describe_group(options.group)
    emit(options, group_document(group), _render_group)


def wait_until_empty(admin: Admin, group_id: str, timeout_s: float) -> None:
    """Wait, with progress, until the group has no members (members leave or their sessions lapse)."""
    members = 0
    for _ in attempts_blocking(Deadline(timeout_s), 0.5):
        members = len(admin.describe_group(group_id, include_offsets=False).members)
        if not members:
            return
        progress(f"waiting for group {group_id} to become empty: {members} members left")
    raise LanesError(
        f"group {group_id} still has {members} members after {timeout_s:g} s; stop its consumers first",
        ErrorCode.NON_EMPTY_GROUP,
    )


def _partitions_to_reset(admin: Admin, options: argparse.Namespace) -> list[TopicPartition]:
    if options.partition and len(options.topic) != 1:
        raise UsageError("--partition needs exactly one --topic")
    partitions = []
    for topic in options.topic:
        try:
            count = len(admin.describe_topic(topic).partitions)
        except UnknownTopicOrPartitionError:
            raise missing_topic(topic) from None
        for number in options.partition or range(count):
            if number >= count:
                raise UsageError(f"--partition {number}: {topic} has partitions 0-{count - 1}")
            partitions.append(TopicPartition(topic, number))
    return partitions


def reset_offsets(options: argparse.Namespace) -> int:
    """Compute (dry run) or apply (--execute) new committed offsets for an empty group."""
    target = parse_reset_target(options.to)
    with admin_for(options) as admin:
        partitions = _partitions_to_reset(admin, options)
        if options.wait:
            wait_until_empty(admin, options.group, options.timeout)
        resets = admin.reset_offsets(options.group, target, partitions=partitions, dry_run=not options.execute)
    document = {
        "group_id": options.group,
        "executed": options.execute,
        "partitions": [
            {
                "topic": r.topic,
                "partition": r.partition,
                "previous_offset": _known(r.previous_offset),
                "new_offset": _known(r.new_offset),
                "error": r.error or None,
            }
            for r in sorted(resets, key=lambda r: (r.topic, r.partition))
        ],
    }

    def render(d: dict[str, Any]) -> str:
        rows = [
            (p["topic"], p["partition"], p["previous_offset"], p["new_offset"], p["error"]) for p in d["partitions"]
        ]
        head = (
            f"reset the offsets of group {d['group_id']}:"
            if d["executed"]
            else f"dry run (nothing changed; add --execute to apply) for group {d['group_id']}:"
        )
        return head + "\n" + table(rows, ["topic", "partition", "previous", "new", "error"])

    emit(options, document, render)
    return 1 if any(p["error"] for p in document["partitions"]) else 0


def delete(options: argparse.Namespace) -> None:
    """Delete an empty group and its committed offsets."""
    with admin_for(options) as admin:
        if options.wait:
            wait_until_empty(admin, options.group, options.timeout)
        admin.delete_group(options.group)
    emit(options, {"group_id": options.group, "deleted": True}, lambda d: f"deleted group {d['group_id']}")


def _add_wait(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wait", action="store_true", help="wait until the group's members have left")
    parser.add_argument("--timeout", type=float, default=120, help="seconds --wait waits (default 120)")


def register(commands: Any) -> None:
    """Add ``groups`` to the ``lanes`` parser."""
    groups = add_group(commands, "groups", "list, describe, reset offsets of and delete consumer groups")
    add_command(groups, "list", summary="list consumer groups", examples="lanes groups list", run=list_groups)
    parser = add_command(
        groups,
        "describe",
        summary="show a group's members, assignments, committed offsets and lag",
        examples="""
lanes groups describe trading-strategy.abc
lanes groups describe audit --output json | jq .total_lag""",
        run=describe,
    )
    parser.add_argument("group", metavar="GROUP")
    parser = add_command(
        groups,
        "reset-offsets",
        summary="move a group's committed offsets (a dry run unless --execute)",
        examples="""
lanes groups reset-offsets audit --topic orders --to earliest              # dry run: shows the new offsets
lanes groups reset-offsets audit --topic orders --to timestamp:2026-11-22T09:00:00Z --execute
lanes groups reset-offsets audit --topic orders --partition 0 --to shift:-10 --execute --wait""",
        run=reset_offsets,
    )
    parser.add_argument("group", metavar="GROUP")
    parser.add_argument(
        "--topic", "-t", action="append", required=True, metavar="TOPIC", help="topic to reset (repeatable)"
    )
    parser.add_argument(
        "--partition",
        "-p",
        action="append",
        type=non_negative_int,
        metavar="N",
        help="only these partitions (repeatable)",
    )
    parser.add_argument(
        "--to",
        required=True,
        metavar="TARGET",
        help="earliest, latest, offset:N, shift:N (negative goes back), timestamp:ISO-8601",
    )
    parser.add_argument("--execute", action="store_true", help="apply the new offsets (default: only show them)")
    _add_wait(parser)
    parser = add_command(
        groups,
        "delete",
        summary="delete an empty group and its committed offsets",
        examples="lanes groups delete audit\nlanes groups delete audit --wait --timeout 60",
        run=delete,
    )
    parser.add_argument("group", metavar="GROUP")
    _add_wait(parser)
