"""deploy/spark/: the SparkApplication manifests (Kubeflow Spark operator, v1beta2) checked without
a Spark operator: the fields they use against the CRD's schema for them, the image and file paths against
the lanes-spark Dockerfile, the Spark version against its base image, the job arguments through
the jobs' own parsers, and the checkpoint volume (accepted by a real kube-apiserver)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.k8s.control_plane import ControlPlane
from tests.spark.test_jobs import job

ROOT = Path(__file__).resolve().parents[2]
SPARK = ROOT / "deploy" / "spark"
DOCKERFILE = (ROOT / "deploy" / "docker" / "lanes-spark.Dockerfile").read_text()
APPLICATIONS = {
    path.stem: yaml.safe_load(path.read_text()) for path in SPARK.glob("*.yaml") if path.stem != "checkpoints"
}

QUANTITY = {"type": "string", "pattern": r"^[0-9]+[kmgt]?$"}
POD = {
    "type": "object",
    "properties": {
        "cores": {"type": "integer", "minimum": 1},
        "memory": QUANTITY,
        "instances": {"type": "integer", "minimum": 1},
        "serviceAccount": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "volumeMounts": {
            "type": "array",
            "items": {"type": "object", "required": ["name", "mountPath"], "additionalProperties": False,
                      "properties": {"name": {"type": "string"}, "mountPath": {"type": "string"},
                                     "readOnly": {"type": "boolean"}}},
        },
    },
    "additionalProperties": False,
}  # fmt: skip
#: The part of the spark-operator's SparkApplication v1beta2 schema these manifests use.
SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "sparkoperator.k8s.io/v1beta2"},
        "kind": {"const": "SparkApplication"},
        "spec": {
            "type": "object",
            "required": ["type", "mode", "image", "mainApplicationFile", "sparkVersion", "driver", "executor"],
            "additionalProperties": False,
            "properties": {
                "type": {"enum": ["Java", "Scala", "Python", "R"]},
                "pythonVersion": {"enum": ["2", "3"]},
                "mode": {"enum": ["cluster", "client"]},
                "image": {"type": "string"},
                "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
                "mainApplicationFile": {"type": "string"},
                "arguments": {"type": "array", "items": {"type": "string"}},
                "sparkVersion": {"type": "string"},
                "restartPolicy": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "type": {"enum": ["Never", "Always", "OnFailure"]},
                        "onFailureRetryInterval": {"type": "integer"},
                        "onSubmissionFailureRetryInterval": {"type": "integer"},
                        "onFailureRetries": {"type": "integer"},
                    },
                },
                "sparkConf": {"type": "object", "additionalProperties": {"type": "string"}},
                "volumes": {"type": "array"},
                "driver": POD,
                "executor": POD,
            },
        },
    },
}


@pytest.mark.parametrize("name", sorted(APPLICATIONS))
def test_the_application_uses_the_operators_fields_correctly(name: str) -> None:
    application = APPLICATIONS[name]
    errors = [
        f"{'.'.join(map(str, e.path))}: {e.message}"
        for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(application)
    ]
    assert errors == []
    spec = application["spec"]
    assert spec["restartPolicy"]["type"] == "Always", "a streaming job is restarted whenever it stops"
    conf = spec["sparkConf"]
    assert (
        conf["spark.metrics.conf.*.sink.prometheusServlet.class"] == "org.apache.spark.metrics.sink.PrometheusServlet"
    )
    assert (
        spec["driver"]["annotations"]["prometheus.io/path"] == conf["spark.metrics.conf.*.sink.prometheusServlet.path"]
    )
    volume_names = {v["name"] for v in spec["volumes"]}
    for role in ("driver", "executor"):
        assert {m["name"] for m in spec[role]["volumeMounts"]} <= volume_names


@pytest.mark.parametrize("name", sorted(APPLICATIONS))
def test_image_files_and_versions_match_the_dockerfile(name: str) -> None:
    spec = APPLICATIONS[name]["spec"]
    assert spec["image"].rsplit(":", 1)[0].endswith("/lanes-spark")
    assert "COPY spark-apps /opt/lanes-spark" in DOCKERFILE
    path = re.fullmatch(r"local:///opt/lanes-spark/(.+)", spec["mainApplicationFile"])
    assert path, spec["mainApplicationFile"]
    assert (ROOT / "spark-apps" / path.group(1)).is_file()
    base = re.search(r"ARG SPARK_IMAGE=apache/spark:(\d+\.\d+\.\d+)-", DOCKERFILE)
    assert base
    assert base.group(1) == spec["sparkVersion"]


@pytest.mark.parametrize("name", sorted(APPLICATIONS))
def test_the_arguments_are_the_jobs_own(name: str) -> None:
    spec = APPLICATIONS[name]["spec"]
    module = job(Path(spec["mainApplicationFile"]).stem)
    options: Any = module.parse_args(spec["arguments"])
    assert options.bootstrap == "lanes-bootstrap.lanes.svc.cluster.local:9092"
    mounts = [m["mountPath"] for m in spec["driver"]["volumeMounts"]]
    assert any(options.checkpoint.startswith(mount + "/") for mount in mounts), "the checkpoint is on the shared volume"


@pytest.mark.parametrize("name", sorted(APPLICATIONS))
def test_the_job_reaches_the_secure_chart_as_its_own_user(name: str) -> None:
    """The chart is secure by default: the CA file is on the driver and every executor (their
    clients open TLS channels), the password file on the driver (read once when the query is
    planned), both from the release's ConfigMap and the job's Secret."""
    spec = APPLICATIONS[name]["spec"]
    options: Any = job(Path(spec["mainApplicationFile"]).stem).parse_args(spec["arguments"])
    assert options.username == "spark"
    volumes = {v["name"]: v for v in spec["volumes"]}

    def source_of(role: str, path: str) -> dict[str, Any]:
        (mount,) = [m for m in spec[role].get("volumeMounts", []) if path.startswith(m["mountPath"] + "/")]
        return dict(volumes[mount["name"]])

    for role in ("driver", "executor"):
        assert source_of(role, options.tls_ca)["configMap"]["name"] == "lanes-ca"
    assert source_of("driver", options.password_file)["secret"]["secretName"] == "lanes-spark-user"


def test_the_checkpoint_volume_is_shared_storage(kubernetes_api: ControlPlane) -> None:
    claim = yaml.safe_load((SPARK / "checkpoints.yaml").read_text())
    namespace = claim["metadata"]["namespace"]
    kubernetes_api.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
    kubernetes_api.kubectl("create", "--dry-run=server", "-f", str(SPARK / "checkpoints.yaml"))
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for application in APPLICATIONS.values():
        (volume,) = [v for v in application["spec"]["volumes"] if "persistentVolumeClaim" in v]
        assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
