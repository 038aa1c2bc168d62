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


def test_quotas_for_users_client_ids_and_their_defaults(lanes: Workdir) -> None:
    """``lanes quotas`` names Kafka's quota entities: a user, a client id, a user's client id, and
    the defaults of each; ``list`` shows them defaults first, and ``delete`` removes one key."""
    lanes.ok("quotas", "set", "--user", "dora", "--client-id", "reports", "--request-percentage", "25")
    lanes.ok("quotas", "set", "--client-id-default", "--producer-byte-rate", "1048576")
    lanes.ok("quotas", "set", "--user-default", "--consumer-byte-rate", "2097152", "--controller-mutation-rate", "10")
    listed = lanes.json("quotas", "list")
    assert {(q["user"], q["client_id"], q["key"], q["rate"]) for q in listed} >= {
        ("dora", "reports", "request_percentage", 25.0),
        (None, "<default>", "producer_byte_rate", 1048576.0),
        ("<default>", None, "consumer_byte_rate", 2097152.0),
        ("<default>", None, "controller_mutation_rate", 10.0),
    }
    assert lanes.json("quotas", "list", "--user", "dora", "--client-id", "reports") == [
        {"user": "dora", "client_id": "reports", "key": "request_percentage", "rate": 25.0}
    ]
    lanes.ok("quotas", "delete", "--user-default", "--key", "consumer_byte_rate", "--key", "controller_mutation_rate")
    lanes.ok("quotas", "delete", "--client-id-default", "--key", "producer_byte_rate")
    lanes.ok("quotas", "delete", "--user", "dora", "--client-id", "reports", "--key", "request_percentage")
    assert lanes.json("quotas", "list") == []
    refused = lanes.run("quotas", "set", "--user", "dora", "--user-default", "--request-percentage", "5")
    assert refused.returncode != 0
    assert "not both" in refused.stderr
    nobody = lanes.run("quotas", "set", "--request-percentage", "5")
    assert nobody.returncode != 0
    assert "a user, a client id, or both" in nobody.stderr
