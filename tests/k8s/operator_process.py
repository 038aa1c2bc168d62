"""The real operator, ``kopf run`` with the chart's arguments, as a process of its own against a
real API server (its kubeconfig: the chart's ServiceAccount's token) and a real Lanes cluster; and
the ``kubectl``-like calls tests make."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import urllib.request
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from lanes.cli.watch import scrape, total
from tests.e2e.cli import wait_for
from tests.integration.processes import free_port
from tests.k8s.control_plane import ControlPlane

GROUP, VERSION = "lanes.dev", "v1alpha1"

#: Values of the chart installed for the operator's tests: the defaults, but for the operator's
#: periods, which a test wants short.
OPERATOR_VALUES: dict[str, Any] = {"operator": {"topicResyncSeconds": 1, "groupIntervalSeconds": 1}}


@dataclass
class OperatorProcess:
    """``kopf run ARGUMENTS`` of the Lanes operator (``arguments``: the chart's, such as
    ``--module=lanes_operator.main --namespace=NS --peering=NAME``) with a liveness endpoint on a
    free port."""

    kubeconfig: Path
    bootstrap: str
    log_path: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    arguments: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None
    health_port: int = 0
    metrics_port: int = 0

    def start(self) -> OperatorProcess:
        self.health_port = free_port()
        self.metrics_port = free_port()
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "LANES_BOOTSTRAP": self.bootstrap,
            "LANES_OPERATOR_METRICS_PORT": str(self.metrics_port),
            **self.extra_env,
        }
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kopf",
                    "run",
                    *self.arguments,
                    f"--liveness=http://127.0.0.1:{self.health_port}/healthz",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_for(self.healthy, f"the operator's liveness endpoint (log: {self.log_path})", timeout_s=60)
        return self

    def healthy(self) -> bool:
        assert self.process is not None
        assert self.process.poll() is None, f"the operator exited {self.process.returncode}: {self.log()}"
        url = f"http://127.0.0.1:{self.health_port}/healthz"
        with suppress(OSError), urllib.request.urlopen(url, timeout=2) as answer:
            return bool(answer.status == 200)
        return False

    @property
    def metrics_address(self) -> str:
        return f"127.0.0.1:{self.metrics_port}"

    def reconciliations(self, kind: str, result: str) -> float:
        """How many reconciliations of ``kind`` ended in ``result`` (its metrics)."""
        samples, _ = scrape([self.metrics_address])
        return total(samples, "lanes_operator_reconciliations_total", kind=kind, result=result)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def kill(self) -> None:
        """SIGKILL: no cleanup runs (a crash, or a node lost)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def chart_operator_arguments(objects: list[dict[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """The operator's ``kopf run`` arguments (without its liveness endpoint: the test picks a
    port) and its ServiceAccount's name, from the chart's Deployment."""
    deployment = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-operator"))
    pod = deployment["spec"]["template"]["spec"]
    command = pod["containers"][0]["command"]
    assert command[:2] == ["kopf", "run"], command
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"] if "value" in e}
    arguments = [a for a in command[2:] if not a.startswith("--liveness=")]
    return arguments, {"serviceAccount": pod["serviceAccountName"], **env}


def from_release(
    plane: ControlPlane, namespace: str, objects: list[dict[str, Any]], bootstrap: str, directory: Path, **env: str
) -> OperatorProcess:
    """The chart's operator as a local process: its arguments, its periods and grants, its
    ServiceAccount's token; the Lanes cluster's address and credentials from the test."""
    directory.mkdir(parents=True, exist_ok=True)
    arguments, chart = chart_operator_arguments(objects)
    kubeconfig = plane.service_account_kubeconfig(namespace, chart["serviceAccount"], directory / "kubeconfig")
    settings = {
        name: chart[name]
        for name in (
            "LANES_OPERATOR_TOPIC_RESYNC_SECONDS",
            "LANES_OPERATOR_GROUP_INTERVAL_SECONDS",
            "LANES_OPERATOR_PEERING_LIFETIME_SECONDS",
            "LANES_OPERATOR_NAMESPACE_GRANTS",
        )
        if name in chart
    }
    return OperatorProcess(
        kubeconfig,
        bootstrap,
        directory / "operator.log",
        extra_env={"POD_NAMESPACE": namespace, **settings, **env},
        arguments=tuple(arguments),
    )


class Kube:
    """What a test does with ``kubectl``: apply, patch, delete, get custom resources and Events."""

    def __init__(self, kubeconfig: Path, namespace: str = "default") -> None:
        self.client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        self.custom = kubernetes.client.CustomObjectsApi(self.client)
        self.core = kubernetes.client.CoreV1Api(self.client)
        self.apps = kubernetes.client.AppsV1Api(self.client)
        self.namespace = namespace

    def create(self, plural: str, name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
        kind = {"topics": "Topic", "consumergroups": "ConsumerGroup", "users": "User"}[plural]
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": kind,
            "metadata": {"name": name, **metadata},
            "spec": spec,
        }
        return dict(self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, body))

    def get(self, plural: str, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def patch(self, plural: str, name: str, body: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name, body)

    def delete(self, plural: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)

    def condition(self, plural: str, name: str, type_: str = "Ready") -> dict[str, Any]:
        found = self.get(plural, name) or {}
        for condition in found.get("status", {}).get("conditions", []):
            if condition["type"] == type_:
                return dict(condition)
        return {}

    def events(self, name: str) -> list[tuple[str, str, str]]:
        """(type, reason, message) of the Events about the object ``name``, oldest first."""
        events = self.core.list_namespaced_event(self.namespace).items
        return [(e.type, e.reason, e.message) for e in events if e.involved_object.name == name]

    def secret(self, name: str) -> dict[str, str] | None:
        """The Secret's data, decoded; None when there is none."""
        try:
            found = self.core.read_namespaced_secret(name, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return {k: base64.b64decode(v).decode() for k, v in (found.data or {}).items()}

    def put_secret(self, name: str, data: dict[str, str]) -> None:
        """Create the Secret, or replace its data."""
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        if self.secret(name) is None:
            body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": encoded}
            self.core.create_namespaced_secret(self.namespace, body)
        else:
            self.core.patch_namespaced_secret(name, self.namespace, {"data": encoded})

    def create_deployment(self, name: str, replicas: int) -> None:
        labels = {"app": name}
        self.apps.create_namespaced_deployment(
            self.namespace,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "consumer", "image": "lanes:dev"}]},
                    },
                },
            },
        )

    def replicas(self, name: str) -> int:
        return int(self.apps.read_namespaced_deployment(name, self.namespace).spec.replicas)
