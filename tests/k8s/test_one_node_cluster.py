"""Pods that run: a one-node Kubernetes cluster on this machine (``tests/k8s/node.py``), the
chart installed on it with the ``lanes`` image built here, as a user would, and what a user
then does. Behind ``LANES_K8S_NODE=1`` (``make test-node``): it needs root, changes the host's
iptables and routes for the pod network, and takes a few minutes; docs/kubernetes.md says what
it covers and how to run it.

- ``helm install`` brings up 3 controllers, 3 brokers, a coordinator and the operator, each
  Ready (their probes pass), on hostPath volumes;
- ``kubectl apply -f deploy/examples/`` makes the trading topics in the running brokers;
- ``helm test`` passes (a pod produces and consumes through the bootstrap Service);
- a rolling restart of the brokers under a producer's load keeps every partition's ISR at or
  above ``min.insync.replicas``, acknowledges every record, and ends with every broker back
  in every ISR;
- ``spark-submit --master k8s://`` of the ``lanes-spark`` image starts a driver pod that runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
import yaml

from tests.e2e.cli import wait_for
from tests.k8s.chart import CHART
from tests.k8s.control_plane import CommandFailedError, ControlPlane, binary, control_plane
from tests.k8s.crds import EXAMPLES_DIR
from tests.k8s.node import Node, host_address
from tests.k8s.podman import build

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(2400),
    pytest.mark.skipif(
        not os.environ.get("LANES_K8S_NODE"), reason="a one-node cluster: LANES_K8S_NODE=1 (make test-node)"
    ),
]

NAMESPACE = "lanes"
TOPICS = {"prices", "orders", "candles", "Trade_Audit"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlane, Node, str]]:
    directory = tmp_path_factory.mktemp("one-node")
    image = build("lanes")
    with control_plane(directory / "plane", advertise_address=host_address()) as plane:
        node = Node(plane, directory / "node")
        try:
            node.start()
            node.load_image(image)
            node.volumes(12)
            yield plane, node, image
        finally:
            node.stop()


def values(image: str) -> dict[str, Any]:
    """The chart's defaults, but for the image built here and requests that fit two cores."""
    repository, tag = image.rsplit(":", 1)
    return {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "broker": {"resources": {"requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}}},
        "coordinator": {"replicas": 1},
        "operator": {"replicas": 1},
    }


def lanes(plane: ControlPlane, *args: str) -> str:
    """``lanes ARGS`` in the operator's pod (it holds the admin's credentials, as the chart mounts them)."""
    return plane.kubectl("exec", "-n", NAMESPACE, "deploy/lanes-operator", "--", "lanes", *args)


def pods_ready(plane: ControlPlane) -> dict[str, bool]:
    found = plane.get_json("pods", "-n", NAMESPACE)["items"]
    return {
        pod["metadata"]["name"]: all(c.get("ready") for c in pod["status"].get("containerStatuses", []))
        and pod["status"].get("phase") == "Running"
        for pod in found
        if "test" not in pod["metadata"]["name"]
    }


def test_helm_install_brings_up_every_pod(cluster: tuple[ControlPlane, Node, str], tmp_path: Path) -> None:
    plane, _, image = cluster
    given = tmp_path / "values.yaml"
    given.write_text(yaml.safe_dump(values(image)))
    plane.helm("install", "lanes", str(CHART), "-n", NAMESPACE, "--create-namespace", "-f", str(given))
    expected = {f"lanes-controller-{i}" for i in range(3)} | {f"lanes-broker-{i}" for i in range(3)}
    expected |= {"lanes-coordinator-0"}
    wait_for(
        lambda: (ready := pods_ready(plane)) and expected <= {n for n, ok in ready.items() if ok} and len(ready) == 8,
        f"every pod Running and Ready: {pods_ready(plane)}",
        timeout_s=300,
    )
    described = json.loads(lanes(plane, "cluster", "describe", "--output", "json"))
    assert [b["state"] for b in described["brokers"]] == ["live"] * 3


def test_the_examples_make_the_trading_topics_in_the_brokers(cluster: tuple[ControlPlane, Node, str]) -> None:
    plane, _, _ = cluster
    plane.kubectl("apply", "-n", NAMESPACE, "-f", str(EXAMPLES_DIR))
    wait_for(lambda: set(lanes(plane, "topics", "list").split()) >= TOPICS, "the example topics in Lanes", 120)
    for name in ("prices", "orders", "candles", "trade-audit"):
        wait_for(
            lambda name=name: any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in plane.get_json("topic.lanes.dev", name, "-n", NAMESPACE)["status"].get("conditions", [])
            ),
            f"Topic {name} Ready",
        )


def test_helm_test_passes(cluster: tuple[ControlPlane, Node, str]) -> None:
    plane, _, _ = cluster
    printed = plane.helm("test", "lanes", "-n", NAMESPACE, "--timeout", "5m")
    assert "Phase:          Succeeded" in printed, printed


def isr_floor(plane: ControlPlane, topic: str) -> tuple[int, int] | None:
    """(smallest ISR over the topic's partitions, the sum of their high-water marks); None when
    the look failed (the bootstrap Service can route one connection to a broker just stopping:
    the observer, not the guarantee, failed then)."""
    try:
        described = json.loads(lanes(plane, "topics", "describe", topic, "--output", "json"))
    except CommandFailedError:
        return None
    partitions = described["partition_details"]
    return min(len(p["isr"]) for p in partitions), sum(p["high_watermark"] for p in partitions)


def test_a_rolling_restart_under_load_keeps_every_isr_at_min_insync(cluster: tuple[ControlPlane, Node, str]) -> None:
    plane, _, _ = cluster
    records = 200_000
    lanes(plane, "topics", "create", "load", "-p", "6", "-r", "3", "--config", "min.insync.replicas=2")
    producer = subprocess.Popen(
        [
            str(binary("kubectl")),
            f"--kubeconfig={plane.admin_kubeconfig}",
            "exec",
            "-n",
            NAMESPACE,
            "deploy/lanes-operator",
            "--",
            "sh",
            "-c",
            # about 10,000 records a second, so the load lasts through the restart
            f"i=0; while [ $i -lt {records} ]; do seq $i $((i+499)); i=$((i+500)); sleep 0.05; done"
            " | lanes produce load --acks all",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_for(lambda: (seen := isr_floor(plane, "load")) is not None and seen[1] > 0, "the load under way")
    plane.kubectl("rollout", "restart", "-n", NAMESPACE, "statefulset/lanes-broker")
    rollout = subprocess.Popen(
        [
            str(binary("kubectl")),
            f"--kubeconfig={plane.admin_kubeconfig}",
            "rollout",
            "status",
            "-n",
            NAMESPACE,
            "statefulset/lanes-broker",
            "--timeout=10m",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    floors = []
    while rollout.poll() is None:
        seen = isr_floor(plane, "load")
        if seen is not None:
            floors.append(seen[0])
        time.sleep(1)
    assert rollout.returncode == 0, rollout.communicate()[0]
    output, _ = producer.communicate(timeout=600)
    assert producer.returncode == 0, output
    assert f"produced {records} records to load" in output, output
    assert len(floors) >= 10, f"too few looks at the ISRs during the restart: {floors}"
    assert min(floors) >= 2, f"an ISR fell below min.insync.replicas during the restart: {floors}"
    wait_for(lambda: isr_floor(plane, "load") == (3, records), "every broker back in every ISR, every record", 120)


def test_a_spark_application_driver_runs_on_the_node(cluster: tuple[ControlPlane, Node, str], tmp_path: Path) -> None:
    """``spark-submit --master k8s://`` with the lanes-spark image: Spark's own Kubernetes client
    creates the driver pod, which runs Spark's Pi example and succeeds."""
    plane, node, _ = cluster
    image = build("lanes-spark")
    node.load_image(image)
    namespace = "spark-jobs"
    plane.kubectl("create", "namespace", namespace)
    plane.kubectl("create", "serviceaccount", "spark", "-n", namespace)
    plane.kubectl(
        "create", "rolebinding", "spark", "--clusterrole=edit", f"--serviceaccount={namespace}:spark", "-n", namespace
    )  # fmt: skip
    pki = plane.pki
    token = plane.kubectl("create", "token", "spark", "-n", namespace, "--duration=1h").strip()
    submit = subprocess.run(
        [
            str(Path(sys.executable).parent / "spark-submit"),
            "--master",
            f"k8s://https://{node.address}:{plane.url.rsplit(':', 1)[1]}",
            "--deploy-mode",
            "cluster",
            "--name",
            "lanes-pi",
            "--conf",
            f"spark.kubernetes.container.image={image}",
            "--conf",
            "spark.kubernetes.container.image.pullPolicy=Never",
            "--conf",
            f"spark.kubernetes.namespace={namespace}",
            "--conf",
            "spark.kubernetes.authenticate.driver.serviceAccountName=spark",
            "--conf",
            f"spark.kubernetes.authenticate.submission.caCertFile={pki.ca_file}",
            "--conf",  # as the spark ServiceAccount (fabric8 reads no EC key files)
            f"spark.kubernetes.authenticate.submission.oauthToken={token}",
            "--conf",
            "spark.kubernetes.driver.request.cores=0.2",
            "--conf",
            "spark.kubernetes.executor.request.cores=0.2",
            "--conf",
            "spark.executor.instances=1",
            "--conf",
            "spark.kubernetes.submission.waitAppCompletion=false",
            "local:///opt/spark/examples/src/main/python/pi.py",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(Path(pyspark.__file__).parent)},
    )
    assert submit.returncode == 0, submit.stderr[-4000:]

    def driver_phase() -> str:
        pods = plane.get_json("pods", "-n", namespace, "-l", "spark-role=driver")["items"]
        return str(pods[0]["status"].get("phase", "")) if pods else ""

    phase = wait_for(lambda: driver_phase() in ("Succeeded", "Failed") and driver_phase(), "the driver ends", 600)
    assert phase == "Succeeded", plane.kubectl("logs", "-n", namespace, "-l", "spark-role=driver", "--tail=40")
