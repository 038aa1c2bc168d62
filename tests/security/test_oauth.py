"""Issue #23: OAuth bearer tokens against a real secure cluster (``LocalCluster(oauth=...)``: every
process accepts JWTs an issuer made here signs, its key set in a file). A token's subject is a
user whom ACLs grant as they grant password users; a token that is expired, foreign, for another
audience or naming a node is refused on every service; keys rotate on the servers and tokens on
the clients without a restart."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

import lanes
from lanes.errors import AuthenticationError, AuthorizationError
from lanes.local.cluster import LocalCluster
from lanes.local.processes import start_service
from lanes.rpc.tls import TlsFiles
from lanes.runtime.access.tokens import TokenSettings
from lanes.v1 import (
    broker_pb2,
    broker_pb2_grpc,
    controller_pb2,
    controller_pb2_grpc,
    coordinator_pb2,
    coordinator_pb2_grpc,
)
from tests.integration.console_http import Browser
from tests.integration.processes import running_cluster, wait_until_brokers_apply_metadata
from tests.security.tokens import AUDIENCE, ISSUER, Issuer

ISSUING = Issuer()


@pytest.fixture(scope="module")
def jwks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ISSUING.write_jwks(tmp_path_factory.mktemp("issuer") / "jwks.json")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, jwks: Path) -> Iterator[LocalCluster]:
    settings = TokenSettings(ISSUER, AUDIENCE, str(jwks))
    with running_cluster(tmp_path_factory.mktemp("oauth"), brokers=1, oauth=settings) as started:
        with lanes.Admin(_bootstrap(started)) as admin:  # the admin user (the environment's)
            for topic in ("a", "b"):
                admin.create_topic(topic, partitions=1, replication_factor=1)
            admin.create_acls(
                [lanes.AclBinding.of("alice", "read", topic="a"), lanes.AclBinding.of("alice", "read", group="g")]
            )
        with lanes.Producer(_bootstrap(started)) as producer:
            producer.send("a", b"for alice").result(timeout=30)
        wait_until_brokers_apply_metadata(started)
        yield started


def _bootstrap(cluster: LocalCluster) -> str:
    return str(cluster.describe()["bootstrap"])


def _ca(cluster: LocalCluster) -> TlsFiles:
    tls = cluster.client_tls
    assert tls is not None
    return tls


def test_a_token_users_acls_apply_as_a_password_users_do(cluster: LocalCluster) -> None:
    alice = lanes.BearerToken(ISSUING.token("alice"))
    with lanes.Consumer(
        _bootstrap(cluster), group_id="g", tls=_ca(cluster), credentials=alice, auto_offset_reset="earliest"
    ) as consumer:
        consumer.subscribe(["a"])
        values: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while not values and time.monotonic() < deadline:
            values += [record.value for record in consumer.poll(500)]
    assert values == [b"for alice"]
    with lanes.Admin(_bootstrap(cluster), tls=_ca(cluster), credentials=alice) as admin:
        assert admin.list_topics() == ["a"], "b is not hers to see"
    with (
        lanes.Producer(_bootstrap(cluster), tls=_ca(cluster), credentials=alice) as producer,
        pytest.raises(AuthorizationError),
    ):
        producer.send("a", b"not allowed").result(timeout=30)


def _refused_everywhere(cluster: LocalCluster, token: str) -> list[str]:
    """The refusal each service gives a call carrying ``token``."""
    credentials = grpc.composite_channel_credentials(
        _ca(cluster).channel_credentials(), lanes.BearerToken(token).call_credentials()
    )
    controller, coordinator = cluster.controller, cluster.coordinator_processes[1]
    assert controller is not None
    calls = [
        (
            cluster.broker_processes[1].address,
            lambda channel: broker_pb2_grpc.BrokerStub(channel).Metadata(  # type: ignore[no-untyped-call]
                broker_pb2.MetadataRequest(), timeout=10
            ),
        ),
        (
            controller.address,
            lambda channel: controller_pb2_grpc.ControllerStub(channel).DescribeCluster(  # type: ignore[no-untyped-call]
                controller_pb2.DescribeClusterRequest(), timeout=10
            ),
        ),
        (
            coordinator.address,
            lambda channel: coordinator_pb2_grpc.GroupCoordinatorStub(channel).ListGroups(  # type: ignore[no-untyped-call]
                coordinator_pb2.ListGroupsRequest(), timeout=10
            ),
        ),
    ]
    details = []
    for address, call in calls:
        with grpc.secure_channel(address, credentials) as channel, pytest.raises(grpc.RpcError) as refused:
            call(channel)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, address
        details.append(str(refused.value.details()))
    return details


@pytest.mark.parametrize(
    ("case", "token", "reason"),
    [
        ("expired", ISSUING.token("alice", lifetime_s=-120), "expired"),
        ("foreign", Issuer().token("alice"), "signature verification failed"),
        ("another audience", ISSUING.token("alice", aud="another-cluster"), "audience"),
        ("a node's name", ISSUING.token("broker-1"), "names one of the cluster's nodes"),
    ],
    ids=["expired", "foreign", "another audience", "a node's name"],  # tokens differ per process (xdist)
)
def test_tokens_that_do_not_hold_are_refused_by_every_service(
    cluster: LocalCluster, case: str, token: str, reason: str
) -> None:
    for details in _refused_everywhere(cluster, token):
        assert "invalid token" in details, (case, details)
        assert reason in details.lower(), (case, details)
    with (
        lanes.Admin(_bootstrap(cluster), tls=_ca(cluster), credentials=lanes.BearerToken(token)) as admin,
        pytest.raises(AuthenticationError),
    ):
        admin.list_topics()


def test_keys_rotate_on_the_servers_and_tokens_on_the_clients_without_a_restart(
    cluster: LocalCluster, jwks: Path, tmp_path: Path
) -> None:
    """A key the issuer adds is used once its key set file changes; a client whose token file is
    renewed sends the new token (here another user's, whom no ACL lets read ``a``)."""
    with (
        lanes.Admin(_bootstrap(cluster), tls=_ca(cluster), credentials=lanes.BearerToken("x.y.z")) as admin,
        pytest.raises(AuthenticationError),
    ):
        admin.list_topics()
    ISSUING.add_key("ec-2")
    ISSUING.write_jwks(jwks)
    token_file = tmp_path / "token"
    token_file.write_text(ISSUING.token("alice", kid="ec-2"))
    renewed = lanes.BearerToken(file=token_file)
    with lanes.Admin(_bootstrap(cluster), tls=_ca(cluster), credentials=renewed, request_timeout_ms=10_000) as admin:
        deadline = time.monotonic() + 10
        while True:  # servers look at the key set file once a second
            try:
                assert admin.list_topics() == ["a"]
                break
            except AuthenticationError:
                assert time.monotonic() < deadline, "the new key was never used"
                time.sleep(0.2)
        replacement = token_file.with_suffix(".new")
        replacement.write_text(ISSUING.token("mallory", kid="ec-2"))
        replacement.replace(token_file)
        renewed.look_again()  # rather than wait the second between looks at the file
        assert admin.list_topics() == [], "mallory sees nothing"


def test_the_console_logs_a_token_user_in_and_shows_what_its_acls_allow(cluster: LocalCluster, tmp_path: Path) -> None:
    ca = str(_ca(cluster).ca_file)
    console = start_service(
        "lanes.console", ["--bootstrap", _bootstrap(cluster), "--port", "0", "--tls-ca", ca], tmp_path / "console.log"
    )
    try:
        url = str(console.ready["url"]).rstrip("/")
        alice = Browser(url, ssl.create_default_context(cafile=ca))
        status, _, _ = alice.call("POST", "/login", {"token": ISSUING.token("alice")})
        assert status == 200
        status, topics = alice.json("/api/topics")
        assert status == 200, topics
        assert [t["name"] for t in topics] == ["a"], "what alice's ACLs let her see, not the console's"
        for forged in (ISSUING.token("alice", aud="elsewhere"), ISSUING.token("alice", lifetime_s=-60), "not.a.jwt"):
            mallory = Browser(url, ssl.create_default_context(cafile=ca))
            status, _, body = mallory.call("POST", "/login", {"token": forged})
            assert status == 401, body[:200]
            assert mallory.json("/api/topics")[0] == 401
    finally:
        console.terminate()
