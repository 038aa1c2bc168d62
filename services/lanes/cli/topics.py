"""``lanes topics create|list|describe|alter|delete`` and ``lanes configs describe topic``.

The JSON documents printed with ``--output json`` are stable (docs/cli.md lists their fields):
fields may be added, never renamed or removed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lanes.cli.common import add_command, add_group, admin_for, emit, table
from lanes.cli.values import UsageError, human_bytes, parse_pairs, positive_int
from lanes.client.admin import ConfigInfo, ReplicaLogInfo, TopicInfo
from lanes.errors import LanesError, TopicAlreadyExistsError


def create(options: argparse.Namespace) -> None:
    """Create a topic (or, with --if-not-exists, accept one that exists)."""
    configs = parse_pairs(options.config, "--config")
    created_id = None
    with admin_for(options) as admin:
        try:
            created_id = admin.create_topic(options.name, options.partitions, options.replication_factor, configs)
        except TopicAlreadyExistsError:
            if not options.if_not_exists:
                raise
        topic = admin.describe_topic(options.name)
    document = {
        "name": topic.name,
        "topic_id": topic.topic_id,
        "partitions": len(topic.partitions),
        "replication_factor": _replication_factor(topic),
        "created": created_id is not None,
    }
    emit(
        options,
        document,
        lambda d: (
            f"{'created' if d['created'] else 'exists:'} topic {d['name']} "
            f"({d['partitions']} partitions, replication factor {d['replication_factor']})"
        ),
    )


def _replication_factor(topic: TopicInfo) -> int:
    return max((len(p.replicas) for p in topic.partitions), default=0)


def _summary(topic: TopicInfo) -> dict[str, Any]:
    return {
        "name": topic.name,
        "topic_id": topic.topic_id,
        "internal": topic.internal,
        "partitions": len(topic.partitions),
        "replication_factor": _replication_factor(topic),
        "under_replicated_partitions": sum(len(p.isr) < len(p.replicas) for p in topic.partitions),
        "offline_partitions": sum(p.leader < 0 for p in topic.partitions),
    }


def list_topics(options: argparse.Namespace) -> None:
    """Every topic with its partition count and replication factor."""
    with admin_for(options) as admin:
        topics = admin.describe_topics(include_internal=options.internal)
    emit(
        options,
        [_summary(t) for t in topics],
        lambda ts: (
            table(
                [
                    (t["name"], t["partitions"], t["replication_factor"], t["under_replicated_partitions"] or "")
                    for t in ts
                ],
                ["topic", "partitions", "replicas", "under-replicated"],
            )
            if ts
            else "no topics yet; create one with: lanes topics create NAME --partitions 3"
        ),
    )


def describe_document(topic: TopicInfo, logs: list[ReplicaLogInfo] | None, configs: dict[str, ConfigInfo]) -> dict:  # type: ignore[type-arg]
    """The stable JSON of ``topics describe``: the topic, its config overrides, and per partition
    placement and the leader's log (offsets null when the leader's log could not be read)."""
    leader_logs = {(r.partition, r.broker_id): r for r in logs or []}
    partitions = []
    for p in topic.partitions:
        log = leader_logs.get((p.partition, p.leader))
        partitions.append(
            {
                "partition": p.partition,
                "leader": p.leader if p.leader >= 0 else None,
                "leader_epoch": p.leader_epoch,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "offline_replicas": list(p.offline_replicas),
                "low_watermark": log.log_start_offset if log else None,
                "high_watermark": log.high_watermark if log else None,
                "size_bytes": log.size_bytes if log else None,
                "segments": log.segments if log else None,
            }
        )
    return {
        **_summary(topic),
        "configs": {name: c.value for name, c in sorted(configs.items()) if not c.is_default},
        "size_bytes": sum(p["size_bytes"] or 0 for p in partitions),
        "partition_details": partitions,
    }


def _render_describe(d: dict) -> str:  # type: ignore[type-arg]
    overrides = ", ".join(f"{k}={v}" for k, v in d["configs"].items()) or "none (cluster defaults)"
    head = (
        f"topic {d['name']}  id {d['topic_id']}  partitions {d['partitions']}  "
        f"replication factor {d['replication_factor']}  size {human_bytes(d['size_bytes'])}\n"
        f"configs: {overrides}\n"
    )
    rows = [
        (
            p["partition"],
            p["leader"],
            ",".join(map(str, p["replicas"])),
            ",".join(map(str, p["isr"])),
            p["low_watermark"],
            p["high_watermark"],
            human_bytes(p["size_bytes"]),
        )
        for p in d["partition_details"]
    ]
    return head + table(rows, ["partition", "leader", "replicas", "isr", "low-water", "high-water", "size"])


def describe(options: argparse.Namespace) -> None:
    """A topic's partitions: leader, replicas, ISR, low/high-water marks, size."""
    with admin_for(options) as admin:
        topic = admin.describe_topic(options.name)
        configs = admin.describe_configs(options.name)
        try:
            logs: list[ReplicaLogInfo] | None = admin.describe_logs([options.name])
        except LanesError as exc:  # offsets and sizes are best effort; placement is still useful
            print(f"lanes: warning: offsets and sizes unavailable: {exc.message}", file=sys.stderr)
            logs = None
    emit(options, describe_document(topic, logs, configs), _render_describe)


def alter(options: argparse.Namespace) -> None:
    """Grow partitions and set or remove config overrides."""
    configs = parse_pairs(options.config, "--config")
    if options.partitions is None and not configs and not options.delete_config:
        raise UsageError("nothing to alter: give --partitions N, --config NAME=VALUE or --delete-config NAME")
    changes = []
    with admin_for(options) as admin:
        if options.partitions is not None:  # first: a refused count leaves the configs untouched too
            before = len(admin.describe_topic(options.name).partitions)
            if options.partitions != before:
                admin.create_partitions(options.name, options.partitions)
                changes.append(f"partitions {before} -> {options.partitions} (keys now map to new partitions)")
        if configs or options.delete_config:
            admin.alter_configs(options.name, set=configs, delete=options.delete_config)
            changes += [f"set {k}={v}" for k, v in configs.items()] + [f"removed {k}" for k in options.delete_config]
        topic = admin.describe_topic(options.name)
    emit(
        options,
        {**_summary(topic), "changes": changes},
        lambda d: f"altered topic {d['name']}: " + ("; ".join(d["changes"]) or "nothing changed"),
    )


def delete(options: argparse.Namespace) -> None:
    """Delete a topic and all its records."""
    with admin_for(options) as admin:
        admin.delete_topic(options.name)
    emit(options, {"name": options.name, "deleted": True}, lambda d: f"deleted topic {d['name']}")


def describe_configs(options: argparse.Namespace) -> None:
    """Every config of a topic: effective value, source, documentation."""
    with admin_for(options) as admin:
        configs = admin.describe_configs(options.name)
    document = [
        {
            "name": c.name,
            "value": c.value,
            "source": "default" if c.is_default else "topic",
            "documentation": c.documentation,
        }
        for _, c in sorted(configs.items())
    ]
    emit(
        options,
        document,
        lambda cs: table([(c["name"], c["value"], c["source"]) for c in cs], ["config", "value", "source"]),
    )


def register(commands: Any) -> None:
    """Add ``topics`` and ``configs`` to the ``lanes`` parser."""
    topics = add_group(commands, "topics", "create, list, describe, alter and delete topics")
    parser = add_command(
        topics,
        "create",
        summary="create a topic",
        examples="""
lanes topics create streams-intro --partitions 3 --replication-factor 1
lanes topics create orders --partitions 6 --replication-factor 3 --config retention.ms=86400000
lanes topics create prices --config cleanup.policy=compact --if-not-exists""",
        run=create,
    )
    parser.add_argument("name", metavar="NAME", help="topic name: letters, digits, '.', '_', '-'; up to 249 characters")
    parser.add_argument(
        "--partitions",
        "-p",
        type=positive_int,
        default=-1,
        metavar="N",
        help="partition count (default: the cluster's)",
    )
    parser.add_argument(
        "--replication-factor",
        "-r",
        type=positive_int,
        default=-1,
        metavar="R",
        help="copies of each partition (default: the cluster's)",
    )
    parser.add_argument(
        "--config", "-c", action="append", default=[], metavar="NAME=VALUE", help="a topic config (repeatable)"
    )
    parser.add_argument("--if-not-exists", action="store_true", help="succeed when the topic already exists")

    parser = add_command(
        topics,
        "list",
        summary="list topics",
        examples="lanes topics list\nlanes topics list --internal --output json",
        run=list_topics,
    )
    parser.add_argument("--internal", action="store_true", help="include internal topics (__consumer_offsets)")

    parser = add_command(
        topics,
        "describe",
        summary="show a topic's partitions: leader, replicas, ISR, low/high-water marks, size",
        examples="""
lanes topics describe streams-intro
lanes topics describe streams-intro --output json | jq '.partition_details[0]'""",
        run=describe,
    )
    parser.add_argument("name", metavar="NAME")

    parser = add_command(
        topics,
        "alter",
        summary="grow a topic's partitions, set or remove its configs",
        examples="""
lanes topics alter orders --partitions 12
lanes topics alter orders --config retention.ms=3600000 --delete-config segment.bytes""",
        run=alter,
    )
    parser.add_argument("name", metavar="NAME")
    parser.add_argument(
        "--partitions", "-p", type=positive_int, metavar="N", help="new total partition count (can only grow)"
    )
    parser.add_argument(
        "--config", "-c", action="append", default=[], metavar="NAME=VALUE", help="set a config (repeatable)"
    )
    parser.add_argument(
        "--delete-config",
        action="append",
        default=[],
        metavar="NAME",
        help="remove an override: back to the default (repeatable)",
    )

    parser = add_command(
        topics,
        "delete",
        summary="delete a topic and its records",
        examples="lanes topics delete streams-intro",
        run=delete,
    )
    parser.add_argument("name", metavar="NAME")

    configs = add_group(commands, "configs", "show configs")
    parser = add_command(
        configs,
        "describe",
        summary="show every config of a topic with its value and source",
        examples="lanes configs describe topic orders\nlanes configs describe topic orders --output json",
        run=describe_configs,
    )
    parser.add_argument("resource_type", choices=["topic"], metavar="topic", help="the kind of resource (topic)")
    parser.add_argument("name", metavar="NAME")
