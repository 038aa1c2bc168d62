"""Who is on a Kafka connection: SASL (SaslHandshake, SaslAuthenticate) against Lanes' users, or
the connection's verified client certificate, or nobody needed (a cluster without
``--auth required``: everyone is ``User:ANONYMOUS``).

Mechanisms: SCRAM-SHA-512 and SCRAM-SHA-256 (RFC 5802/7677 on the users' stored keys: the proof
opens a session in this process's ``PasswordSessions``, as a gRPC login does, so a password
change or a deleted user ends it), and OAUTHBEARER (RFC 7628's initial response carrying a JWT,
checked as the gRPC face checks bearer tokens) where the cluster accepts tokens.

A verified client certificate (a listener that asks for them: ``--tls-client-auth required``)
names the connection's user unless the client authenticates by SASL, whose principal then counts,
as on Kafka's SASL_SSL listeners and on the gRPC face (a session or token before the certificate).

The connection's states, as Kafka's ``SaslServerAuthenticator`` has them: before authentication
only ApiVersions, SaslHandshake and SaslAuthenticate are answered (anything else closes the
connection), in frames of at most ``MAX_UNAUTHENTICATED_FRAME_BYTES`` (Kafka's
``sasl.server.max.receive.size``); a failed authentication is answered SASL_AUTHENTICATION_FAILED
and the connection closed (a login refused for load, or a node that has not loaded its users yet,
closes it unanswered: the client reconnects and tries again); once authenticated,
SaslAuthenticate v1+ tells the client how long its session lives (``session_lifetime``, KIP-368:
the token's expiry or the password session's, at most ``--max-session-seconds``) and the client
may authenticate again on the same connection, with the same mechanism and as the same principal,
before then; other requests in the middle of that close the connection. A request after the
session ended (or after the user's password changed) closes the connection, which the client
reopens and authenticates again. A connection's password session is ended when it closes.

Owned by the broker's event loop (one ``KafkaConnection`` per connection).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode as KafkaError

from lanes.kafka.answers import Answer
from lanes.kafka.codec import build, milliseconds, response_class
from lanes.runtime.access.password_sessions import LoginRefusedError, PasswordSessions, SessionRefusedError
from lanes.runtime.access.tokens import MAX_TOKEN_BYTES, InvalidTokenError, TokenVerifier
from lanes.security.acls import NODE_NAME, user_principal

_log = logging.getLogger(__name__)

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
SCRAM_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
OAUTHBEARER = "OAUTHBEARER"
ANONYMOUS = "User:ANONYMOUS"
#: the largest SASL message taken (a client-first message, a proof, a JWT and its framing)
MAX_AUTH_BYTES = MAX_TOKEN_BYTES + 1024
#: the largest request frame of a connection not authenticated yet
MAX_UNAUTHENTICATED_FRAME_BYTES = 64 * 1024
#: distinct bearer tokens being checked at once, at most (as the gRPC guard)
MAX_TOKEN_CHECKS = 256


@dataclass
class KafkaConnection:
    """One connection's caller: where it comes from, the name its verified certificate gives (None
    without one), and once authenticated its principal, until ``expires_s`` (``time.time()``;
    None: while the connection lasts, or while its password session lives)."""

    host: str
    certificate_name: str | None = None
    principal: str | None = None
    expires_s: float | None = None
    #: the password session a SCRAM proof opened (checked at each request)
    session_token: str | None = None
    #: the mechanism the principal was authenticated with ("" for a certificate's, None: not yet)
    authenticated_with: str | None = None
    #: the mechanism a handshake in progress chose, and a SCRAM exchange in progress
    mechanism: str | None = None
    exchange_id: str | None = None

    @property
    def max_frame_bytes(self) -> int | None:
        """The largest frame taken now (None: the listener's own bound)."""
        return MAX_UNAUTHENTICATED_FRAME_BYTES if self.principal is None else None


class KafkaAuthentication:
    """The authentication of one broker's Kafka listener (see the module docstring).
    ``required``: the cluster runs with ``--auth required``; else every caller is anonymous."""

    def __init__(
        self,
        *,
        required: bool,
        sessions: PasswordSessions | None = None,
        tokens: TokenVerifier | None = None,
        max_session_s: float = 0.0,
        now_s: Callable[[], float] = time.time,
    ) -> None:
        if required and sessions is None:
            raise ValueError("authentication needs the process's password sessions")
        self.required = required
        self._sessions = sessions
        self._tokens = tokens
        self._max_session_s = max_session_s
        self._now_s = now_s

    def _ends_s(self, expires_s: float | None) -> float | None:
        """When a session authenticated now ends: ``expires_s`` (a token's), at most
        ``max_session_s`` from now (0: no bound)."""
        bound = self._now_s() + self._max_session_s if self._max_session_s > 0 else None
        return min((t for t in (expires_s, bound) if t is not None), default=None)

    def mechanisms(self) -> tuple[str, ...]:
        """The SASL mechanisms this listener takes."""
        return (*SCRAM_MECHANISMS, *((OAUTHBEARER,) if self._tokens is not None else ()))

    def opened(self, connection: KafkaConnection) -> str | None:
        """Admit a new connection: anonymous without ``required``; its certificate's user when
        it presented a verified one. Returns why it must be closed (a node's certificate: nodes
        speak gRPC on the internal listener, and a user may not take a node's name), else None."""
        if not self.required:
            connection.principal = ANONYMOUS
            return None
        name = connection.certificate_name
        if name is None:
            return None
        if NODE_NAME.fullmatch(name) is not None:
            return f"the certificate names the node {name}; nodes do not use the Kafka listener"
        connection.principal, connection.authenticated_with = user_principal(name), ""
        connection.expires_s = self._ends_s(None)
        return None

    def closed(self, connection: KafkaConnection) -> None:
        """The connection closed: its password session ends with it."""
        self._end_session(connection)

    def _end_session(self, connection: KafkaConnection) -> None:
        if connection.session_token is not None and self._sessions is not None:
            self._sessions.end(connection.session_token)
        connection.session_token = None

    def refusal(self, connection: KafkaConnection) -> str | None:
        """Why the connection may not make a request now (not authenticated, its session ended,
        its user's password changed), else None."""
        if connection.principal is None:
            return "not authenticated: only ApiVersions, SaslHandshake and SaslAuthenticate are answered before"
        if connection.mechanism is not None:
            return "a request in the middle of a re-authentication (ILLEGAL_SASL_STATE)"
        if connection.expires_s is not None and self._now_s() >= connection.expires_s:
            return "its session ended without re-authentication (KIP-368)"
        if connection.session_token is not None:
            assert self._sessions is not None
            try:
                self._sessions.session(connection.session_token)
            except SessionRefusedError as exc:
                return f"its session ended: {exc}"
        return None

    # -----------------------------------------------------------------------------------------
    # SaslHandshake

    async def handshake(self, connection: KafkaConnection, header: Any, request: Any, version: int) -> Answer:
        """Choose a mechanism (an unknown one: UNSUPPORTED_SASL_MECHANISM with the list, then the
        connection closes, as Kafka does)."""
        cls = response_class(SASL_HANDSHAKE, version)
        mechanisms = self.mechanisms() if self.required else ()
        if connection.authenticated_with and request.mechanism != connection.authenticated_with:
            # (KIP-368: re-authentication keeps the mechanism; Kafka's REAUTH_BAD_MECHANISM)
            return Answer(build(cls, error_code=KafkaError.illegal_sasl_state, mechanisms=mechanisms), close=True)
        if request.mechanism not in mechanisms:
            unsupported = KafkaError.unsupported_sasl_mechanism
            return Answer(build(cls, error_code=unsupported, mechanisms=mechanisms), close=True)
        connection.mechanism, connection.exchange_id = request.mechanism, None
        return Answer(build(cls, mechanisms=mechanisms))

    # -----------------------------------------------------------------------------------------
    # SaslAuthenticate

    async def authenticate(self, connection: KafkaConnection, header: Any, request: Any, version: int) -> Answer:
        """One step of the chosen mechanism; see the module docstring."""
        cls = response_class(SASL_AUTHENTICATE, version)
        mechanism = connection.mechanism
        if mechanism is None:
            return self._failed(cls, KafkaError.illegal_sasl_state, "SaslAuthenticate before SaslHandshake")
        message = bytes(request.auth_bytes)
        if len(message) > MAX_AUTH_BYTES:
            return self._failed(cls, KafkaError.sasl_authentication_failed, "authentication message too large")
        try:
            if mechanism == OAUTHBEARER:
                bearer = _bearer_token(message)
                user, expires_s = await self._bearer(bearer)
                token, reply = None, b""
            elif connection.exchange_id is None:  # SCRAM's first step
                assert self._sessions is not None
                exchange_id, server_first = self._sessions.start(
                    connection.host, mechanism, message.decode("utf-8", "replace")
                )
                connection.exchange_id = exchange_id
                return Answer(build(cls, auth_bytes=server_first.encode()))
            else:  # SCRAM's proof
                assert self._sessions is not None
                exchange_id, connection.exchange_id = connection.exchange_id, None
                server_final, token, session = self._sessions.finish(exchange_id, message.decode("utf-8", "replace"))
                user, reply = session.user, server_final.encode()
                expires_s = self._now_s() + self._sessions.seconds_left(session)
        except _BusyError as exc:  # (the client reconnects and tries again, as after any broken connection)
            _log.info("closing a Kafka connection from %s during its login: %s", connection.host, exc)
            return Answer(None, close=True)
        except LoginRefusedError as exc:
            if exc.busy:
                _log.info("closing a Kafka connection from %s during its login: %s", connection.host, exc)
                return Answer(None, close=True)
            return self._failed(cls, KafkaError.sasl_authentication_failed, f"authentication failed: {exc}")
        except InvalidTokenError as exc:
            return self._failed(cls, KafkaError.sasl_authentication_failed, f"invalid token: {exc}")
        principal = user_principal(user)
        if connection.authenticated_with and connection.principal != principal:  # KIP-368: the same principal
            if token is not None:
                assert self._sessions is not None
                self._sessions.end(token)
            return self._failed(
                cls, KafkaError.sasl_authentication_failed, "re-authentication must be as the same principal"
            )
        self._end_session(connection)  # (a re-authentication's new session replaces the old one)
        connection.principal, connection.session_token = principal, token
        connection.expires_s = self._ends_s(expires_s)
        connection.authenticated_with, connection.mechanism = mechanism, None
        ends_s = connection.expires_s
        lifetime_ms = 0 if ends_s is None else max(int((ends_s - self._now_s()) * 1000), 1)
        return Answer(build(cls, auth_bytes=reply, session_lifetime=milliseconds(lifetime_ms)))

    async def _bearer(self, token: str) -> tuple[str, float | None]:
        """(the user a bearer token names, when it expires)."""
        if self._tokens is None:
            raise InvalidTokenError("this cluster accepts no bearer tokens (no --oauth-issuer)")
        known = self._tokens.remembered(token)
        if known is None and self._tokens.checks_pending() >= MAX_TOKEN_CHECKS:
            raise _BusyError("too many tokens being checked: retry shortly")
        user = known if known is not None else await self._tokens.user(token)
        return user, self._tokens.expires_s(token)

    @staticmethod
    def _failed(response: type[Any], code: KafkaError, message: str) -> Answer:
        return Answer(build(response, error_code=code, error_message=message), close=True)


class _BusyError(Exception):
    """A login put off for load: the connection closes unanswered and the client tries again."""


def _bearer_token(message: bytes) -> str:
    """The token of an OAUTHBEARER initial response (RFC 7628: ``n,,\\x01auth=Bearer <token>\\x01\\x01``,
    possibly with extensions ``key=value\\x01``)."""
    text = message.decode("ascii", "replace")
    for part in text.split("\x01"):
        if part[:12].lower() == "auth=bearer ":
            return part[12:].strip()
    raise InvalidTokenError("no 'auth=Bearer <token>' in the OAUTHBEARER message")
