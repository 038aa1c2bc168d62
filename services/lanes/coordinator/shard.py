"""One loaded shard: its group core, its log, and the pipeline that makes decisions durable.

Decisions are taken one at a time on the coordinator's event loop (``decide`` is synchronous),
so they see each other's effects at once; their records queue up and one writer task appends
whatever has accumulated as one batch (group commit), so a busy shard writes few, large batches.
A caller answers its client only after ``durable(position)``: every record decided up to its own
decision — including other requests' records it may have read — is in the log, acknowledged by
all in-sync replicas. If the log refuses a write (a newer owner fenced this one, or an
unrecoverable error), the shard fails: waiting callers get the error, and the coordinator drops
the shard's in-memory state, which a later load rebuilds from the log alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from lanes.coordinator.core import GroupCoordinatorCore, GroupDecision, Instant
from lanes.coordinator.group import GroupRecord
from lanes.coordinator.shard_log import ShardLog, ShardUnavailableError
from lanes.errors import LanesError
from lanes.metadata.image import ShardImage
from lanes.runtime.broadcast import Broadcast
from lanes.runtime.quotas.loop_time import service_task

_log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_RECORDS_PER_WRITE = 5000


class LoadedShard:
    """A shard served by this coordinator (loading until ``activate``)."""

    def __init__(
        self,
        shard: int,
        info: ShardImage,
        core: GroupCoordinatorCore,
        log: ShardLog,
        on_failure: Callable[[LoadedShard], None],
    ) -> None:
        self.shard = shard
        self.info = info
        self.core = core
        self.log = log
        self.active = False
        self.failure: LanesError | None = None
        self._on_failure = on_failure
        self._pending: list[GroupRecord] = []
        self._decided = 0  # records decided so far
        self._durable = 0  # records known to be in the log
        self._progress = Broadcast()  # records became durable, or the shard failed
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start_loading(self, loading: Coroutine[Any, Any, None]) -> None:
        """Run the loading coroutine as a task owned by the shard (cancelled by ``close``)."""
        self._tasks.append(service_task(loading))

    def activate(self, records: list[GroupRecord], now: Instant) -> None:
        """Install the replayed state and start serving and writing."""
        self.core.store.apply_all(records)
        self.core.loaded(now)
        self.active = True
        self._tasks.append(service_task(self._write_loop()))

    def decide(self, decide: Callable[[GroupCoordinatorCore], tuple[T, GroupDecision]]) -> tuple[T, int]:
        """Take one decision; its result and the log position to wait for before answering."""
        if self.failure is not None:
            raise self.failure
        result, decision = decide(self.core)
        if decision.records:
            self._pending.extend(decision.records)
            self._decided += len(decision.records)
            self._wake.set()
        return result, self._decided

    def position(self) -> int:
        """The log position covering everything decided so far (for reads)."""
        return self._decided

    async def durable(self, position: int, timeout_s: float) -> None:
        """Wait until every record decided up to ``position`` is durable; raise the shard's
        failure, or TimeoutError (the writes go on; the client retries)."""
        await self._progress.wait_until(lambda: self._durable >= position or self.failure is not None, timeout_s)
        if self._durable < position and self.failure is not None:
            raise self.failure

    def close(self, reason: LanesError) -> None:
        """Stop serving: fail waiters with ``reason`` and stop the writer and loader."""
        if self.failure is None:
            self.failure = reason
        self.active = False
        self.log.close()
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        self._progress.notify_all()

    async def _write_loop(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._pending:
                    batch = self._pending[:MAX_RECORDS_PER_WRITE]
                    del self._pending[:MAX_RECORDS_PER_WRITE]
                    await self.log.append(batch)
                    self._durable += len(batch)
                    self._progress.notify_all()
        except LanesError as exc:
            _log.warning("shard %d (epoch %d) stops: %s", self.shard, self.info.shard_epoch, exc)
            self.failure = exc
            self._progress.notify_all()
            self._on_failure(self)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug: fail the shard loudly rather than serve unlogged state
            _log.exception("shard %d writer failed", self.shard)
            self.failure = ShardUnavailableError(f"shard {self.shard} writer failed: {exc}")
            self._progress.notify_all()
            self._on_failure(self)
