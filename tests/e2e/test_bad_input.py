"""Bad input at the CLI: one readable line on stderr naming what is wrong and what to do, the
documented exit code, no traceback, and nothing changed in the cluster."""

from __future__ import annotations

import time

import pytest

from tests.e2e.cli import Workdir, stop, wait_for

USAGE, REFUSED, NOT_FOUND, UNAVAILABLE = 2, 1, 3, 4

CASES = [
    # (arguments, stdin, exit code, words the one line must contain)
    (
        ["topics", "describe", "no-such-topic"],
        None,
        NOT_FOUND,
        ["no-such-topic", "does not exist", "lanes topics list"],
    ),
    (["consume", "no-such-topic"], None, NOT_FOUND, ["does not exist", "lanes topics create no-such-topic"]),
    (["produce", "no-such-topic"], "x\n", NOT_FOUND, ["does not exist", "lanes topics create"]),
    (["groups", "describe", "no-such-group"], None, NOT_FOUND, ["no-such-group", "lanes groups list"]),
    (["topics", "create", "bad/name"], None, REFUSED, ["'/'", "a-z"]),
    (
        ["topics", "create", "bad-input", "--config", "retention.ms=a-week"],
        None,
        REFUSED,
        ["retention.ms", "lanes configs describe"],
    ),
    (["topics", "create", "bad-input", "--config", "no.such.config=1"], None, REFUSED, ["no.such.config"]),
    (
        ["topics", "create", "bad-input", "--replication-factor", "7"],
        None,
        REFUSED,
        ["replication factor 7", "3 live brokers"],
    ),
    (["topics", "alter", "bad-input-existing", "--partitions", "1"], None, REFUSED, ["can only grow", "more than 2"]),
    (["topics", "create", "bad-input-existing"], None, REFUSED, ["already exists", "--if-not-exists"]),
    (["topics", "create", "x", "--partitions", "0"], None, USAGE, ["--partitions", "at least 1", "--help"]),
    (["topics", "create", "x", "--partitions", "three"], None, USAGE, ["'three' is not a whole number"]),
    (["topics", "create", "x", "--config", "retention.ms"], None, USAGE, ["--config takes NAME=VALUE"]),
    (["topics", "alter", "bad-input-existing"], None, USAGE, ["nothing to alter"]),
    (["consume", "bad-input-existing", "--from", "yesterday"], None, USAGE, ["--from", "ISO 8601"]),
    (["consume", "bad-input-existing", "--format", "%k=%x"], None, USAGE, ["%x", "%t %p %o"]),
    (["consume", "bad-input-existing", "--partition", "9"], None, USAGE, ["partitions 0-1"]),
    (["consume", "bad-input-existing", "--group", "g", "--from", "5"], None, USAGE, ["reset-offsets"]),
    (["produce", "bad-input-existing", "--acks", "2"], "x\n", USAGE, ["--acks", "invalid choice"]),
    (["groups", "reset-offsets", "g", "--topic", "bad-input-existing", "--to", "yesterday"], None, USAGE, ["--to"]),
    (["topics", "lisst"], None, USAGE, ["invalid choice: 'lisst'"]),
    (["topics", "list", "--bootstrap", "127.0.0.1:1"], None, UNAVAILABLE, ["127.0.0.1:1", "cluster is up"]),
]


@pytest.fixture(scope="module")
def existing(lanes: Workdir) -> str:
    lanes.ok("topics", "create", "bad-input-existing", "--partitions", "2", "--replication-factor", "1")
    lanes.ok("produce", "bad-input-existing", "--key-separator", ":", input="k:1\nk:2\n")
    return "bad-input-existing"


def assert_one_line_error(stderr: str, words: list[str]) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("lanes"), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.parametrize(("arguments", "stdin", "code", "words"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_one_line_and_a_documented_exit_code(
    lanes: Workdir, existing: str, arguments: list[str], stdin: str | None, *, code: int, words: list[str]
) -> None:
    started = time.monotonic()
    done = lanes.run(*arguments, input=stdin)
    assert done.returncode == code, done.stderr
    assert_one_line_error(done.stderr, words)
    assert time.monotonic() - started < 20, "errors must come fast, not after retries until a timeout"
    with lanes.admin() as admin:  # in process: two more commands per case took 1.6 s
        assert len(admin.describe_topic(existing).partitions) == 2, "the refused alter left the topic as it was"
        logs = admin.describe_logs([existing])
        assert sum(log.high_watermark for log in logs if log.is_leader) == 2, "nothing was written"
        assert "bad-input" not in admin.list_topics()


def test_a_line_without_the_key_separator_stops_after_producing_the_lines_before(lanes: Workdir) -> None:
    lanes.ok("topics", "create", "bad-lines", "--partitions", "1", "--replication-factor", "1")
    done = lanes.run("produce", "bad-lines", "--key-separator", ":", input="a:1\nb:2\nno separator here\nc:3\n")
    assert done.returncode == USAGE
    assert_one_line_error(done.stderr, ["line 3", "no key separator ':'"])
    assert "produced 2 records" in done.stdout
    assert lanes.ok("consume", "bad-lines", "--format", "%k=%v").splitlines() == ["a=1", "b=2"]


def test_resetting_a_group_with_members_is_refused_until_they_leave(lanes: Workdir, existing: str) -> None:
    member = lanes.start(f"lanes consume {existing} --group busy-group --follow")
    try:
        wait_for(
            lambda: (
                lanes.run("groups", "describe", "busy-group", "--output", "json").stdout.count('"member_id": "') >= 1
            ),
            "the member to join",
        )
        done = lanes.run("groups", "reset-offsets", "busy-group", "--topic", existing, "--to", "earliest", "--execute")
        assert done.returncode == REFUSED
        assert_one_line_error(done.stderr, ["--wait"])
        waiting = lanes.start(
            f"lanes groups reset-offsets busy-group --topic {existing} --to earliest --execute --wait --timeout 60"
        )
        assert waiting.stderr is not None
        said = waiting.stderr.readline()  # the member is still there: it waits (not a race with its start)
        assert "waiting for group busy-group to become empty" in said
        assert waiting.poll() is None, "--wait waits while the group has members"
    finally:
        stop(member)
    stopped_at = time.monotonic()
    assert member.returncode == 0, "SIGTERM ends lanes consume cleanly"
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert time.monotonic() - stopped_at < 15, "the member left at once, not after its 45 s session lapsed"
    assert "reset the offsets of group busy-group" in out
