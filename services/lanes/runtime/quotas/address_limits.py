"""Calls and connections per caller address on a client listener (Kafka's
``max.connections.per.ip``), so that one address cannot take the server's whole pool of calls
(``lanes.runtime.serving.server.ServerLimits``) from everyone else.

gRPC gives a handler a call and its peer (``ipv4:10.1.2.3:51234``), not a connection to count
when it opens, so what is bounded is what is in progress:

- ``max_calls``: calls in progress from one host (long-polls and open streams included);
- ``max_connections``: connections from one host with a call in progress (distinct peer ports).

A call beyond either ends at once with RESOURCE_EXHAUSTED, naming the address and the limit,
before any other interceptor runs (no password is checked for it). Idle connections hold no
call; the server closes those idle for ``ServerLimits.max_connection_idle_ms``, and the
server-wide connection limit bounds them meanwhile. Hosts behind one NAT share an address: the
limits are flags (``--max-calls-per-address``, ``--max-connections-per-address``).

Memory: one entry per host with a call in progress. Owned by the server's event loop.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from lanes.rpc.wire import ServicerContext, peer_host
from lanes.runtime.interceptors import CallInterceptor, Wrappers


class AddressLimits(CallInterceptor):
    """Bounds the calls, and the connections with calls, in progress from each host."""

    def __init__(self, max_calls: int, max_connections: int) -> None:
        self.max_calls = max_calls
        self.max_connections = max_connections
        self._calls: dict[str, int] = {}  # host -> calls in progress
        self._peers: dict[str, collections.Counter[str]] = {}  # host -> peer -> calls in progress

    def in_progress(self, host: str) -> tuple[int, int]:
        """(calls, connections with calls) in progress from ``host``."""
        return self._calls.get(host, 0), len(self._peers.get(host, ()))

    async def _enter(self, context: ServicerContext) -> Callable[[], None]:
        """Count the call in (or end it, beyond a limit); what releases it, once, whichever of
        the handler's end and the call's end (a cancelled stream's) comes first."""
        peer = context.peer() or ""
        host = peer_host(context)
        calls, connections = self.in_progress(host)
        peers = self._peers.get(host)
        if calls >= self.max_calls:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{host} has {calls} calls in progress here, the most one address may have "
                "(--max-calls-per-address): finish some first",
            )
        if (peers is None or peer not in peers) and connections >= self.max_connections:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{host} has calls in progress on {connections} connections here, the most one address may "
                "use (--max-connections-per-address): make calls on fewer connections",
            )
        self._calls[host] = calls + 1
        self._peers.setdefault(host, collections.Counter())[peer] += 1
        left = False

        def leave(*_: Any) -> None:
            nonlocal left
            if not left:
                left = True
                self._leave(host, peer)

        context.add_done_callback(leave)  # type: ignore[arg-type]  # the stubs want a class; gRPC calls any callable
        return leave

    def _leave(self, host: str, peer: str) -> None:
        left = self._calls[host] - 1
        peers = self._peers[host]
        peers[peer] -= 1
        if peers[peer] <= 0:
            del peers[peer]
        if left:
            self._calls[host] = left
        else:
            del self._calls[host]
            del self._peers[host]

    def wrappers(self, method: str) -> Wrappers:
        def unary(inner: Any) -> Any:
            async def call(request: Any, context: ServicerContext) -> Any:
                leave = await self._enter(context)
                try:
                    return await inner(request, context)
                finally:
                    leave()

            return call

        def streaming(inner: Any) -> Any:
            async def call(request: Any, context: ServicerContext) -> AsyncIterator[Any]:
                leave = await self._enter(context)
                try:
                    async for response in inner(request, context):
                        yield response
                finally:
                    leave()

            return call

        return {"unary_unary": unary, "stream_unary": unary, "unary_stream": streaming, "stream_stream": streaming}
