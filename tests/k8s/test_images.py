"""The images, built and run for real with podman (no Docker engine runs here): both Dockerfiles
built by ``tools/images/build.sh`` (``make images``) on local bases made from Debian packages
(``LOCAL_BASE=1``: no public registry can be reached), the ``lanes`` image run as a cluster (a
controller, a broker and a coordinator, each a non-root container with a read-only root in one
pod on the host's network) that serves gRPC health, a produce, a fetch and a consumer group, and
as the operator reconciling a Topic against the real API server; the ``lanes-spark``
image running Spark and importing the data source. The Dockerfiles are also checked for what a
build cannot show (pinned public bases, numeric users)."""

from __future__ import annotations

import json
import re
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import lanes
from tests.e2e.cli import wait_for
from tests.integration.processes import free_port
from tests.k8s.control_plane import ControlPlane
from tests.k8s.podman import build, podman

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
LANES_DOCKERFILE = ROOT / "deploy" / "docker" / "lanes.Dockerfile"
SPARK_DOCKERFILE = ROOT / "deploy" / "docker" / "lanes-spark.Dockerfile"
DOCKERFILES = [LANES_DOCKERFILE, SPARK_DOCKERFILE]
#: The lanes image's size bound: Debian's Python (~175 MB, slim's is ~125 MB) and the environment.
LANES_IMAGE_MAX_BYTES = 450_000_000
COMPILERS = ("gcc", "cc", "c++", "g++", "clang", "x86_64-linux-gnu-gcc")


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", dockerfile.read_text())
    found = []
    for raw in joined.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def final_stage(dockerfile: Path) -> list[tuple[str, str]]:
    steps = instructions(dockerfile)
    return steps[max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM") :]


def test_the_public_bases_are_pinned_build_arguments_and_the_users_numeric() -> None:
    steps = instructions(LANES_DOCKERFILE)
    arguments = dict(rest.split("=", 1) for keyword, rest in steps if keyword == "ARG" and "=" in rest)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", arguments["PYTHON_IMAGE"])
    assert [rest for keyword, rest in steps if keyword == "FROM"] == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]
    assert [rest for keyword, rest in final_stage(LANES_DOCKERFILE) if keyword == "USER"] == ["10001:10001"]
    steps = instructions(SPARK_DOCKERFILE)
    arguments = dict(rest.split("=", 1) for keyword, rest in steps if keyword == "ARG" and "=" in rest)
    assert re.fullmatch(r"apache/spark:\d+\.\d+\.\d+-scala2\.13-java17-python3-ubuntu", arguments["SPARK_IMAGE"])
    assert [rest for keyword, rest in final_stage(SPARK_DOCKERFILE) if keyword == "USER"][-1] == "185"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11", "the images' Python 3.11 satisfies the project"


@pytest.fixture(scope="module")
def lanes_image() -> str:
    return build("lanes")


def shell(image: str, script: str, user: str | None = None) -> str:
    # no network: a container's own would add a virtual interface to the host, which the browser
    # of the console tests running beside takes for a network change (net::ERR_NETWORK_CHANGED)
    return podman(
        "run",
        "--rm",
        "--network=none",
        *(["--user", user] if user else []),
        "--entrypoint",
        "/bin/sh",
        image,
        "-c",
        script,
    )


def test_the_lanes_image_is_small_non_root_and_has_no_compiler(lanes_image: str) -> None:
    (inspected,) = json.loads(podman("image", "inspect", lanes_image))
    assert inspected["Size"] < LANES_IMAGE_MAX_BYTES, f"{inspected['Size'] / 1e6:.0f} MB"
    assert inspected["Config"]["User"] == "10001:10001"
    assert inspected["Config"]["Entrypoint"] == ["lanes"]
    found = shell(lanes_image, f"id -u; for c in {' '.join(COMPILERS)}; do command -v $c || true; done")
    assert found.split() == ["10001"], f"a compiler in the runtime image: {found}"
    codec = shell(
        lanes_image,
        "python -c 'import lanes.protocol._records_c, lanes.client._open_batches_c, lanes_operator.main; print(1)'",
    )
    assert codec.strip() == "1", "the compiled codec and the operator are in the image"
    console = shell(
        lanes_image,
        "python -c 'import lanes.console.app as a; print(all((a.HERE / f).is_file() for f in "
        '("templates/base.html", "static/console.js", "static/console.css")))\'',
    )
    assert console.strip() == "True", "the console with its pages and assets"


class PodCluster:
    """A controller, a broker and a coordinator of the ``lanes`` image, each a container of one
    podman pod, plaintext, on the host's network and its loopback address (a pod network of its
    own would add a virtual interface to the host while the browser of the console tests runs
    beside, which it takes for a network change: net::ERR_NETWORK_CHANGED)."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.name = f"lanes-test-{uuid.uuid4().hex[:8]}"
        self.controller_port, self.controller_internal = free_port(), free_port()
        self.broker_port, self.broker_internal = free_port(), free_port()
        self.coordinator_port, self.coordinator_internal = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.broker_port}"

    def start(self) -> PodCluster:
        podman("pod", "create", "--name", self.name, "--network=host")
        common = ["--host", "127.0.0.1", "--advertised-host", "127.0.0.1", "--metrics-port", "-1"]
        controllers = f"127.0.0.1:{self.controller_internal}"
        self.run(
            "controller",
            "controller",
            "--node-id=0",
            f"--voters=0@{controllers}",
            "--data-dir=/var/lib/lanes",
            f"--port={self.controller_port}",
            f"--internal-port={self.controller_internal}",
            "--default-replication-factor=1",
            "--offsets-topic-partitions=3",
            *common,
        )
        self.run(
            "broker",
            "broker",
            "--broker-id=1",
            "--data-dir=/var/lib/lanes",
            f"--controller={controllers}",
            f"--port={self.broker_port}",
            f"--internal-port={self.broker_internal}",
            *common,
        )
        self.run(
            "coordinator",
            "coordinator",
            "--coordinator-id=1",
            f"--controller={controllers}",
            f"--port={self.coordinator_port}",
            f"--internal-port={self.coordinator_internal}",
            *common,
        )
        return self

    def run(self, role: str, *args: str) -> None:
        """One non-root container with a read-only root, no capabilities, data on a tmpfs."""
        podman(
            "run",
            "--detach",
            f"--pod={self.name}",
            f"--name={self.name}-{role}",
            "--read-only",
            "--tmpfs=/tmp",
            "--tmpfs=/var/lib/lanes:mode=1777",
            "--cap-drop=ALL",
            "--security-opt=no-new-privileges",
            "--env=LANES_LOG_FORMAT=text",
            self.image,
            *args,
        )

    def logs(self) -> str:
        return "\n".join(
            f"--- {role}:\n{podman('logs', '--tail=30', f'{self.name}-{role}', check=False)}"
            for role in ("controller", "broker", "coordinator")
        )

    def stop(self) -> None:
        podman("pod", "rm", "--force", "--time=5", self.name, check=False)


@pytest.fixture(scope="module")
def pod_cluster(lanes_image: str) -> Iterator[PodCluster]:
    cluster = PodCluster(lanes_image).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def serving(port: int) -> bool:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=2)
        except grpc.RpcError:
            return False
    return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)


def test_the_containers_serve_health_produce_fetch_and_a_group(pod_cluster: PodCluster) -> None:
    for port in (pod_cluster.controller_port, pod_cluster.broker_port, pod_cluster.coordinator_port):
        wait_for(lambda port=port: serving(port), f"gRPC health SERVING on {port}\n{pod_cluster.logs()}", timeout_s=60)
    with lanes.Admin(pod_cluster.bootstrap) as admin:
        admin.create_topic("in-containers", partitions=2, replication_factor=1)
    with lanes.Producer(pod_cluster.bootstrap) as producer:
        sent = [producer.send("in-containers", f"record {i}".encode(), key=f"k{i}".encode()) for i in range(20)]
        producer.flush()
    assert {future.result(10).topic for future in sent} == {"in-containers"}
    with lanes.Consumer(pod_cluster.bootstrap, group_id="in-containers", auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["in-containers"])
        seen: list[bytes] = []
        wait_for(lambda: seen.extend(r.value for r in consumer.poll(1000)) or len(seen) >= 20, "20 records back")
        consumer.commit()
    assert sorted(seen) == sorted(f"record {i}".encode() for i in range(20))


def test_the_operator_image_reconciles_a_topic_on_the_real_api_server(
    lanes_image: str, pod_cluster: PodCluster, kubernetes_api: ControlPlane, tmp_path: Path
) -> None:
    """The chart's operator command in the image, on the host's network, with a token of the
    chart's operator ServiceAccount (a release in a namespace of its own)."""
    namespace = "operator-image"
    kubernetes_api.kubectl("create", "namespace", namespace)
    kubernetes_api.helm(
        "install", "lanes", str(ROOT / "charts" / "lanes"), "-n", namespace, "--skip-crds",
        "--set", "security.enabled=false",
    )  # fmt: skip
    config = tmp_path / "kube"
    config.mkdir(mode=0o755)
    kubeconfig = kubernetes_api.service_account_kubeconfig(namespace, "lanes-operator", config / "config")
    for path in (*config.iterdir(), kubernetes_api.pki.ca_file):
        path.chmod(0o644)
    text = kubeconfig.read_text().replace(str(kubernetes_api.pki.ca_file), "/etc/kube/ca.crt")
    kubeconfig.write_text(text)
    (config / "ca.crt").write_bytes(kubernetes_api.pki.ca_file.read_bytes())
    name = f"{pod_cluster.name}-operator"
    podman(
        "run", "--detach", f"--name={name}", "--network=host", "--read-only", "--tmpfs=/tmp",
        "--cap-drop=ALL", "--security-opt=no-new-privileges", f"--volume={config}:/etc/kube:ro",
        "--env=KUBECONFIG=/etc/kube/config", f"--env=LANES_BOOTSTRAP={pod_cluster.bootstrap}",
        "--env=LANES_OPERATOR_METRICS_PORT=-1", "--entrypoint=kopf", lanes_image,
        "run", "--module=lanes_operator.main", f"--namespace={namespace}", "--peering=lanes-operator",
    )  # fmt: skip
    try:
        kubernetes_api.apply(
            [
                {
                    "apiVersion": "lanes.dev/v1alpha1",
                    "kind": "Topic",
                    "metadata": {"name": "from-the-operator-image", "namespace": namespace},
                    "spec": {"partitions": 3, "replicationFactor": 1},
                }
            ]
        )
        with lanes.Admin(pod_cluster.bootstrap) as admin:
            wait_for(
                lambda: "from-the-operator-image" in admin.list_topics(),
                f"the operator container creates the topic: {podman('logs', '--tail=40', name, check=False)}",
                timeout_s=60,
            )
            assert len(admin.describe_topic("from-the-operator-image").partitions) == 3
    finally:
        podman("rm", "--force", "--time=5", name, check=False)


def test_the_spark_image_runs_spark_with_the_data_source_and_no_compiler() -> None:
    image = build("lanes-spark")
    (inspected,) = json.loads(podman("image", "inspect", image))
    assert inspected["Config"]["User"] == "185"
    version = shell(image, "/opt/spark/bin/spark-submit --version 2>&1")  # Spark prints it on stderr
    assert re.search(r"version 4\.\d+\.\d+", version), version
    found = shell(image, f"for c in {' '.join(COMPILERS)}; do command -v $c || true; done")
    assert found.strip() == "", f"a compiler in the runtime image: {found}"
    modules = "lanes_spark, lanes.protocol._records_c, lanes.client._open_batches_c, pyarrow"
    imported = shell(image, f"$PYSPARK_PYTHON -c 'import {modules}; print(1)'")
    assert imported.strip() == "1"
