"""The Kafka listener's authentication states (``lanes.kafka.sasl``) on real password sessions and a
manual clock: certificates and SASL, re-authentication (KIP-368), sessions that end with their
connection, and logins refused for load closing unanswered."""

from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KafkaError

from lanes.kafka.answers import Answer
from lanes.kafka.codec import build
from lanes.kafka.sasl import MAX_UNAUTHENTICATED_FRAME_BYTES, KafkaAuthentication, KafkaConnection
from lanes.metadata.image import MetadataImage
from lanes.runtime.access.password_sessions import PasswordSessions, SessionRefusedError
from lanes.security import scram
from lanes.security.scram_exchange import ClientExchange

SALT = b"s" * 16
MECHANISM = "SCRAM-SHA-512"


class Clock:
    def __init__(self) -> None:
        self.now_s = 1_000.0

    def __call__(self) -> float:
        return self.now_s


def _setup(max_session_s: float = 0.0) -> tuple[KafkaAuthentication, PasswordSessions, Clock]:
    image = MetadataImage()
    for user, password in (("alice", "alice-pw"), ("bob", "bob-pw")):
        salted = scram.salted_password(MECHANISM, password, SALT, 4096)
        image.scram_credentials[user] = {MECHANISM: scram.credential(MECHANISM, SALT, 4096, salted)}
    image.last_offset = 1
    clock = Clock()
    counter = itertools.count()
    sessions = PasswordSessions(
        lambda: image, lifetime_s=3_600, clock=clock, random_bytes=lambda n: next(counter).to_bytes(n, "big")
    )
    authentication = KafkaAuthentication(required=True, sessions=sessions, max_session_s=max_session_s, now_s=clock)
    return authentication, sessions, clock


def _request(api_key: int, version: int, **fields: Any) -> Any:
    return build(load_request_schema(api_key, version), **fields)


def _log_in(
    authentication: KafkaAuthentication,
    connection: KafkaConnection,
    user: str,
    password: str,
    mechanism: str = MECHANISM,
) -> Answer:
    async def steps() -> Answer:
        handshake = await authentication.handshake(connection, None, _request(17, 1, mechanism=mechanism), 1)
        if handshake.close:
            return handshake
        exchange = ClientExchange(mechanism, user, password, os.urandom(16).hex())
        first = await authentication.authenticate(
            connection, None, _request(36, 2, auth_bytes=exchange.first().encode()), 2
        )
        if first.close:
            return first
        proof = exchange.final(first.response.auth_bytes.decode())
        return await authentication.authenticate(connection, None, _request(36, 2, auth_bytes=proof.encode()), 2)

    return asyncio.run(steps())


def test_sasl_takes_over_from_a_certificate_and_the_session_ends_with_the_connection() -> None:
    authentication, sessions, _ = _setup()
    connection = KafkaConnection(host="10.0.0.1", certificate_name="app-certificate")
    assert authentication.opened(connection) is None
    assert connection.principal == "User:app-certificate"
    answer = _log_in(authentication, connection, "alice", "alice-pw")
    assert answer.response.error_code == KafkaError.none
    assert connection.principal == "User:alice"
    token = connection.session_token
    assert token is not None
    assert sessions.session(token).user == "alice"
    authentication.closed(connection)
    try:
        sessions.session(token)
    except SessionRefusedError:
        pass
    else:
        raise AssertionError("the session outlived its connection")


def test_re_authentication_keeps_principal_and_mechanism_and_replaces_the_session() -> None:
    authentication, sessions, _ = _setup()
    connection = KafkaConnection(host="10.0.0.1")
    assert authentication.opened(connection) is None
    assert authentication.refusal(connection) is not None
    assert connection.max_frame_bytes == MAX_UNAUTHENTICATED_FRAME_BYTES
    assert _log_in(authentication, connection, "alice", "alice-pw").response.error_code == KafkaError.none
    assert connection.max_frame_bytes is None
    first_token = connection.session_token
    assert first_token is not None
    again = _log_in(authentication, connection, "alice", "alice-pw")
    assert again.response.error_code == KafkaError.none
    assert connection.session_token != first_token
    try:
        sessions.session(first_token)
    except SessionRefusedError:
        pass
    else:
        raise AssertionError("a replaced session lived on")
    other = _log_in(authentication, connection, "bob", "bob-pw")
    assert (other.response.error_code, other.close) == (KafkaError.sasl_authentication_failed, True)
    switched = _log_in(authentication, connection, "alice", "alice-pw", mechanism="SCRAM-SHA-256")
    assert (switched.response.error_code, switched.close) == (KafkaError.illegal_sasl_state, True)


def test_a_request_in_the_middle_of_a_re_authentication_is_refused() -> None:
    authentication, _, _ = _setup()
    connection = KafkaConnection(host="10.0.0.1")
    authentication.opened(connection)
    _log_in(authentication, connection, "alice", "alice-pw")
    asyncio.run(authentication.handshake(connection, None, _request(17, 1, mechanism=MECHANISM), 1))
    refused = authentication.refusal(connection)
    assert refused is not None
    assert "re-authentication" in refused


def test_sessions_end_at_the_max_session_bound() -> None:
    authentication, _, clock = _setup(max_session_s=60)
    connection = KafkaConnection(host="10.0.0.1")
    authentication.opened(connection)
    answer = _log_in(authentication, connection, "alice", "alice-pw")
    assert answer.response.session_lifetime.total_seconds() == 60
    clock.now_s += 59
    assert authentication.refusal(connection) is None
    clock.now_s += 1
    assert authentication.refusal(connection) is not None


def test_an_expired_exchange_closes_unanswered_and_a_node_certificate_is_refused() -> None:
    authentication, _, clock = _setup()
    connection = KafkaConnection(host="10.0.0.1")
    authentication.opened(connection)

    async def slow_proof() -> Answer:
        await authentication.handshake(connection, None, _request(17, 1, mechanism=MECHANISM), 1)
        exchange = ClientExchange(MECHANISM, "alice", "alice-pw", os.urandom(16).hex())
        first = await authentication.authenticate(
            connection, None, _request(36, 2, auth_bytes=exchange.first().encode()), 2
        )
        clock.now_s += 60  # the exchange expired (or a flood of logins pushed it out)
        proof = exchange.final(first.response.auth_bytes.decode())
        return await authentication.authenticate(connection, None, _request(36, 2, auth_bytes=proof.encode()), 2)

    late = asyncio.run(slow_proof())
    assert (late.response, late.close) == (None, True), "a client must retry, not take it for a wrong password"
    node = KafkaConnection(host="10.0.0.2", certificate_name="broker-1")
    assert authentication.opened(node) is not None
