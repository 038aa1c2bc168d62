"""The Authentication service every Lanes process serves beside its own (registered by
``start_server`` when a listener asks for passwords): the face of ``PasswordSessions``, two calls
per SCRAM exchange (``proto/lanes/v1/authentication.proto``). The guard lets it through without a
principal: it is how a user gets one.

Owned by the service's event loop.
"""

from __future__ import annotations

import grpc

from lanes.rpc.wire import ServicerContext, peer_host
from lanes.runtime.access.password_sessions import LoginRefusedError, PasswordSessions
from lanes.v1 import authentication_pb2, authentication_pb2_grpc

#: The method the guard leaves open.
AUTHENTICATE_METHOD = "/lanes.v1.Authentication/Authenticate"


class AuthenticationService(authentication_pb2_grpc.AuthenticationServicer):
    """One step of a SCRAM exchange per call: refusals are UNAUTHENTICATED
    (``SASL_AUTHENTICATION_FAILED: ...``, one answer for a wrong password and an unknown user),
    and UNAVAILABLE while too many exchanges are in flight."""

    def __init__(self, sessions: PasswordSessions) -> None:
        self._sessions = sessions

    async def Authenticate(  # noqa: N802
        self, request: authentication_pb2.AuthenticateRequest, context: ServicerContext
    ) -> authentication_pb2.AuthenticateResponse:
        try:
            if not request.exchange_id:
                exchange_id, first = self._sessions.start(peer_host(context), request.mechanism, request.message)
                return authentication_pb2.AuthenticateResponse(exchange_id=exchange_id, message=first)
            final, token, session = self._sessions.finish(request.exchange_id, request.message)
        except LoginRefusedError as exc:
            if exc.busy:
                await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, f"SASL_AUTHENTICATION_FAILED: {exc}")
            raise  # not reached: abort raises
        return authentication_pb2.AuthenticateResponse(
            exchange_id=request.exchange_id,
            message=final,
            session=token,
            session_lifetime_ms=int(self._sessions.seconds_left(session) * 1000),
        )


def add_to_server(service: AuthenticationService, server: grpc.aio.Server) -> None:
    """Register the service on a gRPC server."""
    authentication_pb2_grpc.add_AuthenticationServicer_to_server(service, server)  # type: ignore[no-untyped-call]
