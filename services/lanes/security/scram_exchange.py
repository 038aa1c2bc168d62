"""The SCRAM exchange (RFC 5802, RFC 7677), both sides, as Kafka's ``ScramSaslServer`` and
``ScramSaslClient`` run it: a pure core (nonces and the secret are given; no clock, no I/O).

    client-first   n,,n=<user>,r=<client nonce>
    server-first   r=<client nonce + server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<base64 ClientKey XOR HMAC(StoredKey, AuthMessage)>
    server-final   v=<base64 HMAC(ServerKey, AuthMessage)>

    AuthMessage = client-first-bare + "," + server-first + "," + client-final-without-proof

The server keeps no password and learns none: it checks that H(proof XOR ClientSignature) is the
StoredKey (``lanes.security.scram``), and proves itself with the ServerSignature, which only
holders of the ServerKey can make. The client's PBKDF2 is the only costly step, and it runs on the
client: a server's work per exchange is a few HMACs whoever the user is.

An unknown user, or one without a credential for the mechanism, is answered with a *decoy*: a salt
derived from the user name under the server's secret (the same on every attempt, as a real
user's), the default iteration count, and keys no password matches, so the exchange fails at the
proof exactly as a wrong password does. Kafka's server refuses an unknown user at its first
message; this one tells nothing.

Passwords are taken as UTF-8 bytes without SASLprep, as Kafka's ``ScramFormatter`` does, so
credentials made by Lanes' and Kafka's tools check the same passwords. No channel binding (the gs2
header is ``n,,``), no authorization identity; Kafka's extensions (``tokenauth``) are refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass

from lanes.security import scram

#: The only gs2 header accepted: no channel binding, no authorization identity.
GS2_HEADER = "n,,"
#: Characters of a nonce (printable ASCII but ','), and their bounds.
MIN_NONCE_CHARS = 16
MAX_NONCE_CHARS = 128
#: Longest SCRAM message taken (a client-final with a 512-bit proof is about 200 characters).
MAX_MESSAGE_CHARS = 1024


class ScramError(Exception):
    """An exchange failed: a malformed message, a nonce that does not match, a wrong proof (the
    server's ``finish``), or a server that could not prove itself (the client's ``verify``)."""


def _fields(message: str, *names: str) -> dict[str, str]:
    """The ``k=v`` attributes of a SCRAM message, which must start with ``names`` in order."""
    if len(message) > MAX_MESSAGE_CHARS:
        raise ScramError(f"a SCRAM message is at most {MAX_MESSAGE_CHARS} characters")
    parts = message.split(",")
    if len(parts) < len(names):
        raise ScramError(f"malformed SCRAM message: expected attributes {', '.join(names)}")
    found: dict[str, str] = {}
    for name, part in zip(names, parts, strict=False):
        key, equals, value = part.partition("=")
        if key != name or not equals:
            raise ScramError(f"malformed SCRAM message: expected {name}=..., not {part[:40]!r}")
        found[name] = value
    if len(parts) > len(names):
        raise ScramError("SCRAM extensions are not supported")
    return found


def _nonce_problem(nonce: str) -> str | None:
    if not MIN_NONCE_CHARS <= len(nonce) <= 2 * MAX_NONCE_CHARS:
        return f"a nonce is {MIN_NONCE_CHARS} to {MAX_NONCE_CHARS} characters"
    if not all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce):
        return "a nonce is printable ASCII without ','"
    return None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ScramError("malformed base64 in a SCRAM message") from None


def _hash(mechanism: str) -> str:
    return scram.MECHANISMS[mechanism]


def _auth_message(client_first_bare: str, server_first: str, client_final_without_proof: str) -> bytes:
    return f"{client_first_bare},{server_first},{client_final_without_proof}".encode()


def _final_without_proof(nonce: str) -> str:
    return f"c={_b64(GS2_HEADER.encode())},r={nonce}"


# ---------------------------------------------------------------------------------------------
# server


def decoy(mechanism: str, user: str, secret: bytes) -> scram.ScramCredential:
    """What an unknown user (or one without a ``mechanism`` credential) is answered with: a salt
    stable for the user under ``secret``, the default iterations, keys no password matches."""
    algorithm = _hash(mechanism)
    derived = hmac.digest(secret, f"{mechanism}\0{user}".encode(), "sha512")
    size = scram.salted_password_bytes(mechanism)
    return scram.ScramCredential(
        mechanism=mechanism,
        salt=derived[: scram.MIN_SALT_BYTES * 2],
        iterations=scram.DEFAULT_ITERATIONS,
        stored_key=hmac.digest(secret, b"stored\0" + derived, algorithm)[:size],
        server_key=hmac.digest(secret, b"server\0" + derived, algorithm)[:size],
    )


@dataclass(frozen=True)
class ServerFirst:
    """A server's half-done exchange: who claims to log in, with what, and what it answered."""

    user: str
    credential: scram.ScramCredential
    known: bool  # whether the credential is the user's (False: a decoy: the proof cannot hold)
    client_first_bare: str
    server_first: str
    nonce: str


def client_first_user(mechanism: str, client_first: str) -> tuple[str, str]:
    """(user, client nonce) of a client-first message; ScramError when it is malformed, names a
    mechanism Lanes does not keep or a user name no user can have."""
    if mechanism not in scram.MECHANISMS:
        raise ScramError(f"unknown mechanism {mechanism[:40]!r}: use {' or '.join(scram.MECHANISMS)}")
    if not client_first.startswith(GS2_HEADER):
        raise ScramError("channel binding and authorization identities are not supported (use the gs2 header n,,)")
    fields = _fields(client_first.removeprefix(GS2_HEADER), "n", "r")
    user, nonce = fields["n"], fields["r"]
    if not scram.USER_NAME.fullmatch(user):
        raise ScramError("malformed user name")
    problem = _nonce_problem(nonce)
    if problem is not None or len(nonce) > MAX_NONCE_CHARS:
        raise ScramError(problem or f"a nonce is at most {MAX_NONCE_CHARS} characters")
    return user, nonce


def server_first(
    mechanism: str, client_first: str, credential: scram.ScramCredential | None, server_nonce: str, secret: bytes
) -> ServerFirst:
    """Answer a client-first message with ``credential`` (the user's for ``mechanism``; None: a
    decoy made from ``secret``), adding ``server_nonce`` to the client's."""
    user, client_nonce = client_first_user(mechanism, client_first)
    known = credential is not None and credential.mechanism == mechanism
    used = credential if known and credential is not None else decoy(mechanism, user, secret)
    nonce = client_nonce + server_nonce
    first = f"r={nonce},s={_b64(used.salt)},i={used.iterations}"
    return ServerFirst(user, used, known, client_first.removeprefix(GS2_HEADER), first, nonce)


def server_final(started: ServerFirst, client_final: str) -> str:
    """Check a client-final message's proof: the server-final message when it holds, else
    ScramError (the same for a wrong password and an unknown user)."""
    fields = _fields(client_final, "c", "r", "p")
    if fields["c"] != _b64(GS2_HEADER.encode()):
        raise ScramError("channel binding is not supported")
    # The nonce must end with the exchange's, as Kafka's ScramSaslServer checks it: librdkafka before
    # 2.1 sends its own nonce once more in front, and signs what it sent.
    echoed = fields["r"]
    if not hmac.compare_digest(echoed[-len(started.nonce) :].encode(), started.nonce.encode()):
        raise ScramError("the nonce does not match the exchange's")
    algorithm = _hash(started.credential.mechanism)
    auth = _auth_message(started.client_first_bare, started.server_first, _final_without_proof(echoed))
    signature = hmac.digest(started.credential.stored_key, auth, algorithm)
    proof = _unb64(fields["p"])
    if len(proof) != len(signature):
        raise ScramError("wrong username or password")
    client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
    holds = hmac.compare_digest(hashlib.new(algorithm, client_key).digest(), started.credential.stored_key)
    if not holds or not started.known:
        raise ScramError("wrong username or password")
    return f"v={_b64(hmac.digest(started.credential.server_key, auth, algorithm))}"


# ---------------------------------------------------------------------------------------------
# client


@dataclass
class ClientExchange:
    """A client's side of one exchange (``first``, then ``final``, then ``verify``)."""

    mechanism: str
    user: str
    password: str
    client_nonce: str
    #: PBKDF2 of (mechanism, password, salt, iterations): ``scram.salted_password``, or a cache of it
    salt_password: Callable[[str, str, bytes, int], bytes] = scram.salted_password
    _client_first_bare: str = ""
    _auth: bytes = b""
    _server_key: bytes = b""

    def first(self) -> str:
        """The client-first message."""
        if not scram.USER_NAME.fullmatch(self.user):
            raise ScramError("a user name is 1 to 128 letters, digits, '.', '_', '@' or '-'")
        if self.mechanism not in scram.MECHANISMS:
            raise ScramError(f"unknown mechanism {self.mechanism!r}")
        self._client_first_bare = f"n={self.user},r={self.client_nonce}"
        return GS2_HEADER + self._client_first_bare

    def final(self, server_first: str) -> str:
        """The client-final message answering ``server_first`` (the PBKDF2 runs here: call it
        off an event loop). ScramError for a server-first that is malformed, does not extend the
        client's nonce, or asks for iterations or a salt outside Kafka's bounds (a server cannot
        make a client spin)."""
        fields = _fields(server_first, "r", "s", "i")
        nonce, salt = fields["r"], _unb64(fields["s"])
        if not nonce.startswith(self.client_nonce) or _nonce_problem(nonce) is not None:
            raise ScramError("the server's nonce does not extend the client's")
        try:
            iterations = int(fields["i"])
        except ValueError:
            raise ScramError("malformed iteration count") from None
        problem = scram.credential_problem(self.user, self.mechanism, iterations, salt)
        if problem is not None:
            raise ScramError(f"the server's parameters are out of bounds: {problem}")
        if len(self.password.encode()) > scram.MAX_PASSWORD_BYTES:
            raise ScramError(f"a password is at most {scram.MAX_PASSWORD_BYTES} bytes")
        algorithm = _hash(self.mechanism)
        salted = self.salt_password(self.mechanism, self.password, salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", algorithm)
        stored_key = hashlib.new(algorithm, client_key).digest()
        without_proof = _final_without_proof(nonce)
        self._auth = _auth_message(self._client_first_bare, server_first, without_proof)
        self._server_key = hmac.digest(salted, b"Server Key", algorithm)
        signature = hmac.digest(stored_key, self._auth, algorithm)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={_b64(proof)}"

    def verify(self, server_final: str) -> None:
        """Check the server's signature: ScramError unless it holds the user's ServerKey."""
        if server_final.startswith("e="):
            raise ScramError(f"the server refused: {server_final[2:60]}")
        fields = _fields(server_final, "v")
        expected = hmac.digest(self._server_key, self._auth, _hash(self.mechanism))
        if not hmac.compare_digest(_unb64(fields["v"]), expected):
            raise ScramError("the server could not prove it holds the user's credential")
