"""OAuth bearer tokens (``lanes.runtime.tokens``): what a token must be to pass, checked against
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

from lanes.runtime.tokens import MAX_TOKEN_BYTES, InvalidTokenError, TokenSettings, TokenVerifier
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
        assert verifier.remembered(token) is None, case


def test_an_expired_token_is_forgotten(issuer: Issuer, tmp_path: Path) -> None:
    now = [time.time()]
    settings = TokenSettings(ISSUER, AUDIENCE, str(issuer.write_jwks(tmp_path / "jwks.json")))
    verifier = TokenVerifier(settings, now_s=lambda: now[0])
    token = issuer.token("alice", lifetime_s=60)
    assert asyncio.run(verifier.user(token)) == "alice"
    now[0] += 60 + 31  # past its expiry and the leeway
    assert verifier.remembered(token) is None


def test_a_rotated_key_set_file_is_read_again(issuer: Issuer, tmp_path: Path) -> None:
    rotating = Issuer()
    path = rotating.write_jwks(tmp_path / "jwks.json")
    verifier = TokenVerifier(TokenSettings(ISSUER, AUDIENCE, str(path)))
    assert verifier.check(rotating.token("alice"))[0] == "alice"
    rotating.add_key("ec-2")
    rotating.write_jwks(path)
    time.sleep(1.1)  # the file is looked at once a second
    assert verifier.check(rotating.token("bob", kid="ec-2"))[0] == "bob"


@pytest.fixture
def served_jwks(issuer: Issuer) -> Iterator[str]:
    """The issuer's key set served over HTTP on loopback (its jwks_uri)."""
    body = issuer.jwks().encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks"
    finally:
        server.shutdown()


def test_the_key_set_can_come_from_the_issuers_url(issuer: Issuer, served_jwks: str) -> None:
    verifier = TokenVerifier(TokenSettings(ISSUER, AUDIENCE, served_jwks))
    assert verifier.check(issuer.token("alice", kid="ec-1"))[0] == "alice"
    with pytest.raises(InvalidTokenError, match="could not be used"):
        verifier.check(_token_with_kid(issuer, "nope"))
