"""Issue #21: a group member whose ownership lapsed while it was frozen must not hand out records
of its partitions before it reports them lost.

A member frozen past its session timeout (SIGSTOP, a long GC pause) is fenced, and its partitions
go to another member. Once it runs again, records it fetched may complete the ``poll()`` it was
in. It can no longer vouch for owning them (its last successful heartbeat is older than the
session timeout), so ``poll()`` must give the partitions up first (``on_partitions_lost``), not
return their records. The freeze is simulated with the consumer's injected clock jumping forward
while a ``poll()`` waits for its fetch: the same view of time a frozen process has when it
resumes.
"""

from __future__ import annotations

import threading
from pathlib import Path

import lanes
from lanes.client.consumer import ConsumerRecord
from lanes.clock import SystemClock
from lanes.deadline import Deadline
from tests.e2e.cli import wait_for
from tests.integration.processes import running_cluster

#: Long heartbeat intervals: only the client's clock jumps (the coordinator never expires the
#: member), so a heartbeat landing in the few milliseconds between the jump and the poll's answer
#: would undo the simulated freeze.
SESSION_TIMEOUT_MS = 15_000


class JumpingClock(SystemClock):
    """The system clock, plus whatever the test adds (a freeze seen from inside)."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms

    def monotonic_ms(self) -> int:
        return super().monotonic_ms() + self.offset_ms


class Recorder(lanes.RebalanceListener):
    def __init__(self) -> None:
        self.events: list[str] = []

    def on_partitions_assigned(self, partitions: set[lanes.TopicPartition]) -> None:
        self.events.append("assigned")

    def on_partitions_revoked(self, partitions: set[lanes.TopicPartition]) -> None:
        self.events.append("revoked")

    def on_partitions_lost(self, partitions: set[lanes.TopicPartition]) -> None:
        self.events.append("lost")


def test_a_member_whose_session_lapsed_during_a_poll_reports_its_partitions_lost_first(tmp_path: Path) -> None:
    settings = {"group_session_timeout_ms": SESSION_TIMEOUT_MS, "group_heartbeat_interval_ms": 5000}
    with running_cluster(tmp_path, 1, offsets_topic_partitions=3, **settings) as cluster:
        bootstrap = cluster.describe()["bootstrap"]
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("tasks", partitions=1, replication_factor=1)
        clock = JumpingClock()
        listener = Recorder()
        with (
            lanes.Producer(bootstrap, linger_ms=0) as producer,
            lanes.Consumer(
                bootstrap, group_id="workers", auto_offset_reset="earliest", enable_auto_commit=False, clock=clock
            ) as consumer,
        ):
            consumer.subscribe(["tasks"], listener=listener)
            wait_for(lambda: consumer.poll(200) == [] and consumer.assignment(), "the partition assigned")
            returned: list[list[bytes | None]] = []

            def poll_once() -> None:
                returned.append([r.value for r in consumer.poll(timeout_ms=10_000)])

            # The freeze must come while the poll waits for its fetch: a lapse seen when poll()
            # starts is reported before anything is fetched, fixed or not. The real fetcher is
            # wrapped to say when the poll has reached it.
            fetcher = consumer._consumer._fetcher
            fetching = threading.Event()
            unwrapped = fetcher.records

            async def records(deadline: Deadline) -> list[ConsumerRecord]:
                fetching.set()
                return await unwrapped(deadline)

            fetcher.records = records  # type: ignore[method-assign]
            polling = threading.Thread(target=poll_once)
            polling.start()
            assert fetching.wait(timeout=10), "the poll never fetched"
            events_before = list(listener.events)
            clock.offset_ms += SESSION_TIMEOUT_MS + 1000  # frozen past the session timeout
            producer.send("tasks", b"handed out after the session lapsed").result(timeout=10)
            polling.join(timeout=30)
            assert returned, "poll did not return"
            assert returned[0] == [] or "lost" in listener.events[len(events_before) :], (
                f"poll() returned {returned[0]} after the member's session had lapsed, before reporting the "
                "partition lost"
            )
            delivered = list(returned[0])  # after the loss was reported, the same poll may rejoin and read
            wait_for(lambda: delivered or delivered.extend(r.value for r in consumer.poll(200)), "the record read")
            assert delivered == [b"handed out after the session lapsed"], "held back, then read: not skipped"
