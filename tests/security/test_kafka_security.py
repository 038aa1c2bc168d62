"""Issue #38: the Kafka listener of a secure cluster (``LocalCluster(tls=True, auth=True, kafka=True)``)
holds Kafka's clients to what the gRPC face holds Lanes' clients to: TLS only, SASL (SCRAM against
Lanes' users) before anything but ApiVersions, the same ACLs per topic, the same byte-rate quotas,
and a session that ends when the user's password changes."""

from __future__ import annotations

import datetime
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kio.schema.errors import ErrorCode as KafkaError

import lanes
from lanes.kafka.codec import build
from lanes.local.cluster import LocalCluster
from lanes.protocol.records import Record, encode_batch
from lanes.rpc.tls import TlsFiles
from lanes.security.scram_exchange import ClientExchange
from tests.integration.kafka_wire import connect, exactly, nested, request, response
from tests.integration.processes import running_cluster, wait_until_brokers_apply_metadata

WRITER = lanes.UserPassword("kafka-writer", "writer-password-1")
OUTSIDER = lanes.UserPassword("kafka-outsider", "outsider-password-2")
CHANGING = lanes.UserPassword("kafka-changing", "changing-password-3")
SLOW = lanes.UserPassword("kafka-slow", "slow-password-4")
#: the slow user's producer byte rate (within the first second Kafka's measure spans ten: 120 KB
#: is 12 KB/s there, 2 s owed)
QUOTA_BYTES_PER_S = 10_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("kafka-sasl"), brokers=1, tls=True, auth=True, kafka=True) as up:
        with lanes.Admin(str(up.describe()["bootstrap"])) as admin:
            for topic in ("payments", "secret"):
                admin.create_topic(topic, partitions=1, replication_factor=1)
            admin.set_user_password(WRITER.username, WRITER.password, mechanism="SCRAM-SHA-512")
            admin.set_user_password(OUTSIDER.username, OUTSIDER.password, mechanism="SCRAM-SHA-256")
            admin.set_user_password(CHANGING.username, CHANGING.password, mechanism="SCRAM-SHA-512")
            admin.set_user_password(SLOW.username, SLOW.password, mechanism="SCRAM-SHA-512")
            admin.create_acls(
                [
                    lanes.AclBinding.of(user, operation, topic="payments")
                    for user in (WRITER.username, SLOW.username, CHANGING.username)
                    for operation in ("write", "read", "describe")
                ]
            )
            admin.set_quota("producer_byte_rate", QUOTA_BYTES_PER_S, user=SLOW.username)
        wait_until_brokers_apply_metadata(up)
        yield up


def _kafka(cluster: LocalCluster) -> str:
    return str(cluster.describe()["kafka_bootstrap"])


def _login(connection: socket.socket, user: lanes.UserPassword, mechanism: str = "SCRAM-SHA-512") -> Any:
    """SaslHandshake, then SCRAM in two SaslAuthenticate steps; the last answer."""
    connection.sendall(request(17, 1, 1, mechanism=mechanism))
    _, handshake = response(connection, 17, 1)
    assert handshake.error_code == KafkaError.none, handshake
    exchange = ClientExchange(mechanism, user.username, user.password, os.urandom(16).hex())
    connection.sendall(request(36, 2, 2, auth_bytes=exchange.first().encode()))
    _, first = response(connection, 36, 2)
    if first.error_code != KafkaError.none:
        return first
    connection.sendall(request(36, 2, 3, auth_bytes=exchange.final(first.auth_bytes.decode()).encode()))
    _, final = response(connection, 36, 2)
    if final.error_code == KafkaError.none:
        exchange.verify(final.auth_bytes.decode())  # the broker holds the user's keys: it is the cluster
    return final


def _closed(connection: socket.socket) -> bool:
    try:
        exactly(connection, 1)
    except (ConnectionError, OSError):
        return True
    return False


def _metadata(connection: socket.socket, *names: str) -> Any:
    topics = None if not names else tuple(build(nested(3, 12, "MetadataRequestTopic"), name=n) for n in names)
    connection.sendall(request(3, 12, 9, topics=topics))
    return response(connection, 3, 12)[1]


def _produce(connection: socket.socket, topic: str, value: bytes = b"v", correlation_id: int = 20) -> Any:
    batch = encode_batch([Record(0, int(time.time() * 1000), b"k", value)])
    partition = build(nested(0, 9, "PartitionProduceData"), index=0, records=batch)
    data = build(nested(0, 9, "TopicProduceData"), name=topic, partition_data=(partition,))
    connection.sendall(
        request(0, 9, correlation_id, acks=-1, timeout=datetime.timedelta(seconds=10), topic_data=(data,))
    )
    return response(connection, 0, 9)[1]


def _fetch(connection: socket.socket, topic: str) -> Any:
    partition = build(
        nested(1, 12, "FetchPartition"), partition=0, fetch_offset=0, partition_max_bytes=1 << 20,
        current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1,
    )  # fmt: skip
    topics = (build(nested(1, 12, "FetchTopic"), topic=topic, partitions=(partition,)),)
    connection.sendall(
        request(1, 12, 50, replica_id=-1, max_wait=datetime.timedelta(milliseconds=100), min_bytes=1,
                max_bytes=1 << 20, session_epoch=-1, topics=topics)
    )  # fmt: skip
    return response(connection, 1, 12)[1]


def test_only_api_versions_and_sasl_are_answered_before_a_login(cluster: LocalCluster) -> None:
    host, port = _kafka(cluster).rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as plain:  # plaintext to a TLS listener
        plain.sendall(request(18, 3, 1, client_software_name="tests", client_software_version="1"))
        assert _closed(plain), "a plaintext request was answered"
    with connect(_kafka(cluster)) as connection:
        connection.sendall(request(18, 3, 1, client_software_name="tests", client_software_version="1"))
        _, versions = response(connection, 18, 3)
        served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert served[17] == (0, 1)
        assert served[36] == (0, 2)
        connection.sendall(request(3, 12, 2, topics=None))
        assert _closed(connection), "a Metadata request before a login was answered"


def test_a_scram_login_then_the_acls_decide_per_topic(cluster: LocalCluster) -> None:
    with connect(_kafka(cluster)) as connection:
        final = _login(connection, WRITER)
        assert final.error_code == KafkaError.none
        assert final.session_lifetime.total_seconds() > 60
        listed = {t.name for t in _metadata(connection).topics}
        assert "payments" in listed
        assert "secret" not in listed
        secret = _metadata(connection, "secret", "never-created").topics
        assert [t.error_code for t in secret] == [KafkaError.topic_authorization_failed] * 2, "no existence leak"
        refused = _produce(connection, "secret").responses[0].partition_responses[0]
        assert (refused.error_code, refused.base_offset) == (KafkaError.topic_authorization_failed, -1)
        written = _produce(connection, "payments").responses[0].partition_responses[0]
        assert written.error_code == KafkaError.none
        assert written.base_offset >= 0
        read = _fetch(connection, "payments").responses[0].partitions[0]
        assert read.error_code == KafkaError.none
        assert read.records
    with connect(_kafka(cluster)) as outsider:  # a user without ACLs sees nothing and writes nothing
        assert _login(outsider, OUTSIDER, "SCRAM-SHA-256").error_code == KafkaError.none
        assert _metadata(outsider).topics == ()
        refused = _produce(outsider, "payments").responses[0].partition_responses[0]
        assert refused.error_code == KafkaError.topic_authorization_failed
        unread = _fetch(outsider, "payments").responses[0].partitions[0]
        assert (unread.error_code, unread.records) == (KafkaError.topic_authorization_failed, b"")
        outsider.sendall(request(22, 5, 30, transactional_id=None, transaction_timeout=datetime.timedelta(0)))
        assert response(outsider, 22, 5)[1].error_code == KafkaError.cluster_authorization_failed


def test_a_wrong_password_or_mechanism_is_refused_and_the_connection_closed(cluster: LocalCluster) -> None:
    with connect(_kafka(cluster)) as connection:
        refused = _login(connection, lanes.UserPassword(WRITER.username, "not-the-password"))
        assert refused.error_code == KafkaError.sasl_authentication_failed
        assert _closed(connection)
    with connect(_kafka(cluster)) as connection:  # an unknown user fails at the same step, the same way
        refused = _login(connection, lanes.UserPassword("nobody-at-all", "whatever-password"))
        assert refused.error_code == KafkaError.sasl_authentication_failed
    with connect(_kafka(cluster)) as connection:
        connection.sendall(request(17, 1, 1, mechanism="PLAIN"))
        _, handshake = response(connection, 17, 1)
        assert handshake.error_code == KafkaError.unsupported_sasl_mechanism
        assert set(handshake.mechanisms) == {"SCRAM-SHA-512", "SCRAM-SHA-256"}
        assert _closed(connection)


def test_a_password_change_ends_the_session_on_its_connection(cluster: LocalCluster) -> None:
    with connect(_kafka(cluster)) as connection:
        assert _login(connection, CHANGING).error_code == KafkaError.none
        assert _metadata(connection, "payments").topics[0].error_code == KafkaError.none
        with lanes.Admin(str(cluster.describe()["bootstrap"])) as admin:
            admin.set_user_password(CHANGING.username, "a-new-password-5", mechanism="SCRAM-SHA-512")
        wait_until_brokers_apply_metadata(cluster)
        connection.sendall(request(3, 12, 5, topics=None))
        assert _closed(connection), "a connection of a user whose password changed was answered"


def test_a_producer_over_its_byte_rate_is_told_to_wait(cluster: LocalCluster) -> None:
    with connect(_kafka(cluster)) as connection:
        assert _login(connection, SLOW).error_code == KafkaError.none
        throttles = [
            _produce(connection, "payments", os.urandom(6 * QUOTA_BYTES_PER_S), correlation_id=40 + n).throttle_time
            for n in range(2)
        ]
        assert throttles[0].total_seconds() == 0
        assert 0 < throttles[1].total_seconds() <= 10, throttles


def test_kafka_python_produces_and_reads_back_over_sasl_ssl(cluster: LocalCluster) -> None:
    tls = TlsFiles.from_environment()
    assert tls is not None
    settings: dict[str, Any] = {
        "bootstrap_servers": _kafka(cluster),
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(tls.ca_file),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": WRITER.username,
        "sasl_plain_password": WRITER.password,
    }
    producer = KafkaProducer(acks="all", enable_idempotence=True, **settings)
    sent = [producer.send("payments", key=b"k%d" % n, value=b"v%d" % n).get(timeout=30) for n in range(50)]
    producer.close()
    consumer = KafkaConsumer(consumer_timeout_ms=10_000, **settings)
    consumer.assign([TopicPartition("payments", 0)])
    consumer.seek(TopicPartition("payments", 0), sent[0].offset)
    read = []
    for record in consumer:
        read.append((record.offset, record.key, record.value))
        if len(read) == len(sent):
            break
    consumer.close()
    assert read == [(s.offset, b"k%d" % n, b"v%d" % n) for n, s in enumerate(sent)]
