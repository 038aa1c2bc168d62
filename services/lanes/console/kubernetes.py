"""The Kubernetes resources behind the topics and groups: ``Topic`` and ``ConsumerGroup``
(``lanes.dev/v1alpha1``) of the watched namespaces, with their conditions, for the console's
``/kubernetes`` page.

Read with the console pod's own service account (the chart's Role lets it get and list these two
kinds in the watched namespaces, nothing else), from in-cluster configuration or a kubeconfig.
What a user is shown is then narrowed by the user's own Lanes rights: a resource appears only
when the user may see the topic or group it manages (the Lanes name: ``spec.topicName`` /
``spec.groupId``, else ``metadata.name``), so the page tells nobody of topics the cluster hides
from them. The ``kubernetes`` package is imported only when the page is enabled.

Calls run in a worker thread (the client is synchronous); owned by the console's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

GROUP, VERSION = "lanes.dev", "v1alpha1"
#: the most resources of one kind listed per namespace
LIST_LIMIT = 2_000


@dataclass(frozen=True)
class Resource:
    """One Topic or ConsumerGroup resource, as the page shows it."""

    kind: str
    namespace: str
    name: str
    #: the Lanes topic or group it manages
    lanes_name: str
    summary: str
    ready: str
    conditions: list[dict[str, str]]


def _summary(kind: str, spec: dict[str, Any]) -> str:
    if kind == "Topic":
        parts = [
            f"{spec.get('partitions', '-')} partitions",
            f"replication factor {spec.get('replicationFactor', '-')}",
        ]
        if spec.get("config"):
            parts.append(", ".join(f"{k}={v}" for k, v in sorted(spec["config"].items())))
        return "; ".join(parts)
    parts = [f"topics {', '.join(spec.get('topics', [])) or '-'}"]
    if spec.get("autoscale"):
        parts.append(f"autoscales {spec['autoscale'].get('targetRef', {}).get('name', '?')}")
    return "; ".join(parts)


def resource_of(kind: str, item: dict[str, Any]) -> Resource:
    """A listed object as a ``Resource``."""
    metadata, spec, status = item.get("metadata", {}), item.get("spec", {}), item.get("status", {}) or {}
    name_field = "topicName" if kind == "Topic" else "groupId"
    conditions = [
        {key: str(condition.get(key, "")) for key in ("type", "status", "reason", "message", "lastTransitionTime")}
        for condition in status.get("conditions", []) or []
    ]
    ready = next((c["status"] for c in conditions if c["type"] == "Ready"), "Unknown")
    return Resource(
        kind,
        metadata.get("namespace", ""),
        metadata.get("name", ""),
        spec.get(name_field) or metadata.get("name", ""),
        _summary(kind, spec),
        ready,
        conditions,
    )


class KubernetesResources:
    """Lists the resources of ``namespaces`` (``kubeconfig``: a file; None: in-cluster, else the
    default kubeconfig)."""

    def __init__(self, namespaces: Sequence[str], kubeconfig: str | None = None) -> None:
        import kubernetes  # noqa: PLC0415 - only a console with this page needs the package

        self.namespaces = list(namespaces)
        configuration = kubernetes.client.Configuration()
        if kubeconfig:
            kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            try:
                kubernetes.config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            except kubernetes.config.ConfigException:
                kubernetes.config.load_kube_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        self._api = kubernetes.client.CustomObjectsApi(kubernetes.client.ApiClient(configuration))

    def _list(self) -> list[Resource]:
        found: list[Resource] = []
        for namespace in self.namespaces:
            for kind, plural in (("Topic", "topics"), ("ConsumerGroup", "consumergroups")):
                listed = cast(
                    "dict[str, Any]",
                    self._api.list_namespaced_custom_object(
                        GROUP, VERSION, namespace, plural, limit=LIST_LIMIT, _request_timeout=10
                    ),
                )
                found.extend(resource_of(kind, item) for item in listed.get("items", []))
        return found

    async def visible(self, topics: set[str], groups: set[str]) -> list[Resource]:
        """The resources whose topic or group is among those the user may see."""
        listed = await asyncio.to_thread(self._list)
        return [r for r in listed if r.lanes_name in (topics if r.kind == "Topic" else groups)]
