"""The workloads the autoscaler sizes, through their ``scale`` subresource (the same one
``kubectl scale`` and the HorizontalPodAutoscaler use): read and set ``spec.replicas`` of a
Deployment or StatefulSet. The official client is synchronous; calls run in a worker thread."""

from __future__ import annotations

import asyncio
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException


def api_client() -> Any:
    """A client for the cluster the operator runs in, else for the current kubeconfig context
    (``KUBECONFIG``), as kopf itself logs in."""
    try:
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        return kubernetes.client.ApiClient(configuration)
    except kubernetes.config.ConfigException:
        return kubernetes.config.new_client_from_config()  # type: ignore[no-untyped-call]


class Workloads:
    """Scale of Deployments and StatefulSets."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._apps = kubernetes.client.AppsV1Api(client)

    def close(self) -> None:
        self._client.close()

    async def replicas(self, namespace: str, kind: str, name: str) -> int | None:
        """The workload's desired replicas, or None when it does not exist."""
        read = (
            self._apps.read_namespaced_deployment_scale
            if kind == "Deployment"
            else self._apps.read_namespaced_stateful_set_scale
        )
        try:
            scale = await asyncio.to_thread(read, name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return int(scale.spec.replicas or 0) if scale.spec is not None else 0

    async def scale(self, namespace: str, kind: str, name: str, replicas: int) -> None:
        patch = (
            self._apps.patch_namespaced_deployment_scale
            if kind == "Deployment"
            else self._apps.patch_namespaced_stateful_set_scale
        )
        await asyncio.to_thread(patch, name, namespace, {"spec": {"replicas": replicas}})
