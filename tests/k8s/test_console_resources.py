"""The console's Kubernetes page on a real API server: the Topic and ConsumerGroup resources of
the watched namespace with their conditions, read with the token of the chart's console
ServiceAccount (its Role: get and list those two kinds), and narrowed by each user's own Lanes
rights: a user sees the resources behind the topics and groups it may see, and no others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lanes
from lanes.local.cluster import LocalCluster
from lanes.local.processes import start_service
from tests.integration.console_http import login
from tests.k8s.control_plane import ControlPlane


def _topic(name: str, partitions: int) -> dict[str, Any]:
    return {
        "apiVersion": "lanes.dev/v1alpha1",
        "kind": "Topic",
        "metadata": {"name": name},
        "spec": {"partitions": partitions, "replicationFactor": 1},
    }


def test_the_console_shows_the_resources_behind_what_a_user_may_see(  # noqa: PLR0917 (fixtures)
    kubernetes_api: ControlPlane,
    namespace: str,
    release: list[dict[str, Any]],
    lanes_cluster: LocalCluster,
    bootstrap: str,
    tmp_path: Path,
) -> None:
    group = {
        "apiVersion": "lanes.dev/v1alpha1",
        "kind": "ConsumerGroup",
        "metadata": {"name": "seen-billing"},
        "spec": {"topics": ["seen-orders"]},
    }
    kubernetes_api.apply([_topic("seen-orders", 2), _topic("hidden-payroll", 1), group], "-n", namespace)
    ready = {
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Reconciled",
                    "message": "2 partitions",
                    "lastTransitionTime": "2026-11-29T08:00:00Z",
                }
            ]
        }
    }
    kubernetes_api.kubectl(
        "patch",
        "topic",
        "seen-orders",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(ready),
    )
    with lanes.Admin(bootstrap) as admin:
        admin.create_topic("seen-orders", partitions=2, replication_factor=1)
        admin.create_topic("hidden-payroll", partitions=1, replication_factor=1)
        admin.set_user_password("k8s-viewer", "k8s-viewer-password")
        admin.create_acls([lanes.AclBinding.of("k8s-viewer", "describe", topic="seen-", prefixed=True)])
    with lanes.Consumer(bootstrap, group_id="seen-billing", enable_auto_commit=False) as consumer:
        consumer.commit({lanes.TopicPartition("seen-orders", 0): 0})  # (the group exists in Lanes)

    kubeconfig = kubernetes_api.service_account_kubeconfig(namespace, "lanes-console", tmp_path / "console.kubeconfig")
    ca = str(lanes_cluster.describe()["tls"]["ca"])
    args = ["--bootstrap", bootstrap, "--port", "0", "--tls-ca", ca]
    args += ["--kubernetes-namespaces", namespace, "--kubeconfig", str(kubeconfig)]
    console = start_service("lanes.console", args, tmp_path / "console.log")
    try:
        url = str(console.ready["url"])
        credentials = lanes_cluster.client_credentials
        assert credentials is not None
        status, everything = login(url, ca, "admin", credentials.password).json("/api/kubernetes")
        assert status == 200, everything
        assert {(r["kind"], r["name"]) for r in everything} == {
            ("Topic", "seen-orders"),
            ("Topic", "hidden-payroll"),
            ("ConsumerGroup", "seen-billing"),
        }
        orders = next(r for r in everything if r["name"] == "seen-orders")
        assert orders["ready"] == "True"
        assert orders["conditions"][0]["reason"] == "Reconciled"
        assert orders["summary"].startswith("2 partitions")

        viewer = login(url, ca, "k8s-viewer", "k8s-viewer-password")
        status, seen = viewer.json("/api/kubernetes")
        assert status == 200, seen
        assert [(r["kind"], r["name"]) for r in seen] == [("Topic", "seen-orders")], "no topic or group it may not see"
        status, _, page = viewer.call("GET", "/kubernetes")
        assert status == 200
        assert b"seen-orders" in page
        assert b"hidden-payroll" not in page
    finally:
        console.terminate()
