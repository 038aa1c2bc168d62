"""X.509 certificates as PEM: a CA's key pair loaded, and certificates it signs. No files, no
network: ``lanes.local.certificates`` writes them for ``lanes up``, and the operator issues users'
client certificates with them. Keys are ECDSA P-256; a CA's key may also be RSA (Helm's
``genCA``). Built on ``cryptography``.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: A CA's private key: EC (``create_authority``) or RSA (Helm's ``genCA``).
AuthorityKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def load_authority(cert_pem: bytes, key_pem: bytes) -> tuple[x509.Certificate, AuthorityKey]:
    """A CA's certificate and key (EC, or RSA as Helm's ``genCA`` makes) from PEM; ValueError when
    they are not such a pair."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError("the CA's key is neither an EC nor an RSA private key")
    spki = serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*spki) != cert.public_key().public_bytes(*spki):
        raise ValueError("the CA's key is not its certificate's")
    return cert, key


def certificate_pem(
    ca_cert: x509.Certificate,
    ca_key: AuthorityKey,
    name: str,
    hosts: Sequence[str],
    *,
    server: bool,
    days: int,
    now: datetime.datetime,
) -> tuple[bytes, bytes]:
    """(certificate, private key) in PEM: a new key and a certificate naming ``name``, valid from
    ``now`` (five minutes back, for clocks behind) for ``days``, signed by the CA (see ``issue``)."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(key_usage(signs_certificates=False), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                if server
                else [ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if hosts:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([_alternative_name(h) for h in hosts]), critical=False
        )
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), private_pem(key)


def key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """Signatures only (ECDSA keys neither encipher nor agree here); an authority's also sign
    certificates and revocation lists."""
    return x509.KeyUsage(
        digital_signature=True,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        encipher_only=False,
        decipher_only=False,
    )


def private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _alternative_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def check_key_pair(key_pem: bytes, chain_pem: bytes, what: str) -> None:
    """ValueError unless ``chain_pem`` holds whole certificates and ``key_pem`` is the private key
    of the first (a file caught half-written, or a key replaced before its certificate); ``what``
    names the pair in the message."""
    try:
        certificates = x509.load_pem_x509_certificates(chain_pem)
        key = serialization.load_pem_private_key(key_pem, password=None)
    except ValueError as exc:
        raise ValueError(f"{what} are not a whole PEM certificate chain and key: {exc}") from None
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*spki) != certificates[0].public_key().public_bytes(*spki):
        raise ValueError(f"{what}: the key is not the certificate's")
