"""The guard (``lanes.runtime.access.guard``) checks every request of a streaming call with the
same rule as a unary call's: needs, per-topic refusals and trimmed answers, on a real in-process
gRPC server with a password session."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from lanes.metadata.image import MetadataImage
from lanes.rpc.credentials import UserPassword
from lanes.rpc.sessions import SessionChannel
from lanes.runtime.access.access_rules import GROUP, TOPIC, Described, Rule
from lanes.runtime.access.authentication_service import AuthenticationService
from lanes.runtime.access.authentication_service import add_to_server as add_authentication
from lanes.runtime.access.guard import Guard
from lanes.runtime.access.password_sessions import PasswordSessions
from lanes.security import scram
from lanes.security.acls import AclBinding, Operation
from lanes.v1 import coordinator_pb2

USER = UserPassword("alice", "alices-password-1")
#: a bidirectional stream and a server stream of the test's own, with rules as RULES would give
BOTH_WAYS = "/test.Guarded/BothWays"
LISTING = "/test.Guarded/Listing"


def _image() -> MetadataImage:
    image = MetadataImage()
    salt = b"g" * 16
    salted = scram.salted_password("SCRAM-SHA-256", USER.password, salt, 4096)
    image.scram_credentials["alice"] = {"SCRAM-SHA-256": scram.credential("SCRAM-SHA-256", salt, 4096, salted)}
    image.acls = {
        AclBinding.of("alice", "read", group="mine"),
        AclBinding.of("alice", "describe", topic="seen"),
    }
    image.acls_offset = image.last_offset = 1
    return image


def _trim(request: Any, response: coordinator_pb2.ListGroupsResponse, access: Any) -> None:
    kept = [g for g in response.groups if access.allows(Operation.DESCRIBE, TOPIC, g.group_id)]
    del response.groups[:]
    response.groups.extend(kept)


RULES = {
    BOTH_WAYS: Rule(
        Described(lambda request, access: [(Operation.READ, GROUP, request.group_id)], "READ on the group")
    ),
    LISTING: Rule(trim=Described(_trim, "topics it may not DESCRIBE left out")),
}


async def _serve(image: MetadataImage | None = None) -> tuple[grpc.aio.Server, int]:
    image = image or _image()
    sessions = PasswordSessions(lambda: image, lifetime_s=60)
    server = grpc.aio.server(interceptors=[Guard(lambda: image, (), RULES, sessions=sessions)])
    add_authentication(AuthenticationService(sessions), server)

    async def both_ways(requests: AsyncIterator[coordinator_pb2.LeaveGroupRequest], context: Any) -> Any:
        async for _ in requests:
            yield coordinator_pb2.LeaveGroupResponse()

    async def listing(request: coordinator_pb2.ListGroupsRequest, context: Any) -> Any:
        for name in ("seen", "unseen"):
            yield coordinator_pb2.ListGroupsResponse(groups=[coordinator_pb2.GroupListing(group_id=name)])

    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "test.Guarded",
                {
                    "BothWays": grpc.stream_stream_rpc_method_handler(
                        both_ways,
                        request_deserializer=coordinator_pb2.LeaveGroupRequest.FromString,
                        response_serializer=coordinator_pb2.LeaveGroupResponse.SerializeToString,
                    ),
                    "Listing": grpc.unary_stream_rpc_method_handler(
                        listing,
                        request_deserializer=coordinator_pb2.ListGroupsRequest.FromString,
                        response_serializer=coordinator_pb2.ListGroupsResponse.SerializeToString,
                    ),
                },
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


def _channel(port: int) -> SessionChannel:
    return SessionChannel(
        lambda interceptors: grpc.aio.insecure_channel(f"127.0.0.1:{port}", interceptors=interceptors), USER
    )


def test_each_request_of_a_stream_is_authorized_and_a_refused_one_ends_it() -> None:
    async def run() -> grpc.StatusCode:
        server, port = await _serve()
        channel = _channel(port)
        try:
            call = channel.stream_stream(
                BOTH_WAYS,
                request_serializer=coordinator_pb2.LeaveGroupRequest.SerializeToString,
                response_deserializer=coordinator_pb2.LeaveGroupResponse.FromString,
            )()
            await call.write(coordinator_pb2.LeaveGroupRequest(group_id="mine"))
            assert await call.read() == coordinator_pb2.LeaveGroupResponse()
            await call.write(coordinator_pb2.LeaveGroupRequest(group_id="theirs"))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call.read()
            assert "GROUP_AUTHORIZATION_FAILED" in str(refused.value.details())
            return refused.value.code()
        finally:
            await channel.close()
            await server.stop(None)

    assert asyncio.run(run()) is grpc.StatusCode.PERMISSION_DENIED


def test_a_server_streams_answers_are_trimmed_as_a_unary_answer_is() -> None:
    async def run() -> list[str]:
        server, port = await _serve()
        channel = _channel(port)
        try:
            call = channel.unary_stream(
                LISTING,
                request_serializer=coordinator_pb2.ListGroupsRequest.SerializeToString,
                response_deserializer=coordinator_pb2.ListGroupsResponse.FromString,
            )(coordinator_pb2.ListGroupsRequest())
            return [group.group_id async for answer in call for group in answer.groups]
        finally:
            await channel.close()
            await server.stop(None)

    assert asyncio.run(run()) == ["seen"]


def test_a_stream_ends_at_its_next_message_once_its_users_password_changed() -> None:
    async def run() -> str:
        image = _image()
        server, port = await _serve(image)
        channel = _channel(port)
        try:
            call = channel.stream_stream(
                BOTH_WAYS,
                request_serializer=coordinator_pb2.LeaveGroupRequest.SerializeToString,
                response_deserializer=coordinator_pb2.LeaveGroupResponse.FromString,
            )()
            await call.write(coordinator_pb2.LeaveGroupRequest(group_id="mine"))
            assert await call.read() == coordinator_pb2.LeaveGroupResponse()
            salted = scram.salted_password("SCRAM-SHA-256", "a-new-password", b"h" * 16, 4096)
            image.scram_credentials["alice"] = {
                "SCRAM-SHA-256": scram.credential("SCRAM-SHA-256", b"h" * 16, 4096, salted)
            }
            await call.write(coordinator_pb2.LeaveGroupRequest(group_id="mine"))
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                await call.read()
            assert ended.value.code() is grpc.StatusCode.UNAUTHENTICATED
            return str(ended.value.details())
        finally:
            await channel.close()
            await server.stop(None)

    assert "password changed" in asyncio.run(run())
