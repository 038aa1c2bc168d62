"""Where a broker's requests wait for partitions to move (Kafka's delayed-operation purgatory).

Three kinds of request wait on partitions: a consumer's Fetch for ``min_bytes`` of new records, a
follower's ReplicaFetch for records to copy, and an acks=all Produce for the high-water mark to
cover its batch. They all wait here, keyed by partition, so an append to one partition wakes
only the requests naming it (``KeyedBroadcast``, a few hundred per turn of the event loop), and a
change that may concern any partition (leaderships moved) wakes them all. Replication's waiters
are woken before consumers': thousands of long-polls on a partition must not delay the follower
fetch that moves its high-water mark.

The rule every waiter follows: take a ticket (``watch``) *before* checking its condition, then
wait on that ticket, so a move between the check and the wait is never lost. ``park`` is that
loop for a waiter whose check is one call.

Owned by the broker's event loop; ``moved_from_thread`` is the one entry for worker threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from typing import TypeVar

from lanes.deadline import Deadline
from lanes.runtime.broadcast import KeyedBroadcast, KeyedTicket
from lanes.topic_partition import TopicPartition

T = TypeVar("T")


class Purgatory:
    """Requests parked on partitions until one of them moves. See the module docstring."""

    def __init__(self) -> None:
        self._signals: KeyedBroadcast[TopicPartition] = KeyedBroadcast()
        self._consumer_signals: KeyedBroadcast[TopicPartition] = KeyedBroadcast()

    def watch(self, keys: Collection[TopicPartition], *, consumer: bool = False) -> KeyedTicket[TopicPartition]:
        """A ticket woken when any of ``keys`` moves after this call (close it: ``with``).
        ``consumer``: a consumer's fetch, woken after replication's waiters (followers and
        acks=all produces), which are few and move the high-water mark everyone waits for."""
        return (self._consumer_signals if consumer else self._signals).ticket(keys)

    def moved(self, key: TopicPartition) -> None:
        """``key`` moved (an append, a high-water mark, an ISR, a leader epoch): wake its waiters."""
        self._signals.notify(key)
        self._consumer_signals.notify(key)

    def all_moved(self) -> None:
        """Something that may concern any partition changed (roles): wake every waiter."""
        self._signals.notify_all()
        self._consumer_signals.notify_all()

    def moved_from_thread(self, loop: asyncio.AbstractEventLoop, key: TopicPartition) -> None:
        """``moved`` for a worker thread: a mark it moved wakes the waiters even if the request
        that moved it is cancelled meanwhile (the move is made; nothing would announce it again)."""
        loop.call_soon_threadsafe(self.moved, key)

    def waiting_keys(self) -> int:
        """Partitions someone waits on (tests and metrics)."""
        return self._signals.waiting_keys() + self._consumer_signals.waiting_keys()

    async def park(
        self,
        keys: Collection[TopicPartition],
        attempt: Callable[[], Awaitable[T | None]],
        deadline: Deadline,
        *,
        recheck_s: float | None = None,
        unchanged: Callable[[], T] | None = None,
    ) -> T | None:
        """Run ``attempt`` until it answers (not None) or ``deadline`` passes (None): once now,
        again whenever one of ``keys`` moved, and at least every ``recheck_s`` (a condition that
        also depends on something no partition announces). ``unchanged``: what to answer when
        the wait reaches the deadline with none of ``keys`` moved since the last attempt (what
        that attempt found still holds), instead of attempting once more; not with ``recheck_s``
        (whose condition no key announces)."""
        if unchanged is not None and recheck_s is not None:
            raise ValueError("park: unchanged cannot hold for a condition that needs rechecks")
        while True:
            with self.watch(keys) as ticket:
                answer = await attempt()
                if answer is not None:
                    return answer
                if deadline.expired():
                    return None
                remaining_s = deadline.remaining_s()
                wait_s = remaining_s if recheck_s is None else min(recheck_s, remaining_s)
                moved = await ticket.wait(wait_s) or ticket.notified
                if unchanged is not None and not moved and remaining_s > 0:
                    return unchanged()
