"""``lanes bench produce|consume``: Lanes' load tools, with the flags and the summaries of Kafka's
``kafka-producer-perf-test`` and ``kafka-consumer-perf-test`` (issue #39), so a run against Lanes
and one against Kafka read alike, and client cost (these tools, in Python) can be told apart from
server cost (Kafka's own tools through each broker's Kafka listener).

``produce`` sends ``--num-records`` records of ``--record-size`` random bytes (or, with
``--keys K``, keyed over K keys) at up to ``--throughput`` records/s (-1: as fast as the producer
takes them), with ``--producer-props`` in Kafka's names; it prints a line every 5 s and a summary
with the latency percentiles of a sample of the records (send to acknowledgement; at most 50,000
records evenly spread: one callback per record would slow a Python producer by a third).
``consume`` reads ``--messages`` records from the beginning as a group of one and prints Kafka's
tool's columns.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from lanes.cli.common import add_command, add_group, bootstrap_of, emit, resolve_credentials, resolve_tls
from lanes.cli.values import UsageError, positive_int
from lanes.client.consumer import Consumer
from lanes.client.producer import Producer, RecordFuture

REPORT_INTERVAL_S = 5.0
#: records whose latency is taken, at most: a callback per record would cost the Python producer
#: a third of its throughput (Kafka's Java tool takes up to 500,000)
MAX_LATENCY_SAMPLES = 50_000
#: Kafka's producer settings this tool takes (``--producer-props NAME=VALUE``), as the Lanes
#: producer's parameter and how to read the value
PRODUCER_PROPS: dict[str, tuple[str, type]] = {
    "acks": ("acks", str),
    "linger.ms": ("linger_ms", int),
    "batch.size": ("batch_size", int),
    "buffer.memory": ("buffer_memory", int),
    "compression.type": ("compression_type", str),
    "enable.idempotence": ("enable_idempotence", bool),
    "max.in.flight.requests.per.connection": ("max_in_flight_requests_per_partition", int),
    "max.request.size": ("max_request_size", int),
    "request.timeout.ms": ("request_timeout_ms", int),
    "delivery.timeout.ms": ("delivery_timeout_ms", int),
    "retry.backoff.ms": ("retry_backoff_ms", int),
    "max.block.ms": ("max_block_ms", int),
    "client.id": ("client_id", str),
}


def producer_settings(props: list[str]) -> dict[str, object]:
    """``--producer-props`` (Kafka's names) as the Lanes producer's keyword arguments;
    ``bootstrap.servers`` is taken by ``--bootstrap``."""
    settings: dict[str, object] = {}
    for pair in props:
        name, sep, text = pair.partition("=")
        if not sep:
            raise UsageError(f"--producer-props takes NAME=VALUE, not {pair!r}")
        if name == "bootstrap.servers":
            continue
        if name not in PRODUCER_PROPS:
            raise UsageError(f"unknown producer property {name!r}; known: {', '.join(sorted(PRODUCER_PROPS))}")
        parameter, kind = PRODUCER_PROPS[name]
        if kind is bool:
            if text.lower() not in ("true", "false"):
                raise UsageError(f"{name} is true or false, not {text!r}")
            settings[parameter] = text.lower() == "true"
        elif kind is int:
            try:
                settings[parameter] = int(text)
            except ValueError:
                raise UsageError(f"{name} is a whole number, not {text!r}") from None
        else:
            settings[parameter] = text
    return settings


@dataclass
class ProduceStats:
    """Acknowledgements and sampled latencies (ms) of a produce run; fed from the producer's
    callbacks (its loop thread) and read by the sending thread under ``lock``."""

    sampling: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    acknowledged: int = 0
    failed: int = 0
    error: BaseException | None = None
    latencies_ms: list[float] = field(default_factory=list)
    window_latencies_ms: list[float] = field(default_factory=list)

    def sampled(self, sent_s: float) -> Any:
        """The callback of a sampled record sent at ``sent_s`` (perf_counter)."""

        def done(future: RecordFuture) -> None:
            latency_ms = (time.perf_counter() - sent_s) * 1000
            error = future.exception()
            with self.lock:
                if error is not None:
                    self.error = self.error or error
                    return
                self.latencies_ms.append(latency_ms)
                self.window_latencies_ms.append(latency_ms)

        return done


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else 0.0


def produce(options: argparse.Namespace) -> int:
    settings = producer_settings(options.producer_props)
    value_bytes = options.record_size
    keys = [f"key-{index}".encode() for index in range(options.keys)] if options.keys else None
    value = os.urandom(value_bytes)
    records = options.num_records
    stats = ProduceStats(sampling=max(1, records // min(records, MAX_LATENCY_SAMPLES)))
    producer = Producer(bootstrap_of(options), tls=resolve_tls(), credentials=resolve_credentials(), **settings)
    started = window_start = time.perf_counter()
    window_sent = 0
    interval_s = 1 / options.throughput if options.throughput > 0 else 0.0
    try:
        send, topic, sampling = producer.send, options.topic, stats.sampling
        # the clock and the schedule are looked at per chunk: 1,000 records, or 10 ms of a throttled rate
        chunk = min(1000, max(1, options.throughput // 100)) if interval_s else 1000
        for chunk_start in range(0, records, chunk):
            if interval_s:  # Kafka's throttler: sleep back onto the schedule
                ahead_s = started + chunk_start * interval_s - time.perf_counter()
                if ahead_s > 0:
                    time.sleep(ahead_s)
            for index in range(chunk_start, min(chunk_start + chunk, records)):
                future = send(topic, value, keys[index % len(keys)] if keys else None)
                if index % sampling == 0:
                    future.add_done_callback(stats.sampled(time.perf_counter()))
            window_sent += min(chunk, records - chunk_start)
            now = time.perf_counter()
            if now - window_start >= REPORT_INTERVAL_S:
                with stats.lock:
                    window = sorted(stats.window_latencies_ms)
                    stats.window_latencies_ms.clear()
                _report_window(window_sent, now - window_start, value_bytes, window)
                window_start, window_sent = now, 0
            if stats.error is not None:
                break
        producer.flush()
        elapsed_s = time.perf_counter() - started
    finally:
        producer.close()
    if stats.error is not None:
        raise stats.error
    ordered = sorted(stats.latencies_ms)
    document = {
        "records": records,
        "records_per_s": records / elapsed_s,
        "mb_per_s": records * value_bytes / elapsed_s / (1024 * 1024),
        "avg_latency_ms": sum(ordered) / len(ordered) if ordered else 0.0,
        "max_latency_ms": ordered[-1] if ordered else 0.0,
        **{f"p{label}_ms": _percentile(ordered, fraction) for label, fraction in _PERCENTILES},
    }
    emit(options, document, _render_produce)
    return 0


_PERCENTILES = (("50", 0.5), ("95", 0.95), ("99", 0.99), ("99.9", 0.999))


def _report_window(sent: int, seconds: float, value_bytes: int, ordered: list[float]) -> None:
    average = sum(ordered) / len(ordered) if ordered else 0.0
    print(
        f"{sent} records sent, {sent / seconds:.1f} records/sec ({sent * value_bytes / seconds / 2**20:.2f} MB/sec), "
        f"{average:.1f} ms avg latency, {ordered[-1] if ordered else 0.0:.1f} ms max latency.",
        flush=True,
    )


def _render_produce(d: dict[str, Any]) -> str:
    """Kafka's producer-perf-test summary line."""
    return (
        f"{d['records']} records sent, {d['records_per_s']:.6f} records/sec ({d['mb_per_s']:.2f} MB/sec), "
        f"{d['avg_latency_ms']:.2f} ms avg latency, {d['max_latency_ms']:.2f} ms max latency, "
        f"{d['p50_ms']:.0f} ms 50th, {d['p95_ms']:.0f} ms 95th, {d['p99_ms']:.0f} ms 99th, "
        f"{d['p99.9_ms']:.0f} ms 99.9th."
    )


def consume(options: argparse.Namespace) -> int:
    wanted = options.messages
    group = options.group or f"lanes-bench-{uuid.uuid4().hex[:8]}"
    joined_s = time.perf_counter()
    received = received_bytes = 0
    first_s = 0.0
    deadline_s = options.timeout / 1000
    with Consumer(
        bootstrap_of(options),
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=options.max_poll_records,
        tls=resolve_tls(),
        credentials=resolve_credentials(),
    ) as consumer:
        consumer.subscribe([options.topic])
        last_record_s = time.perf_counter()
        while received < wanted:
            batch = consumer.poll(timeout_ms=1000)
            now = time.perf_counter()
            if not batch:
                if now - last_record_s > deadline_s:
                    break
                continue
            if not received:
                first_s = now
            last_record_s = now
            received += len(batch)
            received_bytes += sum(len(record.value or b"") for record in batch)
            consumer.commit(asynchronous=True)
        consumer.commit()
    ended_s = time.perf_counter()
    if received < wanted:
        raise UsageError(f"only {received} of {options.messages} records arrived within {options.timeout} ms of quiet")
    fetch_s = max(ended_s - first_s, 1e-9)
    total_s = max(ended_s - joined_s, 1e-9)
    megabytes = received_bytes / (1024 * 1024)
    document = {
        "records": received,
        "megabytes": megabytes,
        "mb_per_s": megabytes / total_s,
        "records_per_s": received / total_s,
        "rebalance_time_ms": (first_s - joined_s) * 1000,
        "fetch_time_ms": fetch_s * 1000,
        "fetch_mb_per_s": megabytes / fetch_s,
        "fetch_records_per_s": received / fetch_s,
    }
    emit(options, document, _render_consume)
    return 0


def _render_consume(d: dict[str, Any]) -> str:
    """Kafka's consumer-perf-test columns (without its start and end wall-clock times)."""
    return (
        "data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, "
        "fetch.MB.sec, fetch.nMsg.sec\n"
        f"{d['megabytes']:.4f}, {d['mb_per_s']:.4f}, {d['records']}, {d['records_per_s']:.4f}, "
        f"{d['rebalance_time_ms']:.0f}, {d['fetch_time_ms']:.0f}, {d['fetch_mb_per_s']:.4f}, "
        f"{d['fetch_records_per_s']:.4f}"
    )


def _throughput(text: str) -> int:
    """-1 (no limit) or a positive whole number of records per second."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"records per second (-1: no limit), not {text!r}") from None
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(f"records per second (-1: no limit), not {text!r}")
    return value


def register(commands: Any) -> None:
    """Add ``bench`` (``produce``, ``consume``) to the ``lanes`` parser."""
    kinds = add_group(commands, "bench", "load tools with the flags of Kafka's producer and consumer perf tests")
    producing = add_command(
        kinds,
        "produce",
        summary="send records as fast as asked and report throughput and latency (kafka-producer-perf-test)",
        examples="""
lanes bench produce --topic perf --num-records 1000000 --record-size 100 --throughput -1 --producer-props acks=1
lanes bench produce --topic prices --num-records 500000 --record-size 100 --keys 97 --throughput 10000""",
        run=produce,
    )
    producing.add_argument("--topic", required=True)
    producing.add_argument("--num-records", type=positive_int, required=True, metavar="N")
    producing.add_argument("--record-size", type=positive_int, required=True, metavar="BYTES")
    producing.add_argument(
        "--throughput", type=_throughput, default=-1, metavar="N", help="records per second at most (-1: no limit)"
    )
    producing.add_argument(
        "--producer-props",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help=f"producer settings by Kafka's names ({', '.join(sorted(PRODUCER_PROPS))})",
    )
    producing.add_argument("--keys", type=positive_int, metavar="K", help="key the records over K keys (default: none)")
    consuming = add_command(
        kinds,
        "consume",
        summary="read records from the beginning as a group of one and report throughput (kafka-consumer-perf-test)",
        examples="lanes bench consume --topic perf --messages 1000000",
        run=consume,
    )
    consuming.add_argument("--topic", required=True)
    consuming.add_argument("--messages", type=positive_int, required=True, metavar="N")
    consuming.add_argument("--group", help="the group to read as (default: a new one)")
    consuming.add_argument(
        "--timeout", type=positive_int, default=10_000, metavar="MS", help="give up after this long without a record"
    )
    consuming.add_argument("--max-poll-records", type=positive_int, default=1000, metavar="N")
