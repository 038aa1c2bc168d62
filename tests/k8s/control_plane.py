"""A real Kubernetes control plane for the tests: etcd and kube-apiserver as processes of their own
on 127.0.0.1, built from their Go modules by ``tools/kube/build-binaries.sh`` and cached under
``~/.cache/lanes/kube``; with the real ``kubectl`` and ``helm`` built the same way.

The fixture makes its own PKI (``cryptography``, no ``openssl`` run): a CA, the API server's
serving certificate (127.0.0.1, localhost, the ``kubernetes`` Service's names and first IP), an
administrator's client certificate in ``system:masters``, and the service-account signing key.
Authorization is RBAC only, so a ServiceAccount's token gets exactly what its Roles grant.

What a control plane without nodes does not do (no kube-controller-manager, no scheduler, no
kubelet): no pods run, a namespace is not given a ``default`` ServiceAccount, deleting an object
does not collect its dependents, and a deleted namespace stays ``Terminating``. Tests here use
objects the API server alone serves: custom resources and their CEL rules, RBAC, Secrets, Events,
the ``scale`` subresource, Helm releases.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import os
import re
import signal
import ssl
import subprocess
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.e2e.cli import wait_for
from tests.integration.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "tools" / "kube" / "build-binaries.sh"
CACHE = Path(os.environ.get("LANES_KUBE_CACHE", Path.home() / ".cache" / "lanes" / "kube"))
#: The pinned versions, from the build script (their one home): KUBERNETES_VERSION, ETCD_VERSION...
PINNED = dict(re.findall(r"^([A-Z]+)_VERSION=(v[0-9.]+)$", BUILD_SCRIPT.read_text(), re.MULTILINE))
SERVICE_RANGE = "10.96.0.0/16"


def binary(component: str) -> Path:
    """The cached binary of ``component`` (etcd, kube-apiserver, kubectl, helm, ...), built first
    when this machine has none (minutes, once: the build script says how long)."""
    path = CACHE / f"{component}-{PINNED.get(component.upper(), PINNED['KUBERNETES'])}"
    if not path.exists():
        subprocess.run([str(BUILD_SCRIPT), component], check=True)
    return path


@dataclass
class Pki:
    """Every certificate and key the control plane uses, as files in ``directory``."""

    directory: Path
    #: Further addresses of the API server's serving certificate (a node's host address).
    extra_hosts: tuple[str, ...] = ()
    _ca_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.UTC)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lanes-test-kubernetes-ca")])
        self._ca = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca_file = self._write("ca.crt", self._ca.public_bytes(serialization.Encoding.PEM))
        service_ip = str(next(ipaddress.ip_network(SERVICE_RANGE).hosts()))
        self.server_cert, self.server_key = self.issue(
            "server",
            "kube-apiserver",
            hosts=[
                "127.0.0.1",
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                service_ip,
                *self.extra_hosts,
            ],
            server=True,
        )
        self.admin_cert, self.admin_key = self.issue("admin", "lanes-test-admin", groups=["system:masters"])
        signing = ec.generate_private_key(ec.SECP256R1())
        self.service_account_key = self._write("sa.key", _private_pem(signing))
        self.service_account_public = self._write(
            "sa.pub",
            signing.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        )

    def issue(
        self,
        file_stem: str,
        common_name: str,
        *,
        groups: Sequence[str] = (),
        hosts: Sequence[str] = (),
        server: bool = False,
    ) -> tuple[Path, Path]:
        """A new key and a certificate for ``common_name`` (a user; ``groups`` as organizations,
        which the API server reads as groups); (certificate file, key file)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
        subject.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        usage = [ExtendedKeyUsageOID.SERVER_AUTH] if server else [ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(subject))
            .issuer_name(self._ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        )
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._ca_key, hashes.SHA256())
        return (
            self._write(f"{file_stem}.crt", cert.public_bytes(serialization.Encoding.PEM)),
            self._write(f"{file_stem}.key", _private_pem(key)),
        )

    def _write(self, name: str, data: bytes) -> Path:
        path = self.directory / name
        path.write_bytes(data)
        path.chmod(0o600)
        return path


def _private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


class HostProcesses:
    """Named processes of one directory (``<name>.log`` each), each in a session of its own:
    started, checked alive, stopped newest first (SIGTERM, then SIGKILL after ``grace_s``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._running: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, command: list[str]) -> None:
        with (self.directory / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._running.append((name, process))

    def check_alive(self) -> None:
        for name, process in self._running:
            assert process.poll() is None, f"{name} exited {process.returncode}: {self.log(name)}"

    def log(self, name: str) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else "(no log)"

    def stop(self, grace_s: float = 15) -> None:
        for _name, process in reversed(self._running):
            if process.poll() is None:
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)


class ControlPlane:
    """etcd and kube-apiserver, started in ``directory``; ``admin_kubeconfig`` is cluster-admin.

    Owned by the test session (one per ``pytest`` run); processes run in sessions of their own and
    are stopped with SIGTERM, then SIGKILL."""

    def __init__(self, directory: Path, *, advertise_address: str = "127.0.0.1") -> None:
        """``advertise_address``: the address the ``kubernetes`` Service's endpoint names. On
        127.0.0.1 (tests without nodes) no endpoint is kept; a node's pods need a host address
        they can reach (``tests/k8s/node.py``), and then the server listens on every address
        and authorizes kubelets by the Node authorizer too."""
        self.directory = directory
        self.advertise_address = advertise_address
        self.pki = Pki(directory / "pki", extra_hosts=(advertise_address,))
        self.url = ""
        self.admin_kubeconfig = directory / "admin.kubeconfig"
        self.processes = HostProcesses(directory)

    def start(self) -> ControlPlane:
        etcd_port, etcd_peer_port, api_port = free_port(), free_port(), free_port()
        self.processes.start(
            "etcd",
            [
                str(binary("etcd")),
                f"--data-dir={self.directory / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer_port}",
                f"--initial-cluster=default=http://127.0.0.1:{etcd_peer_port}",
                "--unsafe-no-fsync",  # a test's etcd: its data is thrown away with it
                "--log-level=warn",
            ],
        )
        pki = self.pki
        self.url = f"https://127.0.0.1:{api_port}"
        self.processes.start(
            "kube-apiserver",
            [
                str(binary("kube-apiserver")),
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                *(
                    ["--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none"]
                    if self.advertise_address == "127.0.0.1"  # it refuses a loopback address to reconcile
                    else [
                        "--bind-address=0.0.0.0",
                        f"--advertise-address={self.advertise_address}",
                        "--authorization-mode=Node,RBAC",
                        "--enable-admission-plugins=NodeRestriction",
                        "--kubelet-preferred-address-types=InternalIP",
                        f"--kubelet-client-certificate={pki.admin_cert}",
                        f"--kubelet-client-key={pki.admin_key}",
                    ]
                ),
                f"--secure-port={api_port}",
                f"--tls-cert-file={pki.server_cert}",
                f"--tls-private-key-file={pki.server_key}",
                f"--client-ca-file={pki.ca_file}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki.service_account_public}",
                f"--service-account-signing-key-file={pki.service_account_key}",
                f"--service-cluster-ip-range={SERVICE_RANGE}",
                *(["--authorization-mode=RBAC"] if self.advertise_address == "127.0.0.1" else []),
                "--anonymous-auth=false",
                "--profiling=false",
                "-v=0",
            ],
        )
        self.admin_kubeconfig.write_text(
            yaml.safe_dump(
                self.kubeconfig(user={"client-certificate": str(pki.admin_cert), "client-key": str(pki.admin_key)})
            )
        )
        wait_for(self.ready, f"kube-apiserver ready at {self.url} (logs in {self.directory})", timeout_s=60)
        return self

    def ready(self) -> bool:
        self.processes.check_alive()
        context = ssl.create_default_context(cafile=str(self.pki.ca_file))
        context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        with suppress(OSError), urllib.request.urlopen(f"{self.url}/readyz", context=context, timeout=2) as answer:
            return bool(answer.status == 200)
        return False

    def kubeconfig(self, *, user: dict[str, str], namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig for this control plane as ``user`` (client certificate files or a token)."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "lanes-test", "cluster": {"server": self.url, "certificate-authority": str(self.pki.ca_file)}}
            ],
            "users": [{"name": "user", "user": user}],
            "contexts": [
                {"name": "lanes-test", "context": {"cluster": "lanes-test", "user": "user", "namespace": namespace}}
            ],
            "current-context": "lanes-test",
        }

    def service_account_kubeconfig(self, namespace: str, name: str, path: Path) -> Path:
        """A kubeconfig holding a fresh token (TokenRequest, one hour) of the ServiceAccount
        ``namespace/name``: what its pod would be mounted, and nothing more."""
        token = self.kubectl("create", "token", name, "-n", namespace, "--duration=1h").strip()
        path.write_text(yaml.safe_dump(self.kubeconfig(user={"token": token}, namespace=namespace)))
        return path

    def kubectl(self, *args: str, kubeconfig: Path | None = None, stdin: str | None = None, check: bool = True) -> str:
        """``kubectl ARGS`` as the administrator (or ``kubeconfig``'s user); its stdout. With
        ``check=False`` a failure returns stdout and stderr together instead of raising."""
        return run_command(
            [str(binary("kubectl")), f"--kubeconfig={kubeconfig or self.admin_kubeconfig}", *args], stdin, check
        )

    def helm(self, *args: str, check: bool = True) -> str:
        """``helm ARGS`` as the administrator, with Helm's own state in this control plane's directory."""
        env = {
            "HELM_CACHE_HOME": str(self.directory / "helm" / "cache"),
            "HELM_CONFIG_HOME": str(self.directory / "helm" / "config"),
            "HELM_DATA_HOME": str(self.directory / "helm" / "data"),
            "KUBECONFIG": str(self.admin_kubeconfig),
        }
        return run_command([str(binary("helm")), *args], None, check, env)

    def apply(self, documents: Sequence[dict[str, Any]] | str, *args: str, check: bool = True) -> str:
        """``kubectl apply -f -`` of ``documents`` (objects, or YAML text), server-side."""
        text = documents if isinstance(documents, str) else yaml.safe_dump_all(documents)
        return self.kubectl(
            "apply", "--server-side", "--field-manager=lanes-tests", "-f", "-", *args, stdin=text, check=check
        )

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", "-o", "json", *args))

    def stop(self) -> None:
        self.processes.stop()


class CommandFailedError(AssertionError):
    """A ``kubectl`` or ``helm`` command exited non-zero; the message holds what it printed."""


def run_command(command: list[str], stdin: str | None, check: bool, env: dict[str, str] | None = None) -> str:
    """``command``'s stdout (``stdin`` fed to it, ``env`` added to this process's); a failure raises
    CommandFailedError with what it printed, or with ``check=False`` returns stdout and stderr."""
    done = subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
        env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        if check:
            what = " ".join(command[:4])
            raise CommandFailedError(f"{what} ... exited {done.returncode}:\n{done.stderr}{done.stdout}")
        return done.stdout + done.stderr
    return done.stdout


@contextmanager
def control_plane(directory: Path, *, advertise_address: str = "127.0.0.1") -> Iterator[ControlPlane]:
    plane = ControlPlane(directory, advertise_address=advertise_address)
    try:
        yield plane.start()
    finally:
        plane.stop()


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
