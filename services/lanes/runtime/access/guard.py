"""The server interceptor that authenticates every call and authorizes it by ``RULES``
(``lanes.runtime.access.access_rules``): one guard, the same in every service (``--auth required``).

Who the caller is (its principal, ``User:<name>``):

1. a password session in the call's ``authorization`` metadata (``Session <token>``): the user
   proved its password to this process by SCRAM (the Authentication service,
   ``lanes.runtime.access.authentication_service``: the password is never sent) and the process
   opened a session (``lanes.runtime.access.password_sessions``). A session this process does not
   know, or that expired, is answered UNAUTHENTICATED ``SESSION_EXPIRED`` (the client logs in
   again); one whose user's password changed since, ``SASL_AUTHENTICATION_FAILED``. A password
   itself (``Basic``) is refused: it is never sent;
2. or a bearer token there (``Bearer``: an OAuth/OIDC JWT, ``lanes.runtime.access.tokens``), where
   the service was given an issuer (``--oauth-issuer``);
3. else the common name of the caller's verified client certificate (mutual TLS). A node's
   certificate (``broker-1``, ``controller-0``, ``coordinator-1``) makes the caller that node,
   held to what its role needs (``NODE_RULES``);
4. else nobody: the call ends with UNAUTHENTICATED, whatever it asked.

Only the health check and the Authentication service are open to anyone (probes; a login).

On the internal listener (mutual TLS) the guard admits the cluster's nodes only: a caller
whose certificate names no node gets PERMISSION_DENIED, whatever it calls. The cluster's own
RPCs (``Rule.nodes_only``: registration, the metadata stream, replication, the quorum) need a
node's certificate on any listener: no ACL grants them, and a super user does not pass. Without
``--auth required``, the guard checks only that (``authorize=False``).

Owned by the service's event loop; the authorizer is rebuilt when the image's ACLs change.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, NoReturn

import grpc

from lanes.metadata.image import MetadataImage
from lanes.rpc.call_metadata import CLIENT_ID_KEY, ON_BEHALF_OF_HOST_KEY, ON_BEHALF_OF_KEY
from lanes.rpc.credentials import AUTHORIZATION_KEY
from lanes.rpc.session_registry import session_fingerprint
from lanes.rpc.tls import caller_identity, callers_verified
from lanes.rpc.wire import SESSION_EXPIRED, ServicerContext, peer_host
from lanes.runtime.access.access_rules import (
    FORWARDED,
    RULES,
    Access,
    Rule,
    answer_refused,
    answer_resources,
    first_refused,
    node_may,
    refusal_code,
    refused_now,
    split_resources,
    split_topics,
)
from lanes.runtime.access.authentication_service import AUTHENTICATE_METHOD
from lanes.runtime.access.image_authorizer import ImageAuthorizer
from lanes.runtime.access.password_sessions import PasswordSessions, SessionRefusedError
from lanes.runtime.access.tokens import InvalidTokenError, TokenVerifier
from lanes.runtime.interceptors import CallInterceptor, Wrappers
from lanes.security.acls import NODE_NAME, user_principal
from lanes.security.quota_entities import MAX_CLIENT_ID_CHARS, QuotaEntity, valid_client_id

#: Distinct bearer tokens being checked at once, at most.
_WAITING_CHECKS = 256
#: The methods open to anyone: probes' health checks (the Watch stream is not: it stays open), and
#: the SCRAM exchange that gives a user a session.
_OPEN = frozenset({"/grpc.health.v1.Health/Check", AUTHENTICATE_METHOD})

#: The listener a guard watches: clients', the nodes' internal one, or the certificate listener
#: (clients whose certificates the clients' CA signed; never nodes).
Listener = Literal["client", "internal", "certificates"]

#: The listener the current call came in on (set by the guard for the handler's context).
LISTENER: contextvars.ContextVar[Listener] = contextvars.ContextVar("lanes_listener", default="client")


class Caller(NamedTuple):
    """Who a client call is made by, for quotas: its principal (``ANONYMOUS`` without
    authentication) and the client id it gave (``lanes-client-id`` metadata; "" without one)."""

    principal: str
    client_id: str


#: The current call's caller, set by the guard (or ``AnonymousCallers``) for the handler's
#: context; None for the cluster's own calls, never throttled.
CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("lanes_caller", default=None)
ANONYMOUS = "User:ANONYMOUS"

#: The address of the Kafka client a broker forwards the current call for (None: the caller's own).
FORWARDED_HOST: contextvars.ContextVar[str | None] = contextvars.ContextVar("lanes_forwarded_host", default=None)

#: The current call's access when ACLs apply to it, set by the guard for the handler's context:
#: a face that resolves resources the request did not name (the topics a group committed, what a
#: pattern matches) authorizes each with it. None: everything passes (a node, a super user, no
#: ACLs on this listener).
ACCESS: contextvars.ContextVar[Access | None] = contextvars.ContextVar("lanes_access", default=None)


def caller_quota(image: MetadataImage, key: str, caller: Caller | None) -> tuple[QuotaEntity, float] | None:
    """(what the call is measured as, the quota) when ``caller`` is limited under quota ``key``
    (Kafka's precedence of user and client-id quotas, ``lanes.security.quota_entities``): never
    for the cluster's own calls (None)."""
    if caller is None:
        return None
    return image.client_quota(caller.principal.removeprefix("User:"), caller.client_id, key)


@dataclass(frozen=True)
class RequestContext:
    """What a face knows of the call it serves, from the guard that admitted it: passed on
    explicitly from there (nothing below a face reads the guard's context variables)."""

    #: who calls, for quotas (None: the cluster's own call, never measured)
    caller: Caller | None
    #: the listener the call came in on
    listener: Listener
    #: the common name of the caller's verified certificate (None without one)
    identity: str | None
    #: whether this process's listener verifies client certificates at all
    verified: bool
    #: what the caller may do, when ACLs apply to it (None: everything; see ``ACCESS``)
    access: Access | None = None
    #: where the Kafka client a broker forwards this call for calls from (None: the peer itself)
    forwarded_host: str | None = None

    @property
    def on_certificate_listener(self) -> bool:
        """The addresses the caller is told are those of certificate listeners
        (``lanes.metadata.image.client_port``), as Kafka answers with the listener a request
        came in on."""
        return self.listener == "certificates"

    def quota(self, image: MetadataImage, key: str) -> tuple[QuotaEntity, float] | None:
        """The caller's quota under ``key`` (``caller_quota``)."""
        return caller_quota(image, key, self.caller)


def request_context(context: ServicerContext | None) -> RequestContext:
    """The context of the call the guard admitted (``context`` None: a call made in process, as
    tests make them, with the caller the test set)."""
    identity = caller_identity(context) if context is not None else None
    return RequestContext(
        CALLER.get(), LISTENER.get(), identity, callers_verified(), ACCESS.get(), FORWARDED_HOST.get()
    )


async def _client_id(context: ServicerContext) -> str:
    """The client id a call gives (``lanes-client-id``; "" without one); a call giving one that
    cannot name a quota entity ends with INVALID_ARGUMENT."""
    given = next((value for key, value in context.invocation_metadata() or () if key == CLIENT_ID_KEY), "")
    client_id = given if isinstance(given, str) else ""
    if not valid_client_id(client_id):
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"INVALID_REQUEST: a client id is at most {MAX_CLIENT_ID_CHARS} printable ASCII characters, not "
            f"{client_id[:60]!r}",
        )
    return client_id


UNAUTHENTICATED_DETAILS = (
    "this cluster requires authentication: present a client certificate the cluster's CA signed, a "
    "username and password (lanes users create), or a bearer token where the cluster accepts them"
)


class Guard(CallInterceptor):
    """Authenticates and authorizes every call of a server (see the module docstring)."""

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        super_users: Iterable[str],
        rules: dict[str, Rule] = RULES,
        *,
        listener: Listener = "client",
        authorize: bool = True,
        tokens: TokenVerifier | None = None,
        max_session_s: float = 0.0,
        sessions: PasswordSessions | None = None,
    ) -> None:
        self._image = image
        self._tokens = tokens
        self._sessions = sessions
        self._max_session_s = max_session_s
        self._listener = listener
        self._authorize = authorize
        self._super_users = frozenset(super_users)
        self._rules = rules
        self._authorizer = ImageAuthorizer(image, super_users)

    # -----------------------------------------------------------------------------------------
    # interception

    def wrappers(self, method: str) -> Wrappers | None:
        if method in _OPEN:
            return None
        rule = self._rules.get(method)
        return {
            "unary_unary": lambda inner: self._unary(inner, rule, method),
            "unary_stream": lambda inner: self._unary_stream(inner, rule, method),
            "stream_unary": lambda inner: self._stream_unary(inner, rule, method),
            "stream_stream": lambda inner: self._stream_stream(inner, rule, method),
        }

    def _unary(self, inner: Any, rule: Rule | None, method: str) -> Any:
        async def unary(request: Any, context: ServicerContext) -> Any:
            access = await self._admit(request, context, rule, method)
            if access is None:
                return await inner(request, context)
            assert rule is not None
            answer = await self._authorized(request, rule, access, context)
            return answer(await inner(request, context))

        return unary

    def _unary_stream(self, inner: Any, rule: Rule | None, method: str) -> Any:
        async def unary_stream(request: Any, context: ServicerContext) -> AsyncIterator[Any]:
            access = await self._admit(request, context, rule, method)
            answer: Callable[[Any], Any] = _as_it_is
            if access is not None:
                assert rule is not None
                answer = await self._authorized(request, rule, access, context)
            session = _STREAM_SESSION.get()
            first = True
            async with contextlib.aclosing(inner(request, context)) as responses:
                async for response in responses:
                    await _within_session(session, context)
                    if not first and access is not None and rule is not None:
                        await self._still_authorized(request, rule, access, context)
                    first = False
                    yield answer(response)

        return unary_stream

    async def _still_authorized(self, request: Any, rule: Rule, access: Access, context: ServicerContext) -> None:
        """End a server stream (FetchStream reading on, Scan) with PERMISSION_DENIED before an
        answer after its first when the ACLs in force now refuse what it was admitted to."""
        refused = refused_now(request, rule, self._again(access))
        if refused is not None:
            operation, resource_type, name = refused
            await _deny(
                context,
                f"{refusal_code(resource_type).name}: {access.principal} may no longer {operation.name} "
                f"{resource_type.name.lower()} {name!r}: this stream ends; a new call is authorized afresh",
            )

    def _stream_unary(self, inner: Any, rule: Rule | None, method: str) -> Any:
        async def stream_unary(requests: AsyncIterator[Any], context: ServicerContext) -> Any:
            access = await self._admit(None, context, rule, method)
            requests = _session_bound(requests, _STREAM_SESSION.get(), context)
            if access is None:
                return await inner(requests, context)
            assert rule is not None
            answers: list[Callable[[Any], Any]] = []

            async def authorized() -> AsyncIterator[Any]:
                async for request in requests:
                    answers.append(await self._authorized(request, rule, self._again(access), context))
                    yield request

            response = await inner(authorized(), context)
            for answer in answers:
                response = answer(response)
            return response

        return stream_unary

    def _stream_stream(self, inner: Any, rule: Rule | None, method: str) -> Any:
        """Streams are authenticated once, when they open, for a session that ends when the
        caller's token expires or after ``max_session_s`` (KIP-368's re-authentication: the client
        opens a new stream, checked again); each request is authorized as a unary call's is, with
        the ACLs in force when it is read, and answered in order (ProduceStream: one response per
        request)."""

        async def stream_stream(requests: AsyncIterator[Any], context: ServicerContext) -> AsyncIterator[Any]:
            access = await self._admit(None, context, rule, method)
            requests = _session_bound(requests, _STREAM_SESSION.get(), context)
            if access is None:
                async for response in inner(requests, context):
                    yield response
                return
            assert rule is not None
            answers: collections.deque[Callable[[Any], Any]] = collections.deque()

            async def authorized() -> AsyncIterator[Any]:
                async for request in requests:
                    answers.append(await self._authorized(request, rule, self._again(access), context))
                    yield request

            async for response in inner(authorized(), context):
                yield answers.popleft()(response)

        return stream_stream

    async def _authorized(
        self, request: Any, rule: Rule, access: Access, context: ServicerContext
    ) -> Callable[[Any], Any]:
        """Authorize one request of a call ``access`` was admitted to (every request of a stream
        alike): a refused need, or a request only nodes may make, ends the call with
        PERMISSION_DENIED; topics and resources refused are taken out of it (in place). Returns
        what completes its response: their refusals put back in their places, then the answer
        trimmed to what the caller may see."""
        if rule.for_nodes_only(request):
            await _deny(context, "CLUSTER_AUTHORIZATION_FAILED: this request is the cluster's nodes' only")
        refused_need = first_refused(rule.needs(request, access), access)
        if refused_need is not None:
            operation, resource_type, name = refused_need
            await _deny(
                context,
                f"{refusal_code(resource_type).name}: {access.principal} may not {operation.name} "
                f"{resource_type.name.lower()} {name!r}",
            )
        refused = split_topics(request, rule.per_topic, access) if rule.per_topic is not None else []
        resources = split_resources(request, rule.per_resource, access) if rule.per_resource is not None else []

        def answer(response: Any) -> Any:
            if refused:
                assert rule.per_topic is not None
                answer_refused(response, refused, rule.per_topic, access)
            if resources:
                assert rule.per_resource is not None
                answer_resources(response, rule.per_resource, resources)
            if rule.trim is not None:
                rule.trim(request, response, access)
            return response

        return answer

    # -----------------------------------------------------------------------------------------
    # decisions

    async def _admit(self, request: Any, context: ServicerContext, rule: Rule | None, method: str) -> Access | None:
        """Authenticate the caller of a call (``request``: a unary request; None for a client
        stream): its access when ACLs apply to it, each request then ``_authorized``; None when
        its call passes as it is (a node, a super user, or no ACLs on this listener). Ends the
        call with UNAUTHENTICATED, PERMISSION_DENIED or (a node still loading the metadata)
        UNAVAILABLE otherwise."""
        LISTENER.set(self._listener)
        ACCESS.set(None)
        FORWARDED_HOST.set(None)
        _SESSION_REFUSAL.set(None)
        if self._listener == "internal" or not self._authorize:
            name = caller_identity(context)
            node = name is not None and NODE_NAME.fullmatch(name) is not None
            forwarded = _forwarded_for(name, method, context) if node else None
            if forwarded is not None:  # a Kafka client's group request, through a broker
                CALLER.set(Caller(forwarded[0], await _client_id(context)))
                FORWARDED_HOST.set(forwarded[1] or None)
                if not self._authorize:
                    return None
                return await self._user_access(*forwarded, request, rule=rule, method=method, context=context)
            clusters = node or self._listener == "internal"
            CALLER.set(None if clusters else Caller(ANONYMOUS, await _client_id(context)))
            nodes_only = self._listener == "internal" or (rule is not None and rule.for_nodes_only(request))
            if nodes_only and not node:
                where = "this is the internal listener" if self._listener == "internal" else f"{method} is"
                await _deny(
                    context,
                    f"CLUSTER_AUTHORIZATION_FAILED: {where} for the cluster's nodes only; the caller's "
                    f"certificate names {name or 'nobody'}",
                )
            if node:
                assert name is not None
                await self._node_may(name, method, request, context)
            return None
        principal, node, ends_s = await self._authenticate(context)
        host = peer_host(context)
        if node and (forwarded := _forwarded_for(principal.removeprefix("User:"), method, context)) is not None:
            (principal, host), node = forwarded, False
            FORWARDED_HOST.set(host or None)
        CALLER.set(None if node else Caller(principal, await _client_id(context)))
        if not node:
            max_ends_s = time.time() + self._max_session_s if self._max_session_s > 0 else None
            ends = min((t for t in (ends_s, max_ends_s) if t is not None), default=None)
            _STREAM_SESSION.set(StreamSession(ends, _SESSION_REFUSAL.get()))
        if node:
            await self._node_may(principal.removeprefix("User:"), method, request, context)
            return None
        return await self._user_access(principal, host, request, rule=rule, method=method, context=context)

    async def _user_access(
        self, principal: str, host: str, request: Any, *, rule: Rule | None, method: str, context: ServicerContext
    ) -> Access | None:
        """A user's access to a call (None: a super user, who passes as it is); the call ends
        UNAVAILABLE while this node has not loaded the cluster's ACLs, PERMISSION_DENIED for a
        call no rule opens to users."""
        if self._image().last_offset < 0:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE, "this node has not loaded the cluster's users and ACLs yet: retry shortly"
            )
        if rule is None or rule.for_nodes_only(request):
            await _deny(context, f"CLUSTER_AUTHORIZATION_FAILED: {method} is the cluster's nodes' only")
        assert rule is not None
        if principal in self._super_users:
            return None
        access = self._access(principal, host)
        ACCESS.set(access)
        return access

    @staticmethod
    async def _node_may(name: str, method: str, request: Any, context: ServicerContext) -> None:
        """End the call with PERMISSION_DENIED unless the node's role needs it (``NODE_RULES``)."""
        if not node_may(name, method, request):
            await _deny(
                context,
                f"CLUSTER_AUTHORIZATION_FAILED: {name}'s certificate may not call {method}: a node may do what its "
                "role needs and nothing more",
            )

    def _again(self, access: Access) -> Access:
        """``access`` with the ACLs in force now (a stream's later requests)."""
        return self._access(access.principal, access.host)

    def _access(self, principal: str, host: str) -> Access:
        return Access(principal, host, self._authorizer.current(), self._image())

    async def _authenticate(self, context: ServicerContext) -> tuple[str, bool, float | None]:
        """(principal, whether it is one of the cluster's nodes, when its credential expires:
        a token's ``exp``, None for others)."""
        header = next((value for key, value in context.invocation_metadata() or () if key == AUTHORIZATION_KEY), None)
        if header is not None and str(header)[:7].lower() == "bearer ":
            token = str(header)[7:].strip()
            token_user = await self._token_user(token, context)
            assert self._tokens is not None
            return user_principal(token_user), False, self._tokens.expires_s(token)
        if header is not None and str(header)[:8].lower() == "session ":
            return await self._session_user(str(header)[8:].strip(), context)
        if header is not None:
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "SASL_AUTHENTICATION_FAILED: passwords are never sent: prove one by SCRAM to the Authentication "
                "service and send the session it opens (Lanes' clients do), or give a bearer token",
            )
        name = caller_identity(context)
        if name is None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_DETAILS)
        assert name is not None
        node = NODE_NAME.fullmatch(name) is not None
        if node and self._listener == "certificates":  # the clients' CA signs users, never nodes
            await _deny(
                context,
                f"CLUSTER_AUTHORIZATION_FAILED: the caller's certificate names the node {name}; nodes call the "
                "internal listener, and a user may not take a node's name",
            )
        return user_principal(name), node, None

    async def _token_user(self, token: str, context: ServicerContext) -> str:
        """The user a bearer token names (``lanes.runtime.access.tokens``); the call ends UNAUTHENTICATED
        when it is refused or tokens are not accepted here, UNAVAILABLE while ``_WAITING_CHECKS``
        distinct tokens are being checked."""
        if self._tokens is None:
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "SASL_AUTHENTICATION_FAILED: this cluster accepts no bearer tokens (no --oauth-issuer)",
            )
        assert self._tokens is not None
        try:
            known = self._tokens.remembered(token)
            if known is not None:
                return known
            if self._tokens.checks_pending() >= _WAITING_CHECKS:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "too many tokens being checked: retry shortly")
            return await self._tokens.user(token)
        except InvalidTokenError as exc:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, f"SASL_AUTHENTICATION_FAILED: invalid token: {exc}")
            raise  # not reached: abort raises

    async def _session_user(self, token: str, context: ServicerContext) -> tuple[str, bool, float | None]:
        """(principal, False, when the session ends) of a password session; the call ends
        UNAUTHENTICATED when the session opens nothing (``SESSION_EXPIRED`` when logging in
        again may help)."""
        if self._sessions is None:
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED, "SASL_AUTHENTICATION_FAILED: this listener takes no password sessions"
            )
        assert self._sessions is not None
        sessions = self._sessions

        def refusal() -> str | None:
            try:
                sessions.session(token)
            except SessionRefusedError as exc:
                prefix = SESSION_EXPIRED if exc.renew else "SASL_AUTHENTICATION_FAILED"
                return f"{prefix}: {exc} (session {session_fingerprint(token)}): log in again"
            return None

        refused = refusal()
        if refused is not None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, refused)
        _SESSION_REFUSAL.set(refusal)  # a stream checks its session again at each message
        session = sessions.session(token)
        return user_principal(session.user), False, time.time() + sessions.seconds_left(session)


def _forwarded_for(node: str | None, method: str, context: ServicerContext) -> tuple[str, str] | None:
    """(principal, host) of the Kafka client a broker makes this call for (``FORWARDED`` calls
    carrying ``ON_BEHALF_OF_KEY``), when ``node`` (the caller's certificate) is a broker; else None."""
    if node is None or not node.startswith("broker-") or method not in FORWARDED:
        return None
    given = dict(context.invocation_metadata() or ())
    principal = given.get(ON_BEHALF_OF_KEY)
    if not isinstance(principal, str) or not principal.startswith("User:"):
        return None
    host = given.get(ON_BEHALF_OF_HOST_KEY)
    return principal, host if isinstance(host, str) else ""


def _as_it_is(response: Any) -> Any:
    return response


class AnonymousCallers(CallInterceptor):
    """On a client listener without a guard: every call is ``ANONYMOUS``'s (for quotas)."""

    def wrappers(self, method: str) -> Wrappers:
        def unary(inner: Any) -> Any:
            async def call(request: Any, context: ServicerContext) -> Any:
                CALLER.set(Caller(ANONYMOUS, await _client_id(context)))
                return await inner(request, context)

            return call

        def streaming(inner: Any) -> Any:
            async def call(request: Any, context: ServicerContext) -> AsyncIterator[Any]:
                CALLER.set(Caller(ANONYMOUS, await _client_id(context)))
                async for response in inner(request, context):
                    yield response

            return call

        return {"unary_unary": unary, "stream_unary": unary, "unary_stream": streaming, "stream_stream": streaming}


@dataclass(frozen=True)
class StreamSession:
    """What a stream's session is bound by: when it ends (wall-clock seconds; None: never) and,
    for a password session, ``refusal()``: why it no longer holds (its user's password changed,
    the user was deleted, the process forgot it), None while it does."""

    ends_s: float | None
    refusal: Callable[[], str | None] | None = None


#: The current call's session, set by ``_admit`` (None: a node's, or no authentication).
_STREAM_SESSION: contextvars.ContextVar[StreamSession | None] = contextvars.ContextVar(
    "lanes_stream_session", default=None
)
#: The current call's password session check, set by ``_session_user`` for ``_admit``.
_SESSION_REFUSAL: contextvars.ContextVar[Callable[[], str | None] | None] = contextvars.ContextVar(
    "lanes_session_refusal", default=None
)


async def _within_session(session: StreamSession | None, context: ServicerContext) -> None:
    """End the call with UNAUTHENTICATED once its session is over or no longer holds (the client
    reconnects and is checked again: a deleted user, a changed password or an expired token stops
    there), at each message of a stream."""
    if session is None:
        return
    if session.ends_s is not None and time.time() >= session.ends_s:
        await context.abort(
            grpc.StatusCode.UNAUTHENTICATED,
            f"{SESSION_EXPIRED}: this stream's authentication expired (its token, its session, or the cluster's "
            "--max-session-seconds): open a new one",
        )
    refused = session.refusal() if session.refusal is not None else None
    if refused is not None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, refused)


async def _session_bound(requests: AsyncIterator[Any], session: StreamSession | None, context: ServicerContext) -> Any:
    """A client stream's requests, until its session ends or no longer holds."""
    if session is None:
        async for request in requests:
            yield request
        return
    async for request in requests:
        await _within_session(session, context)
        yield request


async def _deny(context: ServicerContext, details: str) -> NoReturn:
    await context.abort(grpc.StatusCode.PERMISSION_DENIED, details)
    raise AssertionError("abort raises")
