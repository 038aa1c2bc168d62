"""Calls and connections in progress per caller address (``lanes.runtime.quotas.address_limits``), over a
real gRPC server listening on both IPv4 and IPv6 loopback, so two caller addresses exist on one
machine: one address at its limits is refused with RESOURCE_EXHAUSTED, the other is not, and
what is released may be used again."""

from __future__ import annotations

import asyncio
import socket

import grpc
import pytest

from lanes.runtime.quotas.address_limits import AddressLimits

MAX_CALLS = 10
MAX_CONNECTIONS = 3


def _dual_stack() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _dual_stack(), reason="needs IPv6 loopback beside IPv4's")


def _channel(host: str, port: int) -> grpc.aio.Channel:
    """A channel with a connection of its own (channels otherwise share one per target)."""
    return grpc.aio.insecure_channel(f"{host}:{port}", options=[("grpc.use_local_subchannel_pool", 1)])


def test_one_address_at_its_limits_is_refused_and_another_is_not() -> None:
    limits = AddressLimits(MAX_CALLS, MAX_CONNECTIONS)

    async def scenario() -> None:
        release = asyncio.Event()

        async def wait(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            await release.wait()
            return request

        async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return request

        server = grpc.aio.server(interceptors=[limits])
        server.add_generic_rpc_handlers(
            [
                grpc.method_handlers_generic_handler(
                    "test.Calls",
                    {
                        "Wait": grpc.unary_unary_rpc_method_handler(wait),
                        "Echo": grpc.unary_unary_rpc_method_handler(echo),
                    },
                )
            ]
        )
        port = server.add_insecure_port("[::]:0")
        await server.start()
        v4 = [_channel("127.0.0.1", port) for _ in range(MAX_CONNECTIONS + 1)]
        v6 = [_channel("[::1]", port) for _ in range(2)]
        try:
            held = [
                asyncio.ensure_future(v4[index % MAX_CONNECTIONS].unary_unary("/test.Calls/Wait")(b"held", timeout=30))
                for index in range(MAX_CALLS)
            ]
            while limits.in_progress("127.0.0.1")[0] < MAX_CALLS:
                await asyncio.sleep(0.01)
            assert limits.in_progress("127.0.0.1") == (MAX_CALLS, MAX_CONNECTIONS)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await v4[0].unary_unary("/test.Calls/Echo")(b"one more", timeout=10)
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "127.0.0.1 has 10 calls in progress" in (refused.value.details() or "")
            assert await v6[0].unary_unary("/test.Calls/Echo")(b"elsewhere", timeout=10) == b"elsewhere"

            # connections: three from ::1 with a call in progress each, the fourth refused
            six = [_channel("[::1]", port) for _ in range(MAX_CONNECTIONS + 1)]
            v6.extend(six)
            waiting = [asyncio.ensure_future(c.unary_unary("/test.Calls/Wait")(b"held", timeout=30)) for c in six[:-1]]
            while limits.in_progress("::1")[1] < MAX_CONNECTIONS:
                await asyncio.sleep(0.01)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await six[-1].unary_unary("/test.Calls/Echo")(b"fourth connection", timeout=10)
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "on 3 connections" in (refused.value.details() or "")
            assert await six[0].unary_unary("/test.Calls/Echo")(b"same connection", timeout=10) == b"same connection"

            release.set()
            assert set(await asyncio.gather(*held, *waiting)) == {b"held"}
            assert limits.in_progress("127.0.0.1") == (0, 0)
            assert limits.in_progress("::1") == (0, 0)
            assert await v4[-1].unary_unary("/test.Calls/Echo")(b"again", timeout=10) == b"again"
            assert await six[-1].unary_unary("/test.Calls/Echo")(b"again", timeout=10) == b"again"
        finally:
            for channel in v4 + v6:
                await channel.close()
            await server.stop(0)

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_stream_holds_its_place_until_it_ends() -> None:
    limits = AddressLimits(1, 1)

    async def scenario() -> None:
        async def many(request: bytes, context: grpc.aio.ServicerContext):  # type: ignore[no-untyped-def]
            for _ in range(3):
                await asyncio.sleep(0.05)
                yield request

        server = grpc.aio.server(interceptors=[limits])
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("test.Calls", {"Many": grpc.unary_stream_rpc_method_handler(many)})]
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.unary_stream("/test.Calls/Many")
                first = call(b"a", timeout=10)
                assert await first.read() == b"a"
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    async for _ in call(b"b", timeout=10):
                        pass
                assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                assert [await first.read(), await first.read()] == [b"a", b"a"]
                assert await first.read() is grpc.aio.EOF
                assert [item async for item in call(b"c", timeout=10)] == [b"c"] * 3
                assert limits.in_progress("127.0.0.1") == (0, 0)
        finally:
            await server.stop(0)

    asyncio.run(asyncio.wait_for(scenario(), 60))
