"""The Spark side of ``lanes demo trading``: the candles job and strategy ``abc`` (the signals job)
as two streaming queries of one Spark application (one JVM on a laptop instead of two).

    python -m lanes_spark.demo --bootstrap HOST:PORT --checkpoints DIR

Access comes from the environment as for every Lanes client (``LANES_TLS_CA``, ``LANES_USERNAME``,
``LANES_PASSWORD_FILE``). The strategy's query commits its progress to the consumer group
``--group`` (``groupId``: each micro-batch's end, as Spark plans the next), so its lag shows
beside the Python strategy's. Prints one line, ``running``, once both queries are started.
SIGTERM or SIGINT, or its standard input closing (the demo that started it is gone), stop it in
order: both queries process what is there (``drain``), the strategy's last batch is committed to
its group (Spark hands a source a batch's end only when it plans the next one), and the
application exits 0.

A query that stops because one of its Python workers did not connect back in time, while it runs
or while it is drained, is started again from its checkpoint (``Supervised``); any other failure
ends the application with 1.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

import lanes
from lanes_spark.candles import candle_records, candles
from lanes_spark.signals import order_records, signals
from lanes_spark.trading import drain, job_arguments, read_prices, write_records


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="lanes_spark.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--checkpoints", type=Path, required=True, help="a directory: one checkpoint per query")
    parser.add_argument("--prices", default="prices")
    parser.add_argument("--candles", default="candles")
    parser.add_argument("--orders", default="orders")
    parser.add_argument("--group", default="trading-strategy.abc", help="the strategy's consumer group")
    parser.add_argument("--strategy", default="abc", help="named in its order requests")
    parser.add_argument("--window", default="1 minute", help="the candles' event-time window")
    parser.add_argument("--watermark", default="30 seconds")
    parser.add_argument("--short", type=int, default=5)
    parser.add_argument("--long", type=int, default=20)
    parser.add_argument("--starting-offsets", default="latest")
    return parser.parse_args(argv)


def _job_options(options: argparse.Namespace, query: str, group_id: str | None = None) -> argparse.Namespace:
    """One query's options, parsed as the trading jobs parse theirs (``job_arguments``: access from
    the environment, as every client), so the two never drift apart."""
    argv = ["--bootstrap", options.bootstrap, "--prices", options.prices]
    argv += ["--checkpoint", str(options.checkpoints / query), "--starting-offsets", options.starting_offsets]
    argv += ["--group-id", group_id] if group_id else []
    return job_arguments(f"lanes_spark.demo {query}", "", "unused").parse_args(argv)


def starters(spark: SparkSession, options: argparse.Namespace) -> dict[str, Callable[[], StreamingQuery]]:
    """How to start the candles query and the strategy's (``signals``), by name; each starts from
    its checkpoint when it has one."""
    candle_options = _job_options(options, "candles")
    strategy_options = _job_options(options, "signals", options.group)

    def start_candles() -> StreamingQuery:
        candle_frame = candles(read_prices(spark, candle_options), options.window, options.watermark)
        return write_records(candle_records(candle_frame), candle_options, options.candles, "candles")

    def start_signals() -> StreamingQuery:
        orders = signals(read_prices(spark, strategy_options), options.short, options.long)
        return write_records(order_records(orders, options.strategy), strategy_options, options.orders, "signals")

    return {"candles": start_candles, "signals": start_signals}


WORKER_START_TIMEOUT = "Python worker failed to connect back"
"""Spark's failure when a Python worker it spawned (the planner of a Python data source, among
others) has not connected back within 10 s: a fixed wait in ``PythonWorkerFactory``, not a
setting, which a laptop or CI machine under load can miss while nothing is wrong with the query."""

RESTARTS_PER_QUERY = 3


class Supervised:
    """One streaming query of the application and how to start it again.

    Invariant: ``query`` is the query's latest run; a run that failed with ``WORKER_START_TIMEOUT``
    (at its start, while running or while drained) is replaced by a new run from the same checkpoint, at most
    ``RESTARTS_PER_QUERY`` times, which resumes where the last committed batch ended (Spark's own
    recovery: the sink may see that batch's records again, at least once as always). Owned by the
    main thread.
    """

    def __init__(self, name: str, start: Callable[[], StreamingQuery]) -> None:
        self.name = name
        self.restarts = 0
        self._start = start
        self.query = self._start_run()

    def _start_run(self) -> StreamingQuery:
        while True:
            try:
                return self._start()
            except Exception as error:  # Spark's errors come through py4j as several types
                if not self._may_restart(error):
                    raise

    def _may_restart(self, failure: object) -> bool:
        if failure is None or WORKER_START_TIMEOUT not in str(failure) or self.restarts >= RESTARTS_PER_QUERY:
            return False
        self.restarts += 1
        print(
            f"the {self.name} query stopped: a Python worker did not start within Spark's 10 s;"
            f" starting it again from its checkpoint ({self.restarts} of {RESTARTS_PER_QUERY})",
            file=sys.stderr,
            flush=True,
        )
        return True

    def failure(self) -> str | None:
        """None while the query runs (after starting it again if it may be); why it stopped otherwise."""
        if self.query.isActive:
            return None
        failure = self.query.exception()
        if self._may_restart(failure):
            self.query = self._start_run()
            return None
        return str(failure or "no error")

    def drain(self) -> None:
        """``drain`` the query's latest run; a run that fails there as ``failure`` would start
        it again (a restart left, Spark's worker start) is replaced and drained in turn, any
        other failure is raised."""
        while True:
            try:
                drain(self.query)
                return
            except Exception as error:  # Spark's errors come through py4j as several types
                if not self._may_restart(error):
                    raise
                self.query = self._start_run()


def commit_progress(query: StreamingQuery, group: str, bootstrap: str) -> None:
    """Commit the end of ``query``'s last processed batch to ``group``."""
    progress = query.lastProgress
    if progress is None or not progress["sources"]:
        return
    end = json.loads(progress["sources"][0]["endOffset"])
    offsets = {lanes.TopicPartition(topic, int(p)): int(o) for topic, ps in end.items() for p, o in ps.items()}
    with lanes.Consumer(bootstrap, group_id=group, enable_auto_commit=False) as committer:
        committer.commit(offsets)


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    stop = threading.Event()
    spark = (
        SparkSession.builder.appName("lanes-demo-trading")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "6")  # a laptop's worth of state-store partitions
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # after the session: PySpark sets SIGINT's
        signal.signal(signum, lambda *_: stop.set())

    def stop_when_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=stop_when_stdin_closes, name="stdin-closed", daemon=True).start()
    queries = {name: Supervised(name, start) for name, start in starters(spark, options).items()}
    print("running", flush=True)
    while not stop.wait(0.5):
        for name, supervised in queries.items():
            failure = supervised.failure()
            if failure is not None:
                print(f"the {name} query stopped: {failure}", file=sys.stderr, flush=True)
                return 1
    for supervised in queries.values():
        supervised.drain()
    commit_progress(queries["signals"].query, options.group, options.bootstrap)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
