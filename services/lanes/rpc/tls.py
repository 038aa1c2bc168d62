"""TLS for Lanes listeners and channels: where a process finds its certificates, and the gRPC
credentials made from them.

Files (PEM): the certificate of the authority (CA) that signs every certificate of the cluster
(servers and clients trust only it), and the process's own certificate chain and private key. A
server presents its certificate and, with ``require_client_cert``, asks for the caller's (mutual
TLS); a channel trusts the CA and presents its own certificate when it has one.

Rotation: a server reads its files again when their modification times change, at the next
connection's handshake (gRPC asks on every new connection): a renewed certificate or a new CA
bundle is served without a restart. Connections already open keep the certificates they were
made with until they reconnect; a file caught half-written is ignored until it is whole.

Which files a process uses: the ``tls`` argument where one is taken (clients, ``open_channel``),
else the process's ``configure``\\ d default (services, from their ``--tls-*`` flags), else the
environment (``LANES_TLS_CA``, ``LANES_TLS_CERT``, ``LANES_TLS_KEY``), else none: plaintext.
"""

from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union

import grpc

from lanes.security.certificates import check_key_pair

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TlsFiles:
    """A process's TLS material: the CA it trusts and, optionally, its own certificate and key."""

    ca_file: Path
    cert_file: Path | None = None
    key_file: Path | None = None

    def __post_init__(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("a TLS certificate needs its key, and a key its certificate")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> TlsFiles | None:
        """``LANES_TLS_CA`` (and ``LANES_TLS_CERT`` with ``LANES_TLS_KEY``), or None when unset."""
        ca = environ.get("LANES_TLS_CA")
        if not ca:
            return None
        cert, key = environ.get("LANES_TLS_CERT"), environ.get("LANES_TLS_KEY")
        return cls(Path(ca), Path(cert) if cert else None, Path(key) if key else None)

    def _identity(self) -> tuple[bytes, bytes] | None:
        """(private key, certificate chain), when this process has a certificate."""
        if self.cert_file is None or self.key_file is None:
            return None
        return self.key_file.read_bytes(), self.cert_file.read_bytes()

    def stamp(self) -> tuple[int, ...]:
        """The files' inode, size and modification time: a change means they were replaced."""
        paths = [self.ca_file, *(p for p in (self.cert_file, self.key_file) if p is not None)]
        return tuple(value for path in paths for value in _stamp_of(path))

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """Trust the CA; present this process's certificate when it has one."""
        identity = self._identity()
        key, chain = identity if identity is not None else (None, None)
        return grpc.ssl_channel_credentials(self.ca_file.read_bytes(), key, chain)

    def _server_configuration(self, client_ca: Path | None = None) -> grpc.ServerCertificateConfiguration:
        identity = self._identity()
        if identity is None:
            raise ValueError("a TLS server needs a certificate and key (--tls-cert, --tls-key)")
        key, chain = identity
        check_key_pair(key, chain, f"{self.cert_file} and {self.key_file}")
        trusted = (client_ca or self.ca_file).read_bytes()
        return grpc.ssl_server_certificate_configuration([identity], root_certificates=trusted)

    def server_credentials(self, *, require_client_cert: bool, client_ca: Path | None = None) -> grpc.ServerCredentials:
        """Present this process's certificate, read again whenever the files change; with
        ``require_client_cert``, accept only callers with a certificate the CA (or ``client_ca``,
        the clients' CA of a certificate listener, also re-read) signed."""

        def stamp_now() -> tuple[int, ...]:
            return self.stamp() + (_stamp_of(client_ca) if client_ca is not None else ())

        stamp = stamp_now()
        initial = self._server_configuration(client_ca)

        def fetch() -> grpc.ServerCertificateConfiguration | None:
            """Called by gRPC before each new connection's handshake, on one of its threads."""
            nonlocal stamp
            try:
                current = stamp_now()
                if current == stamp:
                    return None
                renewed = self._server_configuration(client_ca)
            except (OSError, ValueError) as exc:  # replaced right now: the next connection tries again
                _log.warning("TLS files changed but cannot be read yet: %s", exc)
                return None
            stamp = current
            _log.info("serving the renewed TLS certificate from %s", self.cert_file)
            return renewed

        # the stub wants a fetcher that always answers; gRPC documents None as "no change"
        return grpc.dynamic_ssl_server_credentials(
            initial,
            fetch,  # type: ignore[arg-type]
            require_client_authentication=require_client_cert,
        )

    def ssl_server_context(self, *, require_client_cert: bool) -> ssl.SSLContext:
        """A context for a listener outside gRPC (Kafka's protocol), as ``server_credentials``
        makes the client listener's: this process's certificate, TLS 1.2 at least, and with
        ``require_client_cert`` only callers presenting a certificate the CA signed (none asked
        for without). Renewed files are read again at the next handshake after they change (the
        handshake's SNI step swaps in a fresh context); no session tickets, so a resumed session
        cannot skip a renewed CA."""

        def context_now() -> ssl.SSLContext:
            if self.cert_file is None or self.key_file is None:
                raise ValueError("a TLS server needs a certificate and key (--tls-cert, --tls-key)")
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(self.cert_file, self.key_file)
            context.options |= ssl.OP_NO_TICKET
            if require_client_cert:
                context.load_verify_locations(cafile=self.ca_file)
                context.verify_mode = ssl.CERT_REQUIRED
            return context

        stamp = self.stamp()
        current = context_now()

        def renewed(connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext) -> None:
            nonlocal stamp, current
            try:
                now = self.stamp()
                if now != stamp:
                    current, stamp = context_now(), now
                    current.sni_callback = renewed
                    _log.info("serving the renewed TLS certificate from %s", self.cert_file)
            except (OSError, ValueError, ssl.SSLError) as exc:  # replaced right now: the next handshake tries again
                _log.warning("TLS files changed but cannot be read yet: %s", exc)
            connection.context = current

        current.sni_callback = renewed
        return current


#: What a client is given: its files, "process" for the process's default, None for plaintext.
ClientTls = Union[TlsFiles, Literal["process"], None]  # noqa: UP007 - a runtime alias


def _stamp_of(path: Path) -> tuple[int, int, int]:
    """A file's inode, size and modification time."""
    stat = path.stat()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


_UNSET = object()
_configured: object = _UNSET
_callers_verified = False


def configure(files: TlsFiles | None, *, callers_verified: bool = False) -> None:
    """Make ``files`` this process's TLS default (a service, from its flags): its server and
    every channel it opens use them. ``callers_verified``: its listener requires client
    certificates, so calls made in a node's name are checked against them (``check_claim``)."""
    global _configured, _callers_verified  # noqa: PLW0603 - the process-wide default, set once at start
    _configured = files
    _callers_verified = files is not None and callers_verified


def process_tls() -> TlsFiles | None:
    """The process's TLS default: ``configure``\\ d, else from the environment, else None."""
    if isinstance(_configured, TlsFiles) or _configured is None:
        return _configured
    return TlsFiles.from_environment()


def callers_verified() -> bool:
    """Whether this process's listener requires client certificates (``configure``)."""
    return _callers_verified


def node_identity(kind: str, node_id: int) -> str:
    """The certificate name of a node: ``broker-1``, ``controller-0``, ``coordinator-1`` (the
    common name ``lanes up --tls`` and the chart give each node's certificate)."""
    return f"{kind}-{node_id}"


def caller_identity(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The common name of the caller's verified certificate; None without one (plaintext, or
    TLS without a client certificate)."""
    names = list(context.auth_context().get("x509_common_name", ()))
    return names[0].decode() if names else None


async def check_claim(context: grpc.aio.ServicerContext[Any, Any], claimed: str) -> None:
    """A caller claiming to be node ``claimed`` (a broker registering or fetching as a follower,
    a coordinator writing its shard, a controller voting) must hold that node's certificate
    when this process's listener requires client certificates: otherwise the call ends with
    PERMISSION_DENIED. Without them there is no identity to check (a plaintext cluster, or TLS
    without client authentication, trusts its network)."""
    if not callers_verified():
        return
    identity = caller_identity(context)
    if identity != claimed:
        await context.abort(
            grpc.StatusCode.PERMISSION_DENIED,
            f"this call is {claimed}'s; the caller's certificate names {identity or 'nobody'}",
        )
