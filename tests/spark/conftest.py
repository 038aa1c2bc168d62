"""Spark tests: one local[2] session for all of them (a JVM's start and warm-up take some 15 s)
against one real Lanes cluster (``lanes up``'s processes; ``lanes_cluster`` and ``bootstrap``
come from tests/conftest.py). The session uses this virtual environment's interpreter for its
Python workers and binds loopback only (../shared/TESTING.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    assert shutil.which("java"), "Spark needs a Java runtime: make test installs Debian's default-jre-headless"
    from pyspark.sql import SparkSession  # noqa: PLC0415 (after the environment above is set)

    from lanes_spark import LanesDataSource  # noqa: PLC0415

    # Spark's own Kafka source and sink (``format("kafka")``: tests/spark/test_kafka_format.py), from
    # Maven Central (tools/kafka/fetch.sh spark, run by make test)
    connector = subprocess.run(["tools/kafka/fetch.sh", "spark"], capture_output=True, text=True, check=True)
    jars = sorted(str(jar) for jar in Path(connector.stdout.strip()).glob("*.jar"))
    session = (
        SparkSession.builder.master("local[2]")
        .appName("lanes-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        # a query that does not stop (its thread stuck in a foreachBatch callback) fails its test
        # within a minute instead of holding its test worker until the suite's timeout
        .config("spark.sql.streaming.stopTimeout", "60s")
        .config("spark.jars", ",".join(jars))
        .getOrCreate()
    )
    session.dataSource.register(LanesDataSource)
    try:
        yield session
    finally:
        session.stop()
