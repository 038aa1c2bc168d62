"""OAuth bearer tokens: JSON Web Tokens an OpenID Connect issuer signed, checked by the guard
(``lanes.runtime.guard``) as Kafka's OAUTHBEARER validator checks them (KIP-768).

A call carries ``authorization: Bearer <JWT>``. The token is accepted when:

- its signature verifies with a key of the issuer's key set (JWKS) named by the token's ``kid``
  (or the set's only key), with an asymmetric algorithm (``ALGORITHMS``: never ``none``, never an
  HMAC, whose "secret" could be the issuer's public key);
- ``iss`` is the configured issuer, ``aud`` names the configured audience, ``exp`` is in the
  future (``LEEWAY_S`` of clock skew allowed), ``nbf`` and ``iat`` when present are not ahead;
- the principal claim (``sub`` by default) is a user name (``lanes.security.scram.USER_NAME``)
  that does not name one of the cluster's nodes (a token cannot make its bearer a broker).

The principal is ``User:<claim>``. The key set comes from a file (re-read when it changes, looked
at most once a second: keys rotate without a restart) or from the issuer's ``jwks_uri`` (PyJWT's
``PyJWKClient``: cached for ``JWKS_LIFESPAN_S``, fetched again for an unknown ``kid``).

Checked tokens are remembered by their SHA-256 until they expire (at most ``REMEMBERED``), so a
client's calls cost a dictionary lookup after the first. Checks (a signature, perhaps a key set
fetch) run on worker threads. Owned by one event loop.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from lanes.rpc.watched_file import WatchedFile
from lanes.security.acls import NODE_NAME
from lanes.security.scram import USER_NAME

#: Signature algorithms a token may use: asymmetric only.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
#: Clock skew allowed on ``exp``, ``nbf`` and ``iat`` (Kafka's default allowance is 30 s).
LEEWAY_S = 30
#: The longest token looked at.
MAX_TOKEN_BYTES = 16 * 1024
#: Verified tokens remembered.
REMEMBERED = 10_000
#: How long a key set fetched from a URL is used before it is fetched again.
JWKS_LIFESPAN_S = 300
#: How often a key set file's stamp is looked at.
_FILE_CHECK_S = 1.0


class InvalidTokenError(Exception):
    """A bearer token that is refused; the message says why (never the token itself)."""


@dataclass(frozen=True)
class TokenSettings:
    """Which tokens a listener accepts: the issuer's name (``iss``), the audience a token must
    name (``aud``), where the issuer's keys are (a JWKS file, or an ``http(s)://`` URL), and the
    claim that names the user."""

    issuer: str
    audience: str
    jwks: str
    principal_claim: str = "sub"


class _KeyFile:
    """A JWKS file, read again when it changes."""

    def __init__(self, path: Path) -> None:
        self._keys = WatchedFile(path, jwt.PyJWKSet.from_json, _FILE_CHECK_S)

    def key_for(self, token: str) -> Any:
        kid = jwt.get_unverified_header(token).get("kid")
        keys = self._keys.current()
        if kid is None:
            if len(keys.keys) != 1:
                raise InvalidTokenError("the token names no key (kid) and the issuer has several")
            return keys.keys[0].key
        try:
            return keys[kid].key
        except KeyError:
            raise InvalidTokenError(f"the issuer has no key {str(kid)[:64]!r}") from None


class _KeyUrl:
    """The issuer's ``jwks_uri``, fetched by PyJWT's client (cached, fetched again for new keys)."""

    def __init__(self, url: str) -> None:
        self._client = jwt.PyJWKClient(url, cache_keys=True, lifespan=JWKS_LIFESPAN_S, timeout=10)

    def key_for(self, token: str) -> Any:
        return self._client.get_signing_key_from_jwt(token).key


class TokenVerifier:
    """Checks bearer tokens against ``settings`` (see the module docstring)."""

    def __init__(self, settings: TokenSettings, now_s: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._now_s = now_s
        jwks = settings.jwks
        self._keys = _KeyUrl(jwks) if jwks.startswith(("http://", "https://")) else _KeyFile(Path(jwks))
        self._verified: collections.OrderedDict[bytes, tuple[str, float]] = collections.OrderedDict()

    def remembered(self, token: str) -> str | None:
        """The user of a token verified before and not expired since; None otherwise."""
        digest = hashlib.sha256(token.encode()).digest()
        known = self._verified.get(digest)
        if known is None:
            return None
        user, expires_s = known
        if expires_s + LEEWAY_S <= self._now_s():
            del self._verified[digest]
            return None
        self._verified.move_to_end(digest)
        return user

    async def user(self, token: str) -> str:
        """The user ``token`` names (remembered, or checked on a worker thread); InvalidTokenError
        when it is refused."""
        known = self.remembered(token)
        if known is not None:
            return known
        user, expires_s = await asyncio.to_thread(self.check, token)
        self._verified[hashlib.sha256(token.encode()).digest()] = (user, expires_s)
        if len(self._verified) > REMEMBERED:
            self._verified.popitem(last=False)
        return user

    def check(self, token: str) -> tuple[str, float]:
        """(user, expiry) of a token, verified now (blocking: a signature, perhaps a fetch)."""
        if len(token) > MAX_TOKEN_BYTES:
            raise InvalidTokenError(f"the token is longer than {MAX_TOKEN_BYTES} bytes")
        claim = self.settings.principal_claim
        try:
            claims = jwt.decode(
                token,
                self._keys.key_for(token),
                algorithms=list(ALGORITHMS),
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "aud", claim]},
            )
        except InvalidTokenError:
            raise
        except jwt.PyJWKClientError as exc:
            raise InvalidTokenError(f"the issuer's keys could not be used: {exc}") from None
        except jwt.PyJWTError as exc:
            raise InvalidTokenError(str(exc)) from None
        except (OSError, ValueError) as exc:
            raise InvalidTokenError(f"the issuer's key set could not be read: {exc}") from None
        user = claims[claim]
        if not isinstance(user, str) or not USER_NAME.fullmatch(user):
            raise InvalidTokenError(f"the {claim} claim is not a user name (1 to 128 of A-Z a-z 0-9 . _ @ -)")
        if NODE_NAME.fullmatch(user):
            raise InvalidTokenError(f"the {claim} claim names one of the cluster's nodes")
        return user, float(claims["exp"])
