"""``lanes consume TOPIC``: print records, as a free consumer or as a member of a group.

Free (no ``--group``): reads every partition (or ``--partition N``) from ``--from`` (default
``earliest``) and stops at the end offsets the partitions had when it started, unless
``--follow``. In a group (``--group G``): the group assigns partitions and committed offsets say
where to start (``--from earliest|latest`` only applies to partitions without one); what was
printed is committed after each batch (at least once), and without ``--follow`` it stops once its
partitions are caught up. ``--max-records N`` stops after N records either way; so do Ctrl-C and
SIGTERM (between polls: exit 0, the group left cleanly).

With ``--filter`` (repeatable; all must hold) the brokers search their partitions and send only
the matches (``lanes.Scanner``): ``value~error``, ``key=order-17``, ``header:trace=abc``,
``$.price=42``, ``$.sym~AB``, ``!key``. A partition whose search ran out of its budget says where
it stopped, to go on from there. ``--follow`` then searches what arrives, once a second.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from lanes.cli.common import (
    Stop,
    add_command,
    bootstrap_of,
    progress,
    resolve_credentials,
    resolve_tls,
    topic_partitions,
)
from lanes.cli.record_format import DEFAULT_FORMAT, RecordFormat, record_document
from lanes.cli.values import StartPosition, UsageError, non_negative_int, parse_start, positive_int
from lanes.client.consumer import Consumer, ConsumerRecord
from lanes.client.scanner import Scanner
from lanes.topic_partition import TopicPartition

POLL_MS = 500
IDLE_MEMBER_GIVE_UP_S = 15.0


class Printer:
    """Writes records to stdout in the chosen format, flushing per batch."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.json = options.output == "json"
        self.format = RecordFormat(options.format, pretty=options.pretty)
        self.out = sys.stdout.buffer
        self.count = 0

    def write(self, records: list[ConsumerRecord]) -> None:
        if self.json:
            self.out.write(b"".join((json.dumps(record_document(r)) + "\n").encode() for r in records))
        else:
            self.out.write(b"".join(self.format.render(r) for r in records))
        self.out.flush()
        self.count += len(records)


def _start_free(consumer: Consumer, partitions: list[TopicPartition], start: StartPosition) -> None:
    if start.kind == "earliest":
        consumer.seek_to_beginning(*partitions)
    elif start.kind == "latest":
        consumer.seek_to_end(*partitions)
    elif start.kind == "offset":  # clamped into each partition's retained range
        beginnings = consumer.beginning_offsets(partitions)
        ends = consumer.end_offsets(partitions)
        for tp in partitions:
            consumer.seek(tp, min(max(start.value, beginnings[tp]), ends[tp]))
    else:
        found = consumer.offsets_for_times({tp: start.value for tp in partitions})
        ends = consumer.end_offsets(partitions)
        for tp in partitions:
            hit = found[tp]
            consumer.seek(tp, hit[0] if hit is not None else ends[tp])


def _consume_free(options: argparse.Namespace, printer: Printer, start: StartPosition, stop: Stop) -> None:
    count = topic_partitions(options, options.topic)
    if options.partition is not None and options.partition >= count:
        raise UsageError(f"--partition {options.partition}: {options.topic} has partitions 0-{count - 1}")
    numbers = [options.partition] if options.partition is not None else list(range(count))
    partitions = [TopicPartition(options.topic, n) for n in numbers]
    with Consumer(
        bootstrap_of(options), enable_auto_commit=False, tls=resolve_tls(), credentials=resolve_credentials()
    ) as consumer:
        consumer.assign(partitions)
        _start_free(consumer, partitions, start)
        if options.verbose:
            starts = ", ".join(f"{tp.partition} at {consumer.position(tp)}" for tp in partitions)
            progress(f"reading {options.topic} partitions {starts}", final=True)
        ends = {} if options.follow else consumer.end_offsets(partitions)
        for tp in partitions:  # already at the end: nothing to fetch
            if tp in ends and consumer.position(tp) >= ends[tp]:
                consumer.pause(tp)
        while (options.follow or consumer.paused() != set(partitions)) and not stop:
            records = consumer.poll(POLL_MS)
            if options.max_records is not None:
                records = records[: options.max_records - printer.count]
            if ends:  # drop what arrived after the start, pause partitions that reached their end
                records = [r for r in records if r.offset < ends[TopicPartition(r.topic, r.partition)]]
                for tp in partitions:
                    if tp not in consumer.paused() and consumer.position(tp) >= ends[tp]:
                        consumer.pause(tp)
            printer.write(records)
            if options.max_records is not None and printer.count >= options.max_records:
                return


def _consume_group(options: argparse.Namespace, printer: Printer, start: StartPosition, stop: Stop) -> None:
    if options.partition is not None:
        raise UsageError("--partition cannot be used with --group: the group assigns partitions")
    if start.kind not in {"earliest", "latest"}:
        raise UsageError(
            "with --group, --from is earliest or latest (for partitions without a committed offset); "
            f"to move the group, run: lanes groups reset-offsets {options.group} --topic {options.topic} --to ..."
        )
    topic_partitions(options, options.topic)  # an unknown topic fails here, clearly
    consumer = Consumer(
        bootstrap_of(options),
        group_id=options.group,
        client_id="lanes-cli",
        auto_offset_reset=start.kind,
        enable_auto_commit=False,
        tls=resolve_tls(),
        credentials=resolve_credentials(),
    )
    idle_since = time.monotonic()
    try:
        consumer.subscribe([options.topic])
        while not stop:
            records = consumer.poll(POLL_MS)
            if options.max_records is not None:
                records = records[: options.max_records - printer.count]
            if records:
                printer.write(records)
                consumer.commit({TopicPartition(r.topic, r.partition): r.offset + 1 for r in records})
            if options.max_records is not None and printer.count >= options.max_records:
                return
            if options.follow or records:
                continue
            assigned = consumer.assignment()
            if not assigned:
                if time.monotonic() - idle_since > IDLE_MEMBER_GIVE_UP_S:
                    progress(f"no partitions assigned to this member of {options.group} (other members own them all)")
                    return
                continue
            ends = consumer.end_offsets(assigned)
            if all(consumer.position(tp) >= ends[tp] for tp in assigned):
                return
    finally:
        consumer.close()


FOLLOW_SCAN_S = 1.0


def _search(options: argparse.Namespace, printer: Printer, start: StartPosition, stop: Stop) -> None:
    """``--filter``: the brokers' scans, then (``--follow``) scans of what arrived since, each second."""
    if options.group:
        raise UsageError("--filter searches the topic itself, not as a group member: leave out --group")
    topic_partitions(options, options.topic)  # an unknown topic fails here, clearly
    where = {
        "start": start.value if start.kind == "offset" else None,
        "start_time_ms": start.value if start.kind == "timestamp" else None,
        "last": 0 if start.kind == "latest" else None,
    }
    partitions = None if options.partition is None else [options.partition]
    scanned = 0
    with Scanner(bootstrap_of(options), tls=resolve_tls(), credentials=resolve_credentials()) as scanner:
        while not stop:
            positions: dict[int, int] = {}
            round_scanned: dict[int, int] = {}
            for update in scanner.scan(options.topic, options.filter, partitions=partitions, **where):
                records = update.records
                if options.max_records is not None:
                    records = records[: options.max_records - printer.count]
                printer.write(records)
                round_scanned[update.partition] = update.progress.scanned_records
                positions[update.partition] = update.progress.next_offset
                if sys.stderr.isatty():
                    progress(f"scanned {scanned + sum(round_scanned.values())} records, {printer.count} matches")
                ended = update.progress.ended
                if ended not in (None, "end", "match-limit"):
                    progress(
                        f"partition {update.partition}: the search stopped at offset {update.progress.next_offset} "
                        f"({ended}); go on with --partition {update.partition} --from {update.progress.next_offset}",
                        final=True,
                    )
                if (options.max_records is not None and printer.count >= options.max_records) or stop:
                    return
            scanned += sum(round_scanned.values())
            if not options.follow:
                return
            where = {"start": positions}  # type: ignore[dict-item]
            stop.wait(FOLLOW_SCAN_S)


def consume(options: argparse.Namespace) -> None:
    """Print records of a topic."""
    start = parse_start(options.from_)
    printer = Printer(options)
    stop = Stop()
    try:
        if options.filter:
            _search(options, printer, start, stop)
        elif options.group:
            _consume_group(options, printer, start, stop)
        else:
            _consume_free(options, printer, start, stop)
    finally:
        if options.verbose or sys.stderr.isatty():
            progress(f"read {printer.count} records from {options.topic}", final=True)


def register(commands: Any) -> None:
    """Add ``consume`` to the ``lanes`` parser."""
    parser = add_command(
        commands,
        "consume",
        summary="print records of a topic",
        examples="""
lanes consume streams-intro --format '%p %o %k: %v'
lanes consume streams-intro --partition 2 --from 1 --max-records 1
lanes consume orders --group audit --follow --output json
lanes consume prices --from 2026-11-22T09:00:00Z --pretty
lanes consume orders --filter 'value~refund' --filter 'header:region=eu'
lanes consume prices --filter '$.sym=ABC' --from latest --follow""",
        run=consume,
        description=__doc__.split("\n\n", 1)[1] if __doc__ else "",
    )
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--group", "-g", metavar="GROUP", help="consume as a member of this consumer group")
    parser.add_argument(
        "--from",
        dest="from_",
        default="earliest",
        metavar="WHERE",
        help="earliest (default), latest, an OFFSET, or an ISO 8601 timestamp such as 2026-11-22T09:00:00Z",
    )
    parser.add_argument("--partition", "-p", type=non_negative_int, metavar="N", help="read only partition N")
    parser.add_argument("--max-records", "-n", type=positive_int, metavar="N", help="stop after N records")
    parser.add_argument("--follow", "-F", action="store_true", help="keep waiting for new records (Ctrl-C stops)")
    parser.add_argument(
        "--format",
        default=DEFAULT_FORMAT,
        metavar="FMT",
        help="per record: %%t topic, %%p partition, %%o offset, %%k key, %%v value, %%h headers, %%T timestamp "
        "(ms), %%K/%%S key/value length, \\n \\t escapes (default %%v)",
    )
    parser.add_argument(
        "--filter",
        "-f",
        action="append",
        default=[],
        metavar="COND",
        help="only records meeting COND, searched on the brokers (repeatable, all must hold): key=K, key~PART, "
        "value~PART, header:NAME=V, header:NAME~PART, $.json.path=LITERAL, $.path~PART; a bare subject (key, "
        "header:NAME, $.path) tests presence; ! negates",
    )
    parser.add_argument("--pretty", action="store_true", help="indent values that are JSON")
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="print where reading starts and how many records were read (on stderr)",
    )
