"""A Kubernetes API for the operator's tests: kmock's ``KubernetesEmulator`` (a stateful, in-memory
API server over real HTTP) made a little more like the real one, served from a background thread
so that tests can talk to it with the official ``kubernetes`` client, as ``kubectl`` would.

What kmock 0.8 leaves out and the operator relies on (../shared/TESTING.md):

- a creation is answered 201 Created;
- ``metadata.resourceVersion`` changes on every write, ``metadata.generation`` on every change of
  the spec, ``uid``, ``namespace`` and ``creationTimestamp`` are set on creation, ``generateName`` gives a name
  (Events are posted that way);
- a JSON patch whose ``test`` of ``/metadata/resourceVersion`` fails is refused with 422, as the
  API server does (kopf's optimistic finalizer patches rely on it);
- writes to a resource with a status subresource keep spec and status apart: a patch of the
  resource ignores ``status``; a patch of ``/status`` changes only ``status``.

Discovery: kopf only watches resources it finds listed, so every resource the operator uses is
declared (``RESOURCES``), the CRDs' with their ``status`` subresource.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import itertools
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import aiohttp.web
import kmock
import yaml
from kmock._internal import enums, rendering

VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}

RESOURCES: dict[str, kmock.ResourceInfo] = {
    "v1/namespaces": kmock.ResourceInfo(kind="Namespace", namespaced=False, verbs=VERBS),
    "v1/events": kmock.ResourceInfo(kind="Event", namespaced=True, verbs=VERBS),
    "v1/nodes": kmock.ResourceInfo(kind="Node", namespaced=False, verbs=VERBS),
    "apiextensions.k8s.io/v1/customresourcedefinitions": kmock.ResourceInfo(
        kind="CustomResourceDefinition", namespaced=False, verbs=VERBS
    ),
    "lanes.dev/v1alpha1/topics": kmock.ResourceInfo(
        kind="Topic", singular="topic", namespaced=True, verbs=VERBS, subresources={"status"}
    ),
    "lanes.dev/v1alpha1/consumergroups": kmock.ResourceInfo(
        kind="ConsumerGroup", singular="consumergroup", namespaced=True, verbs=VERBS, subresources={"status"}
    ),
    "lanes.dev/v1alpha1/users": kmock.ResourceInfo(
        kind="User", singular="user", namespaced=True, verbs=VERBS, subresources={"status"}
    ),
    "v1/secrets": kmock.ResourceInfo(kind="Secret", namespaced=True, verbs=VERBS),
    "apps/v1/deployments": kmock.ResourceInfo(
        kind="Deployment", namespaced=True, verbs=VERBS, subresources={"status", "scale"}
    ),
    "apps/v1/statefulsets": kmock.ResourceInfo(
        kind="StatefulSet", namespaced=True, verbs=VERBS, subresources={"status", "scale"}
    ),
    "kopf.dev/v1/clusterkopfpeerings": kmock.ResourceInfo(kind="ClusterKopfPeering", namespaced=False, verbs=VERBS),
}
WITH_STATUS = {key.rsplit("/", 1)[1] for key, info in RESOURCES.items() if "status" in info.subresources}


class ApiEmulator(kmock.KubernetesEmulator):  # type: ignore[misc]
    """kmock's emulator with resource versions, generations, names and status kept apart."""

    _versions = itertools.count(1)

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if request.resource is not None and request.action in (enums.action.CREATE, enums.action.UPDATE):
            try:
                await self._prepare_write(request)
            except kmock.KubernetesError as exc:
                return await self._render_error(exc)
        response = await super()._handle(request)
        if request.action == enums.action.CREATE and response.status == 200 and not response.prepared:
            response.set_status(201)  # Created, as the API server answers (the kubernetes client expects it)
        return response

    async def _prepare_write(self, request: rendering.Request) -> None:
        version = str(next(self._versions))
        plural = request.resource.plural
        if request.action == enums.action.CREATE:
            meta = request.data.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            if request.namespace:
                meta["namespace"] = request.namespace
            meta.update(
                resourceVersion=version,
                generation=1,
                uid=str(uuid.uuid4()),
                creationTimestamp=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            )
            return
        async with self._lock:
            key = (request.resource, request.namespace, request.name)
            gone = key not in self._objects or self._objects[key].deleted  # a deleted one keeps its history
            current = None if gone else copy.deepcopy(self._objects[key].raw)
        if current is None:
            return  # the emulator answers 404
        if isinstance(request.data, list):  # a JSON patch: check its resourceVersion test here
            current_version = current.get("metadata", {}).get("resourceVersion")
            for op in request.data:
                if (op.get("op"), op.get("path")) == ("test", "/metadata/resourceVersion") and op.get(
                    "value"
                ) != current_version:
                    raise kmock.KubernetesError(status=422, reason="Invalid", message="resourceVersion changed")
            request.data.append({"op": "add", "path": "/metadata/resourceVersion", "value": version})
            return
        if not isinstance(request.data, dict):
            return
        if plural in WITH_STATUS:
            if request.subresource == "status":
                for field in list(request.data):
                    if field != "status":
                        del request.data[field]
            else:
                request.data.pop("status", None)
        meta = request.data.setdefault("metadata", {})
        meta["resourceVersion"] = version
        if "spec" in request.data and request.subresource in (None, "scale"):
            merged = kmock.Object(current)
            merged.patch({"spec": request.data["spec"]})
            if merged.raw.get("spec") != current.get("spec"):
                meta["generation"] = current.get("metadata", {}).get("generation", 1) + 1


class ApiServer:
    """An ``ApiEmulator`` served on 127.0.0.1 from a thread of its own, with a kubeconfig for it."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="api-emulator", daemon=True)
        self._stop: asyncio.Event | None = None
        self._done: Future[None] | None = None

    def __enter__(self) -> ApiServer:
        self._thread.start()
        started: Future[str] = Future()
        self._done = asyncio.run_coroutine_threadsafe(self._serve(started), self._loop)
        self.url = started.result(timeout=10)
        self.kubeconfig.write_text(yaml.safe_dump(kubeconfig_for(self.url)))
        return self

    async def _serve(self, started: Future[str]) -> None:
        self._stop = asyncio.Event()
        async with ApiEmulator() as emulator, kmock.Server(emulator) as server:
            for key, info in RESOURCES.items():
                emulator.resources[key] = info
            self.emulator = emulator
            started.set_result(str(server.url).rstrip("/"))
            await self._stop.wait()

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._done is not None:
            with contextlib.suppress(Exception):
                self._done.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def kubeconfig_for(url: str) -> dict[str, Any]:
    """A kubeconfig whose current context is the emulator at ``url`` (no credentials)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "emulator", "cluster": {"server": url, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "tester", "user": {"token": "test"}}],
        "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "tester"}}],
        "current-context": "emulator",
    }


@contextlib.contextmanager
def api_server(directory: Path) -> Iterator[ApiServer]:
    with ApiServer(directory / "kubeconfig") as server:
        yield server
