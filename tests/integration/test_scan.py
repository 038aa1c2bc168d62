"""Searching on the brokers (Broker.Scan, ``lanes.Scanner``, ``lanes consume --filter``) against a
real cluster: one record found among 100,000 with only it shipped, starts, budgets that say where
to go on, and malformed or hostile requests refused clearly."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

import lanes
from lanes.errors import ErrorCode, LanesError, OffsetOutOfRangeError, UnknownTopicOrPartitionError
from lanes.local.cluster import LocalCluster
from lanes.v1 import broker_pb2, broker_pb2_grpc
from tests.integration.processes import blocking_client_channel, running_cluster

RECORDS = 100_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("scan") / "lanes", 2) as local:
        bootstrap = str(local.describe()["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("trades", partitions=3, replication_factor=2)
        with lanes.Producer(bootstrap, linger_ms=20) as producer:
            for i in range(RECORDS):
                value = b'{"n": %d, "sym": "S%02d", "px": %d.5}' % (i, i % 50, i % 1000)
                headers = [("trace", b"needle-trace")] if i == 77_777 else []
                producer.send("trades", value, key=b"k%d" % (i % 97), headers=headers)
            producer.flush()
        yield local


@pytest.fixture
def bootstrap(cluster: LocalCluster) -> str:
    return str(cluster.describe()["bootstrap"])


def found(scanner: lanes.Scanner, *where: str, **options: object) -> tuple[list[lanes.ConsumerRecord], dict]:
    records: list[lanes.ConsumerRecord] = []
    last: dict[int, lanes.ScanProgress] = {}
    for update in scanner.scan("trades", list(where), **options):
        records.extend(update.records)
        last[update.partition] = update.progress
    return records, last


def test_one_record_among_100000_is_found_on_the_brokers_and_only_it_is_shipped(bootstrap: str) -> None:
    with lanes.Scanner(bootstrap) as scanner:
        for where in (["header:trace=needle-trace"], ["$.n=77777"], ['value~"n": 77777,'], ["$.n=77777", "key=k80"]):
            records, last = found(scanner, *where)
            assert [json.loads(r.value or b"")["n"] for r in records] == [77_777], where
            assert records[0].key == b"k%d" % (77_777 % 97)
            assert sum(p.scanned_records for p in last.values()) == RECORDS
            assert {p.ended for p in last.values()} == {"end"}
        none, last = found(scanner, "$.n=77777", "!key")
        assert none == []
        assert sum(p.scanned_bytes for p in last.values()) > 3_000_000, "the brokers read everything, shipped nothing"


def test_where_a_scan_starts_and_where_a_budget_stops_it(bootstrap: str) -> None:
    with lanes.Scanner(bootstrap) as scanner:
        tail, last = found(scanner, partitions=[1], last=5)
        end = last[1].high_watermark
        assert [r.offset for r in tail] == list(range(end - 5, end))
        middle, _ = found(scanner, partitions=[1], start=end - 2)
        assert [r.offset for r in middle] == [end - 2, end - 1]
        timed, _ = found(scanner, partitions=[1], start_time_ms=tail[-1].timestamp)
        assert timed, "the records at or after a time"
        assert timed[0].timestamp >= tail[-1].timestamp - 1_000

        cut, last = found(scanner, "$.sym=S99", partitions=[0], budget=lanes.ScanBudget(max_records=2_000))
        stopped = last[0]
        assert stopped.ended == "record-budget"
        assert cut == []
        assert 0 < stopped.next_offset < stopped.high_watermark
        _rest, last = found(scanner, "$.sym=S99", partitions=[0], start=stopped.next_offset)
        assert last[0].ended == "end"
        assert stopped.scanned_records + last[0].scanned_records == last[0].high_watermark

        first, last = found(scanner, "$.sym=S07", budget=lanes.ScanBudget(max_matches=3))
        assert len(first) == 9, "three per partition"
        assert {p.ended for p in last.values()} == {"match-limit"}


def test_malformed_and_hostile_searches_are_refused_clearly(bootstrap: str) -> None:
    with lanes.Scanner(bootstrap) as scanner:
        for bad in ("price>3", "$[*]=1", "$." + "a" * 300, "value~" + "x" * 5000):
            with pytest.raises(LanesError) as refused:
                found(scanner, bad)
            assert refused.value.code is ErrorCode.INVALID_REQUEST
        with pytest.raises(UnknownTopicOrPartitionError):
            found(scanner, partitions=[7])
        with pytest.raises(OffsetOutOfRangeError, match="past the high-water mark"):
            found(scanner, partitions=[0], start=10**12)
        with pytest.raises(UnknownTopicOrPartitionError):
            list(scanner.scan("no-such-topic", ["key"]))

    with lanes.Admin(bootstrap) as admin:
        leader_id = admin.describe_topic("trades").partitions[0].leader
        leader = next(f"{b.host}:{b.port}" for b in admin.describe_cluster().brokers if b.broker_id == leader_id)
    with blocking_client_channel(leader) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        hostile = [
            broker_pb2.ScanRequest(topic="trades", conditions=[broker_pb2.ScanCondition(field=1, test=3)] * 17),
            broker_pb2.ScanRequest(topic="trades", conditions=[broker_pb2.ScanCondition(field=4, test=3, name="$..a")]),
            broker_pb2.ScanRequest(topic="trades", conditions=[broker_pb2.ScanCondition(field=9, test=1)]),
            broker_pb2.ScanRequest(topic="trades", start_last=-5),
            broker_pb2.ScanRequest(topic="trades", from_timestamp_ms=10, to_timestamp_ms=5),
        ]
        for request in hostile:
            answers = list(stub.Scan(request, timeout=10))
            assert len(answers) == 1
            assert answers[0].error.code == ErrorCode.INVALID_REQUEST, request
            assert answers[0].progress.end == broker_pb2.SCAN_END_ERROR
        # a search with no budget runs within the broker's own, and cancelling it frees its place
        for _ in range(5):
            call = stub.Scan(broker_pb2.ScanRequest(topic="trades", partition=0), timeout=10)
            next(call)
            call.cancel()
        for _ in range(3):  # (two unreleased places would refuse these for good)
            alive = _scan_when_a_place_is_free(stub, broker_pb2.ScanRequest(topic="trades", partition=0, start_last=1))
            assert alive[-1].error.code == 0, alive[-1]
            assert len(alive[-1].records) == 1


def _scan_when_a_place_is_free(
    stub: broker_pb2_grpc.BrokerStub, request: broker_pb2.ScanRequest
) -> list[broker_pb2.ScanResponse]:
    """The answers, once the broker has a place for the scan (a cancelled call frees its place a
    moment after the cancel: within 5 s, or never if it leaked)."""
    deadline = time.monotonic() + 5
    while True:
        answers = list(stub.Scan(request, timeout=10))
        if answers[-1].error.code != ErrorCode.THROTTLING_QUOTA_EXCEEDED or time.monotonic() > deadline:
            return answers
        time.sleep(0.05)


def test_lanes_consume_filter_prints_only_the_matches(bootstrap: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lanes.cli", "consume", "trades", "--bootstrap", bootstrap,
         "--filter", "$.sym=S13", "--filter", "$.px=13.5", "--format", "%k %v"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == RECORDS // 1000  # n % 1000 == 13 (and so n % 50 == 13)
    assert all('"px": 13.5' in line for line in lines)
    wrong = subprocess.run(
        [sys.executable, "-m", "lanes.cli", "consume", "trades", "--bootstrap", bootstrap, "--filter", "px>3"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert wrong.returncode != 0
    assert "a condition tests key, value, header:NAME or a JSON path" in wrong.stderr
    assert "Traceback" not in wrong.stderr


def test_scanning_needs_read_on_the_topic_as_fetching_does(cluster: LocalCluster, bootstrap: str) -> None:
    with lanes.Admin(bootstrap) as admin:
        admin.set_user_password("peeker", "peeker-password-1")
        admin.create_acls([lanes.AclBinding.of("peeker", "describe", topic="trades")])
    peeker = lanes.UserPassword("peeker", "peeker-password-1")
    with lanes.Scanner(bootstrap, credentials=peeker) as scanner, pytest.raises(LanesError) as refused:
        found(scanner, "key")
    assert refused.value.code in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    assert "READ" in str(refused.value)
