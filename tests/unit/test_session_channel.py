"""The client side of password sessions (``lanes.rpc.sessions.SessionChannel``) against a real
in-process gRPC server with the Authentication service: the password never travels, concurrent
first calls share one login, and a restarted server (which knows no session) is logged in to again."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from lanes.metadata.image import MetadataImage
from lanes.rpc import sessions
from lanes.rpc.credentials import UserPassword
from lanes.rpc.session_registry import session_fingerprint
from lanes.rpc.sessions import SessionChannel
from lanes.rpc.wire import security_refusal
from lanes.runtime.access.authentication_service import AuthenticationService
from lanes.runtime.access.authentication_service import add_to_server as add_authentication
from lanes.runtime.access.password_sessions import PasswordSessions, SessionRefusedError
from lanes.security import scram
from lanes.v1 import broker_pb2, broker_pb2_grpc, controller_pb2, controller_pb2_grpc

USER = UserPassword("alice", "pencil-and-paper")


def _image() -> MetadataImage:
    image = MetadataImage()
    salt = b"n" * 16
    salted = scram.salted_password("SCRAM-SHA-512", USER.password, salt, 4096)
    image.scram_credentials["alice"] = {"SCRAM-SHA-512": scram.credential("SCRAM-SHA-512", salt, 4096, salted)}
    image.last_offset = 0
    return image


class Served:
    """A server answering DescribeCluster to a live session only, recording what calls carried."""

    def __init__(self, lifetime_s: float = 60) -> None:
        self.sessions = PasswordSessions(_image, lifetime_s=lifetime_s)
        self.seen: list[tuple[tuple[str, str], ...]] = []
        self.logins = 0
        self.server = grpc.aio.server()
        add_authentication(_Counting(self), self.server)

        async def describe(request: controller_pb2.DescribeClusterRequest, context: grpc.aio.ServicerContext) -> Any:
            metadata = tuple((k, str(v)) for k, v in context.invocation_metadata() or ())
            self.seen.append(metadata)
            header = dict(metadata).get("authorization", "")
            token = header.removeprefix("Session ")
            try:
                self.sessions.session(token)
            except SessionRefusedError as exc:
                await context.abort(
                    grpc.StatusCode.UNAUTHENTICATED, f"SESSION_EXPIRED: {exc} (session {session_fingerprint(token)})"
                )
            return controller_pb2.DescribeClusterResponse(cluster_id="served")

        async def produce_stream(requests: Any, context: grpc.aio.ServicerContext) -> Any:
            metadata = tuple((k, str(v)) for k, v in context.invocation_metadata() or ())
            self.seen.append(metadata)
            self.sessions.session(dict(metadata).get("authorization", "").removeprefix("Session "))
            async for _ in requests:
                yield broker_pb2.ProduceResponse()

        self.server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    "lanes.v1.Broker",
                    {
                        "ProduceStream": grpc.stream_stream_rpc_method_handler(
                            produce_stream,
                            request_deserializer=broker_pb2.ProduceRequest.FromString,
                            response_serializer=broker_pb2.ProduceResponse.SerializeToString,
                        )
                    },
                ),
                grpc.method_handlers_generic_handler(
                    "lanes.v1.Controller",
                    {
                        "DescribeCluster": grpc.unary_unary_rpc_method_handler(
                            describe,
                            request_deserializer=controller_pb2.DescribeClusterRequest.FromString,
                            response_serializer=controller_pb2.DescribeClusterResponse.SerializeToString,
                        )
                    },
                ),
            )
        )


class _Counting(AuthenticationService):
    def __init__(self, served: Served) -> None:
        super().__init__(served.sessions)
        self._served = served

    async def Authenticate(self, request: Any, context: Any) -> Any:
        if not request.exchange_id:
            self._served.logins += 1
        return await super().Authenticate(request, context)


async def _serve(port: int = 0, lifetime_s: float = 60) -> tuple[Served, int]:
    served = Served(lifetime_s)
    bound = served.server.add_insecure_port(f"127.0.0.1:{port}")
    await served.server.start()
    return served, bound


def _channel(port: int) -> SessionChannel:
    return SessionChannel(
        lambda interceptors: grpc.aio.insecure_channel(f"127.0.0.1:{port}", interceptors=interceptors), USER
    )


def test_calls_carry_a_session_never_the_password_and_share_one_login() -> None:
    asyncio.run(_calls_carry_a_session_never_the_password_and_share_one_login())


async def _calls_carry_a_session_never_the_password_and_share_one_login() -> None:
    served, port = await _serve()
    channel = _channel(port)
    try:
        stub = controller_pb2_grpc.ControllerStub(channel)
        answers = await asyncio.gather(
            *(stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=10) for _ in range(5))
        )
        assert {answer.cluster_id for answer in answers} == {"served"}
        await stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=10)
    finally:
        await channel.close()
        await served.server.stop(None)
    assert served.logins == 2, "one login for the concurrent first calls (SHA-256 tried first, then SHA-512)"
    headers = [dict(metadata)["authorization"] for metadata in served.seen]
    assert all(header.startswith("Session ") for header in headers)
    assert not any(USER.password in str(metadata) for metadata in served.seen)


def test_a_stream_opened_first_logs_in_first() -> None:
    """grpc.aio files an interceptor under one kind of call only: a stream opened before any
    session went out without one (a producer's first ProduceStream to a new leader)."""
    asyncio.run(_a_stream_opened_first_logs_in_first())


async def _a_stream_opened_first_logs_in_first() -> None:
    served, port = await _serve()
    channel = _channel(port)
    try:
        call = broker_pb2_grpc.BrokerStub(channel).ProduceStream()
        await call.write(broker_pb2.ProduceRequest())
        assert await call.read() == broker_pb2.ProduceResponse()
        await call.done_writing()
    finally:
        await channel.close()
        await served.server.stop(None)
    assert [dict(metadata)["authorization"][:8] for metadata in served.seen] == ["Session "]


def test_a_restarted_server_is_logged_in_to_again() -> None:
    asyncio.run(_a_restarted_server_is_logged_in_to_again())


async def _a_restarted_server_is_logged_in_to_again() -> None:
    served, port = await _serve()
    channel = _channel(port)
    stub = controller_pb2_grpc.ControllerStub(channel)
    try:
        await stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=10)
        await served.server.stop(None)
        again, _ = await _serve(port)
        answer = None
        failed = grpc.StatusCode.UNAVAILABLE
        for _ in range(50):  # the client notices the dropped connection; a call on it may fail first
            try:
                answer = await stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=10)
                break
            except grpc.aio.AioRpcError as exc:
                failed = exc.code()
                await asyncio.sleep(0.1)
            assert failed in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED)
        assert answer is not None
        assert again.logins >= 1
        await again.server.stop(None)
    finally:
        await channel.close()


def test_a_session_the_server_pushed_out_is_logged_in_again_after_one_refusal() -> None:
    """The refusal names the session; the client library's error handling (``security_refusal``,
    which every client runs on a failed call) forgets it, and the retry logs in."""
    asyncio.run(_a_session_the_server_pushed_out_is_logged_in_again_after_one_refusal())


async def _a_session_the_server_pushed_out_is_logged_in_again_after_one_refusal() -> None:
    served, port = await _serve()
    channel = _channel(port)
    stub = controller_pb2_grpc.ControllerStub(channel)
    try:
        await stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=10)
        served.sessions._sessions.clear()
        served.sessions._users.clear()
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=10)
        assert security_refusal(refused.value) is None, "retriable: not a refusal of the user"
        assert (await stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=10)).cluster_id
    finally:
        await channel.close()
        await served.server.stop(None)
    assert served.logins == 3  # SHA-256 then SHA-512 at first; SHA-512 at once after


def test_a_session_is_renewed_before_it_ends() -> None:
    asyncio.run(_a_session_is_renewed_before_it_ends())


async def _a_session_is_renewed_before_it_ends() -> None:
    served, port = await _serve(lifetime_s=0.5)
    channel = _channel(port)
    stub = controller_pb2_grpc.ControllerStub(channel)
    try:
        for _ in range(4):
            await stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=10)
            await asyncio.sleep(0.25)
    finally:
        await channel.close()
        await served.server.stop(None)
    # the first login tries SHA-256 before SHA-512 (two first steps); the session (0.5 s) is renewed
    # at 0.4 s, before the call at 0.5 s
    assert served.logins >= 3


@pytest.fixture(autouse=True)
def _forget_mechanisms() -> Iterator[None]:
    sessions._WORKED.clear()
    yield
    sessions._WORKED.clear()
