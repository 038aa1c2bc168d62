"""Password logins on one process: SCRAM exchanges (``lanes.security.scram_exchange``) in
flight, and the sessions they open, which a user's later calls carry instead of its password.

- ``start`` answers a client-first message and keeps the half-done exchange under a random id,
  for ``EXCHANGE_TTL_S`` at most; at most ``MAX_EXCHANGES_PER_ADDRESS`` per caller address (a
  caller opening exchanges it never finishes holds its own share only), and ``MAX_EXCHANGES`` in
  all, beyond which the oldest unfinished one is dropped rather than a new one refused (a real
  login finishes within milliseconds: a flood from many addresses cannot keep it out). A node
  that has not loaded the cluster's users yet answers UNAVAILABLE, not a decoy.
- ``finish`` checks the proof and opens a session: a random token, of which only a SHA-256 is kept,
  valid on this process until ``lifetime_s`` has passed or the user's credential changes (a new
  password, a deleted user). At most ``MAX_SESSIONS`` are kept, ``MAX_SESSIONS_PER_USER`` per
  user (the oldest go first: a user logging in without end pushes out its own sessions only);
  expired ones are let go of as new ones open.
- ``session`` says who a token is (``SessionRefusedError`` says why not).

A login costs the server a few HMACs, the same for every user and mechanism (the PBKDF2 is the
client's), so timing tells no user apart and a flood of wrong passwords takes no thread from
anyone. An unknown user is answered with a decoy (``scram_exchange.decoy``) whose salt is derived
under a secret every node shares and no caller knows: a hash of every user's stored keys, so a
user name gets the same salt on every node, as a real user's does.

Owned by the service's event loop; the clock and randomness are injected.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from lanes.metadata.image import MetadataImage
from lanes.security import scram_exchange
from lanes.security.scram import ScramCredential
from lanes.security.scram_exchange import ScramError

#: Half-done exchanges kept, in all and per caller address, and how long each may take.
MAX_EXCHANGES = 4096
MAX_EXCHANGES_PER_ADDRESS = 64
EXCHANGE_TTL_S = 10.0
#: Sessions kept, in all and per user (the oldest are forgotten first: their clients log in
#: again; a user logging in without end pushes out its own sessions, not others').
MAX_SESSIONS = 100_000
MAX_SESSIONS_PER_USER = 1_000
#: Bytes of randomness in a session token and in an exchange id.
TOKEN_BYTES = 32


class LoginRefusedError(Exception):
    """A login step that cannot go on: ``busy`` (too many exchanges: come back) or not."""

    def __init__(self, message: str, *, busy: bool = False) -> None:
        super().__init__(message)
        self.busy = busy


class SessionRefusedError(Exception):
    """A session token that opens nothing: ``renew`` when logging in again may help (the session
    expired, or this process does not know it), not when the user's credential changed."""

    def __init__(self, message: str, *, renew: bool) -> None:
        super().__init__(message)
        self.renew = renew


@dataclass(frozen=True)
class _Exchange:
    started: scram_exchange.ServerFirst
    address: str
    expires_s: float


@dataclass(frozen=True)
class Session:
    """Who a session is, until when, and the credential it was opened with."""

    user: str
    mechanism: str
    stored_key: bytes
    expires_s: float


class PasswordSessions:
    """The logins and sessions of one process (see the module docstring)."""

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        *,
        lifetime_s: float,
        clock: Callable[[], float] = time.monotonic,
        random_bytes: Callable[[int], bytes] = os.urandom,
    ) -> None:
        self._image = image
        self.lifetime_s = lifetime_s
        self._clock = clock
        self._random = random_bytes
        self._exchanges: collections.OrderedDict[str, _Exchange] = collections.OrderedDict()
        self._per_address: collections.Counter[str] = collections.Counter()
        self._sessions: collections.OrderedDict[bytes, Session] = collections.OrderedDict()  # oldest first
        self._users: dict[str, collections.OrderedDict[bytes, None]] = {}  # user -> its sessions, oldest first
        self._secret_of: tuple[int, int] | None = None
        self._secret = b""

    # -----------------------------------------------------------------------------------------
    # logins

    def start(self, address: str, mechanism: str, client_first: str) -> tuple[str, str]:
        """(exchange id, server-first message) answering a client-first message from ``address``."""
        self._expire()
        if self._image().last_offset < 0:  # no credentials yet: every user would get a decoy
            raise LoginRefusedError("this node has not loaded the cluster's users yet: retry shortly", busy=True)
        if self._per_address[address] >= MAX_EXCHANGES_PER_ADDRESS:
            raise LoginRefusedError("too many logins in progress from this address: retry shortly", busy=True)
        if len(self._exchanges) >= MAX_EXCHANGES:  # the oldest unfinished one goes: a login takes milliseconds
            _, oldest = self._exchanges.popitem(last=False)
            self._forget_address(oldest.address)
        try:
            user, _ = scram_exchange.client_first_user(mechanism, client_first)
            credential = self._image().scram_credentials.get(user, {}).get(mechanism)
            started = scram_exchange.server_first(
                mechanism, client_first, credential, self._random(18).hex(), self._decoy_secret()
            )
        except ScramError as exc:
            raise LoginRefusedError(str(exc)) from None
        exchange_id = self._random(TOKEN_BYTES).hex()
        self._exchanges[exchange_id] = _Exchange(started, address, self._clock() + EXCHANGE_TTL_S)
        self._per_address[address] += 1
        return exchange_id, started.server_first

    def finish(self, exchange_id: str, client_final: str) -> tuple[str, str, Session]:
        """(server-final message, session token, the session) when the client's proof holds;
        LoginRefusedError (one message for a wrong password and an unknown user) otherwise."""
        self._expire()
        exchange = self._exchanges.pop(exchange_id, None)
        if exchange is None:  # (expired, or pushed out by a flood of logins: the client starts again)
            raise LoginRefusedError("unknown or expired exchange: start again", busy=True)
        self._forget_address(exchange.address)
        try:
            final = scram_exchange.server_final(exchange.started, client_final)
        except ScramError:
            raise LoginRefusedError("wrong username or password") from None
        credential = exchange.started.credential
        token = self._random(TOKEN_BYTES).hex()
        session = Session(
            exchange.started.user, credential.mechanism, credential.stored_key, self._clock() + self.lifetime_s
        )
        key = _digest(token)
        self._sessions[key] = session
        owned = self._users.setdefault(session.user, collections.OrderedDict())
        owned[key] = None
        if len(owned) > MAX_SESSIONS_PER_USER:
            self._forget(next(iter(owned)))
        while self._sessions:  # the oldest first: all live as long, so the expired lead
            oldest_key, oldest = next(iter(self._sessions.items()))
            if len(self._sessions) <= MAX_SESSIONS and oldest.expires_s > self._clock():
                break
            self._forget(oldest_key)
        return final, token, session

    # -----------------------------------------------------------------------------------------
    # sessions

    def session(self, token: str) -> Session:
        """The live session ``token`` opened; SessionRefusedError when it is unknown, expired, or its
        user's credential changed since (it is forgotten then)."""
        key = _digest(token)
        session = self._sessions.get(key)
        if session is None:
            raise SessionRefusedError("this process does not know the session (it restarted, or forgot it)", renew=True)
        credential: ScramCredential | None = (
            self._image().scram_credentials.get(session.user, {}).get(session.mechanism)
        )
        if credential is None or not hmac.compare_digest(credential.stored_key, session.stored_key):
            self._forget(key)
            raise SessionRefusedError(
                "the user's password changed, or the user was deleted, since it logged in", renew=False
            )
        if self._clock() >= session.expires_s:
            self._forget(key)
            raise SessionRefusedError("the session expired", renew=True)
        return session

    def end(self, token: str) -> None:
        """Forget the session ``token`` opened (its connection closed: Kafka's listener), if known."""
        key = _digest(token)
        if key in self._sessions:
            self._forget(key)

    def seconds_left(self, session: Session) -> float:
        """How long ``session`` has to live."""
        return session.expires_s - self._clock()

    # -----------------------------------------------------------------------------------------

    def _forget(self, key: bytes) -> None:
        session = self._sessions.pop(key)
        owned = self._users[session.user]
        del owned[key]
        if not owned:
            del self._users[session.user]

    def _expire(self) -> None:
        now = self._clock()
        while self._exchanges:
            exchange_id, exchange = next(iter(self._exchanges.items()))
            if exchange.expires_s > now:
                break
            del self._exchanges[exchange_id]
            self._forget_address(exchange.address)

    def _forget_address(self, address: str) -> None:
        self._per_address[address] -= 1
        if self._per_address[address] <= 0:
            del self._per_address[address]

    def _decoy_secret(self) -> bytes:
        """A secret every node of the cluster derives alike and no caller knows: a hash of every
        stored key (recomputed when the metadata moved; only decoys need it)."""
        image = self._image()
        at = (id(image), image.last_offset)
        if at != self._secret_of:
            digest = hashlib.sha256(b"lanes decoy salts\0")
            for user, credentials in sorted(image.scram_credentials.items()):
                for mechanism, credential in sorted(credentials.items()):
                    digest.update(f"{user}\0{mechanism}\0".encode() + credential.stored_key + credential.server_key)
            self._secret, self._secret_of = digest.digest(), at
        return self._secret


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
