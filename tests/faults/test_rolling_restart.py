"""Issue #21, mechanism 7: a broker stopped with SIGTERM hands its leaderships away while it
still serves, so a rolling restart under acks=all load times nothing out and leaves no partition
without acknowledgements for long.

It used to stop its gRPC server first and ask the controller to move leadership only after that:
in-flight acks=all requests waited out the server's grace period, and every stop left the
partitions it led without acknowledgements for about 5 s.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import lanes
from lanes.errors import LanesError
from tests.e2e.cli import wait_for
from tests.integration.processes import running_cluster


def isr(bootstrap: str) -> tuple[int, ...]:
    with lanes.Admin(bootstrap) as admin:
        return tuple(admin.describe_topic("ledger").partitions[0].isr)


#: Far above what a handoff takes (a few heartbeat round trips), far below the old ~5 s.
MAX_SILENCE_S = 2.5


def test_a_rolling_restart_under_acks_all_load_loses_nothing_and_times_nothing_out(tmp_path: Path) -> None:
    with running_cluster(tmp_path, brokers=3) as cluster:
        bootstrap = cluster.describe()["bootstrap"]
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic("ledger", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
        acknowledged: list[tuple[float, int]] = []  # (when, value) of every acknowledged record
        failures: list[BaseException] = []
        done = threading.Event()

        def produce() -> None:
            with lanes.Producer(bootstrap, acks="all", linger_ms=1, delivery_timeout_ms=30_000) as producer:
                value = 0
                while not done.is_set():
                    future = producer.send("ledger", str(value).encode())
                    try:
                        future.result(timeout=60)
                    except LanesError as exc:
                        failures.append(exc)
                    else:
                        acknowledged.append((time.monotonic(), value))
                    value += 1

        worker = threading.Thread(target=produce)
        worker.start()
        silences: dict[int, float] = {}
        try:
            for broker_id in sorted(cluster.broker_processes):
                flowing = len(acknowledged) + 50
                wait_for(lambda n=flowing: len(acknowledged) >= n, "acknowledgements flowing before the stop")
                stopped_at = time.monotonic()
                assert cluster.broker_processes[broker_id].terminate() == 0
                wait_for(lambda t=stopped_at: acknowledged[-1][0] >= t, f"acknowledgements after stopping {broker_id}")
                before = [at for at, _ in acknowledged if at < stopped_at]
                after = [at for at, _ in acknowledged if at >= stopped_at]
                silences[broker_id] = after[0] - (before[-1] if before else stopped_at)
                cluster.start_broker(broker_id)
                # As a StatefulSet's rolling update does (readiness = in sync): the next broker
                # stops only once this one is back in the ISR.
                wait_for(lambda: len(isr(bootstrap)) == 3, f"broker {broker_id} back in the ISR", timeout_s=60)
        finally:
            done.set()
            worker.join(timeout=120)
        print("longest silence per stop:", {b: f"{s:.2f} s" for b, s in silences.items()})
        assert not failures, f"sends failed during the rolling restart: {failures[:3]}"
        assert all(s < MAX_SILENCE_S for s in silences.values()), silences

        with lanes.Consumer(bootstrap, auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
            partition = lanes.TopicPartition("ledger", 0)
            consumer.assign([partition])
            end = consumer.end_offsets([partition])[partition]  # everything written, duplicates too
            read: list[int] = []
            wait_for(
                lambda: (
                    read.extend(int(r.value or b"-1") for r in consumer.poll(500))
                    or consumer.position(partition) >= end
                ),
                "the whole partition read",
                timeout_s=60,
            )
            wanted = {value for _, value in acknowledged}
        assert wanted <= set(read), f"{len(wanted - set(read))} acknowledged records lost"
        assert len(read) == len(set(read)), "a record was written twice"
        assert read == sorted(read), "records out of send order"
