"""Issue #36: authorization without holes, against a real secure cluster (``LocalCluster(tls=True,
auth=True)``), as Kafka's StandardAuthorizer decides: DENY always wins, topics a caller may not
DESCRIBE are never revealed, and what a request resolves (the partitions a group committed, the
topics a pattern matches) is authorized as if it had been named.

The cast: ``mallory`` may READ every topic (``*``) but is DENIED READ on ``secret`` and DESCRIBE
(and READ) on ``hidden``; she owns the groups ``m-*``. ``wendy`` may WRITE ``w-*`` topics but is
DENIED WRITE on every topic (``*``).
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc
import pytest

import lanes
from lanes.cli.watch import scrape_text
from lanes.errors import AuthorizationError, ErrorCode
from lanes.local.cluster import LocalCluster
from lanes.protocol.records import Record, encode_batch
from lanes.rpc.tls import TlsFiles
from lanes.rpc.wire import produce_request
from lanes.runtime.access.access_rules import NODE_RULES, RULES
from lanes.security.acls import ResourceType
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, controller_pb2_grpc, coordinator_pb2
from tests.integration.processes import channel_options, running_cluster, wait_until_brokers_apply_metadata
from tests.security.raw import call_empty

MALLORY = lanes.UserPassword("mallory", "mallory-secret-1")
WENDY = lanes.UserPassword("wendy", "wendy-secret-12")
TOPICS = ("secret", "hidden", "m-own")
T = TypeVar("T")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("audit"), brokers=1, tls=True, auth=True) as started:
        with _admin(started) as admin:
            for topic in TOPICS:
                admin.create_topic(topic, partitions=2, replication_factor=1)
            admin.set_user_password(MALLORY.username, MALLORY.password)
            admin.set_user_password(WENDY.username, WENDY.password)
            admin.create_acls(
                [
                    lanes.AclBinding.of("mallory", "read", topic="*"),
                    lanes.AclBinding.of("mallory", "read", topic="secret", deny=True),
                    lanes.AclBinding.of("mallory", "read", topic="hidden", deny=True),
                    lanes.AclBinding.of("mallory", "describe", topic="hidden", deny=True),
                    lanes.AclBinding.of("mallory", "all", group="m-", prefixed=True),
                    lanes.AclBinding.of("wendy", "write", topic="w-", prefixed=True),
                    lanes.AclBinding.of("wendy", "write", topic="*", deny=True),
                ]
            )
        with lanes.Producer(_bootstrap(started), tls=started.client_tls, credentials=started.client_credentials) as p:
            for topic in TOPICS:
                for partition in (0, 1):
                    for i in range(3):
                        p.send(topic, f"{topic}-{i}".encode(), partition=partition)
            p.flush()
        wait_until_brokers_apply_metadata(started)
        yield started


def _bootstrap(cluster: LocalCluster) -> str:
    return str(cluster.describe()["bootstrap"])


def _admin(cluster: LocalCluster, credentials: lanes.UserPassword | None = None) -> lanes.Admin:
    return lanes.Admin(
        _bootstrap(cluster), tls=cluster.client_tls, credentials=credentials or cluster.client_credentials
    )


def _eventually(check: Callable[[], T], timeout_s: float = 20) -> T:
    """``check()``'s first answer that raises no AssertionError (ACLs reach every node a moment
    after the controller commits them)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _channel(address: str, user: lanes.UserPassword) -> grpc.Channel:
    tls = TlsFiles.from_environment()
    assert tls is not None, "a secure cluster"
    credentials = grpc.composite_channel_credentials(tls.channel_credentials(), user.call_credentials())
    return grpc.secure_channel(address, credentials, options=channel_options([]))


def _commit(cluster: LocalCluster, group: str, offsets: dict[TopicPartition, int]) -> None:
    """Commit ``offsets`` for ``group`` as the administrator."""
    with _admin(cluster) as admin:
        for partition, offset in offsets.items():
            resets = admin.reset_offsets(group, f"offset:{offset}", partitions=[partition], dry_run=False)
            assert [r.error for r in resets] == [""], resets


def _committed(cluster: LocalCluster, group: str) -> dict[TopicPartition, int]:
    with _admin(cluster) as admin:
        described = admin.describe_group(group, include_offsets=True)
    return {TopicPartition(o.topic, o.partition): o.committed_offset for o in described.offsets}


# ---------------------------------------------------------------------------------------------
# 1. group offsets: what a request resolves is authorized topic by topic


def test_a_reset_naming_no_partition_touches_no_topic_the_caller_may_not_read(cluster: LocalCluster) -> None:
    committed = {
        TopicPartition("secret", 1): 2,
        TopicPartition("hidden", 0): 2,
        TopicPartition("m-own", 0): 2,
    }
    _commit(cluster, "m-shared", committed)
    with _admin(cluster, MALLORY) as mallory:
        resets = {(r.topic, r.partition): r for r in mallory.reset_offsets("m-shared", "earliest", dry_run=False)}
    assert (resets[("m-own", 0)].new_offset, resets[("m-own", 0)].error) == (0, "")
    refused = resets[("secret", 1)]
    assert (refused.new_offset, refused.previous_offset) == (-1, -1)
    assert "may not READ topic 'secret'" in refused.error
    assert ("hidden", 0) not in resets, "a topic she may not DESCRIBE is not even named"
    after = _committed(cluster, "m-shared")
    assert (after[TopicPartition("secret", 1)], after[TopicPartition("hidden", 0)]) == (2, 2)
    assert after[TopicPartition("m-own", 0)] == 0

    with _admin(cluster, MALLORY) as mallory:  # named, DENY wins as before
        with pytest.raises(AuthorizationError, match="secret"):
            mallory.reset_offsets("m-shared", "earliest", partitions=[TopicPartition("secret", 1)], dry_run=False)
        with pytest.raises(AuthorizationError, match="secret"):
            mallory.delete_offsets("m-shared", [TopicPartition("secret", 1)])
        assert mallory.delete_offsets("m-shared", []) == {}, "naming nothing deletes nothing"
    assert _committed(cluster, "m-shared")[TopicPartition("secret", 1)] == 2


# ---------------------------------------------------------------------------------------------
# 2. pattern subscriptions resolve over what the member may DESCRIBE


def test_a_pattern_subscription_is_never_assigned_a_topic_the_member_may_not_describe(
    cluster: LocalCluster,
) -> None:
    with lanes.Consumer(
        _bootstrap(cluster),
        group_id="m-pattern",
        tls=cluster.client_tls,
        credentials=MALLORY,
        auto_offset_reset="earliest",
    ) as consumer:
        consumer.subscribe(pattern=".*")

        def assigned_topics() -> set[str]:
            consumer.poll(200)
            topics = {partition.topic for partition in consumer.assignment()}
            assert "m-own" in topics, topics
            return topics

        topics = _eventually(assigned_topics)
    assert "hidden" not in topics, "hidden matches .* but mallory may not DESCRIBE it"
    assert "secret" in topics, "secret she may DESCRIBE (only READ is denied: its fetches are refused)"
    with _admin(cluster) as admin:
        members = admin.describe_group("m-pattern", include_offsets=False).members
    assert all(p.topic != "hidden" for member in members for p in member.assignment)


# ---------------------------------------------------------------------------------------------
# 3. DescribeGroups shows the offsets FetchOffsets shows


def test_describing_a_group_shows_no_offsets_of_topics_the_caller_may_not_describe(cluster: LocalCluster) -> None:
    _commit(cluster, "m-described", {TopicPartition("hidden", 1): 1, TopicPartition("m-own", 1): 1})
    with _admin(cluster, MALLORY) as mallory:
        described = mallory.describe_group("m-described", include_offsets=True)
    assert {o.topic for o in described.offsets} == {"m-own"}
    assert {o.topic for o in _admin(cluster).describe_group("m-described").offsets} == {"hidden", "m-own"}


def test_a_group_whose_member_reads_a_topic_the_caller_may_not_see_is_refused_as_kafka_refuses_it(
    cluster: LocalCluster,
) -> None:
    """A member's subscription and assignment would name ``hidden``: the group is answered
    TOPIC_AUTHORIZATION_FAILED (Kafka 4.x's ConsumerGroupDescribe), naming no topic."""
    with lanes.Consumer(
        _bootstrap(cluster), group_id="m-mixed", tls=cluster.client_tls, credentials=cluster.client_credentials
    ) as member:
        member.subscribe(["hidden"])

        def assigned() -> None:
            member.poll(200)
            assert member.assignment()

        _eventually(assigned)
        with _admin(cluster, MALLORY) as mallory, pytest.raises(AuthorizationError) as refused:
            mallory.describe_group("m-mixed", include_offsets=True)
    assert refused.value.code is ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert "hidden" not in refused.value.message


# ---------------------------------------------------------------------------------------------
# 5. InitProducerId weighs DENY and answers with Kafka's codes


def test_producer_ids_are_refused_when_a_deny_covers_every_allowed_topic(cluster: LocalCluster) -> None:
    with _channel(cluster.broker_processes[1].address, WENDY) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.InitProducerId(broker_pb2.InitProducerIdRequest(), timeout=10)
        assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
        assert ErrorCode.CLUSTER_AUTHORIZATION_FAILED.name in str(refused.value.details())
        with pytest.raises(grpc.RpcError) as refused:
            stub.InitProducerId(broker_pb2.InitProducerIdRequest(transactional_id="wendys-tx"), timeout=10)
        assert ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.name in str(refused.value.details())
    with (  # READ only: no WRITE anywhere
        _channel(cluster.broker_processes[1].address, MALLORY) as channel,
        pytest.raises(grpc.RpcError, match=ErrorCode.CLUSTER_AUTHORIZATION_FAILED.name),
    ):
        broker_pb2_grpc.BrokerStub(channel).InitProducerId(broker_pb2.InitProducerIdRequest(), timeout=10)


# ---------------------------------------------------------------------------------------------
# 6. refusals reveal nothing


def test_deleting_a_hidden_topic_by_id_is_answered_as_an_unknown_id_is(cluster: LocalCluster) -> None:
    with _admin(cluster) as admin:
        hidden_id = admin.describe_topic("hidden").topic_id
    controller = cluster.controller
    assert controller is not None
    with _channel(controller.address, MALLORY) as channel:
        stub = controller_pb2_grpc.ControllerStub(channel)

        def answer(topic_id: str) -> controller_pb2.DeletableTopicResult:
            return stub.DeleteTopics(controller_pb2.DeleteTopicsRequest(topic_ids=[topic_id]), timeout=10).topics[0]

        hidden, unknown = answer(hidden_id), answer("0" * 22)
    assert "hidden" not in str(hidden)
    assert hidden.error.code == unknown.error.code == ErrorCode.UNKNOWN_TOPIC_ID
    assert hidden.error.message.replace(hidden_id, "ID") == unknown.error.message.replace("0" * 22, "ID")
    with _admin(cluster) as admin:
        assert "hidden" in admin.list_topics()


# ---------------------------------------------------------------------------------------------
# 4. a node's certificate does what its role needs and nothing more


def _node_channel(cluster: LocalCluster, process: str, node: str) -> grpc.Channel:
    """A channel to ``process``'s internal listener with ``node``'s certificate."""
    directory = cluster.data_dir / "tls"
    files = TlsFiles(
        ca_file=directory / "ca.crt", cert_file=directory / f"{node}.crt", key_file=directory / f"{node}.key"
    )
    processes = {
        "broker": cluster.broker_processes[1],
        "controller": cluster.controller,
        "coordinator": cluster.coordinator_processes[1],
    }
    running = processes[process]
    assert running is not None
    return grpc.secure_channel(str(running.ready["internal_address"]), files.channel_credentials())


def _refused_to_node(call: Callable[[], object]) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "what its role needs" in str(refused.value.details())


def test_a_nodes_certificate_does_what_its_role_needs_and_nothing_more(cluster: LocalCluster) -> None:
    produce = produce_request(
        "secret", 0, encode_batch([Record(0, 0, None, b"a coordinator's")]), acks=common_pb2.ACKS_ALL, timeout_ms=5000
    )
    with _node_channel(cluster, "broker", "coordinator-1") as channel:
        broker = broker_pb2_grpc.BrokerStub(channel)
        _refused_to_node(lambda: broker.Produce(produce, timeout=10))
        _refused_to_node(lambda: broker.Metadata(broker_pb2.MetadataRequest(), timeout=10))
        fetch_secret = broker_pb2.FetchRequest(
            max_wait_ms=0,
            topics=[broker_pb2.FetchTopic(topic="secret", partitions=[broker_pb2.FetchPartition(partition=0)])],
        )
        _refused_to_node(lambda: broker.Fetch(fetch_secret, timeout=10))
        offsets = broker_pb2.ListOffsetsRequest(
            topics=[
                broker_pb2.ListOffsetsTopic(topic="secret", partitions=[broker_pb2.ListOffsetsPartition(partition=0)])
            ]
        )
        assert broker.ListOffsets(offsets, timeout=10).topics, "a coordinator reads where offsets lie (lag)"
    with _node_channel(cluster, "controller", "coordinator-1") as channel:
        controller = controller_pb2_grpc.ControllerStub(channel)
        grant_all = controller_pb2.CreateAclsRequest(
            creations=[
                common_pb2.AclBinding(
                    resource_type=common_pb2.ACL_RESOURCE_TYPE_CLUSTER,
                    resource_name="kafka-cluster",
                    pattern_type=common_pb2.ACL_PATTERN_TYPE_LITERAL,
                    principal="User:mallory",
                    host="*",
                    operation=common_pb2.ACL_OPERATION_ALL,
                    permission=common_pb2.ACL_PERMISSION_ALLOW,
                )
            ]
        )
        _refused_to_node(lambda: controller.CreateAcls(grant_all, timeout=10))
        _refused_to_node(
            lambda: controller.RegisterBroker(controller_pb2.RegisterBrokerRequest(broker_id=1), timeout=10)
        )
    with _node_channel(cluster, "controller", "broker-1") as channel:
        controller = controller_pb2_grpc.ControllerStub(channel)
        _refused_to_node(
            lambda: controller.AlterUserScramCredentials(controller_pb2.AlterUserScramCredentialsRequest(), timeout=10)
        )
        _refused_to_node(
            lambda: controller.AddController(
                controller_pb2.AddControllerRequest(controller=common_pb2.Node(node_id=9, host="127.0.0.1", port=1)),
                timeout=10,
            )
        )
        _refused_to_node(lambda: controller.DescribeAcls(controller_pb2.DescribeAclsRequest(), timeout=10))
    with _admin(cluster) as admin:
        granted = [acl for acl in admin.describe_acls() if acl.resource_type is ResourceType.CLUSTER]
    assert not [acl for acl in granted if acl.principal == "User:mallory"]


# ---------------------------------------------------------------------------------------------
# 8. data at rest is the owner's only


def test_what_the_nodes_write_is_readable_by_their_owner_only(cluster: LocalCluster) -> None:
    """The metadata log and snapshots (users' stored keys), segments, checkpoints, keys and
    passwords, logs: files 0600, directories 0700 (certificates are not secrets)."""
    assert cluster.data_dir.stat().st_mode & 0o077 == 0
    opened = [
        path
        for path in cluster.data_dir.rglob("*")
        if path.suffix not in (".crt", ".json") and path.stat().st_mode & 0o077
    ]
    assert not opened, [f"{path.relative_to(cluster.data_dir)}: {path.stat().st_mode & 0o777:o}" for path in opened]
    assert any("metadata" in str(path) for path in cluster.data_dir.rglob("*")), "the metadata log was looked at"


# ---------------------------------------------------------------------------------------------
# 7. metrics answer those with the token only


def test_metrics_answer_only_a_scrape_with_the_token_and_health_answers_anyone(cluster: LocalCluster) -> None:
    token_file = cluster.metrics_token_file
    assert token_file is not None
    assert token_file.stat().st_mode & 0o077 == 0
    token = token_file.read_text().strip()
    described = cluster.describe()
    addresses = [
        described["controllers"][0]["metrics"],
        described["brokers"][0]["metrics"],
        described["coordinators"][0]["metrics"],
    ]
    for address in addresses:
        for header in ({}, {"Authorization": "Bearer not-the-token-at-all"}, {"Authorization": f"Basic {token}"}):
            request = urllib.request.Request(f"http://{address}/metrics", headers=header)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=5)
            assert refused.value.code == 401, address
            assert b"secret" not in refused.value.read()
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=5) as health:
            assert health.status == 200
        assert "lanes_" in scrape_text(address, token=token)
    brokers = scrape_text(described["brokers"][0]["metrics"], token=token)
    assert 'topic="secret"' in brokers, "a local cluster's operator asked for named series"


# ---------------------------------------------------------------------------------------------
# every RPC of every service, walked


_SERVICES = {
    "broker": [broker_pb2.DESCRIPTOR.services_by_name["Broker"]],
    "controller": [
        controller_pb2.DESCRIPTOR.services_by_name["Controller"],
        controller_pb2.DESCRIPTOR.services_by_name["ControllerQuorum"],
    ],
    "coordinator": [coordinator_pb2.DESCRIPTOR.services_by_name["GroupCoordinator"]],
}


def _address(cluster: LocalCluster, process: str, listener: str = "address") -> str:
    running = {
        "broker": cluster.broker_processes[1],
        "controller": cluster.controller,
        "coordinator": cluster.coordinator_processes[1],
    }[process]
    assert running is not None
    return running.address if listener == "address" else str(running.ready["internal_address"])


def _answer_or_refusal(channel: grpc.Channel, method: Any) -> tuple[Any, grpc.RpcError | None]:
    try:
        return call_empty(channel, method), None
    except grpc.RpcError as refused:
        return None, refused


_WALKERS = {
    "nobody": [],  # no ACL at all
    "other-prefix": [  # everything, on another prefix
        lanes.AclBinding.of("other-prefix", "all", topic="o-", prefixed=True),
        lanes.AclBinding.of("other-prefix", "all", group="o-", prefixed=True),
    ],
    "denied": [  # everything on every topic and group, and every one of them denied
        lanes.AclBinding.of("denied", "all", topic="*"),
        lanes.AclBinding.of("denied", "all", group="*"),
        lanes.AclBinding.of("denied", "all", topic="*", deny=True),
        lanes.AclBinding.of("denied", "all", group="*", deny=True),
    ],
}


@pytest.mark.parametrize("user", sorted(_WALKERS))
def test_every_rpc_tells_a_user_without_rights_here_nothing(cluster: LocalCluster, user: str) -> None:
    """A user with no ACL, one with ACLs on another prefix, one whose ACLs are all denied: every
    RPC of every service with an empty request is refused with an authorization error (Kafka's
    codes), or answered with nothing of the cluster's topics and groups in it (a listing trimmed
    to what it may see: nothing)."""
    nobody = lanes.UserPassword(user, f"{user}-secret-1")
    with _admin(cluster) as admin:
        admin.set_user_password(nobody.username, nobody.password)
        if _WALKERS[user]:
            admin.create_acls(_WALKERS[user])
    wait_until_brokers_apply_metadata(cluster)
    walked = 0
    for process, services in _SERVICES.items():
        with _channel(_address(cluster, process), nobody) as channel:
            for service in services:
                for method in service.methods:
                    name = f"/{service.full_name}/{method.name}"
                    answer, refused = _answer_or_refusal(channel, method)
                    if refused is not None:
                        assert refused.code() is grpc.StatusCode.PERMISSION_DENIED, (name, refused)  # type: ignore[attr-defined]
                        assert str(refused.details()).split(":")[0].endswith("AUTHORIZATION_FAILED"), name  # type: ignore[attr-defined]
                    else:
                        shown = str(answer)
                        assert not [t for t in (*TOPICS, "m-shared", "__consumer_offsets") if t in shown], (name, shown)
                        assert not RULES[name].nodes_only, name
                    walked += 1
    assert walked == sum(len(s.methods) for services in _SERVICES.values() for s in services)


@pytest.mark.parametrize("node", ["broker-1", "coordinator-1", "controller-0"])
def test_every_rpc_a_nodes_role_does_not_need_is_refused_to_its_certificate(cluster: LocalCluster, node: str) -> None:
    """Each node's certificate, on every service's internal listener, every RPC its role does not
    need (``NODE_RULES``): refused before anything is done. What its role needs is what the
    cluster runs on, proved by every other test."""
    refused_count = 0
    for process, services in _SERVICES.items():
        with _node_channel(cluster, process, node) as channel:
            for service in services:
                for method in service.methods:
                    name = f"/{service.full_name}/{method.name}"
                    if name in NODE_RULES[node.rsplit("-", 1)[0]]:
                        continue
                    _refused_to_node(lambda method=method: call_empty(channel, method))  # type: ignore[misc]
                    refused_count += 1
    assert refused_count > 30, "most of the cluster's RPCs are none of a node's business"
