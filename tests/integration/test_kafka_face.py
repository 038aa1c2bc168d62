"""Kafka's wire protocol on the brokers (issue #38, first part): the listener's framing and
bounds, ApiVersions and Metadata, answered from the same engine the gRPC face uses, to raw
requests encoded with kio and to a real Kafka client (kafka-python)."""

from __future__ import annotations

import datetime
import socket
import struct
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KafkaError

import lanes
from lanes.kafka.codec import build
from lanes.local.cluster import LocalCluster
from lanes.protocol.records import Record, encode_batch
from tests.integration.kafka_wire import exactly as _exactly
from tests.integration.kafka_wire import nested as _nested
from tests.integration.kafka_wire import request as _request
from tests.integration.kafka_wire import response as _response
from tests.integration.processes import running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("kafka") / "lanes", 2, tls=False, auth=False, kafka=True) as up:
        with lanes.Admin(str(up.describe()["bootstrap"])) as admin:
            admin.create_topic("orders", partitions=3, replication_factor=2)
        yield up


def _address(cluster: LocalCluster) -> tuple[str, int]:
    host, port = str(cluster.describe()["kafka_bootstrap"]).split(",")[0].rsplit(":", 1)
    return host, int(port)


def test_api_versions_tells_what_is_served_and_answers_an_unknown_version_with_its_table(cluster: LocalCluster) -> None:
    with socket.create_connection(_address(cluster), timeout=10) as connection:
        connection.sendall(_request(18, 3, 7, client_software_name="tests", client_software_version="1"))
        correlation, answer = _response(connection, 18, 3)
        assert correlation == 7
        assert answer.error_code == KafkaError.none
        served = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        assert served[18] == (0, 4)
        assert served[3] == (4, 12)
        # a version the broker does not know: ApiVersions v0 with UNSUPPORTED_VERSION and the table
        connection.sendall(struct.pack(">ihhi", 8 + 2 + 5, 18, 99, 8) + struct.pack(">h", 5) + b"tests")
        correlation, old = _response(connection, 18, 0)
        assert correlation == 8
        assert old.error_code == KafkaError.unsupported_version
        assert {k.api_key for k in old.api_keys} == set(served)
        # an API not served yet: its own answer, and the connection stays open
        connection.sendall(_request(19, 7, 9))  # CreateTopics v7
        assert _response(connection, 19, 7)[0] == 9
        connection.sendall(_request(18, 3, 10, client_software_name="tests", client_software_version="1"))
        assert _response(connection, 18, 3)[0] == 10


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack(">i", -1),
        struct.pack(">i", 200 * 1024 * 1024),
        struct.pack(">i", 4) + b"abcd",
        struct.pack(">ihhi", 8, 12345, 0, 1),
    ],
    ids=["negative size", "200 MiB", "shorter than a header", "no such API"],
)
def test_bytes_that_are_no_request_close_that_connection_only(cluster: LocalCluster, garbage: bytes) -> None:
    with socket.create_connection(_address(cluster), timeout=10) as bystander:
        with socket.create_connection(_address(cluster), timeout=10) as attacker:
            attacker.sendall(garbage)
            with pytest.raises(ConnectionError):
                _exactly(attacker, 1)
        bystander.sendall(_request(18, 3, 1, client_software_name="tests", client_software_version="1"))
        assert _response(bystander, 18, 3)[1].error_code == KafkaError.none


def test_metadata_names_the_brokers_kafka_listeners_and_the_topics(cluster: LocalCluster) -> None:
    with socket.create_connection(_address(cluster), timeout=10) as connection:
        connection.sendall(_request(3, 12, 3, topics=None))
        _, everything = _response(connection, 3, 12)
        kafka_addresses = set(str(cluster.describe()["kafka_bootstrap"]).split(","))
        assert {f"{b.host}:{b.port}" for b in everything.brokers} == kafka_addresses
        orders = next(t for t in everything.topics if t.name == "orders")
        assert len(orders.partitions) == 3
        assert all(len(p.replica_nodes) == 2 and p.leader_id in p.replica_nodes for p in orders.partitions)
        asked = load_request_schema(3, 12)
        topic = __import__(asked.__module__, fromlist=["MetadataRequestTopic"]).MetadataRequestTopic
        connection.sendall(_request(3, 12, 4, topics=(build(topic, name="nope"),)))
        _, unknown = _response(connection, 3, 12)
        assert [(t.name, t.error_code) for t in unknown.topics] == [("nope", KafkaError.unknown_topic_or_partition)]


def test_a_kafka_client_bootstraps_and_reads_the_topics(cluster: LocalCluster) -> None:
    consumer = KafkaConsumer(bootstrap_servers=str(cluster.describe()["kafka_bootstrap"]).split(","))
    try:
        assert "orders" in consumer.topics()
        assert consumer.partitions_for_topic("orders") == {0, 1, 2}
    finally:
        consumer.close()


def test_a_kafka_producer_writes_what_lanes_reads_and_a_kafka_consumer_reads_it_back(cluster: LocalCluster) -> None:
    kafka_bootstrap = str(cluster.describe()["kafka_bootstrap"]).split(",")
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all", linger_ms=5)
    try:
        sent = [
            producer.send("orders", key=b"k%d" % (i % 7), value=b"order-%03d" % i, headers=[("via", b"kafka")])
            for i in range(300)
        ]
        written = [future.get(timeout=30) for future in sent]
    finally:
        producer.close()
    by_partition: dict[int, list[int]] = {}
    for metadata in written:
        by_partition.setdefault(metadata.partition, []).append(metadata.offset)
    for offsets in by_partition.values():
        assert offsets == sorted(offsets), "order per partition"

    with lanes.Consumer(str(cluster.describe()["bootstrap"])) as lanes_consumer:  # the other face reads the same
        partitions = [lanes.TopicPartition("orders", p) for p in range(3)]
        lanes_consumer.assign(partitions)
        lanes_consumer.seek_to_beginning()
        read: list[lanes.ConsumerRecord] = []
        while len(read) < 300:
            read.extend(lanes_consumer.poll(timeout_ms=1_000))
    assert sorted(r.value or b"" for r in read) == sorted(b"order-%03d" % i for i in range(300))
    assert all(r.headers == (("via", b"kafka"),) for r in read)
    assert {(r.partition, r.offset) for r in read} == {(m.partition, m.offset) for m in written}

    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=5_000)
    try:
        consumer.assign([TopicPartition("orders", p) for p in range(3)])
        consumer.seek_to_beginning()
        back = []
        for record in consumer:
            back.append(record)
            if len(back) == 300:
                break
        assert consumer.end_offsets([TopicPartition("orders", p) for p in range(3)]) == {
            TopicPartition("orders", p): len(offsets) for p, offsets in by_partition.items()
        }
    finally:
        consumer.close()
    assert {(r.partition, r.offset, r.key, r.value) for r in back} == {
        (r.partition, r.offset, r.key, r.value) for r in read
    }, "identical through either face"


def _produce(topic: str, acks: int) -> dict[str, Any]:
    batch = lanes_batch()
    partition = build(_nested(0, 9, "PartitionProduceData"), index=0, records=batch)
    data = build(_nested(0, 9, "TopicProduceData"), name=topic, partition_data=(partition,))
    return {"acks": acks, "timeout": datetime.timedelta(seconds=10), "topic_data": (data,)}


def _leader_of(cluster: LocalCluster, topic: str, partition: int) -> tuple[str, int]:
    """The Kafka address of the partition's leader, as Metadata names it."""
    with socket.create_connection(_address(cluster), timeout=10) as connection:
        connection.sendall(_request(3, 12, 1, topics=None))
        _, metadata = _response(connection, 3, 12)
    found = next(t for t in metadata.topics if t.name == topic)
    leader = next(p.leader_id for p in found.partitions if p.partition_index == partition)
    broker = next(b for b in metadata.brokers if b.node_id == leader)
    return broker.host, broker.port


def lanes_batch() -> bytes:
    return encode_batch([Record(0, 1_700_000_000_000, b"k", b"v")])


def test_produce_refuses_what_kafka_refuses(cluster: LocalCluster) -> None:
    with socket.create_connection(_address(cluster), timeout=10) as connection:
        connection.sendall(_request(0, 9, 1, **_produce("orders", 5)))
        _, answer = _response(connection, 0, 9)
        assert answer.responses[0].partition_responses[0].error_code == KafkaError.invalid_required_acks
        connection.sendall(_request(0, 9, 2, **_produce("__consumer_offsets", -1)))
        _, internal = _response(connection, 0, 9)
        assert internal.responses[0].partition_responses[0].error_code == KafkaError.invalid_topic_exception
        ask = build(_nested(2, 6, "ListOffsetsPartition"), partition_index=0, timestamp=-3)
        connection.sendall(
            _request(2, 6, 3, topics=(build(_nested(2, 6, "ListOffsetsTopic"), name="orders", partitions=(ask,)),))
        )
        _, offsets = _response(connection, 2, 6)
        assert offsets.topics[0].partitions[0].error_code == KafkaError.unsupported_version
    with socket.create_connection(_leader_of(cluster, "orders", 0), timeout=10) as silent:
        silent.sendall(_request(0, 9, 4, **_produce("orders", 0)))  # acks=0, to the leader: no answer
        silent.sendall(_request(18, 3, 5, client_software_name="tests", client_software_version="1"))
        assert _response(silent, 18, 3)[0] == 5, "the acks=0 request was not answered"
        silent.sendall(_request(0, 9, 6, **_produce("no-such-topic", 0)))  # acks=0 that failed: closed
        with pytest.raises(ConnectionError):
            _exactly(silent, 1)


def test_what_lanes_writes_a_kafka_consumer_reads_identically(cluster: LocalCluster) -> None:
    """Records written through the gRPC face (Lanes' idempotent producer: keys, headers, its own
    timestamps) are read through the Kafka face by librdkafka, which checks each batch's CRC,
    with the same offsets, keys, values, headers and timestamps Lanes' consumer sees."""
    with lanes.Admin(str(cluster.describe()["bootstrap"])) as admin:
        admin.create_topic("from-lanes", partitions=2, replication_factor=2)
    with lanes.Producer(str(cluster.describe()["bootstrap"])) as producer:
        for i in range(200):
            producer.send("from-lanes", b"value-%d" % i, b"k%d" % (i % 5), headers=[("n", str(i).encode())])
        producer.flush()
    with lanes.Consumer(str(cluster.describe()["bootstrap"])) as lanes_consumer:
        lanes_consumer.assign([lanes.TopicPartition("from-lanes", p) for p in range(2)])
        lanes_consumer.seek_to_beginning()
        truth: list[lanes.ConsumerRecord] = []
        while len(truth) < 200:
            truth.extend(lanes_consumer.poll(timeout_ms=1_000))
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.describe()["kafka_bootstrap"],
            "group.id": "crc",
            "check.crcs": True,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign(
            [confluent_kafka.TopicPartition("from-lanes", p, confluent_kafka.OFFSET_BEGINNING) for p in range(2)]
        )
        read = []
        while len(read) < 200:
            message = consumer.poll(10)
            assert message is not None, "librdkafka read nothing more"
            assert message.error() is None, message.error()
            read.append(message)
    finally:
        consumer.close()
    assert sorted(
        (m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1]) for m in read
    ) == sorted((r.partition, r.offset, r.key, r.value, tuple(r.headers), r.timestamp) for r in truth)
