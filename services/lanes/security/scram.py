"""Password credentials as SCRAM stores them (RFC 5802, Kafka's SCRAM-SHA-256/512), a pure core.

The cluster never keeps a password: an administrator's client salts it (``salted_password``)
and the controller keeps, in the metadata log, what checks one (``ScramCredential``):

    SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)
    ClientKey      = HMAC-H(SaltedPassword, "Client Key")
    StoredKey      = H(ClientKey)
    ServerKey      = HMAC-H(SaltedPassword, "Server Key")

A caller proves a password (``verify``) by the StoredKey it gives. The PBKDF2 work (thousands of
HMACs, in C, without the GIL) is the point: a stolen metadata log does not give passwords
cheaply. Servers cache what they verified (``lanes.runtime.access.guard``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass

#: Mechanisms and their hash functions.
MECHANISMS: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
DEFAULT_MECHANISM = "SCRAM-SHA-256"
#: Kafka's bounds on PBKDF2 iterations.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
#: Iterations of the credentials Lanes makes (Kafka's tools use 4,096).
DEFAULT_ITERATIONS = 8192
#: Salt sizes accepted.
MIN_SALT_BYTES = 16
MAX_SALT_BYTES = 64
#: User names: what a principal, a Secret key and a command line carry without quoting.
USER_NAME = re.compile(r"[A-Za-z0-9._@-]{1,128}")
#: Longest password checked (a longer one is refused before any hashing).
MAX_PASSWORD_BYTES = 1024


@dataclass(frozen=True)
class ScramCredential:
    """What the metadata log keeps of one user's password for one mechanism."""

    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def credential_problem(name: str, mechanism: str, iterations: int, salt: bytes) -> str | None:
    """Why a credential with these parameters cannot be stored; None when it can."""
    if not USER_NAME.fullmatch(name):
        return f"a user name is 1 to 128 letters, digits, '.', '_', '@' or '-', not {name[:140]!r}"
    if mechanism not in MECHANISMS:
        return f"unknown mechanism {mechanism[:40]!r}: use {' or '.join(MECHANISMS)}"
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        return f"iterations must be {MIN_ITERATIONS} to {MAX_ITERATIONS}, not {iterations}"
    if not MIN_SALT_BYTES <= len(salt) <= MAX_SALT_BYTES:
        return f"a salt is {MIN_SALT_BYTES} to {MAX_SALT_BYTES} bytes, not {len(salt)}"
    return None


def salted_password_bytes(mechanism: str) -> int:
    """The size of a salted password (the hash's digest) for ``mechanism``."""
    return hashlib.new(MECHANISMS[mechanism]).digest_size


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """PBKDF2 of ``password`` (UTF-8) with the mechanism's hash: what an administrator sends."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode(), salt, iterations)


def credential(mechanism: str, salt: bytes, iterations: int, salted: bytes) -> ScramCredential:
    """The stored form of a salted password."""
    algorithm = MECHANISMS[mechanism]
    client_key = hmac.digest(salted, b"Client Key", algorithm)
    return ScramCredential(
        mechanism=mechanism,
        salt=salt,
        iterations=iterations,
        stored_key=hashlib.new(algorithm, client_key).digest(),
        server_key=hmac.digest(salted, b"Server Key", algorithm),
    )


def verify(stored: ScramCredential, password: str) -> bool:
    """Whether ``password`` is the one ``stored`` was made from (constant-time comparison)."""
    if len(password.encode()) > MAX_PASSWORD_BYTES:
        return False
    salted = salted_password(stored.mechanism, password, stored.salt, stored.iterations)
    return hmac.compare_digest(
        credential(stored.mechanism, stored.salt, stored.iterations, salted).stored_key, stored.stored_key
    )
