"""``lanes.rpc.call_metadata.MetadataChannel`` against a real gRPC server on loopback: every kind
of call carries the channel's metadata besides its own, and the channel otherwise behaves as
the one it wraps."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import grpc

from lanes.rpc.call_metadata import MetadataChannel

ADDED = (("authorization", "Basic dTpw"),)


def _seen(context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
    """The call's metadata as the server saw it (gRPC's own keys left out), one line per pair."""
    pairs = [f"{key}={value}" for key, value in context.invocation_metadata() or () if key in ("authorization", "own")]
    return "\n".join(sorted(pairs)).encode()


async def _unary_unary(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
    return _seen(context)


async def _unary_stream(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> AsyncIterator[bytes]:
    yield _seen(context)


async def _stream_unary(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
    async for _ in requests:
        pass
    return _seen(context)


async def _stream_stream(
    requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
) -> AsyncIterator[bytes]:
    async for _ in requests:
        yield _seen(context)


def _requests() -> Iterator[bytes]:
    yield b"one"


async def _scenario() -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(
                "test.Echo",
                {
                    "UnaryUnary": grpc.unary_unary_rpc_method_handler(_unary_unary),
                    "UnaryStream": grpc.unary_stream_rpc_method_handler(_unary_stream),
                    "StreamUnary": grpc.stream_unary_rpc_method_handler(_stream_unary),
                    "StreamStream": grpc.stream_stream_rpc_method_handler(_stream_stream),
                },
            )
        ]
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with MetadataChannel(grpc.aio.insecure_channel(f"127.0.0.1:{port}"), lambda: ADDED) as channel:
            await channel.channel_ready()
            assert channel.get_state() == grpc.ChannelConnectivity.READY
            added = b"authorization=Basic dTpw"
            both = b"authorization=Basic dTpw\nown=yes"
            unary = channel.unary_unary("/test.Echo/UnaryUnary")
            assert await unary(b"x") == added
            assert await unary(b"x", metadata=(("own", "yes"),), timeout=5) == both
            assert await unary(b"x", metadata=grpc.aio.Metadata(("own", "yes"))) == both
            replaced = (("authorization", "Basic other"), ("own", "yes"))
            assert await unary(b"x", metadata=replaced) == both, "the channel's authorization, once"
            assert [m async for m in channel.unary_stream("/test.Echo/UnaryStream")(b"x")] == [added]
            assert await channel.stream_unary("/test.Echo/StreamUnary")(request_iterator=_requests()) == added
            streamed = channel.stream_stream("/test.Echo/StreamStream")(metadata=(("own", "yes"),))
            await streamed.write(b"one")
            await streamed.done_writing()
            assert [m async for m in streamed] == [both]
        assert channel.get_state() == grpc.ChannelConnectivity.SHUTDOWN, "leaving the block closed the channel"
    finally:
        await server.stop(None)


def test_every_kind_of_call_carries_the_channels_metadata_besides_its_own() -> None:
    asyncio.run(_scenario())
