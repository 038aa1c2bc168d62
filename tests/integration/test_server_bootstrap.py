"""The shared server bootstrap, for real: a server on loopback, health and reflection over gRPC."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from lanes.runtime.serving.server import ServiceBinding, start_server
from lanes.v1 import broker_pb2, broker_pb2_grpc, controller_pb2, controller_pb2_grpc
from tests.integration.processes import client_channel

BROKER = broker_pb2.DESCRIPTOR.services_by_name["Broker"].full_name
CONTROLLER = controller_pb2.DESCRIPTOR.services_by_name["Controller"].full_name


def bindings() -> list[ServiceBinding]:
    # The generated base servicers answer UNIMPLEMENTED: enough to prove the contract is served.
    return [
        ServiceBinding(
            BROKER,
            lambda s: broker_pb2_grpc.add_BrokerServicer_to_server(broker_pb2_grpc.BrokerServicer(), s),
        ),
        ServiceBinding(
            CONTROLLER,
            lambda s: controller_pb2_grpc.add_ControllerServicer_to_server(controller_pb2_grpc.ControllerServicer(), s),
        ),
    ]


async def _health(channel: grpc.aio.Channel, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    response = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    return int(response.status)


async def _listed_services(channel: grpc.aio.Channel) -> set[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)

    async def requests():  # type: ignore[no-untyped-def]
        yield reflection_pb2.ServerReflectionRequest(list_services="")

    async for response in stub.ServerReflectionInfo(requests(), timeout=5):
        return {service.name for service in response.list_services_response.service}
    raise AssertionError("reflection sent no response")


def test_health_reflection_and_services_are_served_and_stop_gracefully() -> None:
    async def scenario() -> None:
        running = await start_server(bindings())
        try:
            async with client_channel(running.address) as channel:
                serving = health_pb2.HealthCheckResponse.SERVING
                assert await _health(channel, "") == serving
                assert await _health(channel, BROKER) == serving
                listed = await _listed_services(channel)
                assert {BROKER, CONTROLLER, "grpc.health.v1.Health"} <= listed
                metadata = broker_pb2_grpc.BrokerStub(channel).Metadata
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await metadata(broker_pb2.MetadataRequest(), timeout=5)
                assert raised.value.code() is grpc.StatusCode.UNIMPLEMENTED

                await running.set_serving(False, BROKER)
                assert await _health(channel, BROKER) == health_pb2.HealthCheckResponse.NOT_SERVING
                with pytest.raises(grpc.aio.AioRpcError) as unknown:
                    await _health(channel, "lanes.v1.NoSuchService")
                assert unknown.value.code() is grpc.StatusCode.NOT_FOUND
        finally:
            await running.stop(grace_s=1)

    asyncio.run(scenario())


def test_a_taken_port_is_a_clear_error() -> None:
    async def scenario() -> None:
        first = await start_server(bindings())
        try:
            with pytest.raises(OSError, match="in use"):
                await start_server(bindings(), port=first.port)
        finally:
            await first.stop(grace_s=1)

    asyncio.run(scenario())
