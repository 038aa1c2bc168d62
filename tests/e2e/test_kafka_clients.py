"""Issue #38's acceptance: Kafka's own clients and tools against the e2e tests' ``lanes up`` cluster
(TLS, SASL SCRAM-SHA-512 as a Lanes user with ACLs of its own): confluent-kafka (librdkafka: the
classic protocol and KIP-848's), kafka-python and aiokafka each produce idempotently and consume
with a group, commit, and read back exactly what was written; two members of a group never own a
partition at the same time; confluent-kafka's AdminClient manages topics, configs, records and
offsets; kcat lists metadata, produces and consumes; Kafka's own Java tools (from Maven Central)
create and describe a topic, produce and consume, and describe and reset a group's offsets."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from kafka import KafkaConsumer, KafkaProducer

from lanes import AclBinding, UserPassword
from tests.e2e.cli import Workdir

APP = UserPassword("kafka-app", "kafka-app-password-1")
#: records each client writes: keyed (so every partition gets some), with headers
RECORDS = 240
TOPIC_OPERATIONS = ("write", "read", "describe", "create", "delete", "alter", "describe_configs", "alter_configs")
PARTITIONS = 4


@dataclass(frozen=True)
class KafkaAccess:
    bootstrap: str
    ca_file: str


@pytest.fixture(scope="module")
def kafka(lanes: Workdir) -> KafkaAccess:
    cluster = json.loads((lanes.path / ".lanes" / "cluster.json").read_text())
    access = KafkaAccess(cluster["kafka_bootstrap"], str(lanes.path / cluster["tls"]["ca"]))
    with lanes.admin() as admin:
        admin.set_user_password(APP.username, APP.password, mechanism="SCRAM-SHA-512")
        admin.create_acls(
            [
                *(AclBinding.of(APP.username, op, topic="kafka-", prefixed=True) for op in TOPIC_OPERATIONS),
                AclBinding.of(APP.username, "read", group="kafka-", prefixed=True),
                AclBinding.of(APP.username, "delete", group="kafka-", prefixed=True),
                AclBinding.of(APP.username, "describe", cluster=True),
            ]
        )
        for name in ("kafka-classic", "kafka-consumer", "kafka-python", "kafka-aio", "kafka-kcat", "private-ledger"):
            admin.create_topic(name, partitions=PARTITIONS, replication_factor=2)
    _wait_until_visible(access, "kafka-kcat")
    return access


def _confluent(access: KafkaAccess, **settings: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": access.bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": APP.username,
        "sasl.password": APP.password,
        "ssl.ca.location": access.ca_file,
        **settings,
    }


def _kafka_python(access: KafkaAccess) -> dict[str, Any]:
    return {
        "bootstrap_servers": access.bootstrap,
        "security_protocol": "SASL_SSL",
        "ssl_cafile": access.ca_file,
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": APP.username,
        "sasl_plain_password": APP.password,
    }


def _wait_until_visible(access: KafkaAccess, topic: str, timeout_s: float = 30) -> None:
    """Until the user, its ACLs and the topic have reached the brokers."""
    deadline = time.monotonic() + timeout_s
    while True:
        consumer = Consumer(_confluent(access, **{"group.id": "kafka-probe"}))
        try:
            found = consumer.list_topics(topic, timeout=5).topics.get(topic)
            if found is not None and found.error is None and len(found.partitions) == PARTITIONS:
                return
        except KafkaException:
            pass
        finally:
            consumer.close()
        assert time.monotonic() < deadline, f"{topic} never became visible to {APP.username}"
        time.sleep(0.5)


#: (partition, offset) -> (key, value, headers) as written
Written = dict[tuple[int, int], tuple[bytes, bytes, tuple[tuple[str, bytes], ...]]]


def _record(n: int) -> tuple[bytes, bytes, tuple[tuple[str, bytes], ...]]:
    return b"key-%d" % (n % 17), b"value-%d" % n, (("n", str(n).encode()), ("source", b"kafka-client"))


def _produce_confluent(access: KafkaAccess, topic: str) -> Written:
    producer = Producer(_confluent(access, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5}))
    written: Written = {}
    failures: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            failures.append(str(error))
            return
        written[(message.partition(), message.offset())] = sent[message.value()]  # (reports carry no headers)

    sent = {_record(n)[1]: _record(n) for n in range(RECORDS)}
    for n in range(RECORDS):
        key, value, headers = _record(n)
        producer.produce(topic, key=key, value=value, headers=list(headers), on_delivery=delivered)
    assert producer.flush(30) == 0
    assert not failures, failures
    return written


@dataclass
class Member:
    """One group member's reads and when it owned which partition (monotonic seconds)."""

    name: str
    read: dict[tuple[int, int], tuple[bytes, bytes, tuple[tuple[str, bytes], ...]]] = field(default_factory=dict)
    owned: dict[int, list[list[float]]] = field(default_factory=dict)

    def assigned(self, partitions: list[Any]) -> None:
        for tp in partitions:
            self.owned.setdefault(tp.partition, []).append([time.monotonic(), float("inf")])

    def revoked(self, partitions: list[Any]) -> None:
        for tp in partitions:
            intervals = self.owned.get(tp.partition)
            if intervals and intervals[-1][1] == float("inf"):
                intervals[-1][1] = time.monotonic()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_confluent_kafka_group_reads_back_exactly_what_it_wrote(kafka: KafkaAccess, protocol: str) -> None:
    topic = group = f"kafka-{protocol}"
    written = _produce_confluent(kafka, topic)
    assert len(written) == RECORDS
    settings = {"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if protocol == "consumer":
        settings["group.protocol"] = "consumer"
    else:
        settings["partition.assignment.strategy"] = "range"
    members = [Member("first"), Member("second")]
    stop = threading.Event()

    def run(member: Member, start_after_s: float) -> None:
        time.sleep(start_after_s)
        consumer = Consumer(_confluent(kafka, **settings))

        def on_revoke(c: Any, partitions: list[Any]) -> None:
            member.revoked(partitions)

        consumer.subscribe([topic], on_assign=lambda c, p: member.assigned(p), on_revoke=on_revoke,
                           on_lost=lambda c, p: member.revoked(p))  # fmt: skip
        try:
            while not stop.is_set():
                message = consumer.poll(0.2)
                if message is None or message.error():
                    continue
                headers = tuple((k, bytes(v)) for k, v in message.headers() or ())
                member.read[(message.partition(), message.offset())] = (message.key(), message.value(), headers)
                consumer.commit(message, asynchronous=False)
                if not all(m.owned for m in members):  # slow until both own partitions: both take part
                    time.sleep(0.05)
        finally:
            consumer.close()  # leaves the group: its partitions are revoked
            member.revoked([TopicPartition(topic, p) for p in range(PARTITIONS)])

    threads = [threading.Thread(target=run, args=(m, delay)) for m, delay in zip(members, (0.0, 1.0), strict=True)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(members[0].read.keys() | members[1].read.keys()) < RECORDS:
        time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join(30)
    read = {**members[0].read, **members[1].read}
    assert read == written, "the group read exactly what was written (bytes, offsets, headers)"
    assert all(m.read for m in members), "both members took part"
    for partition in range(PARTITIONS):
        intervals = sorted(i for m in members for i in m.owned.get(partition, []))
        for earlier, later in itertools.pairwise(intervals):
            assert earlier[1] <= later[0], f"partition {partition} had two owners at once: {intervals}"
    committed = _committed(kafka, group, topic)
    ends = {p: max(o for (q, o) in written if q == p) + 1 for p in range(PARTITIONS) if any(q == p for q, _ in written)}
    assert committed == ends, "the group committed every record it read"


def _committed(access: KafkaAccess, group: str, topic: str, partitions: int = PARTITIONS) -> dict[int, int]:
    consumer = Consumer(_confluent(access, **{"group.id": group}))
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}


def test_kafka_python_produces_idempotently_and_its_group_reads_back(kafka: KafkaAccess) -> None:
    topic = group = "kafka-python"
    producer = KafkaProducer(acks="all", enable_idempotence=True, **_kafka_python(kafka))
    written: Written = {}
    for n in range(RECORDS):
        key, value, headers = _record(n)
        sent = producer.send(topic, key=key, value=value, headers=list(headers)).get(timeout=30)
        written[(sent.partition, sent.offset)] = (key, value, headers)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=20_000, **_kafka_python(kafka))  # fmt: skip
    read: Written = {}
    for record in consumer:
        read[(record.partition, record.offset)] = (record.key, record.value, tuple(record.headers))
        if len(read) == RECORDS:
            break
    consumer.commit()
    consumer.close()
    assert read == written
    assert _committed(kafka, group, topic) == {p: max(o for q, o in written if q == p) + 1 for p, _ in written}


def test_aiokafka_produces_idempotently_and_its_group_reads_back(kafka: KafkaAccess) -> None:
    topic = group = "kafka-aio"

    async def run() -> tuple[Written, Written]:
        context = create_ssl_context(cafile=kafka.ca_file)
        security: dict[str, Any] = {
            "bootstrap_servers": kafka.bootstrap,
            "security_protocol": "SASL_SSL",
            "ssl_context": context,
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": APP.username,
            "sasl_plain_password": APP.password,
        }
        producer = AIOKafkaProducer(enable_idempotence=True, acks="all", **security)
        await producer.start()
        written: Written = {}
        try:
            for n in range(RECORDS):
                key, value, headers = _record(n)
                sent = await producer.send_and_wait(topic, key=key, value=value, headers=list(headers))
                written[(sent.partition, sent.offset)] = (key, value, headers)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                                    **security)  # fmt: skip
        await consumer.start()
        read: Written = {}
        try:
            async with asyncio.timeout(30):
                async for record in consumer:
                    read[(record.partition, record.offset)] = (record.key, record.value, tuple(record.headers))
                    if len(read) == RECORDS:
                        break
            await consumer.commit()
        finally:
            await consumer.stop()
        return written, read

    written, read = asyncio.run(run())
    assert read == written
    assert _committed(kafka, group, topic) == {p: max(o for q, o in written if q == p) + 1 for p, _ in written}


def test_kcat_lists_produces_and_consumes(kafka: KafkaAccess) -> None:
    security = ["-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
                "-X", f"sasl.username={APP.username}", "-X", f"sasl.password={APP.password}",
                "-X", f"ssl.ca.location={kafka.ca_file}"]  # fmt: skip
    kcat = ["kcat", "-b", kafka.bootstrap, *security]

    def run(*args: str, given: str | None = None) -> str:
        done = subprocess.run([*kcat, *args], input=given, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    topics = {t["topic"]: t for t in json.loads(run("-L", "-J"))["topics"]}
    assert len(topics["kafka-kcat"]["partitions"]) == PARTITIONS
    assert "private-ledger" not in topics, "a topic the user may not describe is not listed"
    lines = "".join(f"k{n}:line {n}\n" for n in range(50))
    run("-P", "-t", "kafka-kcat", "-K", ":", given=lines)
    consumed = run("-C", "-t", "kafka-kcat", "-o", "beginning", "-e", "-f", "%k=%s\n")
    assert sorted(consumed.splitlines()) == sorted(f"k{n}=line {n}" for n in range(50))


def test_confluent_kafka_admin_manages_topics_configs_records_and_groups(kafka: KafkaAccess) -> None:
    """The admin calls a Kafka user makes, forwarded to the controller or answered by the broker,
    each as the user (``private-ledger`` stays out of its reach)."""
    admin = AdminClient(_confluent(kafka))
    for future in admin.create_topics([NewTopic("kafka-admin", 2, 2, config={"retention.ms": "3600000"})]).values():
        future.result(30)
    refused = admin.create_topics([NewTopic("private-admin", 1, 1)])["private-admin"]
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        refused.result(30)
    cluster = admin.describe_cluster().result(30)
    assert len(cluster.nodes) == 3
    topic = ConfigResource(ResourceType.TOPIC, "kafka-admin")
    configs = admin.describe_configs([topic])[topic].result(30)
    assert configs["retention.ms"].value == "3600000"
    altered = ConfigResource(
        ResourceType.TOPIC,
        "kafka-admin",
        incremental_configs=[ConfigEntry("retention.bytes", "1048576", incremental_operation=AlterConfigOpType.SET)],
    )
    admin.incremental_alter_configs([altered])[altered].result(30)
    assert admin.describe_configs([topic])[topic].result(30)["retention.bytes"].value == "1048576"
    admin.create_partitions([NewPartitions("kafka-admin", 4)])["kafka-admin"].result(30)
    producer = Producer(_confluent(kafka, **{"enable.idempotence": True}))
    for n in range(20):
        producer.produce("kafka-admin", key=b"k", value=b"v%d" % n, partition=0)
    assert producer.flush(30) == 0
    deleted = admin.delete_records([TopicPartition("kafka-admin", 0, 5)])
    assert next(iter(deleted.values())).result(30).low_watermark == 5
    del producer
    consumer = Consumer(_confluent(kafka, **{"group.id": "kafka-admin-group"}))
    consumer.commit(offsets=[TopicPartition("kafka-admin", 0, 12)], asynchronous=False)
    consumer.close()
    assert "kafka-admin-group" in {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    described = admin.describe_consumer_groups(["kafka-admin-group"])["kafka-admin-group"].result(30)
    assert described.members == []
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("kafka-admin-group")])
    assert [(tp.partition, tp.offset) for tp in offsets["kafka-admin-group"].result(30).topic_partitions] == [(0, 12)]
    reset = ConsumerGroupTopicPartitions("kafka-admin-group", [TopicPartition("kafka-admin", 0, 7)])
    admin.alter_consumer_group_offsets([reset])["kafka-admin-group"].result(30)
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("kafka-admin-group")])
    assert [(tp.partition, tp.offset) for tp in offsets["kafka-admin-group"].result(30).topic_partitions] == [(0, 7)]
    admin.delete_consumer_groups(["kafka-admin-group"])["kafka-admin-group"].result(30)
    for future in admin.delete_topics(["kafka-admin"]).values():
        future.result(30)
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        admin.delete_topics(["private-ledger"])["private-ledger"].result(30)


def test_kafkas_own_java_tools(kafka: KafkaAccess, tmp_path: Path) -> None:
    """kafka-topics, kafka-console-producer and -consumer, kafka-consumer-groups --describe and
    --reset-offsets (Apache Kafka's jars from Maven Central, ``tools/kafka/fetch.sh``)."""
    libs = subprocess.run(["tools/kafka/fetch.sh"], capture_output=True, text=True, check=True, timeout=600).stdout
    settings = tmp_path / "client.properties"
    settings.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{APP.username}" password="{APP.password}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={kafka.ca_file}\n"
    )

    def tool(main: str, *args: str, given: str | None = None) -> str:
        done = subprocess.run(
            ["java", "-Xmx256m", "-cp", f"{libs.strip()}/*", f"org.apache.kafka.tools.{main}",
             "--bootstrap-server", kafka.bootstrap, "--command-config", str(settings), *args],
            input=given, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    tool("TopicCommand", "--create", "--topic", "kafka-java", "--partitions", "3", "--replication-factor", "2")
    described = tool("TopicCommand", "--describe", "--topic", "kafka-java")
    assert "PartitionCount: 3" in described
    assert "ReplicationFactor: 2" in described
    tool("ConsoleProducer", "--topic", "kafka-java", "--reader-property", "parse.key=true",
         "--reader-property", "key.separator=:", given="".join(f"k{n}:line {n}\n" for n in range(30)))  # fmt: skip
    read = tool("consumer.ConsoleConsumer", "--topic", "kafka-java", "--group", "kafka-java-group",
                "--from-beginning", "--max-messages", "30", "--timeout-ms", "30000")  # fmt: skip
    assert sorted(read.split("\n")[:30]) == sorted(f"line {n}" for n in range(30))
    groups = "consumer.group.ConsumerGroupCommand"
    lags = tool(groups, "--describe", "--group", "kafka-java-group")
    rows = [line.split() for line in lags.splitlines() if line.startswith("kafka-java-group")]
    assert sum(int(row[3]) for row in rows) == 30, lags  # CURRENT-OFFSET: everything read
    assert all(row[5] == "0" for row in rows), lags  # LAG
    reset = tool(
        groups, "--reset-offsets", "--group", "kafka-java-group", "--topic", "kafka-java", "--to-earliest", "--execute"
    )
    rows = [line.split() for line in reset.splitlines() if line.startswith("kafka-java-group")]
    assert sorted((row[2], row[3]) for row in rows) == [(str(p), "0") for p in range(3)], reset  # NEW-OFFSET
    committed = _committed(kafka, "kafka-java-group", "kafka-java", partitions=3)  # (as another client reads it)
    assert committed == {0: 0, 1: 0, 2: 0}
