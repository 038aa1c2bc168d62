"""The machine's limits, measured in the same run as the systems, so Lanes can be reported as a
fraction of the hardware:

- sequential write throughput of the data directory's filesystem: one file, written in chunks of
  a batch's size, without fsync and with an fdatasync after every chunk;
- loopback gRPC throughput for messages of a batch's size: a Python ``grpc.aio`` server in its
  own process (as a broker is) that receives raw bytes and answers an empty message, driven from
  this process by a ``grpc.aio`` client with ``in_flight`` requests outstanding. It is the
  transport Lanes uses, doing nothing with what arrives: what a broker could take if storing
  cost nothing; and the round trip of a small message, one at a time: the latency floor.

``python -m tests.perf.peers.limits PORT`` runs the sink server.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import grpc

from lanes.rpc.channels import MESSAGE_SIZE_OPTIONS

MiB = 1024 * 1024
SINK_METHOD = "/lanes.bench.Sink/Put"
_OPTIONS = MESSAGE_SIZE_OPTIONS  # Lanes' own: the sink takes what a broker takes


def raw_write_mb_s(directory: Path, chunk: bytes, chunks: int, *, fsync: bool) -> float:
    """MiB/s writing ``chunks`` x ``chunk`` to a new file in ``directory`` (removed after)."""
    path = directory / "raw-write.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        for _ in range(chunks):
            os.write(fd, chunk)
            if fsync:
                os.fdatasync(fd)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()
    return len(chunk) * chunks / elapsed / MiB


async def _serve(port: int) -> None:
    async def put(_request: bytes, _context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return b""

    handler = grpc.method_handlers_generic_handler(
        "lanes.bench.Sink", {"Put": grpc.unary_unary_rpc_method_handler(put)}
    )
    server = grpc.aio.server(options=_OPTIONS)
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


async def _drive(address: str, message: bytes, requests: int, in_flight: int) -> float:
    async with grpc.aio.insecure_channel(address, options=_OPTIONS) as channel:
        put = channel.unary_unary(SINK_METHOD)
        await channel.channel_ready()
        await put(message)  # warm-up
        remaining = requests

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await put(message)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        return time.perf_counter() - start


def grpc_round_trip_ms(address: str, message_bytes: int, requests: int) -> float:
    """Mean milliseconds per request of ``message_bytes``, one at a time: the latency floor of
    any request/response over Python gRPC on this machine."""
    return asyncio.run(_drive(address, os.urandom(message_bytes), requests, 1)) / requests * 1000


def grpc_loopback_mb_s(address: str, message_bytes: int, requests: int, in_flight: int) -> float:
    """MiB/s of ``message_bytes`` messages sent to the sink at ``address``."""
    elapsed = asyncio.run(_drive(address, os.urandom(message_bytes), requests, in_flight))
    return message_bytes * requests / elapsed / MiB


if __name__ == "__main__":
    asyncio.run(_serve(int(sys.argv[1])))
