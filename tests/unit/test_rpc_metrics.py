"""The RPC timing interceptor on a real grpc.aio server (loopback, in process): each unary call is
counted under its method and the status the client saw — OK, the code of ``context.abort``, or
UNKNOWN for an exception the handler let escape; streaming calls are left to the services."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from lanes.runtime.metrics import ServiceMetrics


async def _calls(metrics: ServiceMetrics) -> None:
    async def ok(_request: bytes, _context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return b""

    async def refused(_request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no")
        raise AssertionError("abort raises")

    async def broken(_request: bytes, _context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        raise RuntimeError("a bug")

    async def stream(_request: bytes, _context: grpc.aio.ServicerContext[bytes, bytes]):  # type: ignore[no-untyped-def]
        yield b""

    handlers = grpc.method_handlers_generic_handler(
        "t.S",
        {
            "Ok": grpc.unary_unary_rpc_method_handler(ok),
            "Refused": grpc.unary_unary_rpc_method_handler(refused),
            "Broken": grpc.unary_unary_rpc_method_handler(broken),
            "Stream": grpc.unary_stream_rpc_method_handler(stream),
        },
    )
    server = grpc.aio.server(interceptors=[metrics.interceptor()])
    server.add_generic_rpc_handlers((handlers,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            for _ in range(2):
                await channel.unary_unary("/t.S/Ok")(b"")
            for method, code in (("Refused", grpc.StatusCode.INVALID_ARGUMENT), ("Broken", grpc.StatusCode.UNKNOWN)):
                with pytest.raises(grpc.aio.AioRpcError) as failed:
                    await channel.unary_unary(f"/t.S/{method}")(b"")
                assert failed.value.code() is code
            assert [answer async for answer in channel.unary_stream("/t.S/Stream")(b"")] == [b""]
    finally:
        await server.stop(0)


def test_unary_calls_are_counted_by_method_and_status() -> None:
    metrics = ServiceMetrics("test")
    asyncio.run(_calls(metrics))
    counts = {
        (s.labels["method"], s.labels["code"]): s.value
        for family in metrics.rpc_duration.collect()
        for s in family.samples
        if s.name.endswith("_count")
    }
    assert counts == {("Ok", "OK"): 2, ("Refused", "INVALID_ARGUMENT"): 1, ("Broken", "UNKNOWN"): 1}
