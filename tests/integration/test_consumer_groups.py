"""Consumer groups end to end, with real processes (issue #5's acceptance list): the seeds'
two-groups scenario, rebalancing on join, close, SIGKILL and a starved poll loop, and the
delivery guarantees that follow from when a member commits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import lanes
from lanes.local.cluster import LocalCluster
from lanes.v1 import coordinator_pb2, coordinator_pb2_grpc
from tests.integration.processes import blocking_client_channel, running_cluster

REPO = Path(__file__).resolve().parents[2]
GROUP_SETTINGS = {"group_session_timeout_ms": 3000, "group_heartbeat_interval_ms": 300, "offsets_topic_partitions": 6}


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Seconds until ``condition`` held; fails after ``timeout_s``."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout_s, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.05)
    return time.monotonic() - started


class Member:
    """A group_member process and the events it printed."""

    def __init__(self, bootstrap: str, group: str, topic: str, *options: str) -> None:
        self.events: list[dict[str, object]] = []
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.group_member",
                "--bootstrap",
                bootstrap,
                "--group",
                group,
                "--topic",
                topic,
                *options,
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'services'}"},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.events.append(json.loads(line))

    def owned(self) -> set[int]:
        owned: set[int] = set()
        for event in list(self.events):
            if event["event"] == "assigned":
                owned |= set(event["partitions"])  # type: ignore[arg-type]
            elif event["event"] in ("revoked", "lost"):
                owned -= set(event["partitions"])  # type: ignore[arg-type]
        return owned

    def records(self) -> list[tuple[int, int]]:
        return [(int(e["partition"]), int(e["offset"])) for e in list(self.events) if e["event"] == "record"]  # type: ignore[call-overload]

    def committed_records(self) -> list[tuple[int, int]]:
        """Records processed before this member's last commit."""
        last = max((i for i, e in enumerate(list(self.events)) if e["event"] == "committed"), default=0)
        return [(int(e["partition"]), int(e["offset"])) for e in self.events[:last] if e["event"] == "record"]  # type: ignore[call-overload]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One cluster for the tests that share it: each uses topics and groups of its own, and the
    member processes it starts it stops."""
    with running_cluster(tmp_path_factory.mktemp("groups"), 3, **GROUP_SETTINGS) as running:
        yield running


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    with lanes.Producer(bootstrap) as producer:
        for index in range(start, start + count):
            producer.send(topic, key=f"k{index}".encode(), value=f"v{index}".encode())
        producer.flush()


def test_two_groups_of_three_on_two_partitions_progress_independently(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("prices", partitions=2, replication_factor=3)
    produce(bootstrap, "prices", 200)
    groups = {g: [Member(bootstrap, g, "prices") for _ in range(3)] for g in ("A", "B")}
    try:
        for group, members in groups.items():
            wait_until(lambda m=members: sorted(len(x.owned()) for x in m) == [0, 1, 1], 30, f"group {group} settles")
            owners = [p for m in members for p in m.owned()]
            assert sorted(owners) == [0, 1], "each partition has exactly one owner in the group"
            wait_until(
                lambda m=members: len({r for x in m for r in x.records()}) == 200, 30, f"group {group} reads all"
            )
        with lanes.Consumer(bootstrap, group_id="A") as probe_a, lanes.Consumer(bootstrap, group_id="B") as probe_b:
            partitions = [lanes.TopicPartition("prices", p) for p in (0, 1)]
            wait_until(lambda: sum(v or 0 for v in probe_a.committed(partitions).values()) == 200, 15, "A commits")
            groups["B"][0].stop()  # B loses a member: its partition moves to B's idle one; A is untouched
            produce(bootstrap, "prices", 50, start=200)
            wait_until(lambda: len({r for x in groups["A"] for r in x.records()}) == 250, 30, "A reads on")
            wait_until(lambda: sum(v or 0 for v in probe_b.committed(partitions).values()) == 250, 30, "B reads on")
            assert sum(v or 0 for v in probe_a.committed(partitions).values()) == 250
    finally:
        for members in groups.values():
            for member in members:
                member.stop()


def test_partitions_move_on_join_close_kill_and_a_starved_poll_loop(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("orders", partitions=6, replication_factor=3)
    produce(bootstrap, "orders", 60)
    consumed: list[lanes.ConsumerRecord] = []
    first = lanes.Consumer(bootstrap, group_id="g", auto_offset_reset="earliest")
    first.subscribe(["orders"])
    stop = threading.Event()

    def keep_polling() -> None:
        while not stop.is_set():
            consumed.extend(first.poll(100))

    poller = threading.Thread(target=keep_polling)
    poller.start()
    members: list[Member] = []
    try:
        wait_until(lambda: len(first.assignment()) == 6, 20, "the first member gets every partition")
        second = lanes.Consumer(bootstrap, group_id="g", auto_offset_reset="earliest")
        second.subscribe(["orders"])
        wait_until(lambda: (second.poll(100), len(second.assignment()))[1] == 3, 20, "a second member gets half")
        assert not first.assignment() & second.assignment()
        second.close()  # leaves at once: no session timeout to wait for
        moved = wait_until(lambda: len(first.assignment()) == 6, 5, "partitions back after close")
        print(f"\nclose -> moved in {moved:.2f} s")

        killed = Member(bootstrap, "g", "orders")
        members.append(killed)
        wait_until(lambda: len(killed.owned()) == 3, 20, "a member process gets half")
        killed.process.send_signal(signal.SIGKILL)
        moved = wait_until(lambda: len(first.assignment()) == 6, 10, "partitions back after SIGKILL")
        print(f"SIGKILL -> moved in {moved:.2f} s (session timeout 3 s)")

        starved = Member(
            bootstrap, "g", "orders", "--max-poll-interval-ms", "2000", "--stop-polling-after-records", "0"
        )
        members.append(starved)
        wait_until(lambda: any(e["event"] == "stopped-polling" for e in list(starved.events)), 20, "starved member")
        moved = wait_until(lambda: len(first.assignment()) == 6, 10, "partitions back from the starved member")
        print(f"no poll -> moved in {moved:.2f} s (max_poll_interval_ms 2 s)")
        assert starved.process.poll() is None, "the starved member is alive: it left because it did not poll"
    finally:
        stop.set()
        poller.join()
        first.close()
        for member in members:
            member.stop()


def test_commit_after_processing_redelivers_exactly_the_uncommitted_records(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("payments", partitions=3, replication_factor=3)
    produce(bootstrap, "payments", 300)
    crashing = Member(bootstrap, "ledger", "payments", "--stop-committing-after-records", "100")
    try:
        wait_until(lambda: len(crashing.records()) == 300, 30, "all 300 processed")
        crashing.process.send_signal(signal.SIGKILL)  # processed, not all committed
        crashing.process.wait(timeout=10)
        committed = set(crashing.committed_records())
        uncommitted = set(crashing.records()) - committed
        assert 100 <= len(committed) < 300
        assert uncommitted
        successor = Member(bootstrap, "ledger", "payments")
        wait_until(lambda: set(successor.records()) >= uncommitted, 30, "the uncommitted records come again")
        time.sleep(1)
        assert set(successor.records()) == uncommitted, "exactly the uncommitted records are redelivered"
        assert set(successor.records()) | committed == set(crashing.records())
        successor.stop()
    finally:
        crashing.stop()


def test_commit_before_processing_loses_the_batch_in_flight_at_most_once(cluster: LocalCluster) -> None:
    bootstrap = cluster.describe()["bootstrap"]
    lanes.Admin(bootstrap).create_topic("alerts", partitions=1, replication_factor=3)
    produce(bootstrap, "alerts", 50)
    crashing = Member(bootstrap, "pager", "alerts", "--commit", "before", "--exit-after-commit-at-records", "1")
    try:
        crashing.process.wait(timeout=30)
        assert crashing.records() == [], "it died after committing and before processing"
        assert any(e["event"] == "committed" for e in crashing.events)
        with lanes.Consumer(bootstrap, group_id="pager") as probe:
            committed = probe.committed([lanes.TopicPartition("alerts", 0)])[lanes.TopicPartition("alerts", 0)]
        assert committed is not None
        assert committed > 0
        produce(bootstrap, "alerts", 10, start=50)
        successor = Member(bootstrap, "pager", "alerts")
        wait_until(lambda: len(successor.records()) == 60 - committed, 30, "the successor reads on")
        time.sleep(0.5)
        offsets = [o for _, o in successor.records()]
        assert offsets == list(range(committed, 60)), "records 0..committed-1 are never processed: at most once"
        successor.stop()
    finally:
        crashing.stop()


def test_coordinator_failover_keeps_the_group_and_its_offsets(tmp_path: Path) -> None:
    settings = {**GROUP_SETTINGS, "coordinators": 2, "session_timeout_ms": 2000}
    with running_cluster(tmp_path, 3, **settings) as cluster:
        bootstrap = cluster.describe()["bootstrap"]
        lanes.Admin(bootstrap).create_topic("trades", partitions=4, replication_factor=3)
        partitions = [lanes.TopicPartition("trades", p) for p in range(4)]
        seen: set[tuple[int, int]] = set()
        stop = threading.Event()
        consumers = [lanes.Consumer(bootstrap, group_id="desk", auto_offset_reset="earliest") for _ in range(2)]
        for consumer in consumers:
            consumer.subscribe(["trades"])
        errors: list[BaseException] = []

        def consume(consumer: lanes.Consumer) -> None:
            try:
                while not stop.is_set():
                    records = consumer.poll(100)
                    seen.update((r.partition, r.offset) for r in records)
                    if records:
                        consumer.commit()
            except BaseException as exc:  # surfaced by the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=consume, args=(c,)) for c in consumers]
        for thread in threads:
            thread.start()
        try:
            produce(bootstrap, "trades", 200)
            wait_until(lambda: len(seen) == 200, 30, "the group reads the first 200")
            with lanes.Consumer(bootstrap, group_id="desk") as probe:
                wait_until(lambda: sum(v or 0 for v in probe.committed(partitions).values()) == 200, 15, "commits")
                owner_id = _coordinator_of(cluster, "desk")
                cluster.coordinator_processes[owner_id].process.send_signal(signal.SIGKILL)
                produce(bootstrap, "trades", 200, start=200)
                resumed = wait_until(lambda: len(seen) == 400, 60, "the group reads on after the failover")
                print(f"\ncoordinator {owner_id} killed: the group read on within {resumed:.2f} s")
                wait_until(lambda: sum(v or 0 for v in probe.committed(partitions).values()) == 400, 30, "commits")
                assert _coordinator_of(cluster, "desk") != owner_id
            assert not errors, errors
            assert sorted(len(c.assignment()) for c in consumers) == [2, 2], "the same members, still sharing"
        finally:
            stop.set()
            for thread in threads:
                thread.join()
            for consumer in consumers:
                consumer.close()


def _coordinator_of(cluster: LocalCluster, group_id: str) -> int:
    for coordinator in cluster.describe()["coordinators"]:
        if cluster.coordinator_processes[coordinator["id"]].process.poll() is not None:
            continue
        with blocking_client_channel(coordinator["address"]) as channel:
            stub = coordinator_pb2_grpc.GroupCoordinatorStub(channel)  # type: ignore[no-untyped-call]
            found = stub.FindCoordinator(coordinator_pb2.FindCoordinatorRequest(group_ids=[group_id]), timeout=5)
        return int(found.coordinators[0].coordinator.node_id)
    raise AssertionError("no live coordinator")
