"""The demo's Spark application starts a query again from its checkpoint when Spark gave up on a
Python worker's start (a fixed 10 s wait that a loaded machine misses: CI saw it once), a bounded
number of times, and stops on any other failure. Query runs here are plain objects with the two
members ``Supervised`` reads (``isActive``, ``exception()``) and the two ``drain`` calls
(``processAllAvailable()``, ``stop()``); the real queries run in tests/e2e/test_demo.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pytest
from pyspark.sql.streaming.query import StreamingQuery

from lanes_spark.demo import RESTARTS_PER_QUERY, WORKER_START_TIMEOUT, Supervised

WORKER_TIMEOUT = (
    f"[PYTHON_EXCEPTION] {WORKER_START_TIMEOUT}. Caused by: java.net.SocketTimeoutException: "
    "Timed out while waiting for the Python worker to connect back"
)


class Run:
    """One run of a query: active until ``fail`` or ``stop``; ``processAllAvailable`` raises the
    failure queued in ``fails_when_drained`` (as Spark raises a query's failure there)."""

    def __init__(self) -> None:
        self.isActive = True
        self._failure: Exception | None = None
        self.fails_when_drained: str | None = None
        self.drained = False

    def processAllAvailable(self) -> None:
        if self.fails_when_drained is not None:
            self.fail(self.fails_when_drained)
            raise RuntimeError(self.fails_when_drained)
        self.drained = True

    def stop(self) -> None:
        self.isActive = False

    def fail(self, message: str) -> None:
        self.isActive = False
        self._failure = RuntimeError(message)

    def exception(self) -> Exception | None:
        return self._failure


def starter(runs: list[Run], failures_at_start: list[str] | None = None) -> Callable[[], StreamingQuery]:
    """Starts a new ``Run`` each call (kept in ``runs``), raising the queued start failures first."""
    pending = list(failures_at_start or [])

    def start() -> StreamingQuery:
        if pending:
            raise RuntimeError(pending.pop(0))
        runs.append(Run())
        return cast(StreamingQuery, runs[-1])

    return start


def test_a_query_whose_worker_did_not_start_in_time_runs_again_from_its_checkpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs: list[Run] = []
    supervised = Supervised("signals", starter(runs))
    assert supervised.failure() is None
    runs[-1].fail(WORKER_TIMEOUT)
    assert supervised.failure() is None, "started again"
    assert len(runs) == 2
    assert supervised.query is runs[1]
    assert supervised.failure() is None
    assert "starting it again from its checkpoint (1 of 3)" in capsys.readouterr().err


def test_a_start_that_fails_the_same_way_is_retried_too() -> None:
    runs: list[Run] = []
    supervised = Supervised("candles", starter(runs, [WORKER_TIMEOUT, WORKER_TIMEOUT]))
    assert len(runs) == 1
    assert supervised.restarts == 2


def test_restarts_are_bounded_and_then_the_failure_is_reported() -> None:
    runs: list[Run] = []
    supervised = Supervised("signals", starter(runs))
    for _ in range(RESTARTS_PER_QUERY):
        runs[-1].fail(WORKER_TIMEOUT)
        assert supervised.failure() is None
    runs[-1].fail(WORKER_TIMEOUT)
    failure = supervised.failure()
    assert failure is not None
    assert WORKER_START_TIMEOUT in failure
    assert len(runs) == RESTARTS_PER_QUERY + 1


def test_any_other_failure_stops_the_application_at_once() -> None:
    runs: list[Run] = []
    supervised = Supervised("signals", starter(runs))
    runs[-1].fail("price record prices-2@1041: ts is neither ISO-8601 nor epoch milliseconds")
    assert supervised.failure() == "price record prices-2@1041: ts is neither ISO-8601 nor epoch milliseconds"
    assert len(runs) == 1
    with pytest.raises(RuntimeError, match="checkpoint is corrupt"):
        Supervised("candles", starter([], ["checkpoint is corrupt"]))


def test_a_query_whose_worker_did_not_start_in_time_while_it_was_drained_runs_again_and_is_drained() -> None:
    # CI saw it: a run still starting when the application was told to stop failed in its drain
    runs: list[Run] = []
    supervised = Supervised("signals", starter(runs))
    runs[-1].fails_when_drained = WORKER_TIMEOUT
    supervised.drain()
    assert len(runs) == 2
    assert supervised.query is runs[1]
    assert runs[1].drained
    assert not runs[1].isActive
    assert supervised.restarts == 1


def test_a_drain_gives_up_after_the_restarts_and_raises_any_other_failure_at_once() -> None:
    runs: list[Run] = []
    supervised = Supervised("signals", starter(runs))
    supervised.restarts = RESTARTS_PER_QUERY
    runs[-1].fails_when_drained = WORKER_TIMEOUT
    with pytest.raises(RuntimeError, match=WORKER_START_TIMEOUT):
        supervised.drain()
    other = Supervised("candles", starter(runs))
    runs[-1].fails_when_drained = "checkpoint is corrupt"
    with pytest.raises(RuntimeError, match="checkpoint is corrupt"):
        other.drain()
    assert other.restarts == 0
