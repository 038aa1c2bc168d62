"""A user's password, proved by SCRAM to each process a client calls and never sent
(``lanes.security.scram_exchange``): the process answers with a session token, which the client's
calls to it carry (``authorization: Session <token>``) until the session is due for renewal.

``SessionChannel`` is the ``grpc.aio`` channel ``open_channel`` gives for ``UserPassword``
credentials. A call made while its session is valid goes out at once on the plain channel with the
token as call metadata (the fast path, ``lanes.rpc.call_metadata``); one made without a valid
session goes out on a twin channel to the same address whose interceptor first logs in (one login
at a time per channel; calls waiting for it share it). A session is renewed before it expires
(``RENEW_AT``, as KIP-368's re-authentication), and forgotten when the connection drops (a
restarted process knows no session): the next call logs in again. A session a server forgot
otherwise (beyond its ``MAX_SESSIONS``) fails calls with SESSION_EXPIRED, which clients retry,
until it is renewed.

The client's PBKDF2 runs on a worker thread, once per (password, salt, iterations): a client
logging in to every node of a cluster salts its password once. ``blocking_call_credentials`` does
the same for a blocking ``grpc`` channel (tools and tests).

Owned by the event loop of the channel's calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import grpc

from lanes.rpc.call_metadata import MetadataChannel, MetadataPairs
from lanes.rpc.session_registry import register
from lanes.security import scram
from lanes.security.scram_exchange import ClientExchange, ScramError
from lanes.v1 import authentication_pb2, authentication_pb2_grpc

if TYPE_CHECKING:
    from lanes.rpc.credentials import UserPassword

#: The metadata key credentials travel in (``lanes.rpc.credentials.AUTHORIZATION_KEY``).
_AUTHORIZATION_KEY = "authorization"
#: The share of a session's life after which the client logs in again.
RENEW_AT = 0.8
#: How long one login step may take.
LOGIN_TIMEOUT_S = 10.0
#: Mechanisms tried, in order, for a user no login has succeeded for yet.
_MECHANISMS = (scram.DEFAULT_MECHANISM, *(m for m in scram.MECHANISMS if m != scram.DEFAULT_MECHANISM))
#: user -> the mechanism its last login succeeded with (process-wide).
_WORKED: dict[str, str] = {}


@functools.lru_cache(maxsize=64)
def _salted(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """PBKDF2 of a password, once per (mechanism, password, salt, iterations) in this process."""
    return scram.salted_password(mechanism, password, salt, iterations)


def _nonce() -> str:
    return os.urandom(24).hex()


def _order(user: str) -> list[str]:
    worked = _WORKED.get(user)
    return [worked, *(m for m in _MECHANISMS if m != worked)] if worked else list(_MECHANISMS)


async def _log_in(user: UserPassword, stub: Any) -> tuple[str, float]:
    """One SCRAM exchange per mechanism until one holds (PBKDF2 on a worker thread): (session
    token, its lifetime in seconds); the last refusal is raised."""
    refused: grpc.aio.AioRpcError | None = None
    for mechanism in _order(user.username):
        exchange = ClientExchange(mechanism, user.username, user.password, _nonce(), salt_password=_salted)
        first = await stub.Authenticate(
            authentication_pb2.AuthenticateRequest(mechanism=mechanism, message=exchange.first()),
            timeout=LOGIN_TIMEOUT_S,
        )
        try:
            final = await asyncio.to_thread(exchange.final, first.message)
        except ScramError as exc:
            raise _refusal(f"the server's SCRAM answer is not acceptable: {exc}") from None
        try:
            answer = await stub.Authenticate(
                authentication_pb2.AuthenticateRequest(exchange_id=first.exchange_id, message=final),
                timeout=LOGIN_TIMEOUT_S,
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() is not grpc.StatusCode.UNAUTHENTICATED:
                raise
            refused = exc  # perhaps the user's credential is for the other mechanism
            continue
        try:
            exchange.verify(answer.message)
        except ScramError as exc:
            raise _refusal(str(exc)) from None
        _WORKED[user.username] = mechanism
        return answer.session, answer.session_lifetime_ms / 1000
    assert refused is not None
    raise refused


class _Session:
    """The session of one channel: its token, when to renew it, and the login in progress."""

    def __init__(self, user: UserPassword, stub: Callable[[], Any]) -> None:
        self._user = user
        self._stub = stub
        self._token: str | None = None
        self._renew_at = 0.0
        self._login: asyncio.Future[None] | None = None

    def metadata(self) -> MetadataPairs | None:
        """The token as call metadata; None when there is none valid (log in first)."""
        if self._token is None or time.monotonic() >= self._renew_at:
            return None
        return ((_AUTHORIZATION_KEY, f"Session {self._token}"),)

    def forget(self) -> None:
        self._token = None

    async def ensure(self) -> MetadataPairs:
        """A valid session's metadata, logging in first if need be (one login at a time)."""
        while (metadata := self.metadata()) is None:
            if self._login is None:
                self._login = asyncio.ensure_future(self._log_in())
            login = self._login
            try:
                await asyncio.shield(login)
            finally:
                if login.done() and self._login is login:
                    self._login = None
        return metadata

    async def _log_in(self) -> None:
        token, lifetime_s = await _log_in(self._user, self._stub())
        self._token, self._renew_at = token, time.monotonic() + RENEW_AT * lifetime_s
        register(token, self)


def _refusal(message: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.aio.Metadata(),
        grpc.aio.Metadata(),
        details=f"SASL_AUTHENTICATION_FAILED: {message}",
    )


class _LogInFirst:
    """Logs in before a call goes out, then sends it with the session (and ``extra()``)."""

    def __init__(self, session: _Session, extra: Callable[[], MetadataPairs]) -> None:
        self._session = session
        self._extra = extra

    async def details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        added = (*await self._session.ensure(), *self._extra())
        keys = {key for key, _ in added}
        given = tuple(pair for pair in tuple(details.metadata or ()) if pair[0] not in keys)
        metadata = grpc.aio.Metadata(*given, *added)
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )

    def interceptors(self) -> tuple[grpc.aio.ClientInterceptor, ...]:
        """One interceptor per kind of call: grpc.aio files an interceptor under the first kind
        it is an instance of, so one object for all four would leave streams uncovered."""
        return (
            _UnaryUnary(self),
            _UnaryStream(self),
            _StreamUnary(self),
            _StreamStream(self),
        )


class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, first: _LogInFirst) -> None:
        self._first = first

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(await self._first.details(client_call_details), request)


class _UnaryStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, first: _LogInFirst) -> None:
        self._first = first

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(await self._first.details(client_call_details), request)


class _StreamUnary(grpc.aio.StreamUnaryClientInterceptor):
    def __init__(self, first: _LogInFirst) -> None:
        self._first = first

    async def intercept_stream_unary(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return await continuation(await self._first.details(client_call_details), request_iterator)


class _StreamStream(grpc.aio.StreamStreamClientInterceptor):
    def __init__(self, first: _LogInFirst) -> None:
        self._first = first

    async def intercept_stream_stream(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return await continuation(await self._first.details(client_call_details), request_iterator)


class SessionChannel(MetadataChannel):
    """A channel whose calls carry ``user``'s session on that process (see the module docstring).
    ``open(interceptors)`` opens a ``grpc.aio`` channel to the process (the same target, options
    and TLS each time); ``extra()`` is metadata every call carries too (a client id)."""

    def __init__(
        self,
        open_channel: Callable[[Sequence[grpc.aio.ClientInterceptor]], grpc.aio.Channel],
        user: UserPassword,
        extra: Callable[[], MetadataPairs] = lambda: (),
    ) -> None:
        plain = open_channel(())
        self._session = _Session(user, lambda: authentication_pb2_grpc.AuthenticationStub(plain))  # type: ignore[no-untyped-call]
        super().__init__(plain, self._with_session)
        self._extra = extra
        self._logging_in = open_channel(_LogInFirst(self._session, extra).interceptors())
        self._watcher: asyncio.Task[None] | None = None

    def _with_session(self) -> MetadataPairs:
        metadata = self._session.metadata()
        assert metadata is not None, "routed to the logging-in channel without a session"
        return (*metadata, *self._extra())

    def _route(self, kind: str, args: Any, kwargs: Any) -> Any:
        if self._watcher is None:
            with contextlib.suppress(RuntimeError):  # a stub made off the loop: watched from the first call on it
                self._watcher = asyncio.get_running_loop().create_task(self._watch())
        if self._session.metadata() is None:
            return getattr(self._logging_in, kind)(*args, **kwargs)
        return getattr(super(), kind)(*args, **kwargs)

    async def _watch(self) -> None:
        """Forget the session when the connection leaves READY (a restarted process, a new
        connection: the next call logs in again)."""
        channel = self._channel
        state = channel.get_state()
        while True:
            await channel.wait_for_state_change(state)
            if state is grpc.ChannelConnectivity.READY:
                self._session.forget()
            state = channel.get_state()

    def unary_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._route("unary_unary", args, kwargs)

    def unary_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._route("unary_stream", args, kwargs)

    def stream_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._route("stream_unary", args, kwargs)

    def stream_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._route("stream_stream", args, kwargs)

    async def close(self, grace: float | None = None) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
        await asyncio.gather(self._channel.close(grace), self._logging_in.close(grace))

    async def __aexit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        await self.close()


class _BlockingSessions(grpc.AuthMetadataPlugin):
    """For a blocking channel: logs in to each process a call goes to (on gRPC's plugin thread)
    and sends the session it opened."""

    def __init__(self, user: UserPassword, channel_credentials: grpc.ChannelCredentials) -> None:
        self._user = user
        self._channel_credentials = channel_credentials
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[str, float]] = {}  # authority -> (token, renew at)

    def __call__(self, context: grpc.AuthMetadataContext, callback: grpc.AuthMetadataPluginCallback) -> None:
        authority = urllib.parse.urlsplit(context.service_url).netloc
        try:
            token = self._token(authority)
        except Exception as exc:  # the call fails with it
            callback((), exc)
            return
        callback(((_AUTHORIZATION_KEY, f"Session {token}"),), None)

    def _token(self, authority: str) -> str:
        with self._lock:
            known = self._sessions.get(authority)
            if known is not None and time.monotonic() < known[1]:
                return known[0]
            token, lifetime_s = asyncio.run(
                _blocking_log_in(self._user, authority, self._channel_credentials)
            )  # gRPC's plugin thread runs no loop
            self._sessions[authority] = (token, time.monotonic() + RENEW_AT * lifetime_s)
            return token


async def _blocking_log_in(
    user: UserPassword, authority: str, credentials: grpc.ChannelCredentials
) -> tuple[str, float]:
    async with grpc.aio.secure_channel(authority, credentials) as channel:
        stub = authentication_pb2_grpc.AuthenticationStub(channel)  # type: ignore[no-untyped-call]
        return await _log_in(user, stub)


def blocking_call_credentials(user: UserPassword, channel_credentials: grpc.ChannelCredentials) -> grpc.CallCredentials:
    """Call credentials for a blocking channel (made with ``channel_credentials``) whose calls
    carry ``user``'s session on the process they go to."""
    return grpc.metadata_call_credentials(_BlockingSessions(user, channel_credentials), name="lanes-session")
