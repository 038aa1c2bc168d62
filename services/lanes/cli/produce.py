"""``lanes produce TOPIC``: lines from stdin or a file become records.

Each line is one record (its trailing newline removed; blank lines skipped). With
``--key-separator SEP`` the line splits on the first SEP into key and value, and a line without
SEP is refused (the records before it are produced, and the summary says how many). Records go
through the ordinary Producer: keyed records to their key's partition, batched, idempotent with
``--acks all``. The summary lists per partition how many records were written and their first
and last offsets.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import IO, Any

from lanes.cli.common import (
    add_command,
    bootstrap_of,
    emit,
    progress,
    resolve_credentials,
    resolve_tls,
    table,
    topic_partitions,
)
from lanes.cli.values import UsageError, non_negative_int, parse_pairs
from lanes.client.producer import Producer, RecordFuture

PROGRESS_INTERVAL_S = 1.0


class DeliveryTally:
    """Per partition: records acknowledged and their lowest and highest offsets; the first error.
    Fed from the producer's callbacks (any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.partitions: dict[int, list[int]] = {}  # partition -> [records, first offset, last offset]
        self.error: BaseException | None = None

    def on_done(self, future: RecordFuture) -> None:
        """A record's future resolved."""
        error = future.exception()
        with self._lock:
            if error is not None:
                self.error = self.error or error
                return
            written = future.result()
            entry = self.partitions.setdefault(written.partition, [0, written.offset, written.offset])
            entry[0] += 1
            entry[1] = min(entry[1], written.offset)
            entry[2] = max(entry[2], written.offset)

    def document(self, topic: str) -> dict[str, Any]:
        """The stable JSON summary of ``lanes produce``."""
        with self._lock:
            partitions = [
                {
                    "partition": partition,
                    "records": records,
                    "first_offset": first if first >= 0 else None,
                    "last_offset": last if last >= 0 else None,
                }
                for partition, (records, first, last) in sorted(self.partitions.items())
            ]
        return {"topic": topic, "records": sum(p["records"] for p in partitions), "partitions": partitions}


def _render(d: dict[str, Any]) -> str:
    head = f"produced {d['records']} records to {d['topic']}"
    rows = [(p["partition"], p["records"], p["first_offset"], p["last_offset"]) for p in d["partitions"]]
    return head + ("\n" + table(rows, ["partition", "records", "first-offset", "last-offset"]) if rows else "")


def _split(line: bytes, separator: bytes | None, line_number: int) -> tuple[bytes | None, bytes]:
    if separator is None:
        return None, line
    key, found, value = line.partition(separator)
    if not found:
        raise UsageError(
            f"line {line_number} has no key separator {separator.decode()!r}: {line[:60].decode(errors='replace')!r}; "
            "every line must be KEY<SEP>VALUE (or drop --key-separator)"
        )
    return key, value


def produce(options: argparse.Namespace) -> int:
    """Produce every line of stdin or ``--file`` to the topic."""
    headers = [(k, v.encode()) for k, v in parse_pairs(options.header, "--header").items()]
    separator = options.key_separator.encode() if options.key_separator is not None else None
    if separator == b"":
        raise UsageError("--key-separator must not be empty")
    partitions = topic_partitions(options, options.topic)
    if options.partition is not None and options.partition >= partitions:
        raise UsageError(f"--partition {options.partition}: {options.topic} has partitions 0-{partitions - 1}")
    source: IO[bytes] = open(options.file, "rb") if options.file else sys.stdin.buffer  # noqa: SIM115
    size = os.fstat(source.fileno()).st_size if options.file else 0
    show_progress = options.progress or sys.stderr.isatty()
    tally = DeliveryTally()
    sent = 0
    failure: UsageError | None = None
    producer = Producer(
        bootstrap_of(options),
        acks=options.acks,
        compression_type=options.compression,
        linger_ms=options.linger_ms,
        tls=resolve_tls(),
        credentials=resolve_credentials(),
    )
    try:
        next_progress = time.monotonic() + PROGRESS_INTERVAL_S
        for line_number, raw in enumerate(source, 1):
            line = raw.rstrip(b"\n").removesuffix(b"\r")
            if not line.strip():
                continue
            try:
                key, value = _split(line, separator, line_number)
            except UsageError as exc:
                failure = exc
                break
            producer.send(options.topic, value, key, partition=options.partition, headers=headers).add_done_callback(
                tally.on_done
            )
            sent += 1
            if tally.error is not None:
                break
            if show_progress and time.monotonic() >= next_progress:
                share = f" ({100 * source.tell() / size:.0f}% of {options.file})" if size else ""
                progress(f"produced {sent} records{share}")
                next_progress = time.monotonic() + PROGRESS_INTERVAL_S
        producer.flush()
    finally:
        producer.close()
        if options.file:
            source.close()
    if show_progress and sent:
        progress(f"produced {sent} records", final=True)
    emit(options, tally.document(options.topic), _render)
    if tally.error is not None:
        raise tally.error
    if failure is not None:
        raise failure
    return 0


def register(commands: Any) -> None:
    """Add ``produce`` to the ``lanes`` parser."""
    parser = add_command(
        commands,
        "produce",
        summary="write lines from stdin or a file as records",
        examples="""
lanes produce streams-intro --key-separator :        # then type foo:first message, Ctrl-D
printf 'AAPL {"price": 190.5}\\n' | lanes produce prices --key-separator ' '
lanes produce events --file events.jsonl --header source=import --compression zstd
lanes produce audit --partition 0 --acks 1 < audit.log""",
        run=produce,
    )
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--file", "-f", help="read lines from this file instead of stdin")
    parser.add_argument(
        "--key-separator", "-K", metavar="SEP", help="split each line into KEY SEP VALUE at the first SEP"
    )
    parser.add_argument(
        "--partition", "-p", type=non_negative_int, metavar="N", help="write every record to partition N"
    )
    parser.add_argument(
        "--header",
        "-H",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a header on every record (repeatable)",
    )
    parser.add_argument(
        "--acks",
        choices=["0", "1", "all"],
        default="all",
        help="all (default): every in-sync replica has it, idempotent; 1: the leader has it; 0: do not wait",
    )
    parser.add_argument(
        "--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none", help="batch compression"
    )
    parser.add_argument(
        "--linger-ms", type=non_negative_int, default=5, help="how long a batch waits to fill (default 5)"
    )
    parser.add_argument("--progress", action="store_true", help="show progress even when stderr is not a terminal")
