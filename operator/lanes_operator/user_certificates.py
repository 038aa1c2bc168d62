"""A User's client certificate (``spec.authentication.type: tls``, Strimzi's KafkaUser ``tls``):
whether the operator must issue one, and the certificate it issues. Pure: the time and the
clients' CA are given; ``lanes_operator.user_handlers`` reads and writes the Secret.

The certificate names the user (its common name is the principal ``User:<name>`` on the
cluster's certificate listeners), is signed by the clients' CA (never the cluster's CA, which
signs nodes), and is a client certificate only. It is issued again when the Secret has none,
when it names another user, when another CA signed it (the clients' CA was replaced), or within
``renew_before`` of its expiry. The Secret holds it as Strimzi's does: ``user.crt``, ``user.key``
and ``ca.crt`` (the cluster's CA, which clients trust for the brokers' certificates).
"""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID

from lanes.security.certificates import certificate_pem, load_authority

CERTIFICATE_KEY = "user.crt"
PRIVATE_KEY_KEY = "user.key"
CA_KEY = "ca.crt"


def renewal_reason(
    certificate: str | None,
    user_name: str,
    clients_ca: bytes,
    *,
    now: datetime.datetime,
    renew_before: datetime.timedelta,
) -> str | None:
    """Why the certificate held for ``user_name`` must be issued (again), or None when it serves."""
    if not certificate:
        return "the user has no certificate yet"
    try:
        cert = x509.load_pem_x509_certificate(certificate.encode())
    except ValueError:
        return "the Secret's certificate is not a PEM certificate"
    names = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    if names != [user_name]:
        return f"the Secret's certificate names {names[0] if names else 'nobody'!s}, not {user_name}"
    try:
        cert.verify_directly_issued_by(x509.load_pem_x509_certificate(clients_ca))
    except (ValueError, TypeError, InvalidSignature):
        return "another CA signed the Secret's certificate (the clients' CA was replaced)"
    if cert.not_valid_after_utc - now < renew_before:
        return f"the certificate expires at {cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC"
    return None


def issue_user_certificate(
    clients_ca: bytes, clients_ca_key: bytes, user_name: str, *, days: int, now: datetime.datetime
) -> dict[str, str]:
    """``{user.crt, user.key}``: a new client certificate naming ``user_name``, valid ``days``."""
    ca_cert, ca_key = load_authority(clients_ca, clients_ca_key)
    cert_pem, key_pem = certificate_pem(ca_cert, ca_key, user_name, (), server=False, days=days, now=now)
    return {CERTIFICATE_KEY: cert_pem.decode(), PRIVATE_KEY_KEY: key_pem.decode()}


def expiry(certificate: str) -> datetime.datetime:
    """When a PEM certificate expires (UTC)."""
    return x509.load_pem_x509_certificate(certificate.encode()).not_valid_after_utc
