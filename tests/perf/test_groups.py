"""Consumer-group benchmarks (run by `make bench`; prints numbers, asserts nothing about time):

- assignment computation: each assignor for 1,000 members and 10,000 partitions, from scratch and
  after one member joins (the sticky path);
- rebalance time of a real group growing from 1 to 50 members (lanes.aio consumers polling on
  one loop, 100 partitions): from a member's subscribe until every member owns its balanced share;
- commit throughput against a real coordinator: one committer waiting for each commit, and 16
  concurrent committers (the shard's writer batches what accumulates).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import lanes
from lanes import aio
from lanes.coordinator.assignors import ASSIGNORS, MemberSubscription
from tests.integration.processes import running_cluster

MEMBERS = 1_000
TOPICS = 10
PARTITIONS_PER_TOPIC = 1_000
GROWTH_MEMBERS = 50
GROWTH_PARTITIONS = 100
COMMITS = 2_000


def test_assignment_computation_for_1000_members_and_10000_partitions() -> None:
    counts = {f"topic-{t}": PARTITIONS_PER_TOPIC for t in range(TOPICS)}
    topics = frozenset(counts)
    members = [MemberSubscription(f"member-{m:04d}", topics) for m in range(MEMBERS)]
    print()
    for name, assignor in sorted(ASSIGNORS.items()):
        started = time.perf_counter()
        first = assignor(members, counts)
        scratch_s = time.perf_counter() - started
        joined = [MemberSubscription(m.member_id, topics, first[m.member_id]) for m in members] + [
            MemberSubscription("member-new", topics)
        ]
        started = time.perf_counter()
        second = assignor(joined, counts)
        sticky_s = time.perf_counter() - started
        moved = sum(len(first[m][t] - second[m].get(t, frozenset())) for m in first for t in first[m])
        print(
            f"{name:>10}: {MEMBERS} members x {TOPICS * PARTITIONS_PER_TOPIC} partitions: from scratch "
            f"{scratch_s * 1000:.0f} ms, one member joins {sticky_s * 1000:.0f} ms ({moved} partitions move)"
        )


def test_rebalance_time_growing_a_group_from_1_to_50_members() -> None:
    settings = {"group_session_timeout_ms": 10_000, "group_heartbeat_interval_ms": 200, "offsets_topic_partitions": 6}
    with tempfile.TemporaryDirectory() as tmp, running_cluster(Path(tmp), 1, **settings) as cluster:
        bootstrap = cluster.describe()["bootstrap"]
        lanes.Admin(bootstrap).create_topic("growth", partitions=GROWTH_PARTITIONS, replication_factor=1)

        async def grow() -> list[float]:
            consumers: list[aio.Consumer] = []
            stop = asyncio.Event()

            async def keep_polling(consumer: aio.Consumer) -> None:
                while not stop.is_set():
                    await consumer.poll(50)

            tasks = []
            durations = []
            for size in range(1, GROWTH_MEMBERS + 1):
                consumer = aio.Consumer(bootstrap, group_id="growing", enable_auto_commit=False)
                started = time.perf_counter()
                consumer.subscribe(["growth"])
                consumers.append(consumer)
                tasks.append(asyncio.create_task(keep_polling(consumer)))
                share = GROWTH_PARTITIONS // size
                while True:
                    owned = [len(c.assignment()) for c in consumers]
                    if sum(owned) == GROWTH_PARTITIONS and min(owned) >= share:
                        break
                    await asyncio.sleep(0.01)
                durations.append(time.perf_counter() - started)
            stop.set()
            await asyncio.gather(*tasks)
            for consumer in consumers:
                await consumer.close()
            return durations

        durations = asyncio.run(grow())
        print(
            f"\nrebalance as a group grows 1 -> {GROWTH_MEMBERS} members over {GROWTH_PARTITIONS} partitions "
            f"(heartbeat 200 ms): median {statistics.median(durations) * 1000:.0f} ms, max "
            f"{max(durations) * 1000:.0f} ms, at 10 members {durations[9] * 1000:.0f} ms, at 50 "
            f"{durations[-1] * 1000:.0f} ms"
        )


def test_commit_throughput() -> None:
    with tempfile.TemporaryDirectory() as tmp, running_cluster(Path(tmp), 3, offsets_topic_partitions=6) as cluster:
        bootstrap = cluster.describe()["bootstrap"]
        lanes.Admin(bootstrap).create_topic("commits", partitions=8, replication_factor=3)

        async def commit_loop(consumer: aio.Consumer, count: int) -> None:
            for index in range(count):
                await consumer.commit({lanes.TopicPartition("commits", index % 8): index})

        async def measure(committers: int) -> float:
            consumers = [aio.Consumer(bootstrap, group_id=f"committer-{committers}") for _ in range(committers)]
            await commit_loop(consumers[0], 10)  # warm up: coordinator found, shard loaded
            started = time.perf_counter()
            await asyncio.gather(*(commit_loop(c, COMMITS // committers) for c in consumers))
            elapsed = time.perf_counter() - started
            for consumer in consumers:
                await consumer.close()
            return COMMITS / elapsed

        print()
        for committers in (1, 16):
            rate = asyncio.run(measure(committers))
            print(f"commits (acks=all, RF 3), {committers:>2} committer(s) in one group: {rate:,.0f} commits/s")
