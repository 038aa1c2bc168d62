"""Sessions of brokers and coordinators on the active controller (Kafka's
``BrokerHeartbeatManager``): soft state, never in the metadata log.

A node's session is alive while its last accepted heartbeat (or registration) is at most
``session_timeout_ms`` old on the monotonic clock; the active controller fences a node whose
session expired. A controller that becomes active did not see the heartbeats before: it gives
every live node a fresh session (``reset``), as a restarted single controller did.

A pure class: the caller passes ``now_ms``. Owned by the controller's event loop.
"""

from __future__ import annotations

from collections.abc import Iterable

from lanes.metadata.image import NodeKind

Node = tuple[NodeKind, int]


class HeartbeatManager:
    """The last heartbeat of each node; see the module docstring."""

    def __init__(self, session_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self._last_heartbeat_ms: dict[Node, int] = {}

    def reset(self, nodes: Iterable[Node], now_ms: int) -> None:
        """Fresh sessions for ``nodes`` (and none for any other)."""
        self._last_heartbeat_ms = dict.fromkeys(nodes, now_ms)

    def touch(self, node: Node, now_ms: int) -> None:
        """``node``'s heartbeat (or registration) was accepted at ``now_ms``."""
        self._last_heartbeat_ms[node] = now_ms

    def alive(self, node: Node, now_ms: int) -> bool:
        last = self._last_heartbeat_ms.get(node)
        return last is not None and now_ms - last <= self.session_timeout_ms

    def silent_ms(self, node: Node, now_ms: int) -> int:
        """How long ``node`` has been silent (0 for a node never heard of: it has had no chance)."""
        return now_ms - self._last_heartbeat_ms.get(node, now_ms)

    def expired(self, nodes: Iterable[Node], now_ms: int) -> list[tuple[Node, int]]:
        """Those of ``nodes`` whose session expired, with how long they have been silent."""
        silent = [(node, self.silent_ms(node, now_ms)) for node in nodes]
        return [(node, ms) for node, ms in silent if ms > self.session_timeout_ms]
