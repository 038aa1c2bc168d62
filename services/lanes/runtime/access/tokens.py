"""OAuth bearer tokens: JSON Web Tokens an OpenID Connect issuer signed, checked by the guard
(``lanes.runtime.access.guard``) as Kafka's OAUTHBEARER validator checks them (KIP-768).

A call carries ``authorization: Bearer <JWT>``. The token is accepted when:

- its signature verifies with the issuer's key (JWKS) its ``kid`` names (or the set's only key),
  by that key's own algorithm (the JWK's ``alg``, else RS256 or the EC curve's) among
  ``ALGORITHMS``: never ``none``, never an HMAC, whose "secret" could be the issuer's public key;
- ``iss`` is the configured issuer, ``aud`` names the configured audience, ``exp`` is in the
  future (``LEEWAY_S`` of clock skew allowed), ``nbf`` and ``iat`` when present are not ahead;
- the principal claim (``sub`` by default) is a user name (``lanes.security.scram.USER_NAME``)
  that does not name one of the cluster's nodes (a token cannot make its bearer a broker).

The principal is ``User:<claim>``. The key set comes from a file (re-read when it changes, looked
at once a second and for a ``kid`` it lacks: keys rotate without a restart) or from the issuer's ``jwks_uri`` (https,
or http to a loopback address only): fetched when older than ``JWKS_LIFESPAN_S``, or for a
``kid`` it lacks at most once per ``JWKS_COOLDOWN_S``; a failed fetch keeps the last good set, so
a key the issuer withdrew stops verifying at the next fetch and an issuer outage costs nothing
once a set is known.

Checked tokens are remembered by their SHA-256 until they expire (``REMEMBERED`` at most), and
refused ones for ``REFUSED_FOR_S``, so a client's calls cost a dictionary lookup after the
first. Checks run on ``CHECK_THREADS`` threads of their own (never the executor the service's
disk work uses: a slow issuer cannot stall produce and fetch), and concurrent checks of one
token share one. ``TokenVerifier`` is owned by one event loop; the key sources it calls from
its threads lock their own state.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import hashlib
import ipaddress
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jwt

from lanes.rpc.watched_file import WatchedFile
from lanes.security.acls import NODE_NAME
from lanes.security.scram import USER_NAME

_log = logging.getLogger(__name__)

#: Signature algorithms a token may use: asymmetric only.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
#: Clock skew allowed on ``exp``, ``nbf`` and ``iat`` (Kafka's default allowance is 30 s).
LEEWAY_S = 30
#: The longest token looked at.
MAX_TOKEN_BYTES = 16 * 1024
#: Verified tokens remembered, and refused ones.
REMEMBERED = 10_000
#: How long a refused token is refused without being checked again.
REFUSED_FOR_S = 10.0
#: How long a key set fetched from a URL is used before it is fetched again.
JWKS_LIFESPAN_S = 300.0
#: The least time between two fetches of a URL's key set (a token naming an unknown key asks).
JWKS_COOLDOWN_S = 30.0
#: Threads checking tokens (signatures, key set fetches).
CHECK_THREADS = 2
#: How often a key set file's stamp is looked at.
_FILE_CHECK_S = 1.0
#: The longest refusal reason told to a caller.
_MAX_REASON = 200


class InvalidTokenError(Exception):
    """A bearer token that is refused; the message says why (never the token itself)."""


@dataclass(frozen=True)
class TokenSettings:
    """Which tokens a listener accepts: the issuer's name (``iss``), the audience a token must
    name (``aud``), where the issuer's keys are (a JWKS file, or an ``https://`` URL), and the
    claim that names the user."""

    issuer: str
    audience: str
    jwks: str
    principal_claim: str = "sub"


def _holds(keys: jwt.PyJWKSet, kid: object) -> bool:
    """Whether ``keys`` has the key ``kid`` names (a set without it may need reading again)."""
    return any(key.key_id == str(kid) for key in keys.keys)


def _key_in(keys: jwt.PyJWKSet, kid: object) -> jwt.PyJWK:
    """The key ``kid`` names in ``keys`` (no ``kid``: the set's only key)."""
    if kid is None:
        if len(keys.keys) != 1:
            raise InvalidTokenError("the token names no key (kid) and the issuer has several")
        return keys.keys[0]
    try:
        return keys[str(kid)]
    except KeyError:
        raise InvalidTokenError(f"the issuer has no key {str(kid)[:64]!r}") from None


class _KeyFile:
    """A JWKS file, read again when it changes: its stamp is looked at once a second, and at once
    for a ``kid`` the keys read lack (the issuer may have just added it, as Kafka's resolver
    refreshes its key set early for an unknown ``kid``; a look is a ``stat``, the file is read
    only when it changed)."""

    def __init__(self, path: Path) -> None:
        self._keys = WatchedFile(path, jwt.PyJWKSet.from_json, _FILE_CHECK_S)

    def key_for(self, kid: object) -> jwt.PyJWK:
        keys = self._keys.current()
        if kid is not None and not _holds(keys, kid):
            self._keys.look_again()
            keys = self._keys.current()
        return _key_in(keys, kid)


def loopback_url(url: str) -> bool:
    """Whether ``url``'s host is a loopback address (or localhost)."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _KeyUrl:
    """The issuer's ``jwks_uri`` (see the module docstring for when it is fetched)."""

    def __init__(self, url: str) -> None:
        if not url.startswith("https://") and not loopback_url(url):
            raise ValueError(f"the issuer's key set must come over https (or from loopback), not {url!r}")
        self._client = jwt.PyJWKClient(url, cache_jwk_set=False, cache_keys=False, timeout=10)
        self._lock = threading.Lock()
        self._keys: jwt.PyJWKSet | None = None
        self._fetched_s = float("-inf")
        self._tried_s = float("-inf")

    def key_for(self, kid: object) -> jwt.PyJWK:
        with self._lock:
            now = time.monotonic()
            known = self._keys is not None and (kid is None or _holds(self._keys, kid))
            due = now - self._fetched_s >= JWKS_LIFESPAN_S or not known
            if due and (self._keys is None or now - self._tried_s >= JWKS_COOLDOWN_S):
                self._tried_s = now
                try:
                    self._keys = self._client.get_jwk_set(refresh=True)
                    self._fetched_s = now
                except jwt.PyJWKClientError as exc:
                    _log.warning("the issuer's key set could not be fetched: %s", exc)
                    if self._keys is None:
                        raise InvalidTokenError("the issuer's key set could not be fetched") from None
            keys = self._keys
        assert keys is not None
        return _key_in(keys, kid)


class TokenVerifier:
    """Checks bearer tokens against ``settings`` (see the module docstring)."""

    def __init__(self, settings: TokenSettings, now_s: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._now_s = now_s
        jwks = settings.jwks
        self._keys = _KeyUrl(jwks) if "://" in jwks else _KeyFile(Path(jwks))
        self._verified: collections.OrderedDict[bytes, tuple[str, float]] = collections.OrderedDict()
        self._refused: collections.OrderedDict[bytes, tuple[str, float]] = collections.OrderedDict()
        self._checking: dict[bytes, asyncio.Future[tuple[str, float]]] = {}
        self._threads = concurrent.futures.ThreadPoolExecutor(CHECK_THREADS, thread_name_prefix="lanes-tokens")

    def remembered(self, token: str) -> str | None:
        """The user of a token verified before and not expired since; None otherwise. A token
        refused within ``REFUSED_FOR_S`` is refused again (InvalidTokenError)."""
        digest = hashlib.sha256(token.encode()).digest()
        refused = self._refused.get(digest)
        if refused is not None:
            reason, until_s = refused
            if until_s > self._now_s():
                raise InvalidTokenError(reason)
            del self._refused[digest]
        known = self._verified.get(digest)
        if known is None:
            return None
        user, expires_s = known
        if expires_s + LEEWAY_S <= self._now_s():
            del self._verified[digest]
            return None
        self._verified.move_to_end(digest)
        return user

    def expires_s(self, token: str) -> float | None:
        """When a verified token expires (its ``exp`` with the allowed skew); None when it is not
        remembered."""
        known = self._verified.get(hashlib.sha256(token.encode()).digest())
        return known[1] + LEEWAY_S if known is not None else None

    def checks_pending(self) -> int:
        """Distinct tokens being checked now."""
        return len(self._checking)

    async def user(self, token: str) -> str:
        """The user ``token`` names (remembered, or checked on the verifier's threads; one check
        for concurrent calls with the same token); InvalidTokenError when it is refused."""
        known = self.remembered(token)
        if known is not None:
            return known
        digest = hashlib.sha256(token.encode()).digest()
        checking = self._checking.get(digest)
        if checking is None:
            checking = asyncio.get_running_loop().run_in_executor(self._threads, self.check, token)
            self._checking[digest] = checking
            checking.add_done_callback(lambda done: self._settle(digest, done))
        user, _ = await asyncio.shield(checking)
        return user

    def _settle(self, digest: bytes, done: asyncio.Future[tuple[str, float]]) -> None:
        """Remember a finished check's outcome (on the event loop)."""
        self._checking.pop(digest, None)
        if done.cancelled():
            return
        failure = done.exception()
        if isinstance(failure, InvalidTokenError):
            _remember(self._refused, digest, (str(failure), self._now_s() + REFUSED_FOR_S))
        elif failure is None:
            _remember(self._verified, digest, done.result())

    def check(self, token: str) -> tuple[str, float]:
        """(user, expiry) of a token, verified now (blocking: a signature, perhaps a fetch)."""
        if len(token) > MAX_TOKEN_BYTES:
            raise InvalidTokenError(f"the token is longer than {MAX_TOKEN_BYTES} bytes")
        claim = self.settings.principal_claim
        try:
            key = self._keys.key_for(jwt.get_unverified_header(token).get("kid"))
            claims = jwt.decode(
                token,
                key,
                algorithms=list(ALGORITHMS),
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "aud", claim]},
            )
        except InvalidTokenError:
            raise
        except jwt.PyJWTError as exc:
            raise InvalidTokenError(str(exc)[:_MAX_REASON]) from None
        except (OSError, ValueError, TypeError) as exc:
            _log.warning("a bearer token could not be checked: %s", exc)
            raise InvalidTokenError("the token or the issuer's key set could not be used") from None
        user = claims[claim]
        if not isinstance(user, str) or not USER_NAME.fullmatch(user):
            raise InvalidTokenError(f"the {claim} claim is not a user name (1 to 128 of A-Z a-z 0-9 . _ @ -)")
        if NODE_NAME.fullmatch(user):
            raise InvalidTokenError(f"the {claim} claim names one of the cluster's nodes")
        return user, float(claims["exp"])


def _remember(
    remembered: collections.OrderedDict[bytes, tuple[str, float]], digest: bytes, entry: tuple[str, float]
) -> None:
    remembered[digest] = entry
    remembered.move_to_end(digest)
    if len(remembered) > REMEMBERED:
        remembered.popitem(last=False)
