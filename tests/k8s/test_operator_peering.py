"""High availability: two operator replicas with the chart's kopf peering (its KopfPeering object
and Role), one active. The other pauses, and takes over when the active one dies (its peering
record expires)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lanes.client import Admin
from tests.e2e.cli import wait_for
from tests.k8s.control_plane import ControlPlane
from tests.k8s.operator_process import Kube, OperatorProcess, from_release

pytestmark = pytest.mark.slow

PEERING = "lanes-operator"
LIFETIME_S = 3


@pytest.fixture
def replicas(
    kubernetes_api: ControlPlane,
    namespace: str,
    release: list[dict[str, Any]],
    bootstrap: str,
    tmp_path: Path,
) -> Iterator[tuple[OperatorProcess, OperatorProcess]]:
    standby, active = (
        from_release(
            kubernetes_api,
            namespace,
            release,
            bootstrap,
            (tmp_path / str(priority)),
            LANES_OPERATOR_PRIORITY=str(priority),
            LANES_OPERATOR_PEERING_LIFETIME_SECONDS=str(LIFETIME_S),
        )
        for priority in (10, 20)
    )
    try:
        yield active.start(), standby.start()
    finally:
        active.stop()
        standby.stop()


def peers(kube: Kube) -> set[int]:
    """Priorities of the replicas that announce themselves in the chart's peering object."""
    peering = kube.custom.get_namespaced_custom_object("kopf.dev", "v1", kube.namespace, "kopfpeerings", PEERING)
    return {int(peer["priority"]) for peer in (peering.get("status") or {}).values()}


def handled(operator: OperatorProcess, namespace: str, name: str) -> bool:
    return f"[{namespace}/{name}] Handler 'create' succeeded" in operator.log_path.read_text()


def test_one_replica_is_active_and_the_other_takes_over_when_it_dies(
    replicas: tuple[OperatorProcess, OperatorProcess], kube: Kube, admin: Admin
) -> None:
    active, standby = replicas
    wait_for(lambda: peers(kube) == {10, 20}, "both replicas in the peering object (the lower one starts paused)")
    kube.create("topics", "ha-first", {"partitions": 1})
    wait_for(lambda: "ha-first" in admin.list_topics(), "the active replica creates the topic")
    wait_for(lambda: handled(active, kube.namespace, "ha-first"), "handled by the active replica")
    assert not handled(standby, kube.namespace, "ha-first")

    active.kill()  # its peering record stays until it expires
    wait_for(lambda: "Resuming operations" in standby.log_path.read_text(), "the standby resumes", timeout_s=30)
    kube.create("topics", "ha-second", {"partitions": 1})
    wait_for(lambda: "ha-second" in admin.list_topics(), "the former standby creates the next topic")
    # its handler logs success once it returns, a moment after the topic exists (the active one is dead)
    wait_for(lambda: handled(standby, kube.namespace, "ha-second"), "handled by the former standby", timeout_s=10)
