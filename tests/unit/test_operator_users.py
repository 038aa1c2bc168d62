"""The operator's pure decisions about User resources (``lanes_operator.users``) and which names a
namespace may claim (``lanes_operator.tenancy``, read from the settings)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from lanes.local.certificates import create_authority
from lanes.security.acls import Operation
from lanes_operator.settings import OperatorSettings
from lanes_operator.tenancy import Grants
from lanes_operator.user_certificates import CERTIFICATE_KEY, issue_user_certificate, renewal_reason
from lanes_operator.user_handlers import binding, entry
from lanes_operator.users import AclEntry, UserSpec, plan

SPEC = {
    "authentication": {"type": "scram-sha-256"},
    "authorization": {
        "acls": [
            {"resource": {"type": "topic", "name": "orders"}, "operations": ["Read", "Describe"]},
            {"resource": {"type": "group", "name": "app-", "patternType": "prefix"}, "operations": ["Read"]},
            {"resource": {"type": "cluster"}, "operations": ["DescribeConfigs"], "type": "deny", "host": "10.0.0.1"},
        ]
    },
    "quotas": {"producerByteRate": 1024, "controllerMutationRate": 0.5},
}


def test_a_spec_becomes_a_user_with_its_acls_and_quotas() -> None:
    user = UserSpec.of("app", SPEC)
    assert user.user_name == "app"
    assert user.mechanism == "SCRAM-SHA-256"
    assert user.password_ref is None
    assert user.acls == {
        AclEntry("topic", "orders", "literal", "Read", "*", "allow"),
        AclEntry("topic", "orders", "literal", "Describe", "*", "allow"),
        AclEntry("group", "app-", "prefix", "Read", "*", "allow"),
        AclEntry("cluster", "kafka-cluster", "literal", "DescribeConfigs", "10.0.0.1", "deny"),
    }
    assert user.quotas == {"producer_byte_rate": 1024.0, "controller_mutation_rate": 0.5}
    named = UserSpec.of(
        "res",
        {"userName": "svc", "authentication": {"password": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}}},
    )
    assert (named.user_name, named.mechanism, named.password_ref) == ("svc", "SCRAM-SHA-512", ("s", "k"))


def test_the_plan_makes_the_cluster_exactly_the_spec() -> None:
    user = UserSpec.of("app", SPEC)
    stray = AclEntry("topic", "payroll", "literal", "Write", "*", "allow")
    kept = AclEntry("topic", "orders", "literal", "Read", "*", "allow")
    todo = plan(
        user,
        credentials_version="uid/2",
        applied_version="uid/1",
        mechanisms=("SCRAM-SHA-256",),
        acls=[kept, stray],
        quotas={"producer_byte_rate": 1024.0, "consumer_byte_rate": 5.0},
    )
    assert todo.set_password, "the Secret changed"
    assert stray in todo.delete_acls
    assert kept not in todo.create_acls
    assert len(todo.create_acls) == 3
    assert todo.set_quotas == {"controller_mutation_rate": 0.5, "consumer_byte_rate": None}
    settled = plan(
        user,
        credentials_version="uid/2",
        applied_version="uid/2",
        mechanisms=("SCRAM-SHA-256",),
        acls=user.acls,
        quotas=user.quotas,
    )
    assert not settled.changes
    for other in (("SCRAM-SHA-512",), ("SCRAM-SHA-256", "SCRAM-SHA-512")):
        switched = plan(
            user,
            credentials_version="uid/2",
            applied_version="uid/2",
            mechanisms=other,
            acls=user.acls,
            quotas=user.quotas,
        )
        assert switched.set_password, f"the spec's mechanism only, not {other}"
    gone = plan(
        user,
        credentials_version="uid/2",
        applied_version="uid/2",
        mechanisms=None,
        acls=user.acls,
        quotas=user.quotas,
    )
    assert gone.set_password, "a user deleted behind the operator's back is made again"


def test_grants_bound_other_namespaces_to_their_prefixes() -> None:
    grants = Grants("lanes", {"team-a": ("team-a.", "shared-a.")})
    assert grants.refusal("lanes", "topic", "anything") is None
    assert grants.refusal("team-a", "topic", "team-a.orders") is None
    assert grants.refusal("team-a", "group", "shared-a.g") is None
    assert "starting with 'team-a.' or 'shared-a.'" in (grants.refusal("team-a", "topic", "orders") or "")
    assert "granted no names" in (grants.refusal("team-b", "topic", "team-a.orders") or "")
    assert grants.acl_refusal("team-a", "topic", "team-a.") is None
    assert grants.acl_refusal("team-a", "topic", "*") is not None, "'*' reaches every team's topics"
    assert "cluster" in (grants.acl_refusal("team-a", "cluster", "kafka-cluster") or "")
    assert grants.acl_refusal("lanes", "cluster", "kafka-cluster") is None
    assert Grants().refusal("anywhere", "topic", "x") is None, "no home namespace: the operator run by hand"


def test_grants_come_from_the_environment() -> None:
    settings = OperatorSettings.from_env(
        {"POD_NAMESPACE": "lanes", "LANES_OPERATOR_NAMESPACE_GRANTS": '{"team-a": ["team-a."]}'}
    )
    assert settings.grants == Grants("lanes", {"team-a": ("team-a.",)})
    with pytest.raises(ValueError, match="not JSON"):
        OperatorSettings.from_env({"LANES_OPERATOR_NAMESPACE_GRANTS": "{team-a"})
    with pytest.raises(ValueError, match="list of non-empty prefixes"):
        OperatorSettings.from_env(
            {"POD_NAMESPACE": "lanes", "LANES_OPERATOR_NAMESPACE_GRANTS": '{"team-a": "team-a."}'}
        )
    with pytest.raises(ValueError, match="also covers namespace 'team-ab'"):
        OperatorSettings.from_env(
            {
                "POD_NAMESPACE": "lanes",
                "LANES_OPERATOR_NAMESPACE_GRANTS": '{"team-a": ["team-a"], "team-ab": ["team-ab."]}',
            }
        )
    with pytest.raises(ValueError, match="need the operator's own namespace"):
        OperatorSettings.from_env({"LANES_OPERATOR_NAMESPACE_GRANTS": '{"team-a": ["team-a."]}'})


@pytest.mark.parametrize("resource_type", ["topic", "group", "cluster", "transactionalId"])
@pytest.mark.parametrize("operation", [o.name for o in Operation if o is not Operation.ANY])
def test_acl_entries_and_bindings_round_trip(resource_type: str, operation: str) -> None:
    name = "kafka-cluster" if resource_type == "cluster" else "orders"
    spelled = "".join(part.capitalize() for part in operation.split("_"))
    for pattern in ("literal", "prefix"):
        for permission in ("allow", "deny"):
            acl = AclEntry(resource_type, name, pattern, spelled, "10.0.0.1", permission)
            assert entry(binding("User:app", acl)) == acl


def test_a_certificate_user_has_no_password_and_loses_any_scram_credential() -> None:
    user = UserSpec.of("reader", {"authentication": {"type": "tls"}})
    assert user.mechanism is None
    fresh = plan(user, credentials_version="v1", applied_version=None, mechanisms=None, acls=(), quotas={})
    assert not fresh.set_password
    assert not fresh.delete_mechanisms
    switched = plan(
        user, credentials_version="v1", applied_version="v1", mechanisms=("SCRAM-SHA-512",), acls=(), quotas={}
    )
    assert not switched.set_password
    assert switched.delete_mechanisms == ("SCRAM-SHA-512",), "a password would let it in without its certificate"
    scram = UserSpec.of("reader", {"authentication": {"type": "scram-sha-256"}})
    both = plan(
        scram,
        credentials_version="v1",
        applied_version="v1",
        mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512"),
        acls=(),
        quotas={},
    )
    assert both.set_password
    assert both.delete_mechanisms == ("SCRAM-SHA-512",)


def test_user_certificates_are_issued_by_the_clients_ca_and_renewed_when_they_must_be(tmp_path: Path) -> None:
    """``lanes_operator.user_certificates``: a certificate naming the user, from the clients' CA,
    a client certificate only; issued again when missing, for another user, from another CA, or
    within the renewal window (Helm's genCA makes RSA CAs: they sign as well)."""
    clients = create_authority(tmp_path / "clients")
    ca, key = clients.cert_file.read_bytes(), clients.key_file.read_bytes()
    now = datetime.datetime(2026, 11, 28, tzinfo=datetime.UTC)
    week = datetime.timedelta(days=7)
    issued = issue_user_certificate(ca, key, "reader", days=365, now=now)
    cert = x509.load_pem_x509_certificate(issued[CERTIFICATE_KEY].encode())
    assert cert.subject.rfc4514_string() == "CN=reader"
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH], "it cannot serve as a node"
    assert renewal_reason(issued[CERTIFICATE_KEY], "reader", ca, now=now, renew_before=week) is None
    assert "no certificate" in str(renewal_reason(None, "reader", ca, now=now, renew_before=week))
    assert "names reader, not writer" in str(
        renewal_reason(issued[CERTIFICATE_KEY], "writer", ca, now=now, renew_before=week)
    )
    later = now + datetime.timedelta(days=360)
    assert "expires at 2027-11-28" in str(
        renewal_reason(issued[CERTIFICATE_KEY], "reader", ca, now=later, renew_before=week)
    )
    other = create_authority(tmp_path / "other").cert_file.read_bytes()
    assert "another CA" in str(renewal_reason(issued[CERTIFICATE_KEY], "reader", other, now=now, renew_before=week))
    assert "not a PEM" in str(renewal_reason("garbage", "reader", ca, now=now, renew_before=week))

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "helm clients CA")])
    rsa_ca = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(rsa_key.public_key())
        .serial_number(1)
        .not_valid_before(now - week)
        .not_valid_after(now + 100 * week)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(rsa_key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
    )
    rsa_pem = rsa_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    by_rsa = issue_user_certificate(rsa_ca, rsa_pem, "reader", days=30, now=now)
    assert renewal_reason(by_rsa[CERTIFICATE_KEY], "reader", rsa_ca, now=now, renew_before=week) is None
    with pytest.raises(ValueError, match="not its certificate's"):
        issue_user_certificate(rsa_ca, key, "reader", days=30, now=now)


def test_the_clients_ca_and_certificate_lifetime_come_from_the_environment() -> None:
    settings = OperatorSettings.from_env(
        {
            "LANES_OPERATOR_CLIENTS_CA_CERT": "/ca/ca.crt",
            "LANES_OPERATOR_CLIENTS_CA_KEY": "/ca/ca.key",
            "LANES_OPERATOR_USER_CERTIFICATE_DAYS": "30",
        }
    )
    assert settings.clients_ca == (Path("/ca/ca.crt"), Path("/ca/ca.key"))
    assert settings.renew_certificates_before == datetime.timedelta(days=10)
    assert OperatorSettings.from_env({}).renew_certificates_before == datetime.timedelta(days=30)
    with pytest.raises(ValueError, match="set together"):
        OperatorSettings.from_env({"LANES_OPERATOR_CLIENTS_CA_CERT": "/ca/ca.crt"})
