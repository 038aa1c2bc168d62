"""Producer ids for idempotent producers (Kafka's ``ProducerIdManager`` on a broker).

The controller hands out blocks of ids (``AllocateProducerIds``; blocks never overlap); a broker
gives each ``InitProducerId`` the next id of its current block and asks for a new block when it
is used up. Without a transactional id every call gets a new id at epoch 0, whatever id and
epoch it names (as Kafka's coordinator does): bumping the epoch of a named id would let anyone
fence any producer.

Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from lanes.metadata.image import ProducerIdBlock


class ProducerIds:
    """The rest of the current block, handed out in order."""

    def __init__(self, allocate: Callable[[], Awaitable[ProducerIdBlock | None]]) -> None:
        """``allocate``: a new block from the controller, or None when it is unreachable."""
        self._allocate = allocate
        self._ids: list[int] = []  # next first
        self._lock = asyncio.Lock()

    async def next_id(self) -> int | None:
        """The next producer id, or None when a new block was needed and the controller is
        unreachable."""
        async with self._lock:
            if not self._ids:
                block = await self._allocate()
                if block is None:
                    return None
                self._ids = list(block.ids())
            return self._ids.pop(0)
