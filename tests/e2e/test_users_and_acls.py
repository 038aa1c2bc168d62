"""``lanes users`` and ``lanes acls`` on the shared ``lanes up`` cluster, which is secure by
default: the admin user (from cluster.json) creates a user and grants it one topic; that user,
given through ``LANES_USERNAME``/``LANES_PASSWORD_FILE``, sees and reads that topic only."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.e2e.cli import LANES, Workdir


def _as(lanes: Workdir, user: str, password_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**lanes.env(), "LANES_USERNAME": user, "LANES_PASSWORD_FILE": str(password_file)}
    return subprocess.run(
        [*LANES, *args], cwd=lanes.path, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_an_administrator_grants_a_user_one_topic(lanes: Workdir, tmp_path: Path) -> None:
    described = lanes.json("cluster", "describe")
    assert described["brokers"], "the admin user of cluster.json may describe the cluster"
    assert "user" in (lanes.path / ".lanes" / "cluster.json").read_text(), "lanes up is secure by default"
    lanes.ok("topics", "create", "granted", "--partitions", "1")
    lanes.ok("topics", "create", "withheld", "--partitions", "1")
    lanes.ok("produce", "granted", input="one\ntwo\n")
    password = tmp_path / "carol.pass"
    password.write_text("carol-secret-3\n")
    os.chmod(password, 0o600)
    lanes.ok("users", "set-password", "carol", "--password-file", str(password))
    assert {"user": "carol", "mechanisms": ["SCRAM-SHA-256"], "iterations": [8192]} in lanes.json("users", "list")
    lanes.ok("acls", "create", "--principal", "carol", "--operation", "read", "--topic", "granted")
    lanes.ok("acls", "create", "--principal", "carol", "--operation", "read", "--group", "carols-", "--prefixed")
    listed = lanes.json("acls", "list", "--principal", "carol")
    assert {(a["operation"], a["resource_type"], a["resource"], a["pattern"]) for a in listed} == {
        ("read", "topic", "granted", "literal"),
        ("read", "group", "carols-", "prefixed"),
    }

    topics = _as(lanes, "carol", password, "topics", "list", "--output", "json")
    assert topics.returncode == 0, topics.stderr
    assert "granted" in topics.stdout
    assert "withheld" not in topics.stdout
    read = _as(lanes, "carol", password, "consume", "granted", "--group", "carols-app", "--max-records", "2")
    assert read.returncode == 0, read.stderr
    assert read.stdout.split() == ["one", "two"]
    refused = subprocess.run(
        [*LANES, "produce", "granted"],
        cwd=lanes.path,
        env={**lanes.env(), "LANES_USERNAME": "carol", "LANES_PASSWORD_FILE": str(password)},
        input="three\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 1, (refused.stdout, refused.stderr)
    assert "AUTHORIZATION_FAILED" in refused.stderr or "may not" in refused.stderr
    wrong = tmp_path / "wrong.pass"
    wrong.write_text("not-carols")
    denied = _as(lanes, "carol", wrong, "topics", "list")
    assert denied.returncode == 1
    assert "wrong username or password" in denied.stderr

    removed = lanes.json("acls", "delete", "--principal", "carol", "--topic", "granted")
    assert [a["resource"] for a in removed] == ["granted"]
    lanes.ok("users", "delete", "carol")
    assert all(u["user"] != "carol" for u in lanes.json("users", "list"))
