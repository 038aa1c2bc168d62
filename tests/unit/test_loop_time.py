"""What a call takes of its event loop (``lanes.runtime.quotas.loop_time``): the time its steps run, and
the steps of the tasks it starts, never the time it waits; and request-time quotas
(``lanes.runtime.quotas.request_quota``) holding back a client stream over a real gRPC server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import grpc
import pytest

from lanes.metadata.image import REQUEST_PERCENTAGE, MetadataImage
from lanes.runtime.access.access_rules import RULES
from lanes.runtime.access.guard import AnonymousCallers
from lanes.runtime.metrics import ServiceMetrics
from lanes.runtime.quotas.loop_time import ACCOUNT, LoopTime, TimedSteps, install, service_task
from lanes.runtime.quotas.request_quota import RequestTimeQuota, _clusters_own
from lanes.security.quota_entities import QuotaEntity
from lanes.v1 import broker_pb2, metadata_pb2

BUSY_S = 0.02
SLEEP_S = 0.5
BYSTANDER_S = 0.3  # more than the call's own work, so counting it would show


def _busy(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


async def _work() -> str:
    _busy(BUSY_S)
    await asyncio.sleep(SLEEP_S)
    _busy(BUSY_S)
    return "done"


def test_steps_are_timed_and_waits_are_not() -> None:
    async def scenario() -> None:
        account = LoopTime()
        assert await TimedSteps(_work(), account) == "done"
        assert 2 * BUSY_S <= account.spent_s < SLEEP_S, account.spent_s
        assert account.take_s() >= 2 * BUSY_S
        assert account.spent_s == 0

    asyncio.run(scenario())


def test_tasks_a_timed_call_starts_are_timed_into_its_account_and_others_are_not() -> None:
    async def scenario() -> None:
        install(asyncio.get_running_loop())
        account = LoopTime()

        async def call() -> None:
            ACCOUNT.set(account)
            await asyncio.gather(*(asyncio.ensure_future(_work()) for _ in range(3)))

        async def bystander_work() -> None:
            await asyncio.sleep(0)
            _busy(BYSTANDER_S)

        bystander = asyncio.ensure_future(bystander_work())  # started outside any call
        await asyncio.create_task(call())
        await bystander
        assert 6 * BUSY_S <= account.spent_s < BYSTANDER_S, account.spent_s

    asyncio.run(scenario())


def test_errors_and_cancellation_pass_through_and_a_closed_account_counts_nothing() -> None:
    cleaned: list[str] = []

    async def failing() -> None:
        await asyncio.sleep(0)
        _busy(BUSY_S)
        raise ValueError("inner")

    async def long_wait() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            _busy(BUSY_S)
            cleaned.append("finally ran")

    async def scenario() -> None:
        account = LoopTime()
        with pytest.raises(ValueError, match="inner"):
            await TimedSteps(failing(), account)
        assert account.take_s() >= BUSY_S, "the failing step counted"
        waiting = asyncio.ensure_future(TimedSteps(long_wait(), account))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert cleaned == ["finally ran"]
        assert account.take_s() >= BUSY_S, "the cancelled step counted"
        account.close()
        await TimedSteps(_work(), account)
        assert account.spent_s == 0, "closed: its call recorded it for the last time"

    asyncio.run(scenario())


def test_service_tasks_started_during_a_call_are_not_the_calls() -> None:
    async def scenario() -> None:
        install(asyncio.get_running_loop())
        account = LoopTime()
        started: list[asyncio.Task[str]] = []

        async def call() -> None:
            ACCOUNT.set(account)
            started.append(service_task(_work()))

        await asyncio.create_task(call())
        assert await started[0] == "done"
        assert account.spent_s < BUSY_S, account.spent_s

    asyncio.run(scenario())


async def _echo_busily(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    async for request in requests:
        _busy(0.005)  # 5 ms of the loop per message
        yield request


def test_a_client_stream_over_its_request_time_quota_is_held_back() -> None:
    """1% of the loop for client ``greedy`` (anonymous callers): each message takes 5 ms, so after
    the first window's worth (10 s at 1%: 100 ms, 20 messages) its stream is read only as fast
    as 1% allows, while another client's stream of as many messages is answered at once."""
    image = MetadataImage()
    record = metadata_pb2.ClientQuotaRecord(
        entity=QuotaEntity(None, "greedy").to_proto(), key=REQUEST_PERCENTAGE, value=1.0
    )
    image.apply(0, metadata_pb2.MetadataRecord(client_quota=record))
    metrics = ServiceMetrics("test")

    async def scenario() -> dict[str, int]:
        install(asyncio.get_running_loop())
        server = grpc.aio.server(interceptors=[AnonymousCallers(), RequestTimeQuota(lambda: image, metrics)])
        server.add_generic_rpc_handlers(
            [
                grpc.method_handlers_generic_handler(
                    "test.Echo", {"Many": grpc.stream_stream_rpc_method_handler(_echo_busily)}
                )
            ]
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        answered: dict[str, int] = {}
        ended: list[grpc.StatusCode] = []
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                many = channel.stream_stream("/test.Echo/Many")
                for client_id in ("greedy", "modest"):
                    answered[client_id] = 0
                    call = many(iter([b"x"] * 100), metadata=(("lanes-client-id", client_id),), timeout=3)
                    try:
                        async for _ in call:
                            answered[client_id] += 1
                    except grpc.aio.AioRpcError as exc:
                        ended.append(exc.code())
        finally:
            await server.stop(0)
        assert ended == [grpc.StatusCode.DEADLINE_EXCEEDED], "only the held-back stream runs out of time"
        return answered

    answered = asyncio.run(scenario())
    assert answered["modest"] == 100
    assert 0 < answered["greedy"] < 50, answered
    assert metrics.throttle_seconds.labels("test", REQUEST_PERCENTAGE)._value.get() > 0


def test_the_clusters_own_calls_are_never_timed_nor_muted() -> None:
    """Without certificates nodes call the client listener as anonymous callers: a request-time
    quota for every user must not mute replication, the quorum or the coordinators' offsets."""
    quota = RequestTimeQuota(MetadataImage)
    assert quota.wrappers("/lanes.v1.Broker/ReplicaFetch") is None
    assert quota.wrappers("/lanes.v1.ControllerQuorum/Send") is None
    assert quota.wrappers("/lanes.v1.Broker/Produce") is not None
    offsets = broker_pb2.ProduceRequest()
    offsets.topics.add(topic="__consumer_offsets")
    assert _clusters_own(RULES["/lanes.v1.Broker/Produce"], offsets)
    offsets.topics.add(topic="orders")
    assert not _clusters_own(RULES["/lanes.v1.Broker/Produce"], offsets)
