"""Issue #23: authentication and ACLs against a real cluster (``LocalCluster(tls=True,
auth=True)``: clients give a username and password over TLS, nodes their certificates on the
internal listener, and the cluster's ACLs decide every call).

- Every RPC of every service answers an unauthenticated caller UNAUTHENTICATED, and a wrong
  password too; the internal listener takes nobody but the cluster's nodes.
- A user with READ on topic ``a`` (and on its group) reads ``a``, cannot write it, does not see
  ``b`` in Metadata or topic listings, and cannot describe other groups or change the cluster.
- DENY wins over a prefixed ALLOW, and a produce request naming an allowed and a refused topic
  writes the allowed one (per-topic answers, as Kafka).
- Changes to ACLs and passwords apply to the next call, without reconnecting.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor
from grpc_health.v1 import health_pb2

import lanes
from lanes.client import _loop
from lanes.errors import AuthenticationError, AuthorizationError, ErrorCode, LanesError
from lanes.local.certificates import create_authority, issue
from lanes.local.cluster import LocalCluster
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.rpc.tls import TlsFiles
from lanes.rpc.wire import produce_request
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, coordinator_pb2, coordinator_pb2_grpc
from tests.integration.processes import running_cluster, wait_until_brokers_apply_metadata
from tests.security.raw import call_empty

ALICE = lanes.UserPassword("alice", "alice-secret-1")
BOB = lanes.UserPassword("bob", "bob-secret-22")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("auth"), brokers=2, tls=True, auth=True) as started:
        with _admin(started) as admin:
            for topic in ("a", "b", "team-x", "team-secret"):
                admin.create_topic(topic, partitions=1, replication_factor=2)
            admin.set_user_password(ALICE.username, ALICE.password)
            admin.set_user_password(BOB.username, BOB.password)
            admin.create_acls(
                [
                    lanes.AclBinding.of("alice", "read", topic="a"),
                    lanes.AclBinding.of("alice", "read", group="readers-of-a"),
                    lanes.AclBinding.of("bob", "write", topic="team-", prefixed=True),
                    lanes.AclBinding.of("bob", "write", topic="team-secret", deny=True),
                    lanes.AclBinding.of("bob", "read", group="bobs", prefixed=True),
                    lanes.AclBinding.of("bob", "read", topic="b"),
                ]
            )
        wait_until_brokers_apply_metadata(started)
        yield started


def _bootstrap(cluster: LocalCluster) -> str:
    return str(cluster.describe()["bootstrap"])


def _admin(cluster: LocalCluster, credentials: lanes.UserPassword | None = None) -> lanes.Admin:
    return lanes.Admin(
        _bootstrap(cluster), tls=cluster.client_tls, credentials=credentials or cluster.client_credentials
    )


def _ca_only(cluster: LocalCluster) -> TlsFiles:
    tls = cluster.client_tls
    assert tls is not None
    assert tls.cert_file is None, "with auth, clients trust the CA and give passwords"
    return tls


def _consume(cluster: LocalCluster, topic: str, group: str, credentials: lanes.UserPassword, count: int) -> list[bytes]:
    with lanes.Consumer(
        _bootstrap(cluster),
        group_id=group,
        tls=_ca_only(cluster),
        credentials=credentials,
        auto_offset_reset="earliest",
    ) as consumer:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            values.extend(record.value or b"" for record in consumer.poll(500))
        consumer.commit()
    return values


# ---------------------------------------------------------------------------------------------
# authentication


def _services(cluster: LocalCluster) -> list[tuple[str, descriptor.ServiceDescriptor]]:
    """(client address, service) for every Lanes service of the cluster."""
    controller = cluster.controller
    assert controller is not None
    coordinator = cluster.coordinator_processes[1]
    broker = cluster.broker_processes[1]
    return [
        (broker.address, broker_pb2.DESCRIPTOR.services_by_name["Broker"]),
        (controller.address, controller_pb2.DESCRIPTOR.services_by_name["Controller"]),
        (controller.address, controller_pb2.DESCRIPTOR.services_by_name["ControllerQuorum"]),
        (coordinator.address, coordinator_pb2.DESCRIPTOR.services_by_name["GroupCoordinator"]),
    ]


def _unauthenticated(error: grpc.RpcError) -> bool:
    """Whether a call was refused for its caller's credentials: UNAUTHENTICATED, or (a blocking
    channel's login refused before the call could go out) gRPC's UNAVAILABLE from the credentials
    plugin, which carries the login's refusal."""
    details = str(error.details())  # type: ignore[attr-defined]
    if error.code() is grpc.StatusCode.UNAVAILABLE:  # type: ignore[attr-defined]
        return "SASL_AUTHENTICATION_FAILED: wrong username or password" in details
    return error.code() is grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]


def test_every_rpc_of_every_service_refuses_callers_who_are_not_authenticated(cluster: LocalCluster) -> None:
    """Before: anyone who reached a port could do what the cluster does. Now every RPC of every
    service answers UNAUTHENTICATED without a password, and a wrong one opens no session."""
    ca = _ca_only(cluster).ca_file.read_bytes()
    wrong = lanes.UserPassword("alice", "not-her-password")
    callers = {
        "anonymous": grpc.ssl_channel_credentials(ca),
        "wrong password": grpc.composite_channel_credentials(
            grpc.ssl_channel_credentials(ca), wrong.call_credentials()
        ),
        "unknown user": grpc.composite_channel_credentials(
            grpc.ssl_channel_credentials(ca), lanes.UserPassword("mallory", "x").call_credentials()
        ),
    }
    checked = 0
    for name, credentials in callers.items():
        for address, service in _services(cluster):
            with grpc.secure_channel(address, credentials) as channel:
                for method in service.methods:
                    with pytest.raises(grpc.RpcError) as refused:
                        call_empty(channel, method)
                    assert _unauthenticated(refused.value), (name, service.name, method.name)
                    checked += 1
    assert checked == 3 * sum(len(service.methods) for _, service in _services(cluster))
    with (
        lanes.Admin(_bootstrap(cluster), tls=_ca_only(cluster), credentials=None, request_timeout_ms=5000) as anonymous,
        pytest.raises(AuthenticationError, match="requires authentication"),
    ):
        anonymous.list_topics()
    with (
        lanes.Admin(_bootstrap(cluster), tls=_ca_only(cluster), credentials=wrong) as impostor,
        pytest.raises(AuthenticationError, match="wrong username or password"),
    ):
        impostor.list_topics()


def test_the_clusters_own_rpcs_are_refused_even_to_super_users(cluster: LocalCluster) -> None:
    """The metadata stream carries users' stored keys, registration makes a node: no ACL grants
    them and a super user does not pass; only nodes' certificates do. The health check stays open
    for probes, its Watch stream does not."""
    tls = _ca_only(cluster)
    admin = cluster.client_credentials
    assert admin is not None
    controller = cluster.controller
    assert controller is not None
    credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(tls.ca_file.read_bytes()), admin.call_credentials()
    )
    with grpc.secure_channel(controller.address, credentials) as channel:
        watch = controller_pb2.DESCRIPTOR.services_by_name["Controller"].methods_by_name["WatchMetadata"]
        with pytest.raises(grpc.RpcError) as refused:
            call_empty(channel, watch)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "nodes' only" in (refused.value.details() or "")
    anonymous = grpc.ssl_channel_credentials(tls.ca_file.read_bytes())
    with grpc.secure_channel(controller.address, anonymous) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        assert check(health_pb2.HealthCheckRequest(), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
        watch_health = channel.unary_stream(
            "/grpc.health.v1.Health/Watch",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as refused:
            next(iter(watch_health(health_pb2.HealthCheckRequest(), timeout=5)))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_passwords_go_over_tls_only(cluster: LocalCluster) -> None:
    with pytest.raises(ValueError, match="over TLS only"):
        lanes.Producer(_bootstrap(cluster), tls=None, credentials=ALICE).send("a", b"x")


def test_the_internal_listener_admits_the_clusters_nodes_only(cluster: LocalCluster, tmp_path: Path) -> None:
    """Nodes call each other on the internal listener with their certificates (mutual TLS). A
    certificate the cluster's CA signed for anyone else is refused there, whatever it calls."""
    directory = cluster.data_dir / "tls"
    outsider = issue(create_authority(directory), tmp_path, "mallory", hosts=(), server=False)
    internal = str(cluster.broker_processes[1].ready["internal_address"])
    with (
        grpc.secure_channel(internal, outsider.channel_credentials()) as channel,
        pytest.raises(grpc.RpcError) as refused,
    ):
        broker_pb2_grpc.BrokerStub(channel).Metadata(broker_pb2.MetadataRequest(), timeout=5)  # type: ignore[no-untyped-call]
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "internal listener" in (refused.value.details() or "")
    ca = _ca_only(cluster).ca_file.read_bytes()
    without_certificate = grpc.ssl_channel_credentials(ca)  # a password is not enough
    with grpc.secure_channel(internal, without_certificate) as channel, pytest.raises(grpc.RpcError) as refused:
        broker_pb2_grpc.BrokerStub(channel).Metadata(broker_pb2.MetadataRequest(), timeout=5)  # type: ignore[no-untyped-call]
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    node = TlsFiles(
        ca_file=directory / "ca.crt",
        cert_file=directory / "coordinator-1.crt",
        key_file=directory / "coordinator-1.key",
    )
    with grpc.secure_channel(internal, node.channel_credentials()) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        request = broker_pb2.ListOffsetsRequest(
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic="a",
                    partitions=[broker_pb2.ListOffsetsPartition(partition=0, spec=broker_pb2.OFFSET_SPEC_LATEST)],
                )
            ]
        )
        answer = stub.ListOffsets(request, timeout=5)  # what its role needs (a group's lag): answered
        assert answer.topics[0].partitions[0].error.code in (common_pb2.NONE, common_pb2.NOT_LEADER_OR_FOLLOWER)
        with pytest.raises(grpc.RpcError, match=r"may not call /lanes\.v1\.Broker/Metadata"):
            stub.Metadata(broker_pb2.MetadataRequest(), timeout=5)  # what it does not


def test_a_user_may_not_take_a_nodes_name(cluster: LocalCluster) -> None:
    with _admin(cluster) as admin, pytest.raises(LanesError, match="node's name") as refused:
        admin.set_user_password("broker-1", "its-password")
    assert refused.value.code is ErrorCode.UNACCEPTABLE_CREDENTIAL


# ---------------------------------------------------------------------------------------------
# authorization


def test_a_reader_of_topic_a_reads_it_and_nothing_more(cluster: LocalCluster) -> None:
    with lanes.Producer(_bootstrap(cluster), tls=cluster.client_tls, credentials=cluster.client_credentials) as admin:
        for index in range(10):
            admin.send("a", b"a-%d" % index)
            admin.send("b", b"b-%d" % index)
        admin.flush()
    assert sorted(_consume(cluster, "a", "readers-of-a", ALICE, 10)) == sorted(b"a-%d" % i for i in range(10))

    tls = _ca_only(cluster)
    with lanes.Producer(_bootstrap(cluster), tls=tls, credentials=ALICE, enable_idempotence=False) as producer:
        with pytest.raises(AuthorizationError, match="may not WRITE topic 'a'") as refused:
            producer.send("a", b"forged").result(10)
        assert refused.value.code is ErrorCode.TOPIC_AUTHORIZATION_FAILED
    with (
        lanes.Producer(_bootstrap(cluster), tls=tls, credentials=ALICE) as producer,
        pytest.raises(AuthorizationError, match="IDEMPOTENT_WRITE"),
    ):
        producer.send("a", b"forged").result(10)

    with _admin(cluster, ALICE) as alice:
        assert alice.list_topics() == ["a"], "topics alice may not DESCRIBE are left out"
        assert [topic.name for topic in alice.describe_topics()] == ["a"]
        with pytest.raises(AuthorizationError) as hidden:
            alice.describe_topic("b")
        assert hidden.value.code is ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert [group.group_id for group in alice.list_groups()] == ["readers-of-a"]
        with pytest.raises(AuthorizationError) as other_group:
            alice.describe_group("bobs-group")
        assert other_group.value.code is ErrorCode.GROUP_AUTHORIZATION_FAILED
        for forbidden in (
            lambda: alice.create_topic("mine"),
            lambda: alice.delete_topic("a"),
            lambda: alice.alter_configs("a", set={"retention.ms": "1"}),
            lambda: alice.create_acls([lanes.AclBinding.of("alice", "all", cluster=True)]),
            lambda: alice.set_user_password("alice", "a-new-one-please"),
            alice.describe_cluster,
        ):
            with pytest.raises(AuthorizationError):
                forbidden()
    assert _consume(cluster, "b", "readers-of-a", cluster.client_credentials, 10), "the group commits b too"  # type: ignore[arg-type]
    coordinator = cluster.coordinator_processes[1].address
    alices = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(tls.ca_file.read_bytes()), ALICE.call_credentials()
    )
    with grpc.secure_channel(coordinator, alices) as channel:
        stub = coordinator_pb2_grpc.GroupCoordinatorStub(channel)  # type: ignore[no-untyped-call]
        offsets = stub.FetchOffsets(coordinator_pb2.FetchOffsetsRequest(group_id="readers-of-a"), timeout=10)
        assert [topic.topic for topic in offsets.topics] == ["a"], "offsets of topics alice may not see are left out"
        resets = stub.ResetOffsets(
            coordinator_pb2.ResetOffsetsRequest(
                group_id="readers-of-a", to=coordinator_pb2.OffsetResetSpec(earliest=True), dry_run=True
            ),
            timeout=10,
        ).resets
        assert [r.topic for r in resets] == ["a"], "every committed topic is authorized; b she may not even see"
        # one answer per group and per topic, as Kafka: what she may see or do is done
        described = stub.DescribeGroups(
            coordinator_pb2.DescribeGroupsRequest(group_ids=["bobs-group", "readers-of-a"]), timeout=10
        )
        assert [(g.group_id, g.error.code) for g in described.groups] == [
            ("bobs-group", common_pb2.GROUP_AUTHORIZATION_FAILED),
            ("readers-of-a", common_pb2.NONE),
        ]
        commit = coordinator_pb2.CommitOffsetsRequest(group_id="readers-of-a", member_epoch=-1)
        for topic in ("b", "a"):
            commit.topics.add(topic=topic).partitions.add(partition=0, committed_offset=1, committed_leader_epoch=-1)
        committed = stub.CommitOffsets(commit, timeout=10)
        assert {t.topic: t.partitions[0].error.code for t in committed.topics} == {
            "b": common_pb2.TOPIC_AUTHORIZATION_FAILED,
            "a": common_pb2.NONE,
        }
    broker = cluster.broker_processes[1]
    channel_credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(tls.ca_file.read_bytes()), ALICE.call_credentials()
    )
    with grpc.secure_channel(broker.address, channel_credentials) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        listed = stub.Metadata(broker_pb2.MetadataRequest(), timeout=5)
        named = stub.Metadata(broker_pb2.MetadataRequest(topics=["b", "no-such-topic"]), timeout=5)
    assert [topic.name for topic in listed.topics] == ["a"]
    assert {topic.name: topic.error.code for topic in named.topics} == {
        "b": common_pb2.TOPIC_AUTHORIZATION_FAILED,
        "no-such-topic": common_pb2.TOPIC_AUTHORIZATION_FAILED,  # existence is not told either
    }


def test_deny_wins_and_one_request_answers_per_topic(cluster: LocalCluster) -> None:
    """Bob may write every ``team-`` topic but ``team-secret``. One produce request naming both
    writes ``team-x`` and answers ``team-secret`` TOPIC_AUTHORIZATION_FAILED; ListOffsets and
    DeleteRecords answer per topic likewise."""
    tls = _ca_only(cluster)
    with lanes.Producer(_bootstrap(cluster), tls=tls, credentials=BOB, enable_idempotence=False) as producer:
        producer.send("team-x", b"fine").result(10)
        with pytest.raises(AuthorizationError, match="team-secret"):
            producer.send("team-secret", b"leak").result(10)
    leaders = {}
    with _admin(cluster) as admin:
        for topic in ("team-x", "team-secret"):
            leaders[topic] = admin.describe_topic(topic).partitions[0].leader
    leader = leaders["team-x"]
    request = produce_request(
        "team-x", 0, encode_batch([Record(0, 0, None, b"both")]), acks=common_pb2.ACKS_ALL, timeout_ms=5000
    )
    secret = request.topics.add(topic="team-secret").partitions.add(partition=0)
    secret.records = encode_batch([Record(0, 0, None, b"both")])
    credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(tls.ca_file.read_bytes()), BOB.call_credentials()
    )
    with grpc.secure_channel(cluster.broker_processes[leader].address, credentials) as channel:
        answer = broker_pb2_grpc.BrokerStub(channel).Produce(request, timeout=10)  # type: ignore[no-untyped-call]
    codes = {topic.topic: topic.partitions[0].error.code for topic in answer.topics}
    assert codes["team-secret"] == common_pb2.TOPIC_AUTHORIZATION_FAILED
    if leaders["team-secret"] == leader:
        assert codes["team-x"] == common_pb2.NONE
    else:  # the other partition's leader is elsewhere: not this broker's to write
        assert codes["team-x"] in (common_pb2.NONE, common_pb2.NOT_LEADER_OR_FOLLOWER)

    # ListOffsets and DeleteRecords answer per topic too (Kafka's rule): bob may DESCRIBE the
    # team- topics he writes, not "a"; he may DELETE records of none.
    listing = broker_pb2.ListOffsetsRequest()
    for topic in ("team-x", "a"):
        listing.topics.add(topic=topic).partitions.add(
            partition=0, spec=broker_pb2.OFFSET_SPEC_LATEST, current_leader_epoch=-1
        )
    deleting = broker_pb2.DeleteRecordsRequest(timeout_ms=5_000)
    deleting.topics.add(topic="team-x").partitions.add(partition=0, offset=0)
    with grpc.secure_channel(cluster.broker_processes[leader].address, credentials) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        listed = stub.ListOffsets(listing, timeout=10)
        deleted = stub.DeleteRecords(deleting, timeout=10)
    listed_codes = {topic.topic: topic.partitions[0].error.code for topic in listed.topics}
    assert listed_codes["a"] == common_pb2.TOPIC_AUTHORIZATION_FAILED
    assert listed_codes["team-x"] in (common_pb2.NONE, common_pb2.NOT_LEADER_OR_FOLLOWER)
    refused = deleted.topics[0].partitions[0]
    assert (refused.error.code, refused.low_watermark) == (common_pb2.TOPIC_AUTHORIZATION_FAILED, -1)


def test_acl_and_password_changes_apply_to_the_next_call(cluster: LocalCluster) -> None:
    assert _consume(cluster, "b", "bobs-readers", BOB, 1), "bob reads b"
    with _admin(cluster) as admin:
        removed = admin.delete_acls([lanes.AclBinding.of("bob", "read", topic="b")])
        assert [acl.describe() for acl in removed] == ["User:bob ALLOW READ on topic 'b' (literal) from *"]
    wait_until_brokers_apply_metadata(cluster)
    with pytest.raises(AuthorizationError):
        _consume(cluster, "b", "bobs-readers", BOB, 1)
    with _admin(cluster) as admin:
        admin.set_user_password("bob", "bob-secret-renewed")
    wait_until_brokers_apply_metadata(cluster)
    with _admin(cluster, BOB) as stale, pytest.raises(AuthenticationError):
        stale.list_topics()
    with _admin(cluster, lanes.UserPassword("bob", "bob-secret-renewed")) as renewed:
        assert "team-x" in renewed.list_topics()
        assert "b" not in renewed.list_topics()
    with _admin(cluster) as admin:
        admin.delete_user("bob")
    wait_until_brokers_apply_metadata(cluster)
    with _admin(cluster) as admin:
        assert [user.name for user in admin.describe_users()] == ["admin", "alice"]
    with _admin(cluster, lanes.UserPassword("bob", "bob-secret-renewed")) as gone, pytest.raises(AuthenticationError):
        gone.list_topics()


def test_a_following_fetch_stream_sends_nothing_written_after_its_read_acl_went(cluster: LocalCluster) -> None:
    """A caught-up consumer's FetchStream long-polls again after each answer (decision 0052); the
    guard checks the ACLs in force before each answer after the first, so a stream whose READ
    was deleted while it waited ends with TOPIC_AUTHORIZATION_FAILED instead of sending what was
    written after (as each Kafka fetch is authorized on its own), and the next call is refused
    that topic."""
    carol = lanes.UserPassword("carol", "carol-secret-3")
    readable = lanes.AclBinding.of("carol", "read", topic="followed-by-carol")
    with _admin(cluster) as admin:
        admin.create_topic("followed-by-carol", partitions=1, replication_factor=2)
        admin.set_user_password(carol.username, carol.password)
        admin.create_acls([readable])
        leader_id = admin.describe_topic("followed-by-carol").partitions[0].leader
        leader = next(f"{b.host}:{b.port}" for b in admin.describe_cluster().brokers if b.broker_id == leader_id)
    wait_until_brokers_apply_metadata(cluster)
    producer = lanes.Producer(_bootstrap(cluster), tls=cluster.client_tls, credentials=cluster.client_credentials)

    def write(value: bytes) -> None:
        producer.send("followed-by-carol", value, partition=0).result(timeout=30)

    write(b"before")
    asked = broker_pb2.FetchRequest(
        max_wait_ms=20_000,
        min_bytes=1,
        max_bytes=1 << 20,
        follow=True,
        topics=[
            broker_pb2.FetchTopic(
                topic="followed-by-carol",
                partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)],
            )
        ],
    )
    tls = _ca_only(cluster).channel_credentials()
    with (
        producer,
        grpc.secure_channel(leader, grpc.composite_channel_credentials(tls, carol.call_credentials(tls))) as channel,
    ):
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        answers = stub.FetchStream(asked, timeout=60)

        def next_values() -> list[bytes]:
            part = next(answers).topics[0].partitions[0]
            assert part.error.code == 0, part.error
            return [record.value or b"" for batch in decode_batches(part.records) for record in batch.records]

        assert next_values() == [b"before"], "the first answer"
        write(b"while-allowed")
        assert next_values() == [b"while-allowed"], "the stream followed: a second answer, checked and allowed"
        with _admin(cluster) as admin:
            admin.delete_acls([readable])
        wait_until_brokers_apply_metadata(cluster)
        write(b"after")
        with pytest.raises(grpc.RpcError) as ended:
            next_values()
        assert ended.value.code() is grpc.StatusCode.PERMISSION_DENIED  # type: ignore[attr-defined]
        assert "TOPIC_AUTHORIZATION_FAILED" in str(ended.value.details())  # type: ignore[attr-defined]
        asked.topics[0].partitions[0].fetch_offset = 2
        refused = next(stub.FetchStream(asked, timeout=60)).topics[0].partitions[0]
        assert refused.error.code == common_pb2.TOPIC_AUTHORIZATION_FAILED, "the next call is refused the topic"


def test_admin_requests_are_answered_per_resource(cluster: LocalCluster) -> None:
    """As Kafka's admin requests: each named resource is authorized on its own, and a refused one
    is answered in its place (TOPIC_AUTHORIZATION_FAILED) while the others are done."""
    carol = lanes.UserPassword("carol", "carol-secret-3")
    with _admin(cluster) as admin:
        admin.create_topic("carols-scratch", partitions=1, replication_factor=1)
        admin.set_user_password(carol.username, carol.password)
        admin.create_acls(
            [
                lanes.AclBinding.of("carol", "delete", topic="carols-scratch"),
                lanes.AclBinding.of("carol", "describe_configs", topic="b"),
            ]
        )
    wait_until_brokers_apply_metadata(cluster)
    with _admin(cluster, carol) as client:

        def call(rpc: Any) -> Any:
            return _loop.run(client._admin._call(rpc))  # raw requests naming several resources

        deleted = call(
            lambda stub: stub.DeleteTopics(
                controller_pb2.DeleteTopicsRequest(names=["a", "carols-scratch"]), timeout=10
            )
        )
        assert [(t.name, t.error.code) for t in deleted.topics] == [
            ("a", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            ("carols-scratch", ErrorCode.NONE),
        ]
        assert "carol may not DELETE topic 'a'" in deleted.topics[0].error.message
        resources = [
            controller_pb2.DescribeConfigsResource(resource_type=common_pb2.CONFIG_RESOURCE_TYPE_TOPIC, resource_name=n)
            for n in ("a", "b")
        ]
        described = call(
            lambda stub: stub.DescribeConfigs(controller_pb2.DescribeConfigsRequest(resources=resources), timeout=10)
        )
        assert [(r.resource_name, r.error.code) for r in described.results] == [
            ("a", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            ("b", ErrorCode.NONE),
        ]
        assert described.results[1].configs, "the allowed topic's configs are there"
    with _admin(cluster) as admin:
        assert "carols-scratch" not in admin.list_topics()
        assert "a" in admin.list_topics()
