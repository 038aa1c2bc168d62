"""A broker killed (SIGKILL) with torn writes at the end of its logs, restarted and stopped again
at once (SIGTERM, before it may have opened every log), then started again: every acknowledged
record is read back exactly once and in order, nothing torn is served, and new records append
after the acknowledged ones (the leader-epoch checkpoints written over in place, decision 0047,
are what recovery checks the batches against).

A stop before every log was opened after a crash must not mark the data directory clean; whether
this stop lands before the last log is opened depends on timing (here it rarely does), so that
case is shown deterministically by ``tests/unit/test_log_recovery.py``
(``test_a_log_not_opened_since_an_unclean_stop_is_still_recovered_after_a_clean_close``)."""

from __future__ import annotations

from pathlib import Path

import lanes
from tests.integration.processes import running_cluster

TOPIC = "torn"
PARTITIONS = 200
RECORDS_PER_PARTITION = 5
TORN_WRITE = b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x01\x00half a batch"  # a batch cut by the kill


def test_torn_tails_after_a_kill_are_cut_even_when_the_next_run_stops_before_opening_every_log(
    tmp_path: Path,
) -> None:
    with running_cluster(tmp_path, brokers=1) as cluster:
        bootstrap = cluster.describe()["bootstrap"]
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=1)
        with lanes.Producer(bootstrap, acks="1", unknown_topic_wait_ms=10_000) as producer:
            futures = [
                producer.send(TOPIC, f"{p}:{n}".encode(), partition=p)
                for n in range(RECORDS_PER_PARTITION)
                for p in range(PARTITIONS)
            ]
            producer.flush()
        for future in futures:
            future.result(timeout=0)  # every record acknowledged

        cluster.broker_processes[1].kill()  # no flush, no checkpoint, no clean marker
        segments = [
            sorted(directory.glob("*.log"))[-1]
            for directory in tmp_path.glob(f"broker-1/**/{TOPIC}-*")
            if directory.is_dir()
        ]
        assert len(segments) == PARTITIONS
        for segment in segments:
            with segment.open("ab") as tail:
                tail.write(TORN_WRITE)

        cluster.start_broker(1)
        assert cluster.broker_processes[1].terminate() == 0  # at once: logs may be left unopened
        cluster.start_broker(1)

        with lanes.Producer(bootstrap, acks="1", delivery_timeout_ms=60_000) as producer:
            after = [producer.send(TOPIC, f"{p}:after".encode(), partition=p) for p in range(PARTITIONS)]
            producer.flush()
        assert all(future.result(timeout=0).offset == RECORDS_PER_PARTITION for future in after)
        with lanes.Consumer(bootstrap, auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
            partitions = [lanes.TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
            consumer.assign(partitions)
            read: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
            wanted = PARTITIONS * (RECORDS_PER_PARTITION + 1)
            polls = 0
            while sum(map(len, read.values())) < wanted and polls < 200:
                for record in consumer.poll(timeout_ms=500):
                    read[record.partition].append(record.value)
                polls += 1
        for p in range(PARTITIONS):
            expected = [f"{p}:{n}".encode() for n in range(RECORDS_PER_PARTITION)] + [f"{p}:after".encode()]
            assert read[p] == expected, p
