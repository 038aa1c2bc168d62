"""High availability: two operator replicas with kopf peering, one active. The other pauses, and
takes over when the active one dies (its peering record expires)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes.client import Admin
from tests.e2e.cli import wait_for
from tests.k8s.emulator import ApiServer
from tests.k8s.operator_process import Kube, OperatorProcess

pytestmark = pytest.mark.slow

PEERING = "lanes-operator"
LIFETIME_S = 3


def replica(api: ApiServer, bootstrap: str, log_dir: Path, priority: int) -> OperatorProcess:
    return OperatorProcess(
        api.kubeconfig,
        bootstrap,
        log_dir / f"operator-{priority}.log",
        extra_env={
            "LANES_OPERATOR_PRIORITY": str(priority),
            "LANES_OPERATOR_PEERING_LIFETIME_SECONDS": str(LIFETIME_S),
        },
        extra_args=("--peering", PEERING),
    )


@pytest.fixture
def replicas(
    api: ApiServer, kube: Kube, bootstrap: str, tmp_path: Path
) -> Iterator[tuple[OperatorProcess, OperatorProcess]]:
    kube.custom.create_cluster_custom_object(
        "kopf.dev",
        "v1",
        "clusterkopfpeerings",
        {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": PEERING}},
    )
    standby, active = replica(api, bootstrap, tmp_path, 10), replica(api, bootstrap, tmp_path, 20)
    try:
        yield active.start(), standby.start()
    finally:
        active.stop()
        standby.stop()


def peers(kube: Kube) -> set[int]:
    """Priorities of the replicas that announce themselves in the peering object."""
    peering = kube.custom.get_cluster_custom_object("kopf.dev", "v1", "clusterkopfpeerings", PEERING)
    return {int(peer["priority"]) for peer in (peering.get("status") or {}).values()}


def handled(operator: OperatorProcess, name: str) -> bool:
    return f"[default/{name}] Handler 'create' succeeded" in operator.log_path.read_text()


def test_one_replica_is_active_and_the_other_takes_over_when_it_dies(
    replicas: tuple[OperatorProcess, OperatorProcess], kube: Kube, admin: Admin
) -> None:
    active, standby = replicas
    wait_for(lambda: peers(kube) == {10, 20}, "both replicas in the peering object (the lower one starts paused)")
    kube.create("topics", "ha-first", {"partitions": 1})
    wait_for(lambda: "ha-first" in admin.list_topics(), "the active replica creates the topic")
    wait_for(lambda: handled(active, "ha-first"), "handled by the active replica")
    assert not handled(standby, "ha-first")

    active.kill()  # its peering record stays until it expires
    wait_for(lambda: "Resuming operations" in standby.log_path.read_text(), "the standby resumes", timeout_s=30)
    kube.create("topics", "ha-second", {"partitions": 1})
    wait_for(lambda: "ha-second" in admin.list_topics(), "the former standby creates the next topic")
    assert handled(standby, "ha-second")
