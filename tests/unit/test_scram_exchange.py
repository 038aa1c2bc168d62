"""The SCRAM exchange (``lanes.security.scram_exchange``): RFC 7677's example, both sides; a
decoy indistinguishable from a user until the proof; and what a hostile peer cannot make the
other side do."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from lanes.security import scram
from lanes.security.scram_exchange import ClientExchange, ScramError, decoy, server_final, server_first

# RFC 7677, section 3: user "user", password "pencil".
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_FIRST = f"r={CLIENT_NONCE}{SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = f"c=biws,r={CLIENT_NONCE}{SERVER_NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _credential(password: str = "pencil", mechanism: str = "SCRAM-SHA-256") -> scram.ScramCredential:
    return scram.credential(mechanism, SALT, 4096, scram.salted_password(mechanism, password, SALT, 4096))


def test_rfc_7677s_example_from_the_clients_side() -> None:
    client = ClientExchange("SCRAM-SHA-256", "user", "pencil", CLIENT_NONCE)
    assert client.first() == f"n,,n=user,r={CLIENT_NONCE}"
    assert client.final(SERVER_FIRST) == CLIENT_FINAL
    client.verify(SERVER_FINAL)
    with pytest.raises(ScramError, match="could not prove"):
        client.verify("v=" + base64.b64encode(b"\0" * 32).decode())


def test_rfc_7677s_example_from_the_servers_side() -> None:
    started = server_first("SCRAM-SHA-256", f"n,,n=user,r={CLIENT_NONCE}", _credential(), SERVER_NONCE, b"secret")
    assert started.server_first == SERVER_FIRST
    assert server_final(started, CLIENT_FINAL) == SERVER_FINAL


@pytest.mark.parametrize("mechanism", sorted(scram.MECHANISMS))
def test_a_wrong_password_and_an_unknown_user_fail_alike_at_the_proof(mechanism: str) -> None:
    def attempt(credential: scram.ScramCredential | None, password: str) -> tuple[str, str]:
        client = ClientExchange(mechanism, "alice", password, CLIENT_NONCE)
        started = server_first(mechanism, client.first(), credential, SERVER_NONCE, b"secret")
        with pytest.raises(ScramError) as refused:
            server_final(started, client.final(started.server_first))
        return started.server_first.split(",", 1)[1].split(",")[1], str(refused.value)  # (i=..., why)

    known = scram.credential(mechanism, SALT, scram.DEFAULT_ITERATIONS, b"k" * scram.salted_password_bytes(mechanism))
    assert attempt(known, "wrong")[1] == attempt(None, "anything")[1] == "wrong username or password"
    assert attempt(known, "wrong")[0] == attempt(None, "x")[0] == f"i={scram.DEFAULT_ITERATIONS}"
    first = server_first(mechanism, f"n,,n=alice,r={CLIENT_NONCE}", None, SERVER_NONCE, b"secret").server_first
    again = server_first(mechanism, f"n,,n=alice,r={CLIENT_NONCE}", None, "another-server-nonce", b"secret")
    assert first.split(",")[1] == again.server_first.split(",")[1], "a decoy's salt is stable, as a user's is"
    assert decoy(mechanism, "alice", b"secret").salt != decoy(mechanism, "bob", b"secret").salt


def test_the_right_password_opens_and_the_server_proves_itself() -> None:
    for mechanism in scram.MECHANISMS:
        salted = scram.salted_password(mechanism, "s3cret", SALT, 4096)
        credential = scram.credential(mechanism, SALT, 4096, salted)
        client = ClientExchange(mechanism, "alice", "s3cret", CLIENT_NONCE)
        started = server_first(mechanism, client.first(), credential, SERVER_NONCE, b"secret")
        client.verify(server_final(started, client.final(started.server_first)))


@pytest.mark.parametrize(
    "server_first_message",
    [
        f"r={CLIENT_NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100000000",  # a client must not spin
        f"r={CLIENT_NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1",
        "r=someone-elses-nonce-0123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        f"r={CLIENT_NONCE}x,s=AA==,i=4096",  # a salt too short
        f"r={CLIENT_NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,ext=1",
        "garbage",
    ],
)
def test_a_client_refuses_a_server_first_message_out_of_bounds(server_first_message: str) -> None:
    with pytest.raises(ScramError):
        ClientExchange("SCRAM-SHA-256", "user", "pencil", CLIENT_NONCE).final(server_first_message)


@pytest.mark.parametrize(
    "client_first",
    [
        f"y,,n=user,r={CLIENT_NONCE}",
        f"p=tls-unique,,n=user,r={CLIENT_NONCE}",
        f"n,a=admin,n=user,r={CLIENT_NONCE}",
        f"n,,n=us,er,r={CLIENT_NONCE}",
        "n,,n=user,r=short",
        f"n,,n=user,r={CLIENT_NONCE},e=x",
        "n,,n=user,r=" + "x" * 5000,
    ],
)
def test_a_server_refuses_a_malformed_client_first_message(client_first: str) -> None:
    with pytest.raises(ScramError):
        server_first("SCRAM-SHA-256", client_first, _credential(), SERVER_NONCE, b"secret")


def test_a_server_refuses_a_replayed_or_foreign_nonce() -> None:
    started = server_first("SCRAM-SHA-256", f"n,,n=user,r={CLIENT_NONCE}", _credential(), SERVER_NONCE, b"s")
    with pytest.raises(ScramError, match="nonce"):
        server_final(started, CLIENT_FINAL.replace(SERVER_NONCE, "other-server-nonce-xyz"))


def test_a_nonce_echoed_with_the_clients_once_more_in_front_passes_as_kafka_lets_it() -> None:
    """librdkafka before 2.1 (Debian's kcat) sends ``r=<client nonce><whole nonce>`` and signs what
    it sent; Kafka's server checks only that the nonce ends with the exchange's."""
    started = server_first("SCRAM-SHA-256", f"n,,n=user,r={CLIENT_NONCE}", _credential(), SERVER_NONCE, b"s")
    doubled = f"r={CLIENT_NONCE}{CLIENT_NONCE}{SERVER_NONCE}"
    without_proof = f"c=biws,{doubled}"
    auth = f"n=user,r={CLIENT_NONCE},{SERVER_FIRST},{without_proof}".encode()
    salted = scram.salted_password("SCRAM-SHA-256", "pencil", SALT, 4096)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth, "sha256")
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    assert server_final(started, f"{without_proof},p={proof}").startswith("v=")
    with pytest.raises(ScramError, match="nonce"):  # a nonce that does not end with the exchange's still fails
        server_final(started, f"c=biws,r={CLIENT_NONCE}{SERVER_NONCE}x,p={proof}")
