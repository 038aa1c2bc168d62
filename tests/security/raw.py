"""Raw gRPC calls the adversarial tests make (what a hostile client sends, byte for byte)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor, message_factory

from lanes.rpc.wire import code_of, produce_request
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2, coordinator_pb2, coordinator_pb2_grpc
from tests.integration.processes import client_channel


async def _produce(address: str, request: broker_pb2.ProduceRequest, *, retry: bool) -> common_pb2.Error:
    async with client_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        for _ in range(100):  # until a new topic's leader serves it
            answer: broker_pb2.ProduceResponse = await stub.Produce(request, timeout=60)
            error = answer.topics[0].partitions[0].error
            if not retry or not code_of(error).retriable:
                return error
            await asyncio.sleep(0.1)
        raise AssertionError(f"never answered but with {error.message}")


def produce(
    address: str, topic: str, partition: int, batch: bytes, acks: int = common_pb2.ACKS_ALL, *, retry: bool = True
) -> common_pb2.Error:
    """Produce one partition's ``batch`` bytes to the broker at ``address``; the final answer
    (with ``retry``, retriable ones, such as a new topic's leader taking over, are retried)."""
    request = produce_request(topic, partition, batch, acks=acks, timeout_ms=30_000)
    return asyncio.run(_produce(address, request, retry=retry))


def peak_memory_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM) since it started or since ``reset_peak_memory``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for process {pid}")


def reset_peak_memory(pid: int) -> float:
    """Reset the process's VmHWM to its resident memory now (Linux ``clear_refs`` 5); that value."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return peak_memory_mib(pid)


async def heartbeat(
    stub: coordinator_pb2_grpc.GroupCoordinatorStub, request: coordinator_pb2.HeartbeatRequest
) -> coordinator_pb2.HeartbeatResponse:
    """The coordinator's final answer to a heartbeat (retried while its shard is still loading)."""
    for _ in range(300):
        answer: coordinator_pb2.HeartbeatResponse = await stub.Heartbeat(request, timeout=30)
        if not code_of(answer.error).retriable:
            return answer
        await asyncio.sleep(0.1)
    raise AssertionError(f"the coordinator kept answering {answer.error.message}")


def call_empty(channel: grpc.Channel, method: descriptor.MethodDescriptor) -> Any:
    """Call ``method`` with an empty request (one, for a stream) and return its first answer (a
    blocking channel)."""
    request_class: Any = message_factory.GetMessageClass(method.input_type)
    response_class: Any = message_factory.GetMessageClass(method.output_type)
    path = f"/{method.containing_service.full_name}/{method.name}"
    kinds = {
        (False, False): channel.unary_unary,
        (False, True): channel.unary_stream,
        (True, False): channel.stream_unary,
        (True, True): channel.stream_stream,
    }
    make = kinds[(method.client_streaming, method.server_streaming)]
    call = make(
        path, request_serializer=request_class.SerializeToString, response_deserializer=response_class.FromString
    )
    request = iter([request_class()]) if method.client_streaming else request_class()
    answer = call(request, timeout=10)
    return next(iter(answer)) if method.server_streaming else answer
