"""Spark's own Kafka source and sink (``format("kafka")``, spark-sql-kafka-0-10 from Maven Central)
against the Lanes test cluster's Kafka listeners, over SASL_SSL as a Lanes user (issue #38): a
batch write, then a batch read and an available-now streaming read that find exactly what Lanes'
own client reads (keys, values, headers, partitions, offsets)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import lanes
from lanes.local.cluster import LocalCluster
from tests.integration.processes import wait_until_brokers_apply_metadata
from tests.spark.test_source import everything

pytestmark = pytest.mark.slow

USER = lanes.UserPassword("spark-kafka", "spark-kafka-password-1")
TOPIC = "spark-kafka-orders"


@pytest.fixture(scope="module")
def kafka_options(lanes_cluster: LocalCluster, bootstrap: str) -> dict[str, str]:
    with lanes.Admin(bootstrap) as admin:
        admin.set_user_password(USER.username, USER.password, mechanism="SCRAM-SHA-512")
        admin.create_acls(
            [
                lanes.AclBinding.of(USER.username, op, topic="spark-kafka", prefixed=True)
                for op in ("read", "write", "describe")
            ]
        )
        admin.create_topic(TOPIC, partitions=3, replication_factor=2)
    wait_until_brokers_apply_metadata(lanes_cluster)
    return {
        "kafka.bootstrap.servers": str(lanes_cluster.describe()["kafka_bootstrap"]),
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{USER.username}" password="{USER.password}";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": os.environ["LANES_TLS_CA"],
    }


def test_spark_writes_and_reads_a_lanes_topic_through_its_kafka_format(
    spark: Any, kafka_options: dict[str, str], bootstrap: str, tmp_path: Path
) -> None:
    rows = [(f"k{n % 7}", f"value {n}", [("n", str(n).encode())]) for n in range(60)]
    written = spark.createDataFrame(rows, "key string, value string, headers array<struct<key:string,value:binary>>")
    written.write.format("kafka").options(**kafka_options).option("topic", TOPIC).option(
        "includeHeaders", "true"
    ).save()

    truth = sorted(
        (r.partition, r.offset, r.key, r.value, tuple((k, bytes(v)) for k, v in r.headers))
        for r in everything(bootstrap, TOPIC)
    )
    assert len(truth) == 60

    def as_tuples(frame: Any) -> list[tuple[Any, ...]]:
        return sorted(
            (r.partition, r.offset, bytes(r.key), bytes(r.value), tuple((h.key, bytes(h.value)) for h in r.headers))
            for r in frame.collect()
        )

    batch = spark.read.format("kafka").options(**kafka_options).option("subscribe", TOPIC)
    batch = batch.option("startingOffsets", "earliest").option("includeHeaders", "true").load()
    assert as_tuples(batch) == truth
    assert {r.topic for r in batch.select("topic").collect()} == {TOPIC}

    stream = spark.readStream.format("kafka").options(**kafka_options).option("subscribe", TOPIC)
    stream = stream.option("startingOffsets", "earliest").option("includeHeaders", "true").load()
    query = (
        stream.writeStream.format("memory")
        .queryName("lanes_kafka_stream")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert as_tuples(spark.table("lanes_kafka_stream")) == truth
