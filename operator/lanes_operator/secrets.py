"""The Secrets the operator reads and writes for User resources: a user's password, generated or
given. The official client is synchronous; calls run in a worker thread."""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

#: The label on Secrets the operator generated for a User (its value: the user's name).
USER_LABEL = "lanes.dev/user"


class SecretUnreadableError(Exception):
    """A Secret whose values are not UTF-8 text (a password must be used as it is written)."""


@dataclass(frozen=True)
class StoredSecret:
    """A Secret's decoded data, its version (uid and resourceVersion: any change makes a new
    one), its labels and the uids of its owners."""

    data: dict[str, str]
    version: str
    labels: dict[str, str]
    owner_uids: tuple[str, ...]


class Secrets:
    """Secrets in the namespaces the operator watches."""

    def __init__(self, client: Any) -> None:
        self._core = kubernetes.client.CoreV1Api(client)

    async def read(self, namespace: str, name: str) -> StoredSecret | None:
        """The Secret, or None when there is none; SecretUnreadableError when a value is not UTF-8."""
        try:
            found = await asyncio.to_thread(self._core.read_namespaced_secret, name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        metadata = found.metadata
        assert metadata is not None
        try:
            data = {k: base64.b64decode(v).decode() for k, v in (found.data or {}).items()}
        except (UnicodeDecodeError, ValueError) as exc:
            raise SecretUnreadableError(f"Secret {name} holds a value that is not UTF-8 text") from exc
        return StoredSecret(
            data=data,
            version=f"{metadata.uid}/{metadata.resource_version}",
            labels=dict(metadata.labels or {}),
            owner_uids=tuple(o.uid for o in metadata.owner_references or ()),
        )

    async def create(
        self, namespace: str, name: str, data: dict[str, str], *, labels: dict[str, str], owner: dict[str, Any]
    ) -> StoredSecret:
        """Create the Secret, owned by ``owner`` (an ownerReference: Kubernetes deletes the Secret
        with its owner)."""
        body: Any = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": [owner]},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }
        try:
            await asyncio.to_thread(self._core.create_namespaced_secret, namespace, body)
        except ApiException as exc:
            if exc.status != 409:  # made meanwhile (another replica, or someone): read what is there
                raise
        created = await self.read(namespace, name)
        if created is None:
            raise ApiException(status=404, reason=f"Secret {name} disappeared as it was created")
        return created

    async def delete(self, namespace: str, name: str) -> None:
        """Delete the Secret (gone already is fine)."""
        try:
            await asyncio.to_thread(self._core.delete_namespaced_secret, name, namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
