"""Request-time quotas (Kafka's ``request_percentage``), on every service's client listener, and
the mute every quota enforces.

A client's calls may take ``request_percentage`` percent of one event loop's time on each
service process (Kafka: of one request handler thread; 200 is two). The quota a call falls
under is the one of its user and client id (``lanes.runtime.guard.caller_quota``). What a call
takes is the loop time of its steps and of the tasks it starts (``lanes.runtime.loop_time``),
recorded into the entity's rate windows (``lanes.security.quotas``) when it ends, and for a
stream at each message. An entity over its quota is muted (KIP-219): its next calls, and a
stream's next requests, wait before any work until it owes nothing (``muted``); the answer
says what it owes in ``throttle_time_ms`` where the response has one (the larger of this and
a byte-rate throttle).

Gaps, stated: gRPC's own (de)serialisation and the time a call's tasks run after it was
answered are not counted; a call's first step runs before its caller is known to be over.
Concurrent calls of one entity may each start while it owes nothing, as in Kafka, which also
records request time after the work.

Owned by the service's event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from lanes.metadata.image import REQUEST_PERCENTAGE, MetadataImage
from lanes.rpc.wire import ServicerContext
from lanes.runtime.guard import caller_quota
from lanes.runtime.interceptors import CallInterceptor, Wrappers
from lanes.runtime.loop_time import ACCOUNT, LoopTime, TimedSteps
from lanes.runtime.metrics import ServiceMetrics
from lanes.security.quota_entities import QuotaEntity
from lanes.security.quotas import ClientQuotas

#: Calls no quota holds back: probes' health checks.
_UNTHROTTLED = frozenset({"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"})

Limited = tuple[QuotaEntity, float]


async def muted(quotas: ClientQuotas, key: str, limited: Limited, metrics: ServiceMetrics | None = None) -> None:
    """Wait until the entity ``limited`` names owes nothing under ``key`` (KIP-219's mute); the
    time waited, cancelled or not, is counted in ``metrics``. With no await after it returns, a caller that records
    at once lets waiters pass one at a time as the quota allows."""
    who, quota = limited
    started_s = time.monotonic()
    try:
        while (owed_ms := quotas.owed_ms(who, key, quota, time.monotonic())) > 0:
            await asyncio.sleep(owed_ms / 1000)
    finally:  # a call cancelled while muted (its client gave up) waited too
        waited_ms = int((time.monotonic() - started_s) * 1000)
        if waited_ms and metrics is not None:
            metrics.throttled(key, waited_ms)


def tell_throttle(response: Any, owed_ms: int) -> None:
    """Raise ``response.throttle_time_ms`` to ``owed_ms``, where the response has the field."""
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
        if method in _UNTHROTTLED:
            return None
        return {
            "unary_unary": self._unary,
            "stream_unary": self._unary,
            "unary_stream": self._streaming,
            "stream_stream": self._streaming,
        }

    def _limited(self) -> Limited | None:
        return caller_quota(self._image(), REQUEST_PERCENTAGE)

    def _record(self, limited: Limited, account: LoopTime) -> int:
        """Record what ``account`` spent since it was last recorded; what the entity owes now."""
        who, quota = limited
        return self._quotas.record(who, REQUEST_PERCENTAGE, account.take_s() * 100, quota, time.monotonic())

    async def _muted_requests(self, requests: AsyncIterator[Any], limited: Limited, account: LoopTime) -> Any:
        """A client stream's requests, each passed on once the entity owes nothing."""
        async for request in requests:
            self._record(limited, account)
            await muted(self._quotas, REQUEST_PERCENTAGE, limited, self._metrics)
            yield request

    def _unary(self, inner: Any) -> Any:
        async def call(request: Any, context: ServicerContext) -> Any:
            limited = self._limited()
            if limited is None:
                return await inner(request, context)
            await muted(self._quotas, REQUEST_PERCENTAGE, limited, self._metrics)
            account = LoopTime()
            if isinstance(request, AsyncIterator):  # stream_unary: the requests of a client stream
                request = self._muted_requests(request, limited, account)
            token = ACCOUNT.set(account)
            try:
                response = await TimedSteps(inner(request, context), account)
            finally:
                ACCOUNT.reset(token)
                owed_ms = self._record(limited, account)
            tell_throttle(response, owed_ms)
            return response

        return call

    def _streaming(self, inner: Any) -> Any:
        async def call(request: Any, context: ServicerContext) -> AsyncIterator[Any]:
            limited = self._limited()
            if limited is None:
                async for response in inner(request, context):
                    yield response
                return
            await muted(self._quotas, REQUEST_PERCENTAGE, limited, self._metrics)
            account = LoopTime()
            if isinstance(request, AsyncIterator):  # stream_stream
                request = self._muted_requests(request, limited, account)
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
                await responses.aclose()

        return call
