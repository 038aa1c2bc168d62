"""Acknowledged means durable, exactly once and in order, while partition leaders are SIGKILLed.

100,000 records are produced with acks=all (idempotent producer, retries) to a topic of 6
partitions, RF 3, min.insync.replicas=2. At random record indices the leader of a random partition
is killed with SIGKILL; a chaos thread measures how long until the controller names a new leader,
restarts the broker on its data directory and waits for every ISR to be whole again. A checker
then reads every partition back through ``lanes.Consumer`` and proves that each acknowledged record
is there exactly once, at the offset it was acknowledged with, in send order per partition.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import lanes
from lanes.client.admin import Admin
from lanes.errors import LanesError
from lanes.local.cluster import LocalCluster
from lanes.protocol.partitioner import partition_for_key
from tests.integration.processes import running_cluster

RECORDS = 100_000
PARTITIONS = 6
KILLS = 6
SEED = 20261122


class LeaderKiller:
    """Kills a partition leader when asked, one cycle at a time, on its own thread."""

    def __init__(self, cluster: LocalCluster, admin: Admin, topic: str, rng: random.Random) -> None:
        self.cluster = cluster
        self.admin = admin
        self.topic = topic
        self.rng = rng
        self.failover_s: list[float] = []  # SIGKILL -> the controller names a new leader
        self.rejoin_s: list[float] = []  # restart -> every ISR whole again
        self.errors: list[BaseException] = []
        self._cycle: threading.Thread | None = None

    def kill_one(self) -> None:
        """Start a kill cycle (after the previous one has finished)."""
        self.wait()
        self._cycle = threading.Thread(target=self._guarded, args=(self._kill_and_restart,), daemon=True)
        self._cycle.start()

    def wait(self) -> None:
        if self._cycle is not None:
            self._cycle.join(timeout=120)
            assert not self._cycle.is_alive(), "a kill cycle hung"

    def _guarded(self, cycle: Callable[[], None]) -> None:
        try:
            cycle()
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.errors.append(exc)

    def _kill_and_restart(self) -> None:
        partition = self.rng.randrange(PARTITIONS)
        victim = self.admin.describe_topic(self.topic).partitions[partition].leader
        assert victim in self.cluster.broker_processes, f"partition {partition} has no live leader to kill"
        self.cluster.broker_processes[victim].kill()
        killed = time.monotonic()
        self._until(lambda: self._leader(partition) not in (victim, -1), f"a new leader for partition {partition}")
        self.failover_s.append(time.monotonic() - killed)
        restarted = time.monotonic()
        self.cluster.start_broker(victim)
        self._until(self._every_isr_whole, "every ISR whole again after the restart")
        self.rejoin_s.append(time.monotonic() - restarted)

    def _leader(self, partition: int) -> int:
        return self.admin.describe_topic(self.topic).partitions[partition].leader

    def _every_isr_whole(self) -> bool:
        return all(len(p.isr) == len(p.replicas) for p in self.admin.describe_topic(self.topic).partitions)

    @staticmethod
    def _until(condition: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if condition():
                    return
            except LanesError:  # the killed broker was the one asked: ask again
                pass
            assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
            time.sleep(0.02)


def read_back(bootstrap: str, topic: str) -> dict[int, list[tuple[int, bytes | None, bytes | None]]]:
    """Every record of every partition as (offset, key, value), through the Consumer."""
    partitions = [lanes.TopicPartition(topic, p) for p in range(PARTITIONS)]
    stored: dict[int, list[tuple[int, bytes | None, bytes | None]]] = defaultdict(list)
    with lanes.Consumer(bootstrap) as consumer:
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(partitions)
        deadline = time.monotonic() + 120
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            for record in consumer.poll(timeout_ms=500):
                stored[record.partition].append((record.offset, record.key, record.value))
            assert time.monotonic() < deadline, "the consumer could not read everything back"
    return stored


def _first_difference(left: list[tuple[int, bytes, bytes]], right: list[tuple[int, bytes, bytes]]) -> int:
    return next((i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b), min(len(left), len(right)))


def test_every_acknowledged_record_exactly_once_in_order_while_leaders_are_killed(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    with running_cluster(tmp_path / "lanes", 3, session_timeout_ms=2000) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        admin = lanes.Admin(bootstrap)
        admin.create_topic("ledger", partitions=PARTITIONS, replication_factor=3, config={"min.insync.replicas": "2"})
        rng = random.Random(SEED)
        killer = LeaderKiller(cluster, admin, "ledger", random.Random(SEED + 1))
        kill_at = set(rng.sample(range(1_000, RECORDS - 1_000), KILLS))
        futures = []
        with lanes.Producer(bootstrap, acks="all", linger_ms=5, delivery_timeout_ms=120_000) as producer:
            for index in range(RECORDS):
                key = b"account-%03d" % rng.randrange(200)
                futures.append((key, b"r-%06d" % index, producer.send("ledger", b"r-%06d" % index, key=key)))
                if index in kill_at:
                    killer.kill_one()
            killer.wait()
            acknowledged = [(key, value, future.result(timeout=180)) for key, value, future in futures]
        assert not killer.errors, killer.errors
        assert len(killer.failover_s) == KILLS

        sent: dict[int, list[tuple[int, bytes, bytes]]] = defaultdict(list)
        for key, value, metadata in acknowledged:
            assert metadata.partition == partition_for_key(key, PARTITIONS)
            sent[metadata.partition].append((metadata.offset, key, value))
        stored = read_back(bootstrap, "ledger")
        for partition in range(PARTITIONS):
            assert stored[partition] == sent[partition], (
                f"partition {partition}: every acknowledged record exactly once, at its acknowledged offset, in "
                f"send order; {len(sent[partition])} acknowledged, {len(stored[partition])} read back, first "
                f"difference at index {_first_difference(stored[partition], sent[partition])}"
            )
        assert sum(len(records) for records in stored.values()) == RECORDS

    record_property("time_to_new_leader_s", [round(s, 3) for s in killer.failover_s])
    record_property("time_to_whole_isr_after_restart_s", [round(s, 3) for s in killer.rejoin_s])
    print(
        f"\n{KILLS} leader SIGKILLs: time to new leader median {statistics.median(killer.failover_s):.2f} s, "
        f"max {max(killer.failover_s):.2f} s (broker.session.timeout.ms=2000); restarted broker back in every ISR "
        f"after median {statistics.median(killer.rejoin_s):.2f} s, max {max(killer.rejoin_s):.2f} s"
    )
