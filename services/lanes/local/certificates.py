"""A certificate authority for a local cluster, and the certificates it issues.

Layout under a directory (``<data-dir>/tls`` for ``lanes up``)::

    ca.crt  ca.key            the authority (self-signed; its key never leaves this directory)
    <name>.crt  <name>.key    one per node ("broker-1", "controller-0", "coordinator-1") and
                              per client ("admin"): the name is the certificate's common name,
                              the identity a server sees in a mutual-TLS handshake

Keys are ECDSA P-256; node certificates name the hosts they serve under (DNS names and IP
addresses) and serve both as server and as client certificates (nodes call each other). Files
are written to a temporary name and renamed, keys readable by their owner only, so a server
reloading its files never reads half of one. Built on ``cryptography``.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lanes.rpc.tls import TlsFiles
from lanes.security.certificates import AuthorityKey, certificate_pem, key_usage, load_authority, private_pem

#: How long an issued certificate is valid (rotate before: ``issue`` again, servers reload).
CERTIFICATE_DAYS = 397
AUTHORITY_DAYS = 3650


@dataclass(frozen=True)
class Authority:
    """A CA's certificate and key files."""

    cert_file: Path
    key_file: Path

    def load(self) -> tuple[x509.Certificate, AuthorityKey]:
        return load_authority(self.cert_file.read_bytes(), self.key_file.read_bytes())


def write_file(path: Path, data: bytes, *, private: bool) -> None:
    """Write ``path`` whole: a new temporary file (owner-only for a key), synced, then renamed."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(descriptor, 0o600 if private else 0o644)
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def create_authority(directory: Path, name: str = "Lanes local CA") -> Authority:
    """A new self-signed CA in ``directory`` (``ca.crt``, ``ca.key``), or the one already there."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    authority = Authority(directory / "ca.crt", directory / "ca.key")
    if authority.cert_file.exists() and authority.key_file.exists():
        return authority
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=AUTHORITY_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(key_usage(signs_certificates=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    write_file(authority.key_file, private_pem(key), private=True)
    write_file(authority.cert_file, cert.public_bytes(serialization.Encoding.PEM), private=False)
    return authority


def issue(
    authority: Authority,
    directory: Path,
    name: str,
    hosts: Sequence[str] = ("127.0.0.1", "localhost"),
    *,
    server: bool = True,
    days: int = CERTIFICATE_DAYS,
) -> TlsFiles:
    """A certificate for ``name`` (its common name: the identity), signed by ``authority``,
    written as ``<name>.crt`` and ``<name>.key`` (each replaced whole; the certificate last, so a
    server reloading in between sees a mismatched pair and keeps its old one); the files a
    process uses with it. A node's (``server``) also serves ``hosts``; a client's (``server``
    False, no hosts) can only authenticate a caller, never pose as a server."""
    ca_cert, ca_key = authority.load()
    cert_pem, key_pem = certificate_pem(ca_cert, ca_key, name, hosts, server=server, days=days, now=_now())
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    cert_file, key_file = directory / f"{name}.crt", directory / f"{name}.key"
    write_file(key_file, key_pem, private=True)
    write_file(cert_file, cert_pem, private=False)
    return TlsFiles(authority.cert_file, cert_file, key_file)
