"""OAuth bearer tokens (``lanes.runtime.access.tokens``): what a token must be to pass, checked against
an issuer made here (keys and tokens by PyJWT, ``tests.security.tokens``), with its key set in a
file and served over HTTP on loopback."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from lanes.runtime.access import tokens
from lanes.runtime.access.tokens import MAX_TOKEN_BYTES, InvalidTokenError, TokenSettings, TokenVerifier
from tests.security.tokens import AUDIENCE, ISSUER, Issuer


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    return Issuer()


@pytest.fixture
def verifier(issuer: Issuer, tmp_path: Path) -> TokenVerifier:
    return TokenVerifier(TokenSettings(ISSUER, AUDIENCE, str(issuer.write_jwks(tmp_path / "jwks.json"))))


def _unsigned(claims: dict[str, object], header: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part(header)}.{part(claims)}."


def test_a_token_the_issuer_signed_names_its_user_and_is_remembered(issuer: Issuer, verifier: TokenVerifier) -> None:
    for kid in ("rsa-1", "ec-1"):
        token = issuer.token("alice", kid=kid)
        assert verifier.remembered(token) is None
        assert asyncio.run(verifier.user(token)) == "alice"
        assert verifier.remembered(token) == "alice"


def test_the_principal_claim_can_be_another(issuer: Issuer, tmp_path: Path) -> None:
    settings = TokenSettings(ISSUER, AUDIENCE, str(issuer.write_jwks(tmp_path / "jwks.json")), "preferred_username")
    token = issuer.token("0b2c-uuid", preferred_username="bob")
    assert TokenVerifier(settings).check(token)[0] == "bob"


NOT_ALLOWED = "alg value is not allowed"


def _refusals(issuer: Issuer) -> dict[str, tuple[str, str]]:
    """Tokens that must be refused, with what the refusal says."""
    public_pem = (
        issuer.keys["rsa-1"]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    claims: dict[str, object] = {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": int(time.time()) + 600}
    without_expiry = {k: v for k, v in claims.items() if k != "exp"}
    return {
        "expired": (issuer.token("alice", lifetime_s=-120), "expired"),
        "another issuer": (issuer.token("alice", iss="https://evil.test"), "issuer"),
        "another audience": (issuer.token("alice", aud="someone-else"), "audience"),
        "another key, same kid": (Issuer().token("alice"), "Signature verification failed"),
        "no algorithm": (_token({"alg": "none", "kid": "rsa-1"}, claims, b""), "alg value is not allowed"),
        # the issuer's public key used as an HMAC secret: the classic algorithm confusion
        "hmac with the public key": (
            _token({"alg": "HS256", "kid": "rsa-1"}, claims, public_pem),
            "alg value is not allowed",
        ),
        "a node's name": (issuer.token("broker-1"), "names one of the cluster's nodes"),
        "not a user name": (issuer.token("alice smith"), "not a user name"),
        "no expiry": (jwt.encode(without_expiry, issuer.keys["rsa-1"], "RS256", {"kid": "rsa-1"}), '"exp"'),
        "a kid the issuer lacks": (_token_with_kid(issuer, "nope"), "no key 'nope'"),
        "not a token": ("hello", "Not enough segments"),
        # an EC algorithm named for the issuer's RSA key: the key's own algorithm decides
        "another key type's algorithm": (_token({"alg": "ES256", "kid": "rsa-1"}, claims, b"x"), "algorithm"),
        "too long": ("x" * (MAX_TOKEN_BYTES + 1), "longer than"),
    }


def _token(header: dict[str, object], claims: dict[str, object], hmac_secret: bytes) -> str:
    """A token put together by hand: unsigned (``hmac_secret`` empty) or HMAC-SHA256 signed."""

    def part(value: dict[str, object]) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=")

    signing_input = part({"typ": "JWT", **header}) + b"." + part(claims)
    if not hmac_secret:
        return (signing_input + b".").decode()
    signature = hmac.digest(hmac_secret, signing_input, hashlib.sha256)
    return (signing_input + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()


def _token_with_kid(issuer: Issuer, kid: str) -> str:
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": int(time.time()) + 600}
    return jwt.encode(body, issuer.keys["rsa-1"], algorithm="RS256", headers={"kid": kid})


def test_tokens_that_are_not_the_issuers_or_not_for_this_cluster_are_refused(
    issuer: Issuer, verifier: TokenVerifier
) -> None:
    for case, (token, reason) in _refusals(issuer).items():
        with pytest.raises(InvalidTokenError) as refused:
            asyncio.run(verifier.user(token))
        assert reason.lower() in str(refused.value).lower(), (case, str(refused.value))
        with pytest.raises(InvalidTokenError):  # refused again for a while, without a check
            verifier.remembered(token)


def test_an_expired_token_is_forgotten(issuer: Issuer, tmp_path: Path) -> None:
    now = [time.time()]
    settings = TokenSettings(ISSUER, AUDIENCE, str(issuer.write_jwks(tmp_path / "jwks.json")))
    verifier = TokenVerifier(settings, now_s=lambda: now[0])
    token = issuer.token("alice", lifetime_s=60)
    assert asyncio.run(verifier.user(token)) == "alice"
    now[0] += 60 + 31  # past its expiry and the leeway
    assert verifier.remembered(token) is None


def test_a_rotated_key_set_file_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_FILE_CHECK_S", 0.0)  # look at the file at every check
    rotating = Issuer()
    path = rotating.write_jwks(tmp_path / "jwks.json")
    verifier = TokenVerifier(TokenSettings(ISSUER, AUDIENCE, str(path)))
    assert verifier.check(rotating.token("alice"))[0] == "alice"
    rotating.add_key("ec-2")
    rotating.write_jwks(path)
    assert verifier.check(rotating.token("bob", kid="ec-2"))[0] == "bob"


def test_a_kid_the_key_set_file_lacks_makes_it_looked_at_again_at_once(tmp_path: Path) -> None:
    """A token signed with a key the issuer has just added passes at its first check: the file is
    looked at again for a kid it lacked (within its once-a-second look, the token was once refused
    and then remembered refused for ``REFUSED_FOR_S``)."""
    rotating = Issuer()
    path = rotating.write_jwks(tmp_path / "jwks.json")
    verifier = TokenVerifier(TokenSettings(ISSUER, AUDIENCE, str(path)))
    assert verifier.check(rotating.token("alice"))[0] == "alice"  # the file's stamp was just looked at
    rotating.add_key("ec-2")
    rotating.write_jwks(path)
    assert verifier.check(rotating.token("bob", kid="ec-2"))[0] == "bob"
    with pytest.raises(InvalidTokenError, match="no key 'ec-3'"):
        verifier.check(_unsigned({"sub": "carol"}, {"alg": "ES256", "kid": "ec-3"}))


class _KeySetServer:
    """An issuer's key set served over HTTP on loopback (its jwks_uri); ``body`` can change, and
    ``down`` makes it answer 503."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.down = False
        self.fetches = 0
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.fetches += 1
                self.send_response(503 if served.down else 200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}" if served.down else served.body.encode())

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/jwks"

    def close(self) -> None:
        self._server.shutdown()


@pytest.fixture
def served(issuer: Issuer) -> Iterator[_KeySetServer]:
    server = _KeySetServer(issuer.jwks())
    try:
        yield server
    finally:
        server.close()


def test_the_key_set_can_come_from_the_issuers_url(issuer: Issuer, served: _KeySetServer) -> None:
    verifier = TokenVerifier(TokenSettings(ISSUER, AUDIENCE, served.url))
    assert verifier.check(issuer.token("alice", kid="ec-1"))[0] == "alice"
    assert verifier.check(issuer.token("bob", kid="rsa-1"))[0] == "bob"
    assert served.fetches == 1, "kept, not fetched per token"
    with pytest.raises(InvalidTokenError, match="no key 'nope'"):
        verifier.check(_token_with_kid(issuer, "nope"))
    with pytest.raises(InvalidTokenError, match="no key 'nope'"):
        verifier.check(_token_with_kid(issuer, "nope"))
    assert served.fetches == 1, "an unknown kid fetches the set again only once the cooldown passed"


def test_a_withdrawn_key_stops_verifying_and_an_outage_keeps_the_last_set(
    issuer: Issuer, served: _KeySetServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokens, "JWKS_LIFESPAN_S", 0.0)
    monkeypatch.setattr(tokens, "JWKS_COOLDOWN_S", 0.0)
    verifier = TokenVerifier(TokenSettings(ISSUER, AUDIENCE, served.url))
    assert verifier.check(issuer.token("alice", kid="ec-1"))[0] == "alice"
    rotated = Issuer()  # the issuer withdrew every old key
    served.body = rotated.jwks()
    with pytest.raises(InvalidTokenError):
        verifier.check(issuer.token("alice", kid="ec-1"))
    served.down = True  # an outage: the last set fetched still serves
    assert verifier.check(rotated.token("carol", kid="ec-1"))[0] == "carol"


def test_a_key_set_url_is_https_or_loopback() -> None:
    with pytest.raises(ValueError, match="https"):
        TokenVerifier(TokenSettings(ISSUER, AUDIENCE, "http://issuer.example/jwks"))
    assert tokens.loopback_url("http://[::1]:8080/jwks")
    assert not tokens.loopback_url("http://10.0.0.1/jwks")


def test_a_key_set_file_caught_half_written_keeps_the_last_keys(
    issuer: Issuer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokens, "_FILE_CHECK_S", 0.0)  # look at the file at every check
    path = issuer.write_jwks(tmp_path / "jwks.json")
    verifier = TokenVerifier(TokenSettings(ISSUER, AUDIENCE, str(path)))
    assert verifier.check(issuer.token("alice"))[0] == "alice"
    path.write_text('{"keys": [')
    assert verifier.check(issuer.token("bob"))[0] == "bob"


def test_concurrent_checks_of_one_token_share_one(issuer: Issuer, verifier: TokenVerifier) -> None:
    token = issuer.token("alice")

    async def many() -> list[str]:
        users = [asyncio.ensure_future(verifier.user(token)) for _ in range(20)]
        await asyncio.sleep(0)
        assert verifier.checks_pending() == 1
        return list(await asyncio.gather(*users))

    assert asyncio.run(many()) == ["alice"] * 20
