"""The CLI's pure parts: flag values, record formats, JSON records, errors and exit codes, the
parser (every command has examples; errors are one line), bootstrap resolution, completion."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lanes.cli.common import EXIT_NOT_FOUND, EXIT_REFUSED, EXIT_UNAVAILABLE, exit_code_for, resolve_bootstrap, table
from lanes.cli.main import build_parser, main
from lanes.cli.record_format import RecordFormat, pretty_json, record_document
from lanes.cli.values import (
    StartPosition,
    UsageError,
    human_bytes,
    parse_pairs,
    parse_reset_target,
    parse_start,
    parse_timestamp_ms,
)
from lanes.client.consumer import ConsumerRecord
from lanes.errors import ErrorCode, LanesError, UnknownTopicOrPartitionError
from lanes.protocol.records import TimestampType

NOON_UTC_MS = int(datetime(2026, 11, 22, 12, tzinfo=UTC).timestamp() * 1000)


def record(key: bytes | None = b"foo", value: bytes | None = b"first message", **overrides: object) -> ConsumerRecord:
    fields: dict[str, object] = {
        "topic": "streams-intro",
        "partition": 2,
        "offset": 7,
        "timestamp": 1_700_000_000_000,
        "timestamp_type": TimestampType.CREATE_TIME,
        "key": key,
        "value": value,
        "headers": (("source", b"web"), ("trace", None)),
        "leader_epoch": 0,
    }
    return ConsumerRecord(**(fields | overrides))  # type: ignore[arg-type]


def test_timestamps_are_iso_8601_with_or_without_a_zone() -> None:
    assert parse_timestamp_ms("2026-11-22T12:00:00Z", "--to") == NOON_UTC_MS
    assert parse_timestamp_ms("2026-11-22T13:00:00+01:00", "--to") == NOON_UTC_MS
    naive = parse_timestamp_ms("2026-11-22 12:00", "--to")
    assert naive == int(datetime(2026, 11, 22, 12).timestamp() * 1000)  # local time
    with pytest.raises(UsageError, match="--to: 'noon' is not an ISO 8601 timestamp"):
        parse_timestamp_ms("noon", "--to")


def test_start_positions() -> None:
    assert parse_start("earliest") == StartPosition("earliest")
    assert parse_start("LATEST") == StartPosition("latest")
    assert parse_start("42") == StartPosition("offset", 42)
    assert parse_start("2026-11-22T12:00:00Z") == StartPosition("timestamp", NOON_UTC_MS)
    with pytest.raises(UsageError, match="negative"):
        parse_start("-1")
    with pytest.raises(UsageError, match="not earliest, latest, an offset or an ISO 8601"):
        parse_start("yesterday")


def test_reset_targets_become_admin_specs() -> None:
    assert parse_reset_target("earliest") == "earliest"
    assert parse_reset_target("offset:10") == "offset:10"
    assert parse_reset_target("shift:-5") == "shift:-5"
    assert parse_reset_target("timestamp:2026-11-22T12:00:00Z") == f"timestamp:{NOON_UTC_MS}"
    for bad in ("offset:-1", "offset:x", "shift:", "earliest:1", "timestamp:noon", "yesterday"):
        with pytest.raises(UsageError, match="--to"):
            parse_reset_target(bad)


def test_pairs_and_sizes() -> None:
    assert parse_pairs(["a=1", "b=x=y", "c="], "--config") == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(UsageError, match="--header takes NAME=VALUE, not 'novalue'"):
        parse_pairs(["novalue"], "--header")
    assert [human_bytes(n) for n in (None, 0, 1023, 1536, 5 * 1024**3)] == ["-", "0 B", "1023 B", "1.5 KiB", "5.0 GiB"]


def test_formats_render_every_directive_and_escape() -> None:
    rendered = RecordFormat(r"%t/%p@%o %k=%v [%h] %T %K %S 100%%\t.").render(record())
    assert rendered == b"streams-intro/2@7 foo=first message [source=web,trace] 1700000000000 3 13 100%\t.\n"
    assert RecordFormat("%k|%v|%K|%S").render(record(key=None, value=None)) == b"||-1|-1\n"
    assert RecordFormat("%v").render(record(value=b"\xff\x00")) == b"\xff\x00\n"  # bytes pass through
    with pytest.raises(UsageError, match="unknown directive %x at position 3"):
        RecordFormat("%k %x")
    with pytest.raises(UsageError, match="unknown directive %"):
        RecordFormat("trailing %")


def test_pretty_reindents_only_json() -> None:
    assert pretty_json(b'{"a": [1, 2]}') == b'{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert pretty_json(b"{not json") == b"{not json"
    assert pretty_json(b"plain") == b"plain"
    assert RecordFormat("%v", pretty=True).render(record(value=b'{"ok":true}')) == b'{\n  "ok": true\n}\n'


def test_json_records_are_text_or_base64() -> None:
    document = record_document(record(value=b"\xff\xfe"))
    assert document == {
        "topic": "streams-intro",
        "partition": 2,
        "offset": 7,
        "timestamp": 1_700_000_000_000,
        "timestamp_type": "create_time",
        "key": "foo",
        "value": None,
        "value_base64": "//4=",
        "headers": [{"key": "source", "value": "web"}, {"key": "trace", "value": None}],
    }
    json.dumps(document)


def test_errors_map_to_documented_exit_codes() -> None:
    assert exit_code_for(UnknownTopicOrPartitionError("gone")) == EXIT_NOT_FOUND
    assert exit_code_for(LanesError("x", ErrorCode.GROUP_ID_NOT_FOUND)) == EXIT_NOT_FOUND
    assert exit_code_for(LanesError("busy", ErrorCode.NON_EMPTY_GROUP)) == EXIT_REFUSED
    assert exit_code_for(LanesError("x", ErrorCode.INVALID_CONFIG)) == EXIT_REFUSED
    assert exit_code_for(LanesError("x", ErrorCode.BROKER_NOT_AVAILABLE)) == EXIT_UNAVAILABLE
    assert exit_code_for(LanesError("x", ErrorCode.LEADER_NOT_AVAILABLE)) == EXIT_UNAVAILABLE


def test_bootstrap_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster_file = tmp_path / "cluster.json"
    monkeypatch.delenv("LANES_BOOTSTRAP", raising=False)
    assert resolve_bootstrap(None, cluster_file) == "localhost:9092"
    cluster_file.write_text(json.dumps({"bootstrap": "127.0.0.1:19092"}))
    assert resolve_bootstrap(None, cluster_file) == "127.0.0.1:19092"
    monkeypatch.setenv("LANES_BOOTSTRAP", "env:1")
    assert resolve_bootstrap(None, cluster_file) == "env:1"
    assert resolve_bootstrap("flag:2", cluster_file) == "flag:2"


def test_tables_align_and_show_unknowns_as_dashes() -> None:
    assert table([(1, None, "abc")], ["id", "leader", "name"]) == "ID  LEADER  NAME\n1   -       abc"


def leaf_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every runnable command's parser, by its full name."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    if child.get_default("run"):
                        found[child.prog] = child
                    walk(child)

    walk(build_parser())
    return found


def test_every_command_has_examples_and_the_common_flags() -> None:
    leaves = leaf_parsers()
    assert {
        "lanes up",
        "lanes down",
        "lanes status",
        "lanes cluster describe",
        "lanes cluster add-controller",
        "lanes cluster remove-controller",
        "lanes topics create",
        "lanes topics list",
        "lanes topics describe",
        "lanes topics alter",
        "lanes topics delete",
        "lanes configs describe",
        "lanes produce",
        "lanes consume",
        "lanes groups list",
        "lanes groups describe",
        "lanes groups reset-offsets",
        "lanes groups delete",
        "lanes users set-password",
        "lanes users delete",
        "lanes users list",
        "lanes users issue-certificate",
        "lanes acls create",
        "lanes acls list",
        "lanes acls delete",
        "lanes quotas set",
        "lanes quotas delete",
        "lanes quotas list",
        "lanes console",
        "lanes completion",
        "lanes bench produce",
        "lanes bench consume",
        "lanes demo prices",
        "lanes demo trading",
    } == set(leaves)
    for name, parser in leaves.items():
        help_text = parser.format_help()
        examples = help_text.split("examples:\n", 1)[1]
        assert "lanes " in examples, name
        if name != "lanes completion":
            for flag in ("--bootstrap", "--output", "--debug"):
                assert flag in help_text, (name, flag)


def test_usage_errors_are_one_line_with_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["topics", "create", "x", "--partitions", "zero"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "lanes topics create: argument --partitions/-p: 'zero' is not a whole number (see lanes topics create --help)\n"
    )


def test_completion_scripts_know_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    for shell in ("bash", "zsh"):
        assert main(["completion", shell]) == 0
        script = capsys.readouterr().out
        for word in ("reset-offsets", "--key-separator", "--replication-factor", "describe"):
            assert word in script, (shell, word)
