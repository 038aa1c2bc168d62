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
from collections.abc import Callable

from lanes.deadline import Deadline


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
