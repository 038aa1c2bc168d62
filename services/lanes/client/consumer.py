"""The Consumer: a member of a consumer group, or a free consumer that assigns partitions itself.

``lanes.aio.Consumer`` is the asynchronous core; ``lanes.Consumer`` the synchronous facade.

- Group mode (``group_id`` and ``subscribe``): the group's coordinator assigns partitions; the
  membership (``_membership.GroupMembership``) heartbeats in the background and ``poll`` applies
  its changes — revoked partitions are committed (auto-commit), handed to the listener and
  dropped before the coordinator hears they are free; assigned ones start from the group's
  committed offsets (else ``auto_offset_reset``). ``commit`` commits positions: the offset after
  the last record ``poll`` returned, so nothing unreturned is ever committed; with
  ``enable_auto_commit`` that happens every ``auto_commit_interval_ms`` inside ``poll``, on
  revocation and on ``close``. Not calling ``poll`` for ``max_poll_interval_ms`` leaves the group.
- Free mode: ``assign`` partitions, ``seek`` / ``seek_to_beginning`` / ``seek_to_end`` them, read
  ``position``; a partition without a position starts per ``auto_offset_reset`` (earliest or
  latest; ``none`` raises). With a ``group_id`` it may commit, while the group has no members.
- ``poll(timeout_ms)`` returns up to ``max_poll_records`` records in offset order per partition,
  fetching from each partition's leader (long-poll up to ``fetch_max_wait_ms``); while the caller
  processes them, the next fetch is already under way (prefetch), and a partition with at most
  one poll's or one fetch's worth of records left is fetched ahead, from where its buffer ends.
  Paused partitions are not fetched. A moved leader is found again through metadata.
- ``offsets_for_times``, ``beginning_offsets``, ``end_offsets`` look offsets up.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from lanes.client import _loop
from lanes.client._cluster import ClusterView
from lanes.client._fetcher import ConsumerRecord, Fetcher
from lanes.client._membership import GroupMembership, Step
from lanes.clock import SYSTEM_CLOCK, Clock
from lanes.deadline import Deadline
from lanes.errors import ErrorCode, LanesError, RetriableError, error_code, error_for
from lanes.protocol.names import validate_group_id, validate_topic_name
from lanes.rpc.addresses import parse_addresses
from lanes.rpc.credentials import ClientCredentials
from lanes.rpc.tls import ClientTls
from lanes.rpc.wire import topic_partitions_to_wire
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2, coordinator_pb2

__all__ = [
    "AsyncConsumer",
    "CommitFailedError",
    "Consumer",
    "ConsumerRecord",
    "RebalanceListener",
    "TopicPartition",  # its home is lanes.topic_partition; kept here for earlier imports
]

T = TypeVar("T")
_log = logging.getLogger(__name__)


class CommitFailedError(LanesError):
    """The commit was refused because this member was fenced or left; its partitions may now be
    another member's. Do not retry: the records since the last commit will be redelivered."""

    default_code = ErrorCode.FENCED_MEMBER_EPOCH


def _first_retriable_partition_error(answer: coordinator_pb2.CommitOffsetsResponse) -> common_pb2.Error:
    """The first retriable per-partition error of a commit's answer (an Error with code NONE if
    none): the coordinator moved or is loading, and the request is sent again; the others are
    the answer for their partitions."""
    for topic in answer.topics:
        for part in topic.partitions:
            code = error_code(part.error.code) if part.error.code else None
            if code is not None and code.retriable:
                return part.error
    return common_pb2.Error()


def _commit_failure(group_id: str, error: LanesError) -> LanesError:
    """What a commit's caller is told: CommitFailedError when the member was fenced."""
    if error.code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
        return CommitFailedError(f"group {group_id!r}: {error.message}", error.code)
    return error


class RebalanceListener:
    """Callbacks around group rebalances, called inside ``poll`` (override what you need).

    ``on_partitions_revoked`` runs before revoked partitions are released (commit what you
    processed here); ``on_partitions_assigned`` after new ones are added (``seek`` works here);
    ``on_partitions_lost`` when the member was fenced or its session lapsed and the partitions may
    already belong to another member (do not commit; by default it calls ``on_partitions_revoked``).
    """

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        """Partitions about to be released."""

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        """Partitions just added."""

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        """Partitions gone without a clean release."""
        self.on_partitions_revoked(partitions)


Offset = int | tuple[int, str]  # an offset, or (offset, metadata) to commit
CommitCallback = Callable[[dict[TopicPartition, Offset], BaseException | None], None]


class AsyncConsumer:
    """Reads partitions a group assigns, or that the application assigns (asynchronously).
    ``clock``: the time base of poll timeouts, auto-commits, sessions and retries
    (``lanes.deadline``; it must move with the event loop's time)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        client_id: str = "lanes-consumer",
        assignor: str = "",
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        max_poll_interval_ms: int = 300_000,
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 50 * 1024 * 1024,
        max_partition_fetch_bytes: int = 1024 * 1024,
        max_poll_records: int = 500,
        request_timeout_ms: int = 30_000,
        clock: Clock = SYSTEM_CLOCK,
        tls: ClientTls = "process",
        credentials: ClientCredentials = "process",
    ) -> None:
        if auto_offset_reset not in {"earliest", "latest", "none"}:
            raise LanesError("auto_offset_reset must be earliest, latest or none", ErrorCode.INVALID_REQUEST)
        if group_id is not None:
            validate_group_id(group_id)
        if assignor and assignor not in {"uniform", "range", "roundrobin"}:
            raise LanesError(
                f"unknown assignor {assignor!r}; use uniform, range or roundrobin", ErrorCode.UNSUPPORTED_ASSIGNOR
            )
        self.bootstrap = parse_addresses(bootstrap)
        self.group_id = group_id
        self.auto_offset_reset = auto_offset_reset
        self._timeout_s = request_timeout_ms / 1000
        self._clock = clock
        self._cluster = ClusterView(self.bootstrap, self._timeout_s, tls, credentials, client_id)
        self._fetcher = Fetcher(
            self._cluster,
            group_id=group_id,
            auto_offset_reset=auto_offset_reset,
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            max_poll_records=max_poll_records,
            request_timeout_s=self._timeout_s,
            clock=clock,
        )
        self._auto_commit = enable_auto_commit and group_id is not None
        self._auto_commit_interval_ms = auto_commit_interval_ms
        self._next_auto_commit_ms = clock.monotonic_ms() + auto_commit_interval_ms
        self._listener = RebalanceListener()
        self._pending_commits: set[asyncio.Task[None]] = set()
        #: commits waiting for the one in flight, and the task sending them (``_commit_positions``)
        self._commits_waiting: list[tuple[dict[TopicPartition, Offset], asyncio.Future[None]]] = []
        self._commit_sender: asyncio.Task[None] | None = None
        self._group = (
            GroupMembership(
                self._cluster,
                group_id,
                instance_id=group_instance_id or "",
                client_id=client_id,
                assignor=assignor,
                rebalance_timeout_ms=max_poll_interval_ms,
                request_timeout_s=self._timeout_s,
                clock=clock,
            )
            if group_id is not None
            else None
        )

    # -----------------------------------------------------------------------------------------
    # group membership

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str] = (),
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        """Join the group with these topics, or every topic matching ``pattern`` (full match;
        a string or compiled pattern as ``topics`` counts as a pattern). Replaces the previous
        subscription; the coordinator assigns the partitions."""
        if self._group is None:
            raise LanesError(
                "subscribe() needs a group_id; without one, assign() partitions", ErrorCode.INVALID_REQUEST
            )
        if isinstance(topics, (str, re.Pattern)):
            names: list[str] = []
            pattern = topics
        else:
            names = sorted(set(topics))
        regex = pattern.pattern if isinstance(pattern, re.Pattern) else (pattern or "")
        if not names and not regex:
            raise LanesError("subscribe to at least one topic, or a pattern", ErrorCode.INVALID_REQUEST)
        if names and regex:
            raise LanesError("subscribe to topics or to a pattern, not both", ErrorCode.INVALID_REQUEST)
        if regex:
            try:
                re.compile(regex)
            except re.error as exc:
                raise LanesError(f"pattern {regex!r} is invalid: {exc}", ErrorCode.INVALID_REGULAR_EXPRESSION) from None
        for name in names:
            validate_topic_name(name)
        if self._fetcher.positions and not self._group.active:
            raise LanesError(
                "this consumer assign()ed partitions itself; it cannot also subscribe", ErrorCode.INVALID_REQUEST
            )
        self._listener = listener or RebalanceListener()
        self._group.subscribe(names, regex)

    def subscription(self) -> tuple[list[str], str] | None:
        """(topics, pattern) subscribed to, or None."""
        if self._group is None or self._group.subscription is None:
            return None
        return list(self._group.subscription.topic_names), self._group.subscription.topic_regex

    async def _next_group_step(self) -> Step | None:
        """Prepare the next rebalance step: commit what is revoked, position what is assigned."""
        if self._group is None or not self._group.active:
            return None
        step = self._group.next_step()
        if step is None:
            return None
        partitions = {TopicPartition(t, p) for t, p in step.partitions}
        if step.kind == "revoke" and self._auto_commit:
            positions = self._fetcher.positions
            try:
                await self._commit_positions({tp: positions[tp] for tp in partitions if positions.get(tp) is not None})
            except LanesError as exc:
                _log.warning("group %s: commit before revoking %s failed: %s", self.group_id, sorted(partitions), exc)
        if step.kind == "assign":
            committed = await self.committed(partitions)
            self._fetcher.add({partition: committed.get(partition) for partition in partitions})
        return step

    def _finish_group_step(self, step: Step) -> None:
        """The listener has run: release what was revoked or lost, and tell the coordinator."""
        if step.kind != "assign":
            self._fetcher.release(step.partitions)
        if step.kind == "lost":
            self._fail_waiting_commits(set(step.partitions))
        assert self._group is not None
        self._group.step_done(step)

    def _listener_call(self, step: Step) -> Callable[[], object]:
        partitions = {TopicPartition(t, p) for t, p in step.partitions}
        method = {
            "revoke": self._listener.on_partitions_revoked,
            "assign": self._listener.on_partitions_assigned,
            "lost": self._listener.on_partitions_lost,
        }[step.kind]
        return lambda: method(set(partitions))

    async def _apply_group_steps(self) -> None:
        while (step := await self._next_group_step()) is not None:
            outcome = self._listener_call(step)()
            if asyncio.iscoroutine(outcome):
                await outcome
            self._finish_group_step(step)

    # -----------------------------------------------------------------------------------------
    # offsets of the group

    async def commit(
        self,
        offsets: Mapping[TopicPartition, Offset] | None = None,
        *,
        asynchronous: bool = False,
        callback: CommitCallback | None = None,
    ) -> None:
        """Commit ``offsets`` (default: the position of every owned partition — the offset after
        the last record ``poll`` returned); a value may be ``(offset, metadata)`` to store a string
        with the offset (shown by ``Admin.describe_group``). Synchronous by default: returns once durable, raises
        CommitFailedError when the member was fenced. With ``asynchronous``, returns at once and
        calls ``callback(offsets, error_or_None)`` when done. A consumer's commits reach the
        coordinator in the order they were made (``_queue_commit``)."""
        wanted = self._commit_entries(offsets)
        if asynchronous:
            self._commit_later(wanted, callback)
            return
        await self._queue_commit(wanted)
        if callback is not None:
            callback(dict(wanted), None)

    def _commit_entries(self, offsets: Mapping[TopicPartition, Offset] | None) -> dict[TopicPartition, Offset]:
        """A copy of ``offsets`` checked value by value (an int, or an (int, str) pair), or the
        position of every owned partition; raises LanesError INVALID_REQUEST to the committer."""
        self._require_group("commit")
        if offsets is None:
            return {tp: p for tp, p in self._fetcher.positions.items() if p is not None}
        entries = dict(offsets)
        for partition, value in entries.items():
            offset, metadata = value if isinstance(value, tuple) and len(value) == 2 else (value, "")
            if not (
                isinstance(partition, TopicPartition)
                and isinstance(offset, int)
                and not isinstance(offset, bool)
                and isinstance(metadata, str)
            ):
                raise LanesError(
                    f"commit: {partition!r}: {value!r} is not an offset or an (offset, metadata) pair",
                    ErrorCode.INVALID_REQUEST,
                )
        return entries

    def _commit_later(self, entries: dict[TopicPartition, Offset], callback: CommitCallback | None) -> None:
        """Queue the commit of ``entries`` (checked by ``_commit_entries``) now, in order, and
        call ``callback`` with its outcome (on the loop)."""
        done = self._queue_commit(entries)

        async def run() -> None:
            error: BaseException | None = None
            try:
                await done
            except Exception as exc:  # whatever it was, the callback learns it
                error = exc
            if callback is not None:
                callback(dict(entries), error)

        task = asyncio.get_running_loop().create_task(run())
        self._pending_commits.add(task)
        task.add_done_callback(self._pending_commits.discard)

    async def _commit_positions(self, offsets: Mapping[TopicPartition, int | None]) -> None:
        """Commit the known ones of ``offsets`` (positions) in order (``_queue_commit``)."""
        self._require_group("commit")
        await self._queue_commit({tp: offset for tp, offset in offsets.items() if offset is not None})

    def _queue_commit(self, entries: dict[TopicPartition, Offset]) -> asyncio.Future[None]:
        """Commit ``entries`` after every commit this consumer made before, one request at a time:
        the commits made while one is in flight wait and then go as one request (a partition's
        later offset replacing its earlier one); each learns the outcome of what that request
        did with its partitions. No commit overtakes an earlier one at the coordinator (Kafka's
        consumer keeps them in order too), and a consumer committing after every poll sends as
        many requests as the coordinator answers, not one per poll. Queued at once (no await
        before), so the order is the order of the calls."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if not entries:
            done.set_result(None)
            return done
        self._commits_waiting.append((entries, done))
        if self._commit_sender is None or self._commit_sender.done():
            self._commit_sender = asyncio.get_running_loop().create_task(self._send_waiting_commits())
        return done

    async def _send_waiting_commits(self) -> None:
        """Send the waiting commits, merged, until none waits (``_queue_commit``)."""
        batch: list[tuple[dict[TopicPartition, Offset], asyncio.Future[None]]] = []
        try:
            while self._commits_waiting:
                batch, self._commits_waiting = self._commits_waiting, []
                merged: dict[TopicPartition, Offset] = {}
                for entries, _ in batch:
                    merged.update(entries)
                refused: dict[TopicPartition, Exception] = {}
                failure: Exception | None = None
                try:
                    refused = await self._send_commit(merged)
                except Exception as exc:  # the request as a whole: every waiter of it learns it
                    failure = exc
                for entries, done in batch:
                    if done.done():
                        continue  # its caller stopped waiting
                    own = failure or next((refused[tp] for tp in entries if tp in refused), None)
                    if own is None:
                        done.set_result(None)
                    else:
                        done.set_exception(own)
                batch = []
        finally:  # cancelled (the client closes): nobody waits forever
            for _, done in [*batch, *self._commits_waiting]:
                done.cancel()
            self._commits_waiting = []

    def _fail_waiting_commits(self, lost: set[TopicPartition]) -> None:
        """The commits not yet sent that name a lost partition fail (CommitFailedError): another
        member may own it now, and the member's next epoch must not commit for it."""
        kept = []
        for entries, done in self._commits_waiting:
            if lost.isdisjoint(entries):
                kept.append((entries, done))
            elif not done.done():
                done.set_exception(
                    CommitFailedError(
                        f"group {self.group_id!r}: partitions {sorted(lost & entries.keys())} were lost before "
                        "the commit was sent",
                        ErrorCode.FENCED_MEMBER_EPOCH,
                    )
                )
        self._commits_waiting = kept

    async def _wait_for_commits(self) -> None:
        """Until every commit made so far (and those their callbacks made) got its answer."""
        while self._pending_commits or (self._commit_sender is not None and not self._commit_sender.done()):
            waiting = [*self._pending_commits, *([self._commit_sender] if self._commit_sender else [])]
            await asyncio.gather(*waiting, return_exceptions=True)

    async def _send_commit(self, entries: Mapping[TopicPartition, Offset]) -> dict[TopicPartition, Exception]:
        """One CommitOffsets request; the partitions it refused, with why (the coordinator
        commits the others). Raises what refused the request as a whole."""
        group = self._require_group("commit")
        by_topic: dict[str, list[coordinator_pb2.CommitOffsetsPartition]] = {}
        for tp, value in sorted(entries.items()):
            offset, metadata = value if isinstance(value, tuple) else (value, "")
            by_topic.setdefault(tp.topic, []).append(
                coordinator_pb2.CommitOffsetsPartition(
                    partition=tp.partition, committed_offset=offset, committed_leader_epoch=-1, metadata=metadata
                )
            )

        def request() -> coordinator_pb2.CommitOffsetsRequest:
            subscribed = group.active and group.member_epoch > 0  # read at each attempt
            return coordinator_pb2.CommitOffsetsRequest(
                group_id=group.group_id,
                member_id=group.member_id if subscribed else "",
                member_epoch=group.member_epoch if subscribed else -1,
                topics=[coordinator_pb2.CommitOffsetsTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
            )

        try:
            answer = await group.coordinators.ask(
                group.group_id,
                lambda stub: stub.CommitOffsets(request(), timeout=self._timeout_s),
                _first_retriable_partition_error,
            )
        except RetriableError as exc:  # still retriable when the request timeout ran out
            raise error_for(
                ErrorCode.REQUEST_TIMED_OUT, f"commit to group {group.group_id!r} did not get through: {exc.message}"
            ) from exc
        except LanesError as exc:
            raise _commit_failure(group.group_id, exc) from exc
        return {
            TopicPartition(topic.topic, part.partition): _commit_failure(
                group.group_id, error_for(part.error.code, part.error.message)
            )
            for topic in answer.topics
            for part in topic.partitions
            if part.error.code
        }

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The group's committed offset of each partition (None when it has none)."""
        group = self._require_group("committed")
        wanted = sorted(set(partitions))
        request = coordinator_pb2.FetchOffsetsRequest(
            group_id=group.group_id, member_epoch=-1, partitions=topic_partitions_to_wire(wanted)
        )
        try:
            answer = await group.coordinators.ask(
                group.group_id, lambda stub: stub.FetchOffsets(request, timeout=self._timeout_s), lambda a: a.error
            )
        except RetriableError as exc:  # still retriable when the request timeout ran out
            raise error_for(
                ErrorCode.REQUEST_TIMED_OUT, f"offsets of group {group.group_id!r} could not be read: {exc.message}"
            ) from exc
        found: dict[TopicPartition, int | None] = dict.fromkeys(wanted)
        for topic in answer.topics:
            for part in topic.partitions:
                if part.committed_offset >= 0:
                    found[TopicPartition(topic.topic, part.partition)] = part.committed_offset
        return found

    def _require_group(self, what: str) -> GroupMembership:
        if self._group is None:
            raise LanesError(f"{what}() needs a group_id", ErrorCode.INVALID_REQUEST)
        return self._group

    async def _auto_commit_if_due(self) -> None:
        now_ms = self._clock.monotonic_ms()
        if not self._auto_commit or now_ms < self._next_auto_commit_ms:
            return
        self._next_auto_commit_ms = now_ms + self._auto_commit_interval_ms
        try:
            await self._commit_positions(self._fetcher.positions)
        except LanesError as exc:
            _log.warning("group %s: auto-commit failed: %s", self.group_id, exc)

    # -----------------------------------------------------------------------------------------
    # assignment and positions

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions from now on (positions of kept ones are kept)."""
        if self._group is not None and self._group.active:
            raise LanesError(
                "this consumer subscribed to a group; the group assigns its partitions", ErrorCode.INVALID_REQUEST
            )
        self._fetcher.assign(partitions)

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer owns now (assigned by the group, or by ``assign``)."""
        return set(self._fetcher.positions)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """The next record read from ``partition`` is at ``offset``."""
        self._check_assigned(partition)
        self._fetcher.seek({partition: offset})

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Move to the first retained record (every assigned partition when none are named)."""
        await self._seek_to(partitions, broker_pb2.OFFSET_SPEC_EARLIEST)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Move past the last record (every assigned partition when none are named)."""
        await self._seek_to(partitions, broker_pb2.OFFSET_SPEC_LATEST)

    async def _seek_to(self, partitions: tuple[TopicPartition, ...], spec: broker_pb2.OffsetSpec) -> None:
        targets = list(partitions) or list(self._fetcher.positions)
        for partition in targets:
            self._check_assigned(partition)
        offsets = await self._fetcher.list_offsets(targets, spec)
        self._fetcher.seek({partition: offset for partition, (offset, _) in offsets.items()})

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record to read from ``partition``."""
        self._check_assigned(partition)
        await self._fetcher.ensure_positions([partition])
        self._check_assigned(partition)  # (released while its position was looked up)
        position = self._fetcher.positions[partition]
        assert position is not None
        return position

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching these partitions (positions are kept)."""
        self._fetcher.pause(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch these partitions again."""
        self._fetcher.resume(partitions)

    def paused(self) -> set[TopicPartition]:
        """The paused partitions."""
        return set(self._fetcher.paused)

    def _check_assigned(self, partition: TopicPartition) -> None:
        if partition not in self._fetcher.positions:
            raise LanesError(
                f"{partition.topic}-{partition.partition} is not assigned; assign() it first", ErrorCode.INVALID_REQUEST
            )

    # -----------------------------------------------------------------------------------------
    # offsets

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """First retained offset of each partition."""
        return {
            tp: offset
            for tp, (offset, _) in (
                await self._fetcher.list_offsets(list(partitions), broker_pb2.OFFSET_SPEC_EARLIEST)
            ).items()
        }

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The high-water mark of each partition (the offset the next record will get)."""
        return {
            tp: offset
            for tp, (offset, _) in (
                await self._fetcher.list_offsets(list(partitions), broker_pb2.OFFSET_SPEC_LATEST)
            ).items()
        }

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        """(offset, timestamp) of the first record at or after each timestamp, or None if none."""
        found: dict[TopicPartition, tuple[int, int] | None] = {}
        for partition, timestamp in timestamps.items():
            result = await self._fetcher.list_offsets([partition], broker_pb2.OFFSET_SPEC_TIMESTAMP, timestamp)
            offset, stamp = result[partition]
            found[partition] = None if offset < 0 else (offset, stamp)
        return found

    # -----------------------------------------------------------------------------------------
    # fetching

    async def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """Up to max_poll_records records; empty when none arrived within ``timeout_ms``. In a
        group, first applies rebalance steps (calling the listener) and auto-commits when due."""
        deadline = Deadline(timeout_ms / 1000, self._clock)
        while True:
            if self._group is not None:
                self._group.polled()
            await self._apply_group_steps()
            records = await self._poll_records(deadline)
            if records or deadline.expired():
                return records

    async def _next_step_or_records(self, deadline: Deadline) -> Step | list[ConsumerRecord]:
        """The synchronous ``poll``'s one trip to the loop: the next rebalance step when there is
        one (its listener then runs on the caller's thread), else ``_poll_records``."""
        step = await self._next_group_step()
        return step if step is not None else await self._poll_records(deadline)

    async def _poll_records(self, deadline: Deadline) -> list[ConsumerRecord]:
        """Records from owned partitions until ``deadline``; returns early (empty) when a group
        member owns nothing yet or the group's assignment changed."""
        await self._auto_commit_if_due()
        if self._group is not None and self._group.active and not self._fetcher.positions:
            await self._group.wait_for_change(min(deadline.remaining_s(), 0.2))
            return []
        records = await self._fetcher.records(deadline)
        if records and self._group is not None and self._group.active and not self._group.vouches_for_ownership():
            # Fetched while the member could still vouch for its partitions, returned after it no
            # longer can (it was frozen past its session): the next step gives them up as lost, and
            # whoever owns them now reads these records.
            _log.warning("group %s: session lapsed during poll; records held back", self.group_id)
            first: dict[TopicPartition, int] = {}
            for record in records:
                first.setdefault(TopicPartition(record.topic, record.partition), record.offset)
            self._fetcher.seek(first)  # unread: if the partitions stay ours, nothing is skipped
            return []
        return records

    async def close(self) -> None:
        """Commit (auto-commit), release owned partitions to the listener, wait for the commits
        made before (sent while the member is still in the group), leave the group promptly,
        stop fetching and release connections."""
        try:
            if self._group is not None and self._group.active:
                if self._auto_commit:
                    try:
                        await self._commit_positions(self._fetcher.positions)
                    except LanesError as exc:
                        _log.warning("group %s: commit on close failed: %s", self.group_id, exc)
                owned = set(self._fetcher.positions)
                if owned:
                    outcome: object = self._listener_call(Step("revoke", frozenset(owned)))()
                    if asyncio.iscoroutine(outcome):
                        await outcome
                await self._wait_for_commits()  # sent by a member of the group, as Kafka's close does
                await self._group.leave()
            await self._wait_for_commits()
        finally:
            self._fetcher.close()
            await self._cluster.close()

    async def __aenter__(self) -> AsyncConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class Consumer:
    """Reads partitions a group assigns or the application assigns (synchronously;
    ``lanes.aio.Consumer`` on a background loop)."""

    def __init__(self, bootstrap: str, **settings: object) -> None:
        self._consumer = _loop.run(_create(bootstrap, settings))
        _loop.close_at_exit(self._consumer)  # leaves its group at exit without close()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """See ``AsyncConsumer.assign``."""
        _loop.run(_call(self._consumer.assign, list(partitions)))

    def assignment(self) -> set[TopicPartition]:
        return self._consumer.assignment()

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """See ``AsyncConsumer.seek``."""
        _loop.run(_call(self._consumer.seek, partition, offset))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        _loop.run(self._consumer.seek_to_beginning(*partitions))

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        _loop.run(self._consumer.seek_to_end(*partitions))

    def position(self, partition: TopicPartition) -> int:
        return _loop.run(self._consumer.position(partition))

    def pause(self, *partitions: TopicPartition) -> None:
        _loop.run(_call(self._consumer.pause, *partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        _loop.run(_call(self._consumer.resume, *partitions))

    def paused(self) -> set[TopicPartition]:
        return self._consumer.paused()

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str] = (),
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        """See ``AsyncConsumer.subscribe``; the listener runs on the thread that calls ``poll``."""
        topics = topics if isinstance(topics, (str, re.Pattern)) else list(topics)
        _loop.run(_call(functools.partial(self._consumer.subscribe, pattern=pattern, listener=listener), topics))

    def subscription(self) -> tuple[list[str], str] | None:
        return self._consumer.subscription()

    def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """See ``AsyncConsumer.poll``. Rebalance callbacks run here, on the calling thread, so
        they may call ``commit`` and ``seek``."""
        consumer = self._consumer
        deadline = Deadline(timeout_ms / 1000, consumer._clock)
        while True:
            if consumer._group is not None:
                consumer._group.polled()
            outcome = _loop.run(consumer._next_step_or_records(deadline))
            if isinstance(outcome, Step):
                consumer._listener_call(outcome)()
                _loop.run(_call(consumer._finish_group_step, outcome))
                continue  # the next step, if any, before records
            if outcome or deadline.expired():
                return outcome

    def commit(
        self,
        offsets: Mapping[TopicPartition, Offset] | None = None,
        *,
        asynchronous: bool = False,
        callback: CommitCallback | None = None,
    ) -> None:
        """See ``AsyncConsumer.commit``. With ``asynchronous``, the commit is handed to the
        client's loop without waiting for it to take the positions (it takes them before any
        later call of this consumer runs there); the callback runs on that loop's thread."""
        consumer = self._consumer
        if asynchronous:  # checked here (given offsets copied), queued on the loop in call order
            consumer._require_group("commit")  # (the group is fixed at construction: readable here)
            entries = consumer._commit_entries(offsets) if offsets is not None else None

            def queue() -> None:  # positions are read on the loop, before any later call of this consumer
                consumer._commit_later(entries if entries is not None else consumer._commit_entries(None), callback)

            _loop.background_loop().call_soon_threadsafe(queue)
            return
        _loop.run(consumer.commit(offsets, callback=callback))

    def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """See ``AsyncConsumer.committed``."""
        return _loop.run(self._consumer.committed(list(partitions)))

    def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return _loop.run(self._consumer.beginning_offsets(list(partitions)))

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return _loop.run(self._consumer.end_offsets(list(partitions)))

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int] | None]:
        return _loop.run(self._consumer.offsets_for_times(timestamps))

    def close(self) -> None:
        _loop.closed(self._consumer)
        _loop.run(self._consumer.close())

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _create(bootstrap: str, settings: Mapping[str, object]) -> AsyncConsumer:
    return AsyncConsumer(bootstrap, **settings)  # type: ignore[arg-type]


async def _call(function: Callable[..., T], *args: object) -> T:
    """Run a synchronous method of the async consumer on its loop (it owns the loop's tasks)."""
    return function(*args)
