"""The chart installed with the real ``helm`` on a real kube-apiserver of its own (empty: the
chart's CRDs are created by ``helm install`` itself), as a user would: ``helm install`` with the
defaults and with every documented scenario, ``helm upgrade`` with changed values, the examples
applied, ``helm uninstall``. The server checks what offline rendering cannot: CRD schemas and CEL
cost budgets, every object's fields and defaults, admission (a pod's ServiceAccount must exist),
and Helm's ``lookup`` of the CA and admin Secrets across upgrades.

No node runs here (no kubelet, scheduler or controller manager): objects are created and stored,
no pod starts. docs/kubernetes.md#tested-on-a-real-api-server says what is and is not covered."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.k8s.chart import CASES, CHART
from tests.k8s.control_plane import CommandFailedError, ControlPlane, control_plane
from tests.k8s.crds import EXAMPLES_DIR, crds

pytestmark = pytest.mark.slow

#: Kinds of other projects the chart can render (cert-manager, the Prometheus operator). Their
#: real CRDs are not installed here: a stand-in CRD keeping every field lets the server store
#: them, so the rest of such a release is checked.
FOREIGN_KINDS = {
    ("cert-manager.io", "Certificate", "certificates"),
    ("monitoring.coreos.com", "PodMonitor", "podmonitors"),
    ("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
}


def stand_in_crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of this module's own: no CRD until ``helm install`` creates them."""
    with control_plane(tmp_path_factory.mktemp("helm-kubernetes")) as fresh:
        yield fresh


def values_file(directory: Path, values: dict[str, Any]) -> Path:
    path = directory / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


def release_objects(plane: ControlPlane, release: str, namespace: str) -> list[dict[str, Any]]:
    manifest = plane.helm("get", "manifest", release, "-n", namespace)
    return [document for document in yaml.safe_load_all(manifest) if document]


def stored(plane: ControlPlane, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The server's copy of a release's object (fails when it is not there)."""
    scope = [] if obj["kind"].startswith("Cluster") else ["-n", obj["metadata"].get("namespace", namespace)]
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    kind = f"{obj['kind'].lower()}.{group}" if group else obj["kind"].lower()
    return dict(plane.get_json(kind, obj["metadata"]["name"], *scope))


def secret_value(plane: ControlPlane, namespace: str, name: str, key: str) -> str:
    data = plane.get_json("secret", name, "-n", namespace)["data"]
    return base64.b64decode(data[key]).decode()


def test_helm_install_with_the_defaults_creates_the_crds_and_every_object(plane: ControlPlane) -> None:
    printed = plane.helm("install", "lanes", str(CHART), "-n", "lanes", "--create-namespace")
    assert "lanes-bootstrap.lanes.svc.cluster.local:9092" in printed.split("NOTES:", 1)[1], printed
    for crd in crds().values():
        found = plane.get_json("crd", crd["metadata"]["name"])
        assert {c["type"]: c["status"] for c in found["status"]["conditions"]}["Established"] == "True"
    objects = release_objects(plane, "lanes", "lanes")
    kinds = {o["kind"] for o in objects}
    assert {"StatefulSet", "Deployment", "Service", "Role", "RoleBinding", "ServiceAccount", "Secret"} <= kinds
    for obj in objects:
        assert stored(plane, obj, "lanes")["metadata"]["name"] == obj["metadata"]["name"]
    brokers = plane.get_json("statefulset", "lanes-broker", "-n", "lanes")
    assert brokers["spec"]["replicas"] == 3
    # defaulted by the server, not the chart: the server really parsed the pod template
    assert brokers["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    sidecars = [c["name"] for c in brokers["spec"]["template"]["spec"]["initContainers"] if c.get("restartPolicy")]
    assert sidecars == ["node-certificate"], "a native sidecar (restartPolicy Always), kept by the server"


def test_the_helm_test_pod_is_admitted_with_a_service_account_of_its_own(plane: ControlPlane) -> None:
    hooks = [d for d in yaml.safe_load_all(plane.helm("get", "hooks", "lanes", "-n", "lanes")) if d]
    (pod,) = [h for h in hooks if h["kind"] == "Pod"]
    account = pod["spec"]["serviceAccountName"]
    assert account == "lanes-test"
    assert plane.get_json("serviceaccount", account, "-n", "lanes")["automountServiceAccountToken"] is False
    # The ServiceAccount admission plugin refuses a pod whose account does not exist: dry-run it.
    plane.kubectl("create", "--dry-run=server", "-n", "lanes", "-f", "-", stdin=yaml.safe_dump(pod))
    rolebindings = plane.get_json("rolebindings", "-n", "lanes")["items"]
    bound = {s["name"] for rb in rolebindings for s in rb.get("subjects", [])}
    assert account not in bound, "the test pod needs no rights on the API"


def test_every_example_resource_is_created(plane: ControlPlane) -> None:
    created = plane.kubectl("create", "-n", "lanes", "-f", str(EXAMPLES_DIR))
    documents = [d for path in sorted(EXAMPLES_DIR.glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]
    assert created.count(" created") == len(documents), created
    listed = plane.get_json("topics.lanes.dev,consumergroups.lanes.dev,users.lanes.dev", "-n", "lanes")["items"]
    assert sorted(o["metadata"]["name"] for o in listed) == sorted(d["metadata"]["name"] for d in documents)


def test_helm_upgrade_with_changed_values_keeps_the_ca_and_the_admin_password(
    plane: ControlPlane, tmp_path: Path
) -> None:
    ca_before = secret_value(plane, "lanes", "lanes-ca", "ca.crt")
    password_before = secret_value(plane, "lanes", "lanes-admin", "password")
    changed = {"broker": {"replicas": 4}, "operator": {"topicResyncSeconds": 12}}
    plane.helm("upgrade", "lanes", str(CHART), "-n", "lanes", "-f", str(values_file(tmp_path, changed)))
    assert plane.get_json("statefulset", "lanes-broker", "-n", "lanes")["spec"]["replicas"] == 4
    operator = plane.get_json("deployment", "lanes-operator", "-n", "lanes")
    env = {e["name"]: e.get("value") for e in operator["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["LANES_OPERATOR_TOPIC_RESYNC_SECONDS"] == "12"
    assert secret_value(plane, "lanes", "lanes-ca", "ca.crt") == ca_before, "helm's lookup kept the CA"
    assert secret_value(plane, "lanes", "lanes-admin", "password") == password_before
    certificates = plane.get_json("secret", "lanes-broker-tls", "-n", "lanes")["data"]
    assert "broker-4.crt" in certificates, "the new broker has a certificate"
    history = plane.helm("history", "lanes", "-n", "lanes", "-o", "json")
    assert '"status":"deployed"' in history.replace(" ", "")


@pytest.mark.parametrize(("name", "values"), [(name, values) for name, values in CASES.items() if name != "defaults"])
def test_helm_install_of_every_scenario_is_accepted(
    plane: ControlPlane, name: str, values: dict[str, Any], tmp_path: Path
) -> None:
    plane.apply([stand_in_crd(*kind) for kind in sorted(FOREIGN_KINDS)])
    plane.kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd", "podmonitors.monitoring.coreos.com")
    namespace = f"scenario-{name}"
    plane.helm(
        "install", name, str(CHART), "-n", namespace, "--create-namespace", "-f", str(values_file(tmp_path, values))
    )
    for obj in release_objects(plane, name, namespace):
        assert stored(plane, obj, namespace)["kind"] == obj["kind"]


def test_the_server_refuses_what_the_values_schema_lets_through(plane: ControlPlane, tmp_path: Path) -> None:
    """A sanity check that failures surface: an install that cannot work fails, naming why."""
    bad = {"broker": {"storage": {"size": "10 gigs"}}}
    with pytest.raises(CommandFailedError, match=r"broker/storage/size|quantities must match"):
        plane.helm(
            "install", "bad", str(CHART), "-n", "bad", "--create-namespace", "-f", str(values_file(tmp_path, bad))
        )


def test_helm_uninstall_removes_the_release_but_keeps_the_crds_and_the_kept_secrets(plane: ControlPlane) -> None:
    objects = release_objects(plane, "lanes", "lanes")
    plane.helm("uninstall", "lanes", "-n", "lanes", "--wait", "--timeout=60s")
    remaining = plane.get_json("all,secrets,serviceaccounts,roles,rolebindings", "-n", "lanes")["items"]
    names = {(o["kind"], o["metadata"]["name"]) for o in remaining}
    released = {(o["kind"], o["metadata"]["name"]) for o in objects}
    kept = {("Secret", "lanes-ca"), ("Secret", "lanes-clients-ca"), ("Secret", "lanes-admin")}
    assert kept <= names, "the CAs and the admin's password are kept (helm.sh/resource-policy: keep)"
    assert (released - kept) & names == set(), (released - kept) & names
    assert plane.get_json("crd", "topics.lanes.dev")["metadata"]["name"] == "topics.lanes.dev"
