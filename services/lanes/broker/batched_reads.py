"""Log reads of many requests in one worker-thread trip, identical reads done once.

One append can complete thousands of waiting fetches at once (5,000 long-polls on a partition).
Each handing its read to a thread of its own costs a thread hop, a turn for the GIL and the
log's lock per fetch, and they all ask for the same bytes. ``BatchedReads`` collects the read
jobs submitted during one turn of the event loop and runs them in one thread trip, at most
``MAX_JOBS_PER_TRIP`` at a time, with a ``SharedReads`` that reads each (log, offset, size,
bound) once; back on the loop it hands the results over ``RESULTS_PER_TURN`` at a time, so
timers (heartbeats to the controller), the metadata stream and other clients' requests run
between them instead of after all of them.

A shared read is safe: the bytes below a high-water mark never change while a trip runs (only
records above it are ever truncated), and a trip's reads are all bounded by the mark.

A job run ``light`` is first tried on the event loop with ``LoopReads``: reads and positions that
wait for nothing: not for a log's lock, not for an index lookup, not for the disk (a consumer or
follower reading on from where it stopped, one ``preadv2`` of bytes in the page cache; decisions
0042 and 0048). When one would, the job is run again, from the start, in the next trip: such jobs
must be safe to run again. At most ``LIGHT_RUNS_PER_TURN`` jobs reading at most
``LIGHT_BYTES_PER_TURN`` run on the loop per turn of it: the thousands of long-polls one append
wakes go to trips (shared reads, results handed over a few per turn) after the first few.

Owned by the broker's event loop; jobs run in a worker thread, one after another.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from lanes.runtime.quotas.loop_time import service_task
from lanes.storage.log import PartitionLog, ReadResult
from lanes.storage.positions import LogPosition

T = TypeVar("T")

#: jobs one thread trip runs (a bound on how long one trip holds a worker thread)
MAX_JOBS_PER_TRIP = 512
#: results handed over per turn of the event loop
RESULTS_PER_TURN = 16
#: light jobs run on the event loop per turn of it (the rest go to trips)
LIGHT_RUNS_PER_TURN = 16
#: bytes light jobs may read on the event loop per turn of it (copies from the page cache: ~0.1 ms per MiB)
LIGHT_BYTES_PER_TURN = 4 * 1024 * 1024


class Reads(Protocol):
    """How a job reads logs: ``PartitionLog.read`` and ``PartitionLog.position``."""

    def read(
        self, log: PartitionLog, offset: int, max_bytes: int, upper_bound_offset: int | None, min_one_batch: bool
    ) -> ReadResult: ...

    def position(self, log: PartitionLog, offset: int) -> LogPosition: ...


class NotLightError(Exception):
    """A read on the event loop would wait for a lock or look into an index."""


class LoopReads:
    """Reads on the event loop: only light ones (``PartitionLog.read(wait=False)``,
    ``PartitionLog.known_position``); any other raises ``NotLightError``."""

    def read(
        self, log: PartitionLog, offset: int, max_bytes: int, upper_bound_offset: int | None, min_one_batch: bool
    ) -> ReadResult:
        found = log.read(
            offset, max_bytes, upper_bound_offset=upper_bound_offset, min_one_batch=min_one_batch, wait=False
        )
        if found is None:
            raise NotLightError
        return found

    def position(self, log: PartitionLog, offset: int) -> LogPosition:
        found = log.known_position(offset)
        if found is None:
            raise NotLightError
        return found


class SharedReads:
    """The reads and positions of one trip, each done once. Used by one worker thread."""

    def __init__(self) -> None:
        self._reads: dict[tuple[int, int, int, int | None, bool], ReadResult] = {}
        self._positions: dict[tuple[int, int], LogPosition] = {}

    def read(
        self, log: PartitionLog, offset: int, max_bytes: int, upper_bound_offset: int | None, min_one_batch: bool
    ) -> ReadResult:
        """``log.read``, once per trip for the same arguments."""
        key = (id(log), offset, max_bytes, upper_bound_offset, min_one_batch)
        found = self._reads.get(key)
        if found is None:
            found = log.read(offset, max_bytes, upper_bound_offset=upper_bound_offset, min_one_batch=min_one_batch)
            self._reads[key] = found
        return found

    def position(self, log: PartitionLog, offset: int) -> LogPosition:
        """``log.position``, once per trip for the same offset."""
        key = (id(log), offset)
        found = self._positions.get(key)
        if found is None:
            found = log.position(offset)
            self._positions[key] = found
        return found


Job = Callable[[Reads], Any]


class BatchedReads:
    """Runs read jobs in shared worker-thread trips; see the module docstring."""

    def __init__(self) -> None:
        self._pending: list[tuple[Job, asyncio.Future[Any]]] = []
        self._flush_scheduled = False
        #: results back from trips, handed over ``RESULTS_PER_TURN`` per turn by one task
        self._done: collections.deque[tuple[asyncio.Future[Any], bool, Any]] = collections.deque()
        self._handing_over: asyncio.Task[None] | None = None
        #: light jobs run on the loop in this turn of it, and the bytes they may read
        self._light_runs = 0
        self._light_bytes = 0

    async def run(self, job: Callable[[Reads], T], *, light: bool = False, light_bytes: int = 0) -> T:
        """``job(reads)``'s result (or exception), run in the next trip; ``light``: tried on the
        loop first (see the module docstring), reading at most ``light_bytes`` there."""
        loop = asyncio.get_running_loop()
        if light and self._light_runs < LIGHT_RUNS_PER_TURN and self._light_bytes + light_bytes <= LIGHT_BYTES_PER_TURN:
            if self._light_runs == 0:
                loop.call_soon(self._next_turn)
            self._light_runs += 1
            self._light_bytes += light_bytes
            try:
                return job(LoopReads())
            except NotLightError:
                pass  # run again, whole, off the loop
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append((job, future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)
        return await future

    def _next_turn(self) -> None:
        self._light_runs = 0
        self._light_bytes = 0

    def _flush(self) -> None:
        self._flush_scheduled = False
        while self._pending:
            trip, self._pending = self._pending[:MAX_JOBS_PER_TRIP], self._pending[MAX_JOBS_PER_TRIP:]
            service_task(self._trip(trip))

    async def _trip(self, trip: list[tuple[Job, asyncio.Future[Any]]]) -> None:
        outcomes = await asyncio.to_thread(_run_all, [job for job, _ in trip])
        self._done.extend((future, ok, value) for (_, future), (ok, value) in zip(trip, outcomes, strict=True))
        if self._handing_over is None or self._handing_over.done():
            self._handing_over = service_task(self._hand_over())

    async def _hand_over(self) -> None:
        """Set the results of finished trips, ``RESULTS_PER_TURN`` per turn of the loop."""
        while self._done:
            for _ in range(min(RESULTS_PER_TURN, len(self._done))):
                future, ok, value = self._done.popleft()
                if future.done():  # (a fetch whose client left was cancelled meanwhile)
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
            await asyncio.sleep(0)  # the fetches just answered, timers and others run first


def _run_all(jobs: list[Job]) -> list[tuple[bool, Any]]:
    """Each job's (True, result) or (False, exception), with one ``SharedReads`` (a worker thread)."""
    shared = SharedReads()
    outcomes: list[tuple[bool, Any]] = []
    for job in jobs:
        try:
            outcomes.append((True, job(shared)))
        except Exception as exc:  # handed to the job's awaiter
            outcomes.append((False, exc))
    return outcomes
