"""``lanes status`` and ``lanes cluster describe``: who is in the cluster, and is it healthy;
``lanes cluster add-controller|remove-controller``: change the controller quorum."""

from __future__ import annotations

import argparse
from typing import Any

from lanes.cli import watch
from lanes.cli.common import CLUSTER_FILE, Stop, add_command, add_group, admin_for, emit, table
from lanes.cli.values import positive_int, positive_seconds
from lanes.client.admin import Admin

#: a controller that fetched from the active one this recently is in sync (fetches are long-polled
#: for at most 0.3 s, so a live voter fetches several times a second)
IN_SYNC_FETCH_AGE_MS = 2_000


def cluster_document(admin: Admin) -> dict[str, Any]:
    """The stable JSON of ``cluster describe``: id, controller quorum, brokers and coordinators."""
    cluster = admin.describe_cluster()
    return {
        "cluster_id": cluster.cluster_id,
        "controller": cluster.controller,
        "metadata_offset": cluster.metadata_offset,
        "quorum": {
            "epoch": cluster.quorum_epoch,
            "voters": [
                {
                    "id": c.controller_id,
                    "address": f"{c.host}:{c.port}",
                    "active": c.controller_id == cluster.controller_id,
                    "in_sync": 0 <= c.last_fetch_age_ms < IN_SYNC_FETCH_AGE_MS,
                    "log_end_offset": c.log_end_offset,
                    "lag": c.lag,
                    "last_fetch_age_ms": c.last_fetch_age_ms,
                }
                for c in cluster.controllers
            ],
            "observers": [
                {
                    "id": c.controller_id,
                    "address": f"{c.host}:{c.port}",
                    "log_end_offset": c.log_end_offset,
                    "lag": c.lag,
                    "last_fetch_age_ms": c.last_fetch_age_ms,
                }
                for c in cluster.observers
            ],
        },
        "brokers": [
            {
                "id": b.broker_id,
                "address": f"{b.host}:{b.port}",
                "rack": b.rack or None,
                "state": "fenced" if b.fenced else "live",
                "leaders": b.leaders,
                "replicas": b.replicas,
            }
            for b in cluster.brokers
        ],
        "coordinators": [
            {
                "id": c.coordinator_id,
                "address": f"{c.host}:{c.port}",
                "state": "fenced" if c.fenced else "live",
                "shards": len(c.shards),
            }
            for c in cluster.coordinators
        ],
    }


def _render_members(d: dict[str, Any]) -> str:
    brokers = table(
        [(b["id"], b["address"], b["rack"], b["state"], b["leaders"], b["replicas"]) for b in d["brokers"]],
        ["broker", "address", "rack", "state", "leaders", "replicas"],
    )
    coordinators = table(
        [(c["id"], c["address"], c["state"], c["shards"]) for c in d["coordinators"]],
        ["coordinator", "address", "state", "shards"],
    )
    controllers = table(
        [
            (
                v["id"],
                v["address"],
                "active" if v["active"] else ("in sync" if v["in_sync"] else "OUT OF SYNC"),
                "-" if v["lag"] < 0 else v["lag"],
                "-" if v["last_fetch_age_ms"] < 0 else f"{v['last_fetch_age_ms']} ms",
            )
            for v in d["quorum"]["voters"]
        ]
        + [
            (
                o["id"],
                o["address"],
                "observer",
                "-" if o["lag"] < 0 else o["lag"],
                "-" if o["last_fetch_age_ms"] < 0 else f"{o['last_fetch_age_ms']} ms",
            )
            for o in d["quorum"]["observers"]
        ],
        ["controller", "address", "state", "lag", "last fetch"],
    )
    return (
        f"cluster {d['cluster_id']}  controller {d['controller']}  quorum epoch {d['quorum']['epoch']}  "
        f"metadata offset {d['metadata_offset']}\n\n{controllers}\n\n"
        f"{brokers}\n\n{coordinators if d['coordinators'] else 'no group coordinators: consumer groups cannot work'}"
    )


def describe(options: argparse.Namespace) -> None:
    """The cluster's id, controller, brokers and group coordinators."""
    with admin_for(options) as admin:
        emit(options, cluster_document(admin), _render_members)


def _render_voters(d: dict[str, Any]) -> str:
    return "controller quorum: " + ", ".join(f"{v['id']}@{v['address']}" for v in d["voters"])


def add_controller(options: argparse.Namespace) -> None:
    """Make a running, caught-up controller a voter."""
    with admin_for(options) as admin:
        voters = admin.add_controller(options.id, options.address)
    emit(
        options, {"voters": [{"id": v.controller_id, "address": f"{v.host}:{v.port}"} for v in voters]}, _render_voters
    )


def remove_controller(options: argparse.Namespace) -> None:
    """Remove a voter from the quorum."""
    with admin_for(options) as admin:
        voters = admin.remove_controller(options.id)
    emit(
        options, {"voters": [{"id": v.controller_id, "address": f"{v.host}:{v.port}"} for v in voters]}, _render_voters
    )


def status_document(admin: Admin) -> dict[str, Any]:
    """``cluster describe`` plus partition health: under-replicated and offline partitions."""
    document = cluster_document(admin)
    topics = admin.describe_topics(include_internal=True)
    partitions = [(t.name, p) for t in topics for p in t.partitions]
    document["topics"] = len(topics)
    document["partitions"] = len(partitions)
    document["under_replicated_partitions"] = [
        {"topic": name, "partition": p.partition, "replicas": list(p.replicas), "isr": list(p.isr)}
        for name, p in partitions
        if len(p.isr) < len(p.replicas)
    ]
    document["offline_partitions"] = [
        {"topic": name, "partition": p.partition, "replicas": list(p.replicas)}
        for name, p in partitions
        if p.leader < 0
    ]
    document["healthy"] = (
        not document["under_replicated_partitions"]
        and not document["offline_partitions"]
        and all(b["state"] == "live" for b in document["brokers"])
        and all(c["state"] == "live" for c in document["coordinators"])
        and all(v["in_sync"] for v in document["quorum"]["voters"])
    )
    return document


def _render_status(d: dict[str, Any]) -> str:
    live = sum(b["state"] == "live" for b in d["brokers"])
    lines = [
        f"{'healthy' if d['healthy'] else 'DEGRADED'}: {live}/{len(d['brokers'])} brokers live, "
        f"{sum(v['in_sync'] for v in d['quorum']['voters'])}/{len(d['quorum']['voters'])} controllers in sync, "
        f"{sum(c['state'] == 'live' for c in d['coordinators'])} coordinators, {d['topics']} topics, "
        f"{d['partitions']} partitions ({len(d['offline_partitions'])} offline, "
        f"{len(d['under_replicated_partitions'])} under-replicated)",
        "",
        _render_members(d),
    ]
    if d["under_replicated_partitions"]:
        rows = [
            (p["topic"], p["partition"], ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])))
            for p in d["under_replicated_partitions"]
        ]
        lines += ["", "under-replicated partitions:", table(rows, ["topic", "partition", "replicas", "isr"])]
    if d["offline_partitions"]:
        offline = [(p["topic"], p["partition"], ",".join(map(str, p["replicas"]))) for p in d["offline_partitions"]]
        lines += [
            "",
            "offline partitions (no leader: reads and writes fail):",
            table(offline, ["topic", "partition", "replicas"]),
        ]
    return "\n".join(lines)


def status(options: argparse.Namespace) -> None:
    """Brokers, controller, coordinators, under-replicated and offline partitions; with
    ``--watch``, a live one-line summary from the services' metrics until Ctrl-C."""
    if options.watch:
        stop = Stop()
        show = watch.as_json if options.output == "json" else watch.render
        watch.watch(
            watch.endpoints(options.metrics),
            interval_s=options.interval,
            updates=options.updates,
            emit=lambda summary: print(show(summary), flush=True),
            sleep=stop.requested.wait,
            stopped=lambda: bool(stop),
            token=watch.metrics_token(),
        )
        return
    with admin_for(options) as admin:
        emit(options, status_document(admin), _render_status)


def register(commands: Any) -> None:
    """Add ``status`` and ``cluster describe`` to the ``lanes`` parser."""
    status_parser = add_command(
        commands,
        "status",
        summary="show the cluster's health: brokers, controller, coordinators, problem partitions",
        examples=(
            "lanes status\nlanes status --bootstrap broker-0.lanes:9092 --output json | jq .healthy\n"
            "lanes status --watch\nlanes status --watch --metrics broker-0:9402,controller-0:9401 --interval 5"
        ),
        run=status,
    )
    status_parser.add_argument(
        "--watch",
        action="store_true",
        help="print a live one-line summary (throughput, problem partitions, consumer lag) from the services' "
        "metrics until Ctrl-C; --output json prints one JSON object per line",
    )
    status_parser.add_argument(
        "--metrics",
        help=f"with --watch: the metrics endpoints to scrape, host:port,... (default: every process in "
        f"./{CLUSTER_FILE})",
    )
    status_parser.add_argument(
        "--interval", type=positive_seconds, default=2.0, help="with --watch: seconds between updates (default 2)"
    )
    status_parser.add_argument(
        "--updates", type=positive_int, default=None, help="with --watch: stop after this many lines (default: never)"
    )
    cluster = add_group(commands, "cluster", "describe the cluster, change its controller quorum")
    add_command(
        cluster,
        "describe",
        summary="show the cluster id, controller, brokers and group coordinators",
        examples="lanes cluster describe\nlanes cluster describe --output json",
        run=describe,
    )
    add_parser = add_command(
        cluster,
        "add-controller",
        summary="make a running controller a voter of the quorum (one change at a time)",
        description="Make a running controller a voter of the controller quorum (KIP-853). Start it first with "
        "--voters naming the current quorum (it then fetches the metadata as an observer) and wait until it "
        "caught up; the change is answered once committed.",
        examples="lanes cluster add-controller 3 controller-3.lanes:9093",
        run=add_controller,
    )
    add_parser.add_argument("id", type=int, help="the controller's node id")
    add_parser.add_argument(
        "address", help="host:port its peers reach it at: its internal listener (--internal-port) when it has one"
    )
    remove_parser = add_command(
        cluster,
        "remove-controller",
        summary="remove a voter from the controller quorum (the active one too: it hands over)",
        examples="lanes cluster remove-controller 0",
        run=remove_controller,
    )
    remove_parser.add_argument("id", type=int, help="the controller's node id")
