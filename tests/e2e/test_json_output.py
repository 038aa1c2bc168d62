"""The JSON of ``topics describe`` and ``groups describe`` is stable and documented: every field a
real answer has is listed in docs/cli.md, and every field listed there is in a real answer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.e2e.cli import Workdir, stop, wait_for

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def documented_fields(heading: str) -> set[str]:
    """The backticked field paths in the first column of the table under ``heading``."""
    section = CLI_DOC.read_text().split(heading, 1)[1].split("\n### ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE))


def field_paths(document: Any, prefix: str = "") -> set[str]:
    """``a.b`` for nested objects, ``a[].b`` for lists of objects; objects of free keys (configs) stop."""
    paths: set[str] = set()
    for name, value in document.items():
        path = f"{prefix}{name}"
        if isinstance(value, dict) and name != "configs":
            paths |= field_paths(value, f"{path}.")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for item in value:
                paths |= field_paths(item, f"{path}[].")
        else:
            paths.add(path)
    return paths


def test_topics_describe_json_is_documented(lanes: Workdir) -> None:
    lanes.ok(
        "topics",
        "create",
        "json-topic",
        "--partitions",
        "2",
        "--replication-factor",
        "2",
        "--config",
        "retention.ms=3600000",
    )
    lanes.ok("produce", "json-topic", input="a\nb\nc\n")
    document = lanes.json("topics", "describe", "json-topic")
    assert field_paths(document) == documented_fields("### `lanes topics describe NAME --output json`")
    assert document["configs"] == {"retention.ms": "3600000"}
    assert sum(p["high_watermark"] for p in document["partition_details"]) == 3
    assert document["size_bytes"] == sum(p["size_bytes"] for p in document["partition_details"])


def test_groups_describe_json_is_documented(lanes: Workdir) -> None:
    lanes.ok("topics", "create", "json-group-topic", "--partitions", "2", "--replication-factor", "1")
    lanes.ok("produce", "json-group-topic", "--key-separator", ":", input="a:1\nb:2\nc:3\n")
    member = lanes.start("lanes consume json-group-topic --group json-group --follow")
    try:

        def with_member() -> dict[str, Any] | None:
            done = lanes.run("groups", "describe", "json-group", "--output", "json")
            if done.returncode != 0:
                return None
            group: dict[str, Any] = json.loads(done.stdout)
            owned = sum(len(m["assignment"]) for m in group["members"])
            # total_lag sums the *known* lags: wait for the commits themselves, not only a lag of 0
            committed = all(p["committed_offset"] == p["log_end_offset"] for p in group["partitions"])
            return group if owned == 2 and committed and len(group["partitions"]) == 2 else None

        document = wait_for(with_member, "the member to own both partitions and commit", 60)
    finally:
        stop(member)
    assert field_paths(document) == documented_fields("### `lanes groups describe G --output json`")
    assert document["members"][0]["client_id"] == "lanes-cli"
    assert {p["partition"]: p["committed_offset"] for p in document["partitions"]} == {
        p["partition"]: p["log_end_offset"] for p in document["partitions"]
    }
