"""A lock-free "something changed" signal for one event loop: the condition variable Lanes uses.

Waiters take a ticket *before* they check their condition and then wait on that ticket, so a
``notify_all`` between the check and the wait is never lost. No lock is involved: a waiter
cancelled by its timeout cannot leave anything held. (``asyncio.Condition`` under
``asyncio.wait_for`` can, on Python 3.11: a wait cancelled while it re-acquires the lock left
the lock in a state where a later ``async with`` blocked forever or raised "Lock is not
acquired" — a broker's Produce hung on exactly that.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Generic, TypeVar

from lanes.deadline import Deadline

K = TypeVar("K")


class Broadcast:
    """Wakes every current waiter at once. Owned by one event loop."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def ticket(self) -> asyncio.Event:
        """Take before checking the condition; pass to ``wait``."""
        return self._event

    def notify_all(self) -> None:
        """Wake everyone holding a ticket taken before this call."""
        event, self._event = self._event, asyncio.Event()
        event.set()

    @staticmethod
    async def wait(ticket: asyncio.Event, timeout_s: float | None) -> bool:
        """Wait until the ticket's notification or ``timeout_s``; whether it was notified."""
        try:
            await asyncio.wait_for(ticket.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float | None) -> None:
        """Return once ``predicate()`` holds (checked after each notification); TimeoutError after
        ``timeout_s`` (None: no limit)."""
        deadline = None if timeout_s is None else Deadline(timeout_s)
        while True:
            ticket = self.ticket()
            if predicate():
                return
            if deadline is not None and deadline.expired():
                raise TimeoutError
            await self.wait(ticket, None if deadline is None else deadline.remaining_s())


class KeyedTicket(Generic[K]):
    """A waiter registered on some keys of a ``KeyedBroadcast``: take it before checking the
    condition, ``wait`` on it, ``close`` it (``with`` does) when done. One use: take a new one
    for the next check."""

    __slots__ = ("_event", "_keys", "_owner")

    def __init__(self, owner: KeyedBroadcast[K], keys: Collection[K]) -> None:
        self._event = asyncio.Event()
        self._keys = keys
        self._owner = owner

    async def wait(self, timeout_s: float | None) -> bool:
        """Wait until one of the keys is notified or ``timeout_s``; whether it was notified."""
        return await Broadcast.wait(self._event, timeout_s)

    @property
    def notified(self) -> bool:
        """Whether a key was notified and the wake-up has reached this ticket (a ``wait`` that
        timed out in the same turn of the loop, or with no time left, reports no notification)."""
        return self._event.is_set()

    def close(self) -> None:
        """Unregister from every key (those notified already let go of this ticket)."""
        self._owner.forget(self._event, self._keys)

    def __enter__(self) -> KeyedTicket[K]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


#: tickets woken per turn of the event loop: one append to a partition 5,000 long-polls wait on
#: wakes them a few hundred at a time, and timers (heartbeats) and other requests run between
WAKE_PER_TURN = 64


def _wake(events: list[asyncio.Event]) -> None:
    """Set ``events``, ``WAKE_PER_TURN`` now and the rest in the loop's next turns."""
    for event in events[:WAKE_PER_TURN]:
        event.set()
    if len(events) > WAKE_PER_TURN:
        asyncio.get_running_loop().call_soon(_wake, events[WAKE_PER_TURN:])


class KeyedBroadcast(Generic[K]):
    """Wakes the waiters of one key (a partition) without waking everyone else's: a long-poll on
    one partition sleeps through appends to others. Owned by one event loop.

    Layout: key → the events of the tickets registered on it. ``notify(key)`` sets and drops
    them (``WAKE_PER_TURN`` per turn of the loop); a ticket closing removes itself from the keys
    not notified. Nothing outlives its tickets: an idle key holds no entry."""

    def __init__(self) -> None:
        self._waiters: dict[K, set[asyncio.Event]] = {}

    def ticket(self, keys: Collection[K]) -> KeyedTicket[K]:
        """Register a waiter on ``keys``; a ``notify`` of any of them after this wakes it."""
        ticket = KeyedTicket(self, keys)
        for key in keys:
            self._waiters.setdefault(key, set()).add(ticket._event)
        return ticket

    def notify(self, key: K) -> None:
        """Wake every ticket registered on ``key``."""
        events = self._waiters.pop(key, None)
        if events:
            _wake(list(events))

    def notify_all(self) -> None:
        """Wake every ticket (a change that may concern any key: leaderships moved)."""
        waiters, self._waiters = self._waiters, {}
        _wake([event for events in waiters.values() for event in events])

    def forget(self, event: asyncio.Event, keys: Collection[K]) -> None:
        """Drop ``event`` from ``keys`` (``KeyedTicket.close``)."""
        for key in keys:
            events = self._waiters.get(key)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiters[key]

    def waiting_keys(self) -> int:
        """Keys someone waits on (for tests and metrics)."""
        return len(self._waiters)
