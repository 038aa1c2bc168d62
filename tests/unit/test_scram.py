"""SCRAM credentials (``lanes.security.scram``) are those of RFC 5802/7677, hence Kafka's."""

from __future__ import annotations

import base64
import hashlib
import hmac

from lanes.security import scram


def test_the_stored_credential_checks_the_rfc_7677_exchange():
    """RFC 7677's SCRAM-SHA-256 example: the server key made from "pencil" signs the example's
    auth message as the RFC's server signature, and the client proof recovers the stored key."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    salted = scram.salted_password("SCRAM-SHA-256", "pencil", salt, 4096)
    stored = scram.credential("SCRAM-SHA-256", salt, 4096, salted)
    auth_message = (
        b"n=user,r=rOprNGfwEbeRWgbNEkqO,"
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    server_signature = hmac.digest(stored.server_key, auth_message, "sha256")
    assert base64.b64encode(server_signature) == b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_signature = hmac.digest(stored.stored_key, auth_message, "sha256")
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == stored.stored_key


def test_verify_accepts_the_password_only():
    salt = b"s" * 16
    stored = scram.credential("SCRAM-SHA-512", salt, 4096, scram.salted_password("SCRAM-SHA-512", "right", salt, 4096))
    assert scram.verify(stored, "right")
    assert not scram.verify(stored, "wrong")
    assert not scram.verify(stored, "right" * 500), "an oversized password is refused before hashing"
    assert scram.salted_password_bytes("SCRAM-SHA-512") == 64


def test_credential_problems():
    assert scram.credential_problem("alice", "SCRAM-SHA-256", 4096, b"s" * 16) is None
    assert "user name" in (scram.credential_problem("al ice", "SCRAM-SHA-256", 4096, b"s" * 16) or "")
    assert "mechanism" in (scram.credential_problem("alice", "PLAIN", 4096, b"s" * 16) or "")
    assert "iterations" in (scram.credential_problem("alice", "SCRAM-SHA-256", 100, b"s" * 16) or "")
    assert "salt" in (scram.credential_problem("alice", "SCRAM-SHA-256", 4096, b"s") or "")
