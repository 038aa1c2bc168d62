"""The controller quorum's driver: runs one controller's ``RaftCore`` over gRPC and its disk.

It is etcd's "Ready" loop for the pure core (``lanes.controller.raft``):

1. **Inputs**: a tick every ``TICK_MS`` and every message another controller ``Send``s.
2. **Durable before visible**: after each step the epoch and vote (``quorum-state``, replaced
   atomically and fsynced) are written *before* any message of that step leaves; the log's
   appends are fsynced as they are made (``MetadataLog``, flush.messages=1).
3. **Outputs**: messages go out one-way (``ControllerQuorum.Send``; a failure is a lost message,
   which Raft tolerates); newly committed entries go to the state machine (``on_committed``)
   in order, each once; proposals (``propose``) complete when their entries are committed, or
   fail with ``NotControllerError`` when leadership moves first.
4. **Long-poll**: the leader holds a follower's fetch that would get nothing new (no entries, a
   high-water mark it already has) for up to ``FETCH_HOLD_MS``, answering as soon as the log or
   the mark moves (KRaft's ``max_wait_ms``), so an idle quorum sends a few messages a second and
   a commit takes two round trips, not a tick.

**A controller that lost its durable state** (no ``quorum-state``) in a quorum of several may
have voted in the current epoch before: it must not vote again. It asks its peers
(``DescribeQuorum``) and votes only when a majority, itself included, never took part in an
election (epoch 0: nobody can have voted yet, a new quorum); otherwise it rejoins without a vote
(``RaftCore.can_vote``), fetches the log from the leader, and becomes a voter once its log and
state machine reach the leader's high-water mark, recording a vote for that leader in its epoch
(the one vote it may have given there, so it cannot give a second). Until then it cannot be
elected, so it never starts a cluster of its own.

**Membership** (KIP-853): the voters are what the newest configuration entry of the log says
(``--voters`` only bootstraps a quorum whose log has none). A controller that is not among them
is an observer: it fetches from the leader (asking any voter who leads) and never votes; the
active controller makes a caught-up observer a voter (``change_voters``), or removes a voter,
one at a time, answering once the change is committed. Addresses come from the configuration,
then ``--voters``, then what an observer said it is reached at (``sender_address``).

**An entry the state machine cannot apply stops the process** (as KRaft does): the applied
offset has moved past it, and the state would silently differ from the log. A restart loads the
last snapshot and applies the log again.

Owned by the controller's event loop; not thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from lanes.clock import Clock
from lanes.controller.metadata_log import MetadataLog
from lanes.controller.quorum_state import QuorumState, QuorumStateStore
from lanes.controller.raft import (
    NO_LEADER,
    DivergedHistoryError,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotResponse,
    Message,
    RaftConfig,
    RaftCore,
    Role,
    SnapshotId,
    Voter,
)
from lanes.controller.raft_wire import from_wire, to_wire
from lanes.deadline import Backoff
from lanes.errors import NotControllerError
from lanes.rpc.channels import ChannelCache
from lanes.runtime.quotas.loop_time import service_task
from lanes.v1 import common_pb2, controller_pb2, controller_pb2_grpc

_log = logging.getLogger(__name__)

TICK_MS = 50
FETCH_HOLD_MS = 300
SEND_TIMEOUT_S = 2.0
MAX_SENDS_IN_FLIGHT = 32  # per peer: beyond that a peer is not keeping up, and messages drop
#: an observer that fetched this recently, and up to the high-water mark, may become a voter
OBSERVER_FRESH_MS = 2_000
#: Raft timing for real processes: an election within 1-2 s of losing the leader, fetches
#: answered within the hold and retried after 500 ms without an answer.
PROCESS_RAFT_CONFIG = RaftConfig(
    election_timeout_ms=1_000, fetch_timeout_ms=500, max_fetch_entries=2_000, max_epoch_skip=10_000
)


def parse_voters(text: str) -> dict[int, str]:
    """``"0@host:port,1@host:port"`` (KRaft's controller.quorum.voters) as {node id: address}."""
    voters: dict[int, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        node, at, address = item.partition("@")
        if not at or not node.strip().isdigit() or ":" not in address:
            raise ValueError(f"a voter is id@host:port, not {item!r}")
        voters[int(node)] = address.strip()
    if not voters:
        raise ValueError("the quorum needs at least one voter")
    return voters


@dataclass
class _Proposal:
    last_offset: int
    epoch: int
    future: asyncio.Future[int]


@dataclass
class _HeldFetch:
    request: FetchRequest
    release_at_ms: int


class Quorum:
    """One controller's voter (see the module docstring). ``start`` before use, ``stop`` after."""

    def __init__(
        self,
        node_id: int,
        voters: dict[int, str],
        log: MetadataLog,
        *,
        address: str,
        state_dir: Path,
        clock: Clock,
        rng: random.Random,
        applied: int,
        on_committed: Callable[[list[tuple[int, Entry]]], None],
        on_leadership: Callable[[bool], None],
        on_snapshot_installed: Callable[[SnapshotId], None],
        config: RaftConfig = PROCESS_RAFT_CONFIG,
    ) -> None:
        """``applied``: the offset after the last entry the state machine already holds (its
        snapshot); ``on_leadership(True)`` once this node leads with its state current,
        ``(False)`` when it stops leading; ``on_snapshot_installed``: the leader's snapshot
        replaced this node's log, load it (before any later entry is applied). ``voters``: the
        quorum to start with (this node among them, or not: an observer); ``address``: where
        this node is reached."""
        self.node_id = node_id
        self.address = address
        self._bootstrap = voters
        self._learned: dict[int, str] = {}  # where other controllers say they are reached
        self._log = log
        self._state = QuorumStateStore(state_dir)
        self._clock = clock
        self._on_committed = on_committed
        self._on_leadership = on_leadership
        self._on_snapshot_installed = on_snapshot_installed
        durable = self._state.load()
        # no durable state: it may have voted before (a wiped voter, also one added after the
        # quorum started); a brand-new controller joining as an observer is treated alike. With
        # no other controller to ask (a quorum of one at start-up) it is a new quorum.
        self._fresh = self._state.fresh
        self.core = RaftCore.restart(
            node_id,
            tuple(Voter(node, address) for node, address in sorted(voters.items())),
            log,
            rng,
            hard_state=(durable.epoch, durable.voted_for),
            can_vote=durable.can_vote and not self._fresh,
            config=config,
            now_ms=clock.monotonic_ms(),
            applied=applied,
        )
        self._leading = False
        self._proposals: list[_Proposal] = []
        self._held: dict[int, _HeldFetch] = {}
        self._hwm_sent: dict[int, int] = {}
        self._channels = ChannelCache(fast_reconnect=True)
        self._in_flight: dict[int, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._ticking: asyncio.Task[None] | None = None
        self.leader_changes = 0
        self.last_election_ms: int | None = None
        self._leaderless_since_ms: int | None = clock.monotonic_ms()

    # -----------------------------------------------------------------------------------------
    # lifecycle

    async def start(self) -> None:
        if self._fresh:
            self._spawn(self._decide_whether_new())
        self._ticking = service_task(self._tick_forever())

    async def resign(self, timeout_s: float = 0.5) -> None:
        """Stop leading before the process stops: the others elect at once (not an election
        timeout later); waits up to ``timeout_s`` for the resignation to be sent."""
        if self.core.role is not Role.LEADER:
            return
        self.core.resign()
        self._ready()
        sending = [task for task in self._tasks if not task.done()]
        if sending:
            await asyncio.wait(sending, timeout=timeout_s)

    async def stop(self) -> None:
        if self._ticking is not None:
            self._ticking.cancel()
        for task in list(self._tasks):
            task.cancel()
        self._fail_proposals("the controller is stopping")
        await self._channels.close()

    # -----------------------------------------------------------------------------------------
    # what the controller service asks

    @property
    def leader_ready(self) -> bool:
        """This node leads and its state machine holds everything committed before its epoch."""
        return self.core.leader_ready

    @property
    def voters(self) -> dict[int, str]:
        """The voters now (the newest configuration), by node id, with their addresses."""
        return {v.node_id: self.address_of(v.node_id) for v in self.core.voter_set}

    def address_of(self, node: int) -> str:
        """Where ``node`` is reached ("" when unknown)."""
        if node == self.node_id:
            return self.address
        configured = next((v.address for v in self.core.voter_set if v.node_id == node and v.address), "")
        return configured or self._bootstrap.get(node) or self._learned.get(node, "")

    def reported_address(self, node: int) -> str:
        """The address ``node`` last said it is reached at ("" when it has not)."""
        return self._learned.get(node, "")

    @property
    def leader_address(self) -> str | None:
        """The address of the other controller this node follows (None: none known)."""
        leader = self.core.leader
        return (self.address_of(leader) or None) if leader not in (NO_LEADER, self.node_id) else None

    def propose(self, data: Sequence[bytes]) -> asyncio.Future[int]:
        """Append ``data`` as one write; the future gives the first offset once all of it is
        committed and applied, or raises NotControllerError (leadership moved: the outcome is
        unknown, as for any request that timed out)."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if not self.core.leader_ready:
            future.set_exception(NotControllerError(self.not_leader_message()))
            return future
        first = self.core.propose(*data)
        assert first is not None
        self._proposals.append(_Proposal(first + len(data) - 1, self.core.epoch, future))
        self._ready()
        return future

    def not_leader_message(self) -> str:
        address = self.leader_address
        if address is None:
            return f"controller {self.node_id} is not the active controller and knows none yet (an election)"
        return f"controller {self.node_id} is not the active controller; controller {self.core.leader} at {address} is"

    def describe(self) -> controller_pb2.DescribeQuorumResponse:
        now = self._clock.monotonic_ms()
        progress = self.core.voter_progress()
        leader = self.core.leader
        answer = controller_pb2.DescribeQuorumResponse(
            node_id=self.node_id,
            role=self.core.role.value,
            can_vote=self.core.can_vote,
            epoch=self.core.epoch,
            leader_id=leader,
            high_watermark=self.core.high_watermark,
            log_end_offset=self._log.end_offset,
        )
        if leader != NO_LEADER and self.address_of(leader):
            answer.leader.CopyFrom(_node(leader, self.address_of(leader)))
        for node, address in sorted(self.voters.items()):
            voter = controller_pb2.QuorumVoter(endpoint=_node(node, address), log_end_offset=-1, last_fetch_age_ms=-1)
            if node == self.node_id and self.core.role is Role.LEADER:
                voter.log_end_offset, voter.last_fetch_age_ms = self._log.end_offset, 0
            elif node in progress:
                end, fetched_ms = progress[node]
                voter.log_end_offset, voter.last_fetch_age_ms = end, max(now - fetched_ms, 0)
            answer.voters.append(voter)
        for node, (end, fetched_ms) in sorted(self.core.observer_progress().items()):
            answer.observers.append(
                controller_pb2.QuorumVoter(
                    endpoint=_node(node, self.address_of(node)),
                    log_end_offset=end,
                    last_fetch_age_ms=max(now - fetched_ms, 0),
                )
            )
        return answer

    async def change_voters(self, *, add: Voter | None = None, remove: int | None = None) -> int:
        """As the leader, add a caught-up observer as a voter or remove a voter; returns the
        configuration entry's offset once it is committed. ValueError: refused (why);
        NotControllerError: not the leader, or leadership moved first (outcome unknown)."""
        if not self.core.leader_ready:
            raise NotControllerError(self.not_leader_message())
        current = {v.node_id: v for v in self.core.voter_set}
        if add is not None:
            if add.node_id in current:
                raise ValueError(f"controller {add.node_id} is a voter already")
            end, fetched_ms = self.core.observer_progress().get(add.node_id, (-1, -(10**12)))
            if self._clock.monotonic_ms() - fetched_ms > OBSERVER_FRESH_MS or end < self.core.high_watermark:
                raise ValueError(
                    f"controller {add.node_id} is not fetching from the quorum or is behind (its log ends at {end}, "
                    f"the high-water mark is {self.core.high_watermark}): start it with --voters naming this quorum "
                    "and wait until it caught up"
                )
            reported = self.reported_address(add.node_id)
            if reported != add.address:
                raise ValueError(
                    f"controller {add.node_id} says it is reached at {reported or 'an unknown address'}, "
                    f"not {add.address}"
                )
            current[add.node_id] = add
        if remove is not None:
            if remove not in current:
                raise ValueError(f"controller {remove} is not a voter")
            del current[remove]
        wanted = tuple(Voter(node, voter.address or self.address_of(node)) for node, voter in sorted(current.items()))
        refusal = self.core.voters_change_refusal(wanted)
        if refusal is not None:
            raise ValueError(refusal)
        offset = self.core.propose_voters(wanted)
        assert offset is not None
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._proposals.append(_Proposal(offset, self.core.epoch, future))
        _log.info("controller %d proposes the voters %s (offset %d)", self.node_id, [v.node_id for v in wanted], offset)
        self._ready()
        return await future

    def receive(self, wire: controller_pb2.RaftMessage) -> None:
        """A message from another controller."""
        message = from_wire(wire)
        if message is None or message.to != self.node_id or message.sender == self.node_id:
            return
        if wire.sender_address:
            self._learned[message.sender] = wire.sender_address
        now = self._clock.monotonic_ms()
        try:
            self.core.step(message, now)
        except DivergedHistoryError as exc:
            self._stop_unapplied(
                f"follow the quorum: {exc} (this controller's directory holds another quorum's history, "
                "e.g. it was emptied and started alone; empty it and start it with --voters naming the quorum)"
            )
        if isinstance(message, FetchResponse | FetchSnapshotResponse):
            self.core.tick(now)  # fetch again at once: the leader holds the fetch while idle
        self._ready()

    # -----------------------------------------------------------------------------------------
    # the loop

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_MS / 1000)
            try:
                now = self._clock.monotonic_ms()
                self.core.tick(now)
                for follower, held in list(self._held.items()):
                    if now >= held.release_at_ms:  # answered now, even with nothing new
                        del self._held[follower]
                        self._answer(held.request, now)
                self._ready()
            except Exception:
                _log.exception("controller quorum step failed")

    def _ready(self) -> None:
        """Persist, send, apply, complete: the order that keeps votes and acks durable first."""
        self._persist()
        now = self._clock.monotonic_ms()
        for message in self.core.take_messages():
            if isinstance(message, FetchResponse) and self._hold(message, now):
                continue
            self._send_message(message)
        self._release_held(now)
        self._apply()
        self._watch_role(now)
        if not self.core.can_vote and self._caught_up_with_leader():
            self.core.allow_voting(caught_up_with_leader=True)
            _log.info("controller %d holds the committed log again and votes from now on", self.node_id)
            self._persist()

    def _hold(self, response: FetchResponse, now: int) -> bool:
        """Keep an answer with nothing new (the request is stepped again when released)."""
        if (
            response.leader != self.node_id
            or response.entries
            or response.diverging is not None
            or response.snapshot is not None
            or response.fetch_offset != self._log.end_offset
            or self._hwm_sent.get(response.to) != response.high_watermark
        ):
            return False
        self._held[response.to] = _HeldFetch(
            FetchRequest(response.to, self.node_id, response.epoch, response.fetch_offset, response.last_fetched_epoch),
            now + FETCH_HOLD_MS,
        )
        return True

    def _release_held(self, now: int) -> None:
        """Answer held fetches whose answer would now carry something (entries, a new mark, or
        a new epoch), by stepping their requests again."""
        if not self._held:
            return
        for follower, held in list(self._held.items()):
            if (
                self.core.role is not Role.LEADER
                or held.request.epoch != self.core.epoch
                or self._log.end_offset > held.request.fetch_offset
                or self._hwm_sent.get(follower) != self.core.high_watermark
            ):
                del self._held[follower]
                self._answer(held.request, now)

    def _answer(self, request: FetchRequest, now: int) -> None:
        """Step a held fetch again and send what it produces, held no longer."""
        self.core.step(request, now)
        self._persist()
        for message in self.core.take_messages():
            self._send_message(message)

    def _send_message(self, message: Message) -> None:
        if isinstance(message, FetchResponse) and message.leader == self.node_id:
            self._hwm_sent[message.to] = message.high_watermark
        self._send(message.to, to_wire(message))

    def _persist(self) -> None:
        """The core's durable state, written before the step's messages leave."""
        (epoch, voted_for), can_vote = self.core.hard_state, self.core.can_vote
        self._state.save(QuorumState(epoch, voted_for, can_vote))

    def _apply(self) -> None:
        installed = self.core.take_installed_snapshot()
        if installed is not None:
            _log.info(
                "controller %d installed the leader's metadata snapshot up to offset %d (epoch %d)",
                self.node_id,
                installed.end_offset,
                installed.epoch,
            )
            try:
                self._on_snapshot_installed(installed)
            except Exception:
                self._stop_unapplied(f"load the installed snapshot up to offset {installed.end_offset}")
        while committed := self.core.committed():
            try:
                self._on_committed(committed)
            except Exception:
                self._stop_unapplied(f"apply the committed metadata at offsets {committed[0][0]}..{committed[-1][0]}")
        applied = self.core.applied
        done = [p for p in self._proposals if p.last_offset < applied]
        if not done:
            return
        self._proposals = [p for p in self._proposals if p.last_offset >= applied]
        for proposal in done:
            if proposal.future.done():
                continue
            if self._log.epoch_at(proposal.last_offset) == proposal.epoch:
                proposal.future.set_result(proposal.last_offset)
            else:  # replaced by a newer leader's entries: never committed
                proposal.future.set_exception(NotControllerError("leadership moved before the write committed"))

    def _stop_unapplied(self, what: str) -> None:
        """The state machine is behind the core's applied offset: going on would apply later
        entries to a state that misses some. Stop; a restart loads the last snapshot and the log."""
        _log.critical(
            "controller %d cannot %s; stopping (a restart applies the log again from the last snapshot)",
            self.node_id,
            what,
            exc_info=True,
        )
        logging.shutdown()
        os._exit(70)

    def _watch_role(self, now: int) -> None:
        leading = self.core.leader_ready
        if self.core.leader == NO_LEADER:
            if self._leaderless_since_ms is None:
                self._leaderless_since_ms = now
        elif self._leaderless_since_ms is not None:
            self.last_election_ms = now - self._leaderless_since_ms
            self._leaderless_since_ms = None
            self.leader_changes += 1
            _log.info(
                "controller %d: controller %d leads epoch %d (%d ms without a leader)",
                self.node_id,
                self.core.leader,
                self.core.epoch,
                self.last_election_ms,
            )
        if leading == self._leading:
            return
        self._leading = leading
        if leading and self.core.record_voters() is not None:
            self._persist()
            for message in self.core.take_messages():
                self._send_message(message)
        if not leading:
            self._fail_proposals(self.not_leader_message())
            self._held.clear()
        self._on_leadership(leading)

    def _fail_proposals(self, why: str) -> None:
        proposals, self._proposals = self._proposals, []
        for proposal in proposals:
            if not proposal.future.done():
                proposal.future.set_exception(NotControllerError(why))

    def _caught_up_with_leader(self) -> bool:
        """Its log and state machine reach the leader's high-water mark (not just its own, which
        a follower caps at its log end)."""
        mark = self.core.leader_high_watermark
        return (
            self.core.role is Role.FOLLOWER
            and self.core.leader != NO_LEADER
            and mark > 0
            and self._log.end_offset >= mark
            and self.core.applied >= mark
        )

    # -----------------------------------------------------------------------------------------
    # transport

    def _send(self, to: int, wire: controller_pb2.RaftMessage) -> None:
        stub = self._stub(to)
        if stub is None or self._in_flight.get(to, 0) >= MAX_SENDS_IN_FLIGHT:
            return
        wire.sender_address = self.address
        self._in_flight[to] = self._in_flight.get(to, 0) + 1
        self._spawn(self._deliver(to, stub, wire))

    def _stub(self, node: int) -> controller_pb2_grpc.ControllerQuorumStub | None:
        """A stub to ``node``'s address (on the channel kept for that address)."""
        address = self.address_of(node)
        if not address or node == self.node_id:
            return None
        return controller_pb2_grpc.ControllerQuorumStub(self._channels.get(address))  # type: ignore[no-untyped-call]

    async def _deliver(
        self, to: int, stub: controller_pb2_grpc.ControllerQuorumStub, wire: controller_pb2.RaftMessage
    ) -> None:
        try:
            with contextlib.suppress(grpc.aio.AioRpcError):  # a lost message: Raft retries what matters
                await stub.Send(wire, timeout=SEND_TIMEOUT_S)
        finally:
            self._in_flight[to] -= 1

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = service_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _decide_whether_new(self) -> None:
        """Vote only if a majority (this node included) never took part in an election (epoch
        0: nobody can have voted yet): a new quorum. Asks again every 0.5 s (peers still starting)."""
        pause = Backoff(0.5, 0.5)
        while not self.core.can_vote:
            never_voted = 1
            for node in sorted(set(self._bootstrap) - {self.node_id}):
                stub = self._stub(node)
                if stub is None:
                    continue
                with contextlib.suppress(grpc.aio.AioRpcError):
                    peer = await stub.DescribeQuorum(controller_pb2.DescribeQuorumRequest(), timeout=1.0)
                    if peer.epoch > 0:
                        _log.warning(
                            "controller %d has no quorum state (an emptied data directory?) but controller %d is "
                            "at epoch %d with %d entries: rejoining without a vote until it holds the committed log",
                            self.node_id,
                            node,
                            peer.epoch,
                            peer.log_end_offset,
                        )
                        return
                    never_voted += 1
            if never_voted * 2 > len(self._bootstrap):
                self.core.allow_voting(caught_up_with_leader=False)
                self._persist()
                return
            await pause.pause()


def _node(node_id: int, address: str) -> common_pb2.Node:
    host, _, port = address.rpartition(":")
    return common_pb2.Node(node_id=node_id, host=host, port=int(port))
