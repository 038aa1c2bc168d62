"""Workload 4, Lanes only: produce throughput as partitions and producer processes are added.

- partitions: one producer in this process sends ``records`` keyless records (the sticky
  partitioner fills a batch for one partition, then moves on) to a topic of 1, 6 or 24 partitions;
- producer processes: ``processes`` (1 or more) separate Python processes (spawned: each has its own
  interpreter and GIL, as separate application instances would) send ``records / processes``
  records each to one topic; they connect and warm up first, start together on a signal, and the
  run is timed from that signal to the last process's final acknowledgement.
"""

from __future__ import annotations

import multiprocessing
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event

import lanes

_START_TIMEOUT_S = 60


def _producer_process(job: tuple[str, str, int, bytes, str], go: Event, results: Queue[tuple[str, object]]) -> None:
    bootstrap, topic, records, value, acks = job
    try:
        with lanes.Producer(bootstrap, acks=acks, enable_idempotence=acks == "all") as producer:
            producer.send(topic, value).result(timeout=30)  # warm: metadata, channel, producer id
            results.put(("ready", 0.0))
            if not go.wait(_START_TIMEOUT_S):
                raise RuntimeError("never told to start")
            last = None
            for _ in range(records):
                last = producer.send(topic, value)
            producer.flush()
            if last is not None:
                last.result(timeout=0)
        results.put(("done", time.time()))
    except BaseException as exc:  # reported to the driver, which fails the run
        results.put(("failed", repr(exc)))


def lanes_produce_processes(
    bootstrap: str, topic: str, records: int, value: bytes, *, acks: str, processes: int
) -> float:
    """Seconds for ``processes`` producer processes to send ``records`` records between them."""
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    results: Queue[tuple[str, object]] = context.Queue()
    share = records // processes
    workers = [
        context.Process(
            target=_producer_process,
            args=((bootstrap, topic, share + (records % processes if index == 0 else 0), value, acks), go, results),
        )
        for index in range(processes)
    ]
    for worker in workers:
        worker.start()
    try:
        for _ in workers:
            kind, detail = results.get(timeout=_START_TIMEOUT_S)
            if kind != "ready":
                raise RuntimeError(f"a producer process failed before starting: {detail}")
        started = time.time()
        go.set()
        finished = []
        for _ in workers:
            kind, detail = results.get(timeout=600)
            if kind != "done":
                raise RuntimeError(f"a producer process failed: {detail}")
            finished.append(detail)
        return max(finished) - started
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
