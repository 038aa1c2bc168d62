"""What the console's pages and JSON endpoints show, gathered with one user's clients.

Each function asks the cluster as the user (``UserClients``) and returns plain values: the pages
render them, the ``/api`` endpoints send them as JSON. What the user may not DESCRIBE never
arrives (the cluster trims it); views that need a right the user lacks (DescribeLogs needs
cluster DESCRIBE) leave those columns empty rather than failing the page.

Owned by the console's event loop.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import lanes
from lanes.console.clients import UserClients
from lanes.errors import AuthorizationError, ErrorCode, LanesError

#: the most records one browse or search returns (its limit is checked against this)
MAX_LIMIT = 10_000
#: groups described at once for the topic list
_GROUP_CONCURRENCY = 16


class InputError(ValueError):
    """Input the console refuses (HTTP 400) with a message that says what to fix."""


@dataclass
class TopicRow:
    """One line of the topic list."""

    name: str
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int
    records: int
    size_bytes: int | None
    rate_in: float | None
    rate_out: float | None
    groups: list[str] = field(default_factory=list)
    lag: int = 0


@dataclass
class Samples:
    """Earlier totals per topic (records written, records committed), for rates between visits."""

    taken: dict[str, tuple[float, int, int]] = field(default_factory=dict)

    def rates(self, topic: str, written: int, committed: int, now: float) -> tuple[float | None, float | None]:
        earlier = self.taken.get(topic)
        self.taken[topic] = (now, written, committed)
        if earlier is None or now - earlier[0] < 0.5 or now - earlier[0] > 600:
            return None, None
        elapsed = now - earlier[0]
        return max(0.0, (written - earlier[1]) / elapsed), max(0.0, (committed - earlier[2]) / elapsed)


async def _sizes(clients: UserClients) -> dict[tuple[str, int], int] | None:
    """Each partition's size on its leader; None when the user may not describe the logs."""
    try:
        logs = await clients.admin.describe_logs()
    except AuthorizationError:
        return None
    return {(r.topic, r.partition): r.size_bytes for r in logs if r.is_leader}


async def _configs(clients: UserClients, name: str) -> dict[str, lanes.ConfigInfo] | None:
    """A topic's configs; None when the user may not describe them."""
    try:
        return await clients.admin.describe_configs(name)
    except AuthorizationError:
        return None


async def _groups(clients: UserClients) -> list[lanes.GroupDescription]:
    listed = await clients.admin.list_groups()
    gate = asyncio.Semaphore(_GROUP_CONCURRENCY)

    async def describe(group_id: str) -> lanes.GroupDescription | None:
        async with gate:
            try:
                return await clients.admin.describe_group(group_id)
            except LanesError:  # gone meanwhile, or refused
                return None

    described = await asyncio.gather(*(describe(g.group_id) for g in listed))
    return [d for d in described if d is not None]


async def _offsets(
    clients: UserClients, partitions: Sequence[lanes.TopicPartition]
) -> tuple[dict[lanes.TopicPartition, int], dict[lanes.TopicPartition, int]]:
    if not partitions:
        return {}, {}
    starts, ends = await asyncio.gather(
        clients.offsets.beginning_offsets(partitions), clients.offsets.end_offsets(partitions)
    )
    return starts, ends


async def cluster(clients: UserClients) -> dict[str, Any]:
    """The landing page: brokers, controllers, coordinators, partitions in trouble. A user who may
    not describe the cluster sees its topics' health only (``described`` False)."""
    try:
        info: lanes.ClusterInfo | None = await clients.admin.describe_cluster()
    except AuthorizationError:
        info = None
    topics = await clients.admin.describe_topics()
    sizes = await _sizes(clients)
    under = [(t.name, p.partition) for t in topics for p in t.partitions if len(p.isr) < len(p.replicas)]
    offline = [(t.name, p.partition) for t in topics for p in t.partitions if p.leader < 0]
    disk: dict[int, int] = {}
    if sizes is not None:
        for topic in topics:
            for p in topic.partitions:
                disk[p.leader] = disk.get(p.leader, 0) + sizes.get((topic.name, p.partition), 0)
    brokers = [] if info is None else info.brokers
    return {
        "described": info is not None,
        "cluster_id": info.cluster_id if info else "",
        "metadata_offset": info.metadata_offset if info else -1,
        "controller_id": info.controller_id if info else -1,
        "brokers": [asdict(b) | {"leader_bytes": disk.get(b.broker_id)} for b in brokers],
        "controllers": [asdict(c) for c in info.controllers] if info else [],
        "coordinators": [asdict(c) for c in info.coordinators] if info else [],
        "topics": len(topics),
        "partitions": sum(len(t.partitions) for t in topics),
        "under_replicated": under,
        "offline": offline,
        "healthy": not under and not offline and not any(b.fenced for b in brokers),
    }


async def topics(clients: UserClients, samples: Samples) -> list[TopicRow]:
    """Every topic the user may see, with size, traffic and the groups reading it."""
    described, sizes, groups = await asyncio.gather(clients.admin.describe_topics(), _sizes(clients), _groups(clients))
    partitions = [lanes.TopicPartition(t.name, p.partition) for t in described for p in t.partitions]
    starts, ends = await _offsets(clients, partitions)
    readers: dict[str, list[str]] = {}
    lag: dict[str, int] = {}
    committed: dict[str, int] = {}
    for group in groups:
        for offset in group.offsets:
            if group.group_id not in readers.setdefault(offset.topic, []):
                readers[offset.topic].append(group.group_id)
            lag[offset.topic] = lag.get(offset.topic, 0) + max(0, offset.lag)
            committed[offset.topic] = committed.get(offset.topic, 0) + max(0, offset.committed_offset)
    now = time.monotonic()
    rows = []
    for topic in described:
        keys = [lanes.TopicPartition(topic.name, p.partition) for p in topic.partitions]
        written = sum(ends.get(k, 0) for k in keys)
        rate_in, rate_out = samples.rates(topic.name, written, committed.get(topic.name, 0), now)
        rows.append(
            TopicRow(
                name=topic.name,
                partitions=len(topic.partitions),
                replication_factor=max((len(p.replicas) for p in topic.partitions), default=0),
                under_replicated=sum(1 for p in topic.partitions if len(p.isr) < len(p.replicas)),
                offline=sum(1 for p in topic.partitions if p.leader < 0),
                records=sum(ends.get(k, 0) - starts.get(k, 0) for k in keys),
                size_bytes=None
                if sizes is None
                else sum(sizes.get((topic.name, p.partition), 0) for p in topic.partitions),
                rate_in=rate_in,
                rate_out=rate_out,
                groups=sorted(readers.get(topic.name, [])),
                lag=lag.get(topic.name, 0),
            )
        )
    return rows


SORTS = {
    "name": lambda r: r.name,
    "partitions": lambda r: -r.partitions,
    "records": lambda r: -r.records,
    "size": lambda r: -(r.size_bytes or 0),
    "lag": lambda r: -r.lag,
    "under_replicated": lambda r: -r.under_replicated,
}


def filtered(rows: list[TopicRow], query: str, sort: str) -> list[TopicRow]:
    """Rows whose name contains ``query``, in ``sort`` order (InputError for an unknown order)."""
    if sort not in SORTS:
        raise InputError(f"sort by one of {', '.join(SORTS)}")
    return sorted((r for r in rows if query.lower() in r.name.lower()), key=SORTS[sort])


async def topic(clients: UserClients, name: str) -> dict[str, Any]:
    """A topic's partition table, configs, readers, and what the user may do on it."""
    info, configs, sizes, groups = await asyncio.gather(
        clients.admin.describe_topic(name, include_authorized_operations=True),
        _configs(clients, name),
        _sizes(clients),
        _groups(clients),
    )
    keys = [lanes.TopicPartition(name, p.partition) for p in info.partitions]
    starts, ends = await _offsets(clients, keys)
    readers = sorted({g.group_id for g in groups if any(o.topic == name for o in g.offsets)})
    return {
        "name": name,
        "topic_id": info.topic_id,
        "partitions": [
            asdict(p)
            | {
                "low_watermark": starts.get(k, -1),
                "high_watermark": ends.get(k, -1),
                "size_bytes": None if sizes is None else sizes.get((name, p.partition)),
            }
            for p, k in zip(info.partitions, keys, strict=True)
        ],
        "configs": None if configs is None else [asdict(c) for c in sorted(configs.values(), key=lambda c: c.name)],
        "groups": readers,
        #: what the user may do here (the buttons shown): Kafka's authorized operations
        "may": sorted(info.authorized_operations or ()),
    }


async def groups(clients: UserClients) -> list[dict[str, Any]]:
    """Every group the user may see, with its topics and lag."""
    return [
        {
            "group_id": g.group_id,
            "state": g.state,
            "members": len(g.members),
            "topics": sorted({o.topic for o in g.offsets}),
            "lag": g.total_lag,
        }
        for g in sorted(await _groups(clients), key=lambda g: g.group_id)
    ]


async def group(clients: UserClients, group_id: str) -> dict[str, Any]:
    """A group's members, offsets and lag."""
    described = await clients.admin.describe_group(group_id)
    return {
        "group_id": described.group_id,
        "state": described.state,
        "group_epoch": described.group_epoch,
        "assignor": described.assignor,
        "coordinator": described.coordinator,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_epoch": m.member_epoch,
                "assignment": sorted(f"{tp.topic}-{tp.partition}" for tp in m.assignment),
            }
            for m in described.members
        ],
        "offsets": [asdict(o) for o in sorted(described.offsets, key=lambda o: (o.topic, o.partition))],
        "lag": described.total_lag,
        "sampled_ms": int(time.time() * 1000),
    }


# ---------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True)
class Browse:
    """Where a browse or search starts and what it keeps (parsed from the query string)."""

    partitions: list[int] | None
    start: str  # earliest | latest | offset | time
    start_value: int
    where: list[str]
    limit: int
    from_ms: int | None = None
    to_ms: int | None = None


def parse_time_ms(text: str) -> int:
    """ISO-8601 (``2026-11-22T09:00:00Z``) or epoch milliseconds."""
    if text.isdigit():
        return int(text)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{text!r} is not a time: give ISO 8601 (2026-11-22T09:00:00Z) or epoch ms") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def parse_browse(params: Any, partition_count: int) -> Browse:
    """A ``Browse`` from query parameters ``partition``, ``from``, ``filter`` (repeated),
    ``limit``, ``since``, ``until``; InputError saying what is wrong."""
    partitions: list[int] | None = None
    wanted = params.get("partition", "")
    if wanted not in ("", "all"):
        if not wanted.isdigit() or int(wanted) >= partition_count:
            raise InputError(f"partition {wanted!r}: the topic has partitions 0 to {partition_count - 1}")
        partitions = [int(wanted)]
    limit_text = params.get("limit", "100")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= MAX_LIMIT:
        raise InputError(f"limit is a number of records from 1 to {MAX_LIMIT}")
    where = list(params.getlist("filter")) if hasattr(params, "getlist") else []
    where = [w for w in where if w.strip()]
    if len(where) > 16 or any(len(w) > 5_000 for w in where):
        raise InputError("at most 16 filters, each at most 5,000 characters")
    start_text = params.get("from", "earliest")
    start, value = "earliest", 0
    if start_text in ("earliest", "beginning"):
        pass
    elif start_text in ("latest", "end"):
        start = "latest"
    elif start_text.startswith("offset:") and start_text[7:].isdigit():
        start, value = "offset", int(start_text[7:])
    elif start_text.startswith("time:"):
        start, value = "time", parse_time_ms(start_text[5:])
    else:
        raise InputError("from is earliest, latest, offset:N or time:ISO-8601")
    since, until = params.get("since", ""), params.get("until", "")
    return Browse(
        partitions,
        start,
        value,
        where,
        int(limit_text),
        parse_time_ms(since) if since else None,
        parse_time_ms(until) if until else None,
    )


def _text(data: bytes | None) -> dict[str, Any]:
    if data is None:
        return {"text": None, "encoding": None, "size": 0}
    try:
        return {"text": data.decode("utf-8"), "encoding": "utf-8", "size": len(data)}
    except UnicodeDecodeError:
        return {"text": base64.b64encode(data).decode(), "encoding": "base64", "size": len(data)}


def record_json(record: lanes.ConsumerRecord) -> dict[str, Any]:
    """A record as the console's pages and downloads carry it (bytes that are not UTF-8: base64)."""
    return {
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _text(record.key),
        "value": _text(record.value),
        "headers": [{"name": name} | _text(value) for name, value in record.headers],
    }


async def records(clients: UserClients, name: str, browse: Browse) -> AsyncIterator[dict[str, Any]]:
    """The browse's matches as the brokers find them (``{"records": [...]}``), progress
    (``{"progress": {...}}``) and a last ``{"done": {...}}``; at most ``browse.limit`` records."""
    options: dict[str, Any] = {
        "partitions": browse.partitions,
        "from_time_ms": browse.from_ms,
        "to_time_ms": browse.to_ms,
        "budget": lanes.ScanBudget(max_matches=browse.limit),
    }
    if browse.start == "latest":
        options["last"] = browse.limit
    elif browse.start == "offset":
        options["start"] = browse.start_value
    elif browse.start == "time":
        options["start_time_ms"] = browse.start_value
    sent = 0
    progress: dict[int, lanes.ScanProgress] = {}
    started = time.monotonic()
    updates = clients.scanner.scan(name, browse.where, **options)
    try:
        async for update in updates:
            progress[update.partition] = update.progress
            found = update.records[: browse.limit - sent]
            sent += len(found)
            if found:
                yield {"records": [record_json(r) for r in found]}
            yield {"progress": _summary(progress, sent, started)}
            if sent >= browse.limit:
                break
    finally:
        await updates.aclose()  # type: ignore[attr-defined]  # (cancels the brokers' scans)
    yield {"done": _summary(progress, sent, started) | {"stopped": _stops(progress)}}


def _summary(progress: dict[int, lanes.ScanProgress], matches: int, started: float) -> dict[str, Any]:
    return {
        "scanned": sum(p.scanned_records for p in progress.values()),
        "scanned_bytes": sum(p.scanned_bytes for p in progress.values()),
        "matches": matches,
        "positions": {str(p): v.next_offset for p, v in sorted(progress.items())},
        "elapsed_ms": int((time.monotonic() - started) * 1000),
    }


def _stops(progress: dict[int, lanes.ScanProgress]) -> list[dict[str, Any]]:
    """Partitions whose search ran out of budget: where a later one goes on."""
    return [
        {"partition": p, "next_offset": v.next_offset, "why": v.ended}
        for p, v in sorted(progress.items())
        if v.ended not in (None, "end", "match-limit")
    ]


def http_status(error: LanesError) -> int:
    """The HTTP status a cluster's refusal is answered with."""
    code = error.code
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.GROUP_ID_NOT_FOUND):
        return 404
    if isinstance(error, AuthorizationError):
        return 403
    if code is ErrorCode.NON_EMPTY_GROUP or code is ErrorCode.TOPIC_ALREADY_EXISTS:
        return 409
    if code is ErrorCode.THROTTLING_QUOTA_EXCEEDED:
        return 429
    if error.retriable:
        return 503
    return 400
