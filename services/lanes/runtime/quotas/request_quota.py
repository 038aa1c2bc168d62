"""Request-time quotas (Kafka's ``request_percentage``), on every service's client listener, and
the mute every quota enforces.

A client's calls may take ``request_percentage`` percent of one event loop's time on each
service process (Kafka: of one request handler thread; 200 is two). The quota a call falls
under is the one of its user and client id (``lanes.runtime.access.guard.caller_quota``). What a call
takes is the loop time of its steps and of the tasks it starts (``lanes.runtime.quotas.loop_time``),
recorded into the entity's rate windows (``lanes.security.quotas``) when it ends, and for a
stream at each message. An entity over its quota is muted (KIP-219): its next calls, and a
stream's next requests, wait before any work for the throttle time it earned (``muted``); the answer
says what it owes in ``throttle_time_ms`` where the response has one (the larger of this and
a byte-rate throttle). The cluster's own work is never measured nor muted (``_clusters_own``:
nodes-only RPCs, reads and writes of internal topics), also where nodes call the client
listener as anonymous callers (a plaintext cluster without an internal listener).

Gaps, stated: gRPC's own (de)serialisation and the time a call's tasks run after it was
answered are not counted; a call's first step runs before its caller is known to be over.
Concurrent calls of one entity may each start while it is not muted, as in Kafka, which also
records request time after the work.

Owned by the service's event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from lanes.clock import SYSTEM_CLOCK, Clock
from lanes.metadata.image import REQUEST_PERCENTAGE, MetadataImage
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.rpc.wire import ServicerContext, message_of
from lanes.runtime.access.access_rules import RULES, Rule
from lanes.runtime.access.guard import CALLER, caller_quota
from lanes.runtime.interceptors import CallInterceptor, Wrappers
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.quotas.loop_time import ACCOUNT, LoopTime, TimedSteps
from lanes.security.quotas import ClientQuotas, Limited

#: Calls no quota holds back: probes' health checks.
_UNTHROTTLED = frozenset({"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"})


def _clusters_own(rule: Rule | None, request: Any) -> bool:
    """Whether ``request`` is the cluster's own work, never throttled (Kafka exempts cluster
    actions), also where nodes call the client listener without certificates: a nodes-only RPC
    (replication, registration, the quorum) or a read or write of internal topics only."""
    if rule is not None and rule.for_nodes_only(request):
        return True
    topics = getattr(request, "topics", None)
    if not topics:
        return False
    return all(getattr(topic, "topic", None) == CONSUMER_OFFSETS_TOPIC for topic in topics)


async def muted(
    quotas: ClientQuotas,
    key: str,
    limited: Limited,
    metrics: ServiceMetrics | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> None:
    """Wait until the entity ``limited`` names is no longer muted under ``key`` (KIP-219's mute:
    the throttle time its last recorded amount earned, on ``clock``, which must move with the
    event loop's time); the time waited, cancelled or not, is counted in ``metrics``. With no
    await after it returns, a caller that records at once lets waiters pass one at a time as
    the quota allows."""
    who, _ = limited
    started_ms = clock.monotonic_ms()
    try:
        while (muted_ms := quotas.muted_ms(who, key, clock.monotonic_ms() / 1000)) > 0:
            await asyncio.sleep(muted_ms / 1000)
    finally:  # a call cancelled while muted (its client gave up) waited too
        waited_ms = int(clock.monotonic_ms() - started_ms)
        if waited_ms and metrics is not None:
            metrics.throttled(key, waited_ms)


def tell_throttle(response: Any, owed_ms: int) -> None:
    """Raise ``response.throttle_time_ms`` to ``owed_ms``, where the response has the field (in
    its message: ``message_of``)."""
    response = message_of(response)
    descriptor = getattr(response, "DESCRIPTOR", None)
    if owed_ms and descriptor is not None and "throttle_time_ms" in descriptor.fields_by_name:
        response.throttle_time_ms = max(response.throttle_time_ms, owed_ms)


class RequestTimeQuota(CallInterceptor):
    """Measures and mutes the calls of clients under a ``request_percentage`` quota (see the
    module docstring); after the guard, which says who calls."""

    def __init__(self, image: Callable[[], MetadataImage], metrics: ServiceMetrics | None = None) -> None:
        self._image = image
        self._metrics = metrics
        self._quotas = ClientQuotas()

    def wrappers(self, method: str) -> Wrappers | None:
        rule = RULES.get(method)
        if method in _UNTHROTTLED or (rule is not None and rule.nodes_only and rule.nodes_only_when is None):
            return None
        return {
            "unary_unary": lambda inner: self._unary(inner, rule),
            "stream_unary": lambda inner: self._unary(inner, rule),
            "unary_stream": lambda inner: self._streaming(inner, rule),
            "stream_stream": lambda inner: self._streaming(inner, rule),
        }

    def _limited(self, rule: Rule | None, request: Any) -> Limited | None:
        """The caller's request-time quota, unless the call is the cluster's own work (a stream's
        requests are looked at one by one, ``_muted_requests``)."""
        if not isinstance(request, AsyncIterator) and _clusters_own(rule, request):
            return None
        return caller_quota(self._image(), REQUEST_PERCENTAGE, CALLER.get())

    def _record(self, limited: Limited, account: LoopTime) -> int:
        """Record what ``account`` spent since it was last recorded; what the entity owes now."""
        who, quota = limited
        return self._quotas.record(who, REQUEST_PERCENTAGE, account.take_s() * 100, quota, time.monotonic())

    async def _muted_requests(
        self, requests: AsyncIterator[Any], limited: Limited, account: LoopTime, rule: Rule | None
    ) -> Any:
        """A client stream's requests, each passed on once the entity is not muted (the
        cluster's own requests at once)."""
        async for request in requests:
            self._record(limited, account)
            if not _clusters_own(rule, request):
                await muted(self._quotas, REQUEST_PERCENTAGE, limited, self._metrics)
            yield request

    def _unary(self, inner: Any, rule: Rule | None) -> Any:
        async def call(request: Any, context: ServicerContext) -> Any:
            limited = self._limited(rule, request)
            if limited is None:
                return await inner(request, context)
            await muted(self._quotas, REQUEST_PERCENTAGE, limited, self._metrics)
            account = LoopTime()
            if isinstance(request, AsyncIterator):  # stream_unary: the requests of a client stream
                request = self._muted_requests(request, limited, account, rule)
            token = ACCOUNT.set(account)
            try:
                response = await TimedSteps(inner(request, context), account)
            finally:
                ACCOUNT.reset(token)
                owed_ms = self._record(limited, account)
                account.close()
            tell_throttle(response, owed_ms)
            return response

        return call

    def _streaming(self, inner: Any, rule: Rule | None) -> Any:
        async def call(request: Any, context: ServicerContext) -> AsyncIterator[Any]:
            limited = self._limited(rule, request)
            if limited is None:
                async for response in inner(request, context):
                    yield response
                return
            await muted(self._quotas, REQUEST_PERCENTAGE, limited, self._metrics)
            account = LoopTime()
            if isinstance(request, AsyncIterator):  # stream_stream
                request = self._muted_requests(request, limited, account, rule)
            ACCOUNT.set(account)  # in the call's own task, which ends with it (no reset across yields)
            responses = inner(request, context)
            try:
                while True:
                    try:
                        response = await TimedSteps(responses.__anext__(), account)
                    except StopAsyncIteration:
                        return
                    tell_throttle(response, self._record(limited, account))
                    yield response
            finally:
                self._record(limited, account)
                account.close()
                await responses.aclose()

        return call
