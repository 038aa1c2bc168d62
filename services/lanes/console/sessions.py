"""The console's logins: who each browser session acts as, until when, and its CSRF token.

A session is created by a login that the cluster accepted (the console never decides who a user
is: the cluster's SCRAM users and OAuth tokens do). Its id is 256 random bits, kept by the
browser in an HttpOnly, SameSite=Strict cookie and here only as its SHA-256 (a dump of this
table logs nobody in). A session ends after ``idle_s`` without a request, ``max_age_s`` after the
login, at logout, or when pushed out: at most ``max_sessions`` in all and ``max_per_user`` per
principal (the oldest go first), so logins cannot grow the console without bound.

Each session holds the clients made with the user's credentials (``held``: whatever the caller
stores, closed by the caller when ``take_ended`` hands the session back). The clock is injected.
Owned by the console's event loop.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class Session:
    """One login. ``csrf``: the token every state-changing request must carry."""

    principal: str
    created_s: float
    seen_s: float
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    held: Any = None
    #: what the pages remember between visits (the topic list's earlier totals, for rates)
    samples: Any = None

    def csrf_ok(self, presented: str | None) -> bool:
        """Whether ``presented`` is this session's CSRF token (compared in constant time)."""
        return presented is not None and hmac.compare_digest(presented.encode(), self.csrf.encode())


class Sessions:
    """The console's sessions (see the module docstring)."""

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        idle_s: float = 30 * 60,
        max_age_s: float = 8 * 3600,
        max_sessions: int = 1_000,
        max_per_user: int = 20,
    ) -> None:
        self._clock = clock
        self.idle_s = idle_s
        self.max_age_s = max_age_s
        self._max_sessions = max_sessions
        self._max_per_user = max_per_user
        #: digest of the id -> session, oldest login first
        self._by_digest: OrderedDict[str, Session] = OrderedDict()
        self._ended: list[Session] = []

    def __len__(self) -> int:
        return len(self._by_digest)

    def create(self, principal: str, held: Any = None) -> tuple[str, Session]:
        """A new session for ``principal``: its id (for the cookie) and the session."""
        now = self._clock()
        token = secrets.token_urlsafe(32)
        session = Session(principal, now, now, held=held)
        mine = [d for d, s in self._by_digest.items() if s.principal == principal]
        for digest in mine[: max(0, len(mine) - self._max_per_user + 1)]:
            self._end(digest)
        while len(self._by_digest) >= self._max_sessions:
            self._end(next(iter(self._by_digest)))
        self._by_digest[_digest(token)] = session
        return token, session

    def get(self, token: str | None) -> Session | None:
        """The live session ``token`` names (its idle time restarts), or None."""
        if not token or len(token) > 128:
            return None
        digest = _digest(token)
        session = self._by_digest.get(digest)
        if session is None:
            return None
        now = self._clock()
        if now - session.seen_s > self.idle_s or now - session.created_s > self.max_age_s:
            self._end(digest)
            return None
        session.seen_s = now
        return session

    def end(self, token: str | None) -> None:
        """Log out (nothing if ``token`` names no session)."""
        if token:
            self._end(_digest(token))

    def expire(self) -> None:
        """End every session past its idle time or age (a periodic sweep)."""
        now = self._clock()
        for digest, session in list(self._by_digest.items()):
            if now - session.seen_s > self.idle_s or now - session.created_s > self.max_age_s:
                self._end(digest)

    def end_all(self) -> None:
        """End every session (the console stops)."""
        for digest in list(self._by_digest):
            self._end(digest)

    def take_ended(self) -> list[Session]:
        """The sessions ended since the last call, whose ``held`` clients the caller closes."""
        ended, self._ended = self._ended, []
        return ended

    def _end(self, digest: str) -> None:
        session = self._by_digest.pop(digest, None)
        if session is not None:
            self._ended.append(session)
