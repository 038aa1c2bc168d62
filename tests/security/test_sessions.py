"""Issue #23: streams are authenticated again (Kafka's KIP-368 re-authentication). Against a real
cluster whose users' streams live 2 s (``--max-session-seconds``): a producer's stream is ended
when its session is over and the producer carries on on a new one, authenticated again; once its
user is deleted, that new stream is refused and the producer's next records fail with an
authentication error instead of flowing on the stream opened before (a token's stream ends when
the token expires, the same way: ``tests/unit``'s guard tests and docs/security.md)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import lanes
from lanes.errors import AuthenticationError
from lanes.local.cluster import LocalCluster
from tests.integration.processes import running_cluster, wait_until_brokers_apply_metadata

SESSION_S = 2.0
LEAVER = lanes.UserPassword("leaver", "leaver-password-1")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("sessions"), brokers=1, max_session_seconds=SESSION_S) as started:
        with lanes.Admin(str(started.describe()["bootstrap"])) as admin:
            admin.create_topic("ledger", partitions=1, replication_factor=1)
            admin.set_user_password(LEAVER.username, LEAVER.password)
            admin.create_acls(
                [lanes.AclBinding.of(LEAVER.username, op, topic="ledger") for op in ("write", "describe")]
            )
        wait_until_brokers_apply_metadata(started)
        yield started


def test_a_stream_outliving_its_session_is_renewed_and_a_deleted_user_is_stopped(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    with lanes.Producer(
        bootstrap, credentials=LEAVER, acks="1", enable_idempotence=False, delivery_timeout_ms=20_000
    ) as producer:
        producer.send("ledger", b"first").result(timeout=20)
        time.sleep(SESSION_S + 1)
        producer.send("ledger", b"on a new stream").result(timeout=20)  # the old one ended: renewed
        with lanes.Admin(bootstrap) as admin:
            admin.delete_user(LEAVER.username)
        wait_until_brokers_apply_metadata(cluster)
        time.sleep(SESSION_S + 1)
        with pytest.raises(AuthenticationError):
            producer.send("ledger", b"after the user left").result(timeout=20)
    with lanes.Admin(bootstrap) as admin:
        (log,) = admin.describe_logs(["ledger"])
        assert log.high_watermark == 2, "what the user wrote while it existed, nothing after"
