"""TLS material: where a process finds it (``lanes.rpc.tls``) and the local CA that issues it
(``lanes.local.certificates``). The handshakes themselves are proved against a real cluster in
``tests/security/test_tls.py``."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from lanes.local.certificates import create_authority, issue
from lanes.rpc.channels import ChannelCache
from lanes.rpc.tls import TlsFiles, node_identity


def test_files_come_from_the_environment_and_need_a_key_with_a_certificate(tmp_path: Path) -> None:
    assert TlsFiles.from_environment({}) is None
    only_ca = TlsFiles.from_environment({"LANES_TLS_CA": "/ca.crt"})
    assert only_ca == TlsFiles(Path("/ca.crt"))
    full = TlsFiles.from_environment({"LANES_TLS_CA": "/ca", "LANES_TLS_CERT": "/c", "LANES_TLS_KEY": "/k"})
    assert full == TlsFiles(Path("/ca"), Path("/c"), Path("/k"))
    with pytest.raises(ValueError, match="needs its key"):
        TlsFiles(Path("/ca"), cert_file=Path("/c"))


def test_the_local_authority_issues_named_certificates_for_their_hosts(tmp_path: Path) -> None:
    authority = create_authority(tmp_path)
    assert create_authority(tmp_path) == authority, "an existing authority is kept"
    files = issue(authority, tmp_path, node_identity("broker", 1), hosts=["127.0.0.1", "broker-1.lanes.svc"])
    assert files.cert_file is not None
    assert files.key_file is not None
    cert = x509.load_pem_x509_certificate(files.cert_file.read_bytes())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "broker-1"
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert names.get_values_for_type(x509.DNSName) == ["broker-1.lanes.svc"]
    ca = x509.load_pem_x509_certificate(authority.cert_file.read_bytes())
    cert.verify_directly_issued_by(ca)
    assert files.key_file.stat().st_mode & 0o077 == 0, "the key is its owner's only"
    renewed = issue(authority, tmp_path, "broker-1")
    assert renewed == files
    assert x509.load_pem_x509_certificate(files.cert_file.read_bytes()).serial_number != cert.serial_number


def test_a_client_certificate_cannot_serve(tmp_path: Path) -> None:
    files = issue(create_authority(tmp_path), tmp_path, "admin", hosts=(), server=False)
    assert files.cert_file is not None
    cert = x509.load_pem_x509_certificate(files.cert_file.read_bytes())
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)


def test_a_server_does_not_take_half_written_or_mismatched_files(tmp_path: Path) -> None:
    authority = create_authority(tmp_path)
    files = issue(authority, tmp_path, "broker-1")
    other = issue(authority, tmp_path, "broker-2")
    assert files.cert_file is not None
    assert files.key_file is not None
    assert other.key_file is not None
    files.server_credentials(require_client_cert=True)  # whole files: fine
    whole = files.cert_file.read_bytes()
    files.cert_file.write_bytes(whole[:100])
    with pytest.raises(ValueError, match="not a whole PEM"):
        files.server_credentials(require_client_cert=True)
    files.cert_file.write_bytes(whole)
    files.key_file.write_bytes(other.key_file.read_bytes())
    with pytest.raises(ValueError, match="the key is not the certificate's"):
        files.server_credentials(require_client_cert=True)


def test_kept_channels_are_reopened_once_the_tls_files_are_renewed(tmp_path: Path) -> None:
    """A channel presents the client certificate it opened with: a renewed one reaches a
    process's own outgoing calls through a new channel (the old one closes after its calls)."""
    authority = create_authority(tmp_path)
    files = issue(authority, tmp_path, "broker-1")

    async def scenario() -> None:
        cache = ChannelCache(tls=files)
        first = cache.get("127.0.0.1:1")
        assert cache.get("127.0.0.1:1") is first
        assert cache.get("127.0.0.1:2") is not first
        issue(authority, tmp_path, "broker-1")  # renewed: new inode, size or time
        cache._checked_at -= 10
        renewed = cache.get("127.0.0.1:1")
        assert renewed is not first
        assert cache.get("127.0.0.1:1") is renewed
        await cache.close()
        plain = ChannelCache(tls=None)
        assert plain.get("127.0.0.1:1") is plain.get("127.0.0.1:1")
        await plain.close()

    asyncio.run(scenario())
