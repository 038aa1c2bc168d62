"""Password logins and sessions of one process (``lanes.runtime.access.password_sessions``), with
a manual clock: bounds on exchanges in flight, sessions that end, decoys that match across nodes."""

from __future__ import annotations

import itertools
import os

import pytest

from lanes.metadata.image import MetadataImage
from lanes.runtime.access import password_sessions as module
from lanes.runtime.access.password_sessions import LoginRefusedError, PasswordSessions, SessionRefusedError
from lanes.security import scram
from lanes.security.scram_exchange import ClientExchange

SALT = b"s" * 16


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def _image(**passwords: str) -> MetadataImage:
    image = MetadataImage()
    for user, password in passwords.items():
        salted = scram.salted_password("SCRAM-SHA-256", password, SALT, 4096)
        image.scram_credentials[user] = {"SCRAM-SHA-256": scram.credential("SCRAM-SHA-256", SALT, 4096, salted)}
    image.last_offset = 1
    return image


def _sessions(image: MetadataImage, clock: Clock) -> PasswordSessions:
    counter = itertools.count()
    return PasswordSessions(
        lambda: image, lifetime_s=60, clock=clock, random_bytes=lambda n: next(counter).to_bytes(n, "big")
    )


def _log_in(sessions: PasswordSessions, user: str, password: str, address: str = "10.0.0.1") -> str:
    exchange = ClientExchange("SCRAM-SHA-256", user, password, os.urandom(16).hex())
    exchange_id, first = sessions.start(address, "SCRAM-SHA-256", exchange.first())
    final, token, _ = sessions.finish(exchange_id, exchange.final(first))
    exchange.verify(final)
    return token


def test_a_session_names_its_user_until_it_expires() -> None:
    clock = Clock()
    sessions = _sessions(_image(alice="pencil"), clock)
    token = _log_in(sessions, "alice", "pencil")
    assert sessions.session(token).user == "alice"
    assert sessions.seconds_left(sessions.session(token)) == 60
    clock.now_s += 60
    with pytest.raises(SessionRefusedError, match="expired") as refused:
        sessions.session(token)
    assert refused.value.renew
    with pytest.raises(SessionRefusedError, match="does not know"):
        sessions.session(token)


def test_a_changed_password_ends_the_session_for_good() -> None:
    image = _image(alice="pencil")
    sessions = _sessions(image, Clock())
    token = _log_in(sessions, "alice", "pencil")
    image.scram_credentials["alice"] = _image(alice="other").scram_credentials["alice"]
    with pytest.raises(SessionRefusedError, match="password changed") as refused:
        sessions.session(token)
    assert not refused.value.renew


def test_wrong_passwords_and_unknown_users_are_refused_alike() -> None:
    sessions = _sessions(_image(alice="pencil"), Clock())
    for user, password in (("alice", "wrong"), ("nobody", "pencil")):
        with pytest.raises(LoginRefusedError, match=r"^wrong username or password$"):
            _log_in(sessions, user, password)


def test_exchanges_in_flight_are_bounded_per_address_and_expire() -> None:
    clock = Clock()
    sessions = _sessions(_image(alice="pencil"), clock)
    first = ClientExchange("SCRAM-SHA-256", "alice", "pencil", "c" * 16).first()
    for _ in range(module.MAX_EXCHANGES_PER_ADDRESS):
        sessions.start("10.0.0.9", "SCRAM-SHA-256", first)
    with pytest.raises(LoginRefusedError) as refused:
        sessions.start("10.0.0.9", "SCRAM-SHA-256", first)
    assert refused.value.busy
    assert _log_in(sessions, "alice", "pencil", address="10.0.0.2"), "another address is not held back"
    clock.now_s += module.EXCHANGE_TTL_S
    sessions.start("10.0.0.9", "SCRAM-SHA-256", first)  # the abandoned ones expired


def test_an_unknown_user_gets_the_same_salt_on_every_node_and_a_real_one_its_own() -> None:
    image = _image(alice="pencil")
    one, other = _sessions(image, Clock()), _sessions(image, Clock())
    client_first = ClientExchange("SCRAM-SHA-256", "nobody", "x", "c" * 16).first()
    salts = [s.start("10.0.0.1", "SCRAM-SHA-256", client_first)[1].split(",")[1] for s in (one, other)]
    assert salts[0] == salts[1]
    alice_first = ClientExchange("SCRAM-SHA-256", "alice", "x", "c" * 16).first()
    assert one.start("10.0.0.1", "SCRAM-SHA-256", alice_first)[1].split(",")[1] != salts[0]


def test_a_user_logging_in_without_end_pushes_out_its_own_sessions_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "MAX_SESSIONS_PER_USER", 3)
    clock = Clock()
    sessions = _sessions(_image(alice="pencil", bob="paper-1"), clock)
    bobs = _log_in(sessions, "bob", "paper-1")
    alices = [_log_in(sessions, "alice", "pencil") for _ in range(5)]
    assert sessions.session(bobs).user == "bob"
    for forgotten in alices[:2]:
        with pytest.raises(SessionRefusedError, match="does not know"):
            sessions.session(forgotten)
    assert [sessions.session(token).user for token in alices[2:]] == ["alice"] * 3


def test_expired_sessions_are_let_go_of_as_new_ones_open() -> None:
    clock = Clock()
    sessions = _sessions(_image(alice="pencil"), clock)
    for _ in range(10):
        _log_in(sessions, "alice", "pencil")
    clock.now_s += 61
    _log_in(sessions, "alice", "pencil")
    assert len(sessions._sessions) == 1


def test_a_flood_of_unfinished_logins_from_many_addresses_keeps_nobody_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "MAX_EXCHANGES", 8)
    sessions = _sessions(_image(alice="pencil"), Clock())
    first = ClientExchange("SCRAM-SHA-256", "alice", "x", "c" * 16).first()
    exchange = ClientExchange("SCRAM-SHA-256", "alice", "pencil", os.urandom(16).hex())
    exchange_id, server_first = sessions.start("10.0.0.1", "SCRAM-SHA-256", exchange.first())
    for address in range(7):  # the table fills, short of the real login
        sessions.start(f"10.1.0.{address}", "SCRAM-SHA-256", first)
    sessions.finish(exchange_id, exchange.final(server_first))  # finished within its round trip
    for address in range(100):  # a flood beyond the table pushes out the oldest unfinished ones
        sessions.start(f"10.2.0.{address}", "SCRAM-SHA-256", first)
    assert _log_in(sessions, "alice", "pencil", address="10.0.0.1")


def test_a_node_without_the_clusters_users_yet_says_come_back() -> None:
    image = MetadataImage()
    sessions = _sessions(image, Clock())
    with pytest.raises(LoginRefusedError) as refused:
        sessions.start("10.0.0.1", "SCRAM-SHA-256", ClientExchange("SCRAM-SHA-256", "alice", "x", "c" * 16).first())
    assert refused.value.busy
