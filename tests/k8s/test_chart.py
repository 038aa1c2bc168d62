"""The Helm chart, rendered offline for its defaults and the documented scenarios
(charts/lanes/scenarios/): lint-clean, every built-in object valid for the Kubernetes API
(kubernetes-validate --strict), custom resources valid against their CRDs, values refused by
values.schema.json, hardened pods, consistent names and addresses, and the ``helm test`` script
and the broker's start command run for real here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import helm_python
import kubernetes
import kubernetes_validate
import pytest
import yaml

from lanes.broker.__main__ import IN_SYNC_HEALTH
from lanes.cli.main import build_parser
from tests.integration.processes import running_cluster
from tests.k8s.chart import CHART, SCENARIOS, containers, notes, one, pod_specs, render, scenario
from tests.k8s.crds import schema_errors
from tests.k8s.emulator import api_server
from tests.k8s.test_crds import KUBERNETES_VERSION

CUSTOM_KINDS = {
    "PodMonitor": "monitoring.coreos.com/v1",
    "PrometheusRule": "monitoring.coreos.com/v1",
    "ClusterKopfPeering": "kopf.dev/v1",
    "KopfPeering": "kopf.dev/v1",
}
EVERYTHING_ON = {
    "monitoring": {
        "podMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True},
        "dashboards": {"enabled": True},
    },
    "networkPolicy": {"enabled": True},
}
CASES = {"defaults": {}, "everything-on": EVERYTHING_ON, **{path.stem: scenario(path) for path in SCENARIOS}}


def test_the_documented_scenarios_exist() -> None:
    assert {path.stem for path in SCENARIOS} == {"minimal", "production", "storage-classes"}
    documented = (Path(__file__).resolve().parents[2] / "docs" / "kubernetes.md").read_text()
    for path in SCENARIOS:
        assert f"charts/lanes/scenarios/{path.name}" in documented


@pytest.mark.parametrize("values", CASES.values(), ids=CASES.keys())
def test_helm_lint_is_clean(values: dict[str, Any]) -> None:
    report = helm_python.lint(str(CHART), values)
    assert report["errors"] == []
    assert report["messages"] == [], report["messages"]


@pytest.mark.parametrize("values", CASES.values(), ids=CASES.keys())
def test_every_rendered_object_is_valid(values: dict[str, Any]) -> None:
    objects = render(values)
    for obj in objects:
        if obj["kind"] in CUSTOM_KINDS:
            assert obj["apiVersion"] == CUSTOM_KINDS[obj["kind"]]
            if obj["apiVersion"].startswith("kopf.dev"):
                assert schema_errors(obj) == []
            continue
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert len(names) == len(set(names)), "two objects of one kind with one name"


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"broker": {"replicas": 0}}, "/broker/replicas"),
        ({"brokers": 3}, "additional properties 'brokers' not allowed"),
        ({"logFormat": "xml"}, "/logFormat"),
        ({"broker": {"storage": {"size": "lots"}}}, "/broker/storage/size"),
        ({"broker": {"podAntiAffinity": "sometimes"}}, "/broker/podAntiAffinity"),
        ({"monitoring": {"prometheusRule": {"diskFreeRatio": 1.5}}}, "/monitoring/prometheusRule/diskFreeRatio"),
        ({"operator": {"replicas": "two"}}, "/operator/replicas"),
        ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
    ],
)
def test_the_values_schema_refuses_bad_values(values: dict[str, Any], complaint: str) -> None:
    with pytest.raises(helm_python.HelmValuesError, match=re.escape(complaint)):
        render(values)


def test_every_pod_is_hardened_and_sized() -> None:
    for name, spec in pod_specs(render(EVERYTHING_ON)):
        pod_security = spec["securityContext"]
        assert pod_security["runAsNonRoot"] is True, name
        assert pod_security["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in containers(spec):
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, (name, container["name"])
            assert security["allowPrivilegeEscalation"] is False, (name, container["name"])
            assert security["capabilities"] == {"drop": ["ALL"]}, (name, container["name"])
            assert container["resources"]["requests"], (name, container["name"])
            assert "memory" in container["resources"]["limits"], (name, container["name"])
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            assert "/tmp" in mounts or container["name"] == "rack", (name, container["name"])


def test_only_the_rack_init_container_holds_an_api_token() -> None:
    for name, spec in pod_specs(render(EVERYTHING_ON)):
        if "operator" in name:
            continue  # the operator talks to the API
        assert spec.get("automountServiceAccountToken") is False, name
        for container in containers(spec):
            token_mounts = [m for m in container.get("volumeMounts", []) if "serviceaccount" in m["mountPath"]]
            assert bool(token_mounts) == (container["name"] == "rack"), (name, container["name"])


def test_services_probe_their_grpc_health_and_brokers_are_ready_only_in_sync() -> None:
    objects = render()
    for component, port in (("controller", 9093), ("broker", 9092), ("coordinator", 9094)):
        container = one(objects, "StatefulSet", f"lanes-{component}")["spec"]["template"]["spec"]["containers"][0]
        assert container["livenessProbe"]["grpc"] == {"port": port}
        assert container["startupProbe"]["grpc"] == {"port": port}
        expected = {"port": port, "service": IN_SYNC_HEALTH} if component == "broker" else {"port": port}
        assert container["readinessProbe"]["grpc"] == expected
    broker = one(objects, "StatefulSet", "lanes-broker")
    assert broker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 60
    assert broker["spec"]["updateStrategy"] == {"type": "RollingUpdate"}
    assert one(objects, "PodDisruptionBudget", "lanes-broker")["spec"]["maxUnavailable"] == 1
    operator = one(objects, "Deployment", "lanes-operator")["spec"]["template"]["spec"]["containers"][0]
    assert operator["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}


def test_names_and_addresses_fit_together() -> None:
    objects = render(name="prod", namespace="trading")
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    for component in ("controller", "broker", "coordinator"):
        stateful = one(objects, "StatefulSet", f"prod-lanes-{component}")
        headless = services[stateful["spec"]["serviceName"]]
        assert headless["spec"]["clusterIP"] == "None"
        assert headless["spec"]["publishNotReadyAddresses"] is True
        assert headless["spec"]["selector"].items() <= stateful["spec"]["template"]["metadata"]["labels"].items()
    controllers = [f"prod-lanes-controller-{i}.prod-lanes-controller.trading.svc.cluster.local:9093" for i in range(3)]
    broker_args = one(objects, "StatefulSet", "prod-lanes-broker")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--controller {','.join(controllers)}" in broker_args[0], "every controller: nodes find the active one"
    controller = one(objects, "StatefulSet", "prod-lanes-controller")
    controller_args = controller["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert f"--voters {','.join(f'{i}@{c}' for i, c in enumerate(controllers))}" in controller_args
    assert '--node-id "${POD_NAME##*-}"' in controller_args
    assert controller["spec"]["replicas"] == 3
    assert controller["spec"]["podManagementPolicy"] == "Parallel", "the quorum needs a majority to start"
    assert one(objects, "PodDisruptionBudget", "prod-lanes-controller")["spec"]["maxUnavailable"] == 1
    assert '--advertised-host "${POD_NAME}.prod-lanes-broker.trading.svc.cluster.local"' in broker_args[0]
    bootstrap = services["prod-lanes-bootstrap"]
    assert bootstrap["spec"]["selector"]["app.kubernetes.io/component"] == "broker"
    operator = one(objects, "Deployment", "prod-lanes-operator")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in operator["env"]}
    assert env["LANES_BOOTSTRAP"] == "prod-lanes-bootstrap.trading.svc.cluster.local:9092"
    peering = one(objects, "ClusterKopfPeering", "prod-lanes-operator-trading")
    assert f"--peering={peering['metadata']['name']}" in operator["command"]
    assert "lanes-bootstrap.lanes.svc.cluster.local:9092" in notes()


def test_the_operator_may_do_what_it_does_and_no_more() -> None:
    objects = render()
    rules = one(objects, "ClusterRole", "lanes-operator-lanes")["rules"]
    granted = {
        (group, resource, verb)
        for r in rules
        for group in r["apiGroups"]
        for resource in r["resources"]
        for verb in r["verbs"]
    }
    for resource in ("topics", "consumergroups"):
        assert {("lanes.dev", resource, verb) for verb in ("get", "list", "watch", "patch")} <= granted
        assert ("lanes.dev", f"{resource}/status", "patch") in granted
    assert ("", "events", "create") in granted
    assert {("apps", "deployments/scale", "patch"), ("apps", "statefulsets/scale", "get")} <= granted
    assert not any(resource in ("deployments", "statefulsets", "secrets", "pods") for _, resource, _ in granted)
    assert not any(verb in ("delete", "*") for _, _, verb in granted)
    namespaced = render({"operator": {"watchAllNamespaces": False}})
    assert not [o for o in namespaced if o["kind"] == "ClusterRole" and "operator" in o["metadata"]["name"]]
    assert one(namespaced, "Role", "lanes-operator")["metadata"]["namespace"] == "lanes"
    assert one(namespaced, "KopfPeering", "lanes-operator")


def test_the_alert_rules_are_the_rules_file_with_the_thresholds_from_values() -> None:
    rules_file = yaml.safe_load((CHART / "files" / "lanes-alerts.rules.yaml").read_text())
    rendered = one(render(EVERYTHING_ON), "PrometheusRule", "lanes-alerts")
    assert rendered["spec"] == rules_file
    tuned = one(
        render({"monitoring": {"prometheusRule": {"enabled": True, "consumerLagSeconds": 90, "diskFreeRatio": 0.2}}}),
        "PrometheusRule",
        "lanes-alerts",
    )
    exprs = {rule["alert"]: rule["expr"] for group in tuned["spec"]["groups"] for rule in group["rules"]}
    assert exprs["LanesConsumerLagTooHigh"].endswith("> 90")
    assert "< 0.2" in exprs["LanesBrokerDiskFillingUp"]


def test_the_dashboards_ship_as_configmaps_for_grafanas_sidecar() -> None:
    maps = [o for o in render(EVERYTHING_ON) if o["kind"] == "ConfigMap"]
    shipped = {key: value for m in maps for key, value in m["data"].items()}
    for path in (CHART / "dashboards").glob("*.json"):
        assert shipped[path.name] == path.read_text().rstrip("\n")
    assert all(m["metadata"]["labels"]["grafana_dashboard"] == "1" for m in maps)


def test_the_commands_in_the_chart_exist_in_the_image() -> None:
    subcommands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    for _, spec in pod_specs(render(EVERYTHING_ON)):
        for container in containers(spec):
            command = " ".join(container.get("command", []) + container.get("args", []))
            for used in re.findall(r"\blanes (\w+)", command):
                assert used in subcommands, used
            for module in re.findall(r"(?:-m |--module=)([\w.]+)", command):
                assert subprocess.run([sys.executable, "-c", f"import {module}"], check=False).returncode == 0, module


def test_the_broker_start_command_derives_its_id_and_rack(tmp_path: Path) -> None:
    broker = one(render(), "StatefulSet", "lanes-broker")["spec"]["template"]["spec"]["containers"][0]
    script = broker["args"][0].replace("exec lanes broker", "printf '%s\\n'").replace("/var/run/lanes", str(tmp_path))
    (tmp_path / "rack").write_text("eu-west-1b")
    done = subprocess.run(
        ["/bin/sh", "-c", script],
        env={**os.environ, "POD_NAME": "lanes-broker-2"},
        capture_output=True,
        text=True,
        check=True,
    )
    args = done.stdout.splitlines()
    assert args[args.index("--broker-id") + 1] == "3"
    assert args[args.index("--rack") + 1] == "eu-west-1b"
    assert args[args.index("--advertised-host") + 1] == "lanes-broker-2.lanes-broker.lanes.svc.cluster.local"


def test_the_helm_test_produces_and_consumes_a_record_for_real(tmp_path: Path) -> None:
    pod = one(render(), "Pod", "lanes-test-produce-consume")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    script = pod["spec"]["containers"][0]["args"][0]
    with running_cluster(tmp_path / "cluster", brokers=1) as cluster:
        env = {
            **os.environ,
            "LANES_BOOTSTRAP": cluster.describe()["bootstrap"],
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        }
        done = subprocess.run(
            ["/bin/sh", "-ec", script], env=env, capture_output=True, text=True, timeout=120, check=False
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "produced and consumed helm-test-" in done.stdout


def test_the_rack_init_container_reads_the_nodes_zone(tmp_path: Path) -> None:
    with api_server(tmp_path) as api:
        client = kubernetes.config.new_client_from_config(config_file=str(api.kubeconfig))
        kubernetes.client.CoreV1Api(client).create_node(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "zone-b"}},
            }
        )
        env = {**os.environ, "KUBECONFIG": str(api.kubeconfig)}
        command = [
            sys.executable,
            "-m",
            "lanes_operator.node_zone",
            "--node",
            "node-a",
            "--output",
            str(tmp_path / "rack"),
        ]
        subprocess.run(command, env=env, check=True, capture_output=True)
        assert (tmp_path / "rack").read_text() == "zone-b"
        missing = subprocess.run(
            [*command[:4], "node-x", *command[5:]], env=env, capture_output=True, text=True, check=False
        )
        assert missing.returncode == 1
        assert "cannot read node 'node-x' (404" in missing.stderr
