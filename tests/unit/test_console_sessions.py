"""The console's sessions (lanes.console.sessions): expiry, bounds, what the table keeps."""

from __future__ import annotations

from lanes.console.sessions import Sessions


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_ends_when_idle_or_old_and_hands_back_what_it_held() -> None:
    clock = Clock()
    sessions = Sessions(clock, idle_s=60, max_age_s=300)
    token, session = sessions.create("alice", held="alice's clients")
    assert sessions.get(token) is session
    clock.now += 59
    assert sessions.get(token) is session, "each request restarts the idle time"
    clock.now += 59
    assert sessions.get(token) is session
    clock.now += 61
    assert sessions.get(token) is None, "idle too long"
    assert [s.held for s in sessions.take_ended()] == ["alice's clients"]
    token, _ = sessions.create("alice")
    for _ in range(10):
        clock.now += 30
        assert sessions.get(token) is not None
    clock.now += 30
    assert sessions.get(token) is None, "older than max_age_s, however busy"


def test_logins_are_bounded_per_user_and_in_all_the_oldest_going_first() -> None:
    sessions = Sessions(Clock(), max_sessions=5, max_per_user=2)
    first, _ = sessions.create("mallory")
    second, _ = sessions.create("mallory")
    third, _ = sessions.create("mallory")
    assert sessions.get(first) is None
    assert sessions.get(second) is not None
    assert sessions.get(third) is not None
    others = [sessions.create(f"user-{i}")[0] for i in range(4)]
    assert len(sessions) == 5
    assert sessions.get(second) is None, "the oldest login overall went"
    assert all(sessions.get(t) is not None for t in others)


def test_the_table_keeps_digests_and_tokens_are_compared_whole() -> None:
    sessions = Sessions(Clock())
    token, session = sessions.create("alice")
    assert token not in repr(sessions.__dict__)
    assert sessions.get(token[:-1]) is None
    assert sessions.get("x" * 10_000) is None
    assert session.csrf_ok(session.csrf)
    assert not session.csrf_ok(session.csrf[:-1])
    assert not session.csrf_ok(None)
    sessions.end(token)
    assert sessions.get(token) is None
