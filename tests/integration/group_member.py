"""A group member as its own process, for tests that kill, pause or starve it.

``python -m tests.integration.group_member --bootstrap B --group G --topic T [options]`` joins
the group and prints one JSON line per event on stdout: ``{"event": "assigned" | "revoked" |
"lost", "partitions": [...]}``, ``{"event": "record", "partition": p, "offset": o, "polled": t0}``
when it processes a record (``t0``: when the poll that returned it began), ``{"event":
"committed"}`` after a commit (``commit-failed`` when the member was fenced), ``closed`` after a
clean close on SIGTERM; every event carries its wall-clock time ``t``. Options choose when it
commits (after processing: at-least-once; before: at-most-once) and how it misbehaves.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

import lanes


def emit(**event: object) -> None:
    print(json.dumps({**event, "t": time.time()}), flush=True)


class Listener(lanes.RebalanceListener):
    def on_partitions_assigned(self, partitions: set[lanes.TopicPartition]) -> None:
        emit(event="assigned", partitions=sorted(tp.partition for tp in partitions))

    def on_partitions_revoked(self, partitions: set[lanes.TopicPartition]) -> None:
        emit(event="revoked", partitions=sorted(tp.partition for tp in partitions))

    def on_partitions_lost(self, partitions: set[lanes.TopicPartition]) -> None:
        emit(event="lost", partitions=sorted(tp.partition for tp in partitions))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--commit", choices=["after", "before"], default="after")
    parser.add_argument("--max-poll-interval-ms", type=int, default=300_000)
    parser.add_argument("--max-poll-records", type=int, default=20)
    parser.add_argument(
        "--stop-polling-after-records", type=int, default=-1, help="once it owns partitions, sleep without polling"
    )
    parser.add_argument("--stop-committing-after-records", type=int, default=-1, help="then process without commits")
    parser.add_argument("--exit-after-commit-at-records", type=int, default=-1, help="die right after such a commit")
    options = parser.parse_args()
    consumer = lanes.Consumer(
        options.bootstrap,
        group_id=options.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_interval_ms=options.max_poll_interval_ms,
        max_poll_records=options.max_poll_records,
    )
    consumer.subscribe([options.topic], listener=Listener())
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    processed = 0
    while not stopping:
        polled_at = time.time()  # before poll checked that the member still vouches for its partitions
        records = consumer.poll(100)
        if 0 <= options.stop_polling_after_records <= processed and consumer.assignment():
            emit(event="stopped-polling")
            time.sleep(3600)
        if not records:
            continue
        if options.commit == "before":
            consumer.commit()
            emit(event="committed")
            if 0 <= options.exit_after_commit_at_records <= processed + len(records):
                os._exit(1)  # committed, never processed: at-most-once
        for record in records:
            emit(event="record", partition=record.partition, offset=record.offset, polled=polled_at)
        processed += len(records)
        if options.commit == "after" and not 0 <= options.stop_committing_after_records < processed:
            try:
                consumer.commit()
            except lanes.CommitFailedError as exc:
                emit(event="commit-failed", reason=str(exc))
            else:
                emit(event="committed")
    consumer.close()
    emit(event="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
