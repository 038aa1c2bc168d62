"""The Helm chart's templates, rendered offline for its defaults and the documented scenarios
(charts/lanes/scenarios/): lint-clean, values refused by values.schema.json, hardened pods,
consistent names and addresses, least RBAC, and the ``helm test`` script, the broker's start
command and the rack init container (with the brokers' token, on the real API server) run for
real here. That the API server accepts every release is test_helm.py's."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.x509.oid import NameOID

from lanes.broker.__main__ import IN_SYNC_HEALTH
from lanes.cli.main import build_parser
from lanes.console.__main__ import parse_args as console_args
from tests.integration.processes import running_cluster
from tests.k8s.chart import (
    CASES,
    CHART,
    EVERYTHING_ON,
    SCENARIOS,
    containers,
    lint,
    one,
    pod_specs,
    render,
)
from tests.k8s.control_plane import CommandFailedError, ControlPlane

CUSTOM_KINDS = {
    "Certificate": "cert-manager.io/v1",
    "PodMonitor": "monitoring.coreos.com/v1",
    "PrometheusRule": "monitoring.coreos.com/v1",
    "ClusterKopfPeering": "kopf.dev/v1",
    "KopfPeering": "kopf.dev/v1",
}


def test_the_documented_scenarios_exist() -> None:
    assert {path.stem for path in SCENARIOS} == {"minimal", "production", "storage-classes"}
    documented = (Path(__file__).resolve().parents[2] / "docs" / "kubernetes.md").read_text()
    for path in SCENARIOS:
        assert f"charts/lanes/scenarios/{path.name}" in documented


@pytest.mark.parametrize("values", CASES.values(), ids=CASES.keys())
def test_helm_lint_is_clean(values: dict[str, Any]) -> None:
    report = lint(values)  # --strict: a warning fails too
    assert "1 chart(s) linted, 0 chart(s) failed" in report
    assert "[WARNING]" not in report, report


@pytest.mark.parametrize("values", CASES.values(), ids=CASES.keys())
def test_every_rendered_object_is_one_of_a_kind(values: dict[str, Any]) -> None:
    """Offline: distinct names, custom kinds at their API versions. The API server itself accepts
    each of these releases in test_helm.py."""
    objects = render(values)
    for obj in objects:
        if obj["kind"] in CUSTOM_KINDS:
            assert obj["apiVersion"] == CUSTOM_KINDS[obj["kind"]]
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
        ({"security": {"enabled": "yes"}}, "/security/enabled"),
        ({"security": {"admin": {"user": "two words"}}}, "/security/admin/user"),
    ],
)
def test_the_values_schema_refuses_bad_values(values: dict[str, Any], complaint: str) -> None:
    with pytest.raises(CommandFailedError, match=re.escape(complaint)):
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
            assert "/tmp" in mounts or container["name"] in ("rack", "node-certificate"), (name, container["name"])


def test_only_the_rack_init_container_holds_an_api_token() -> None:
    for name, spec in pod_specs(render(EVERYTHING_ON)):
        if "operator" in name or "console" in name:
            continue  # the operator talks to the API; the console reads two kinds (its own test)
        assert spec.get("automountServiceAccountToken") is False, name
        for container in containers(spec):
            token_mounts = [m for m in container.get("volumeMounts", []) if "serviceaccount" in m["mountPath"]]
            assert bool(token_mounts) == (container["name"] == "rack"), (name, container["name"])


def test_services_probe_their_health_over_http_and_brokers_are_ready_only_in_sync(tmp_path: Path) -> None:
    """The kubelet's gRPC probe speaks no TLS: probes ask each process's metrics port, which
    answers what its gRPC health service says (checked against a running secure cluster)."""
    objects = render()
    for component, port in (("controller", 9401), ("broker", 9402), ("coordinator", 9403)):
        container = one(objects, "StatefulSet", f"lanes-{component}")["spec"]["template"]["spec"]["containers"][0]
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}
        assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": port}
        ready = f"/healthz?service={IN_SYNC_HEALTH}" if component == "broker" else "/healthz"
        assert container["readinessProbe"]["httpGet"] == {"path": ready, "port": port}
    with running_cluster(tmp_path / "cluster", brokers=1, tls=True, auth=True) as cluster:
        metrics = cluster.broker_processes[1].ready["metrics_address"]
        for path, status in (
            ("/healthz", 200),
            (f"/healthz?service={IN_SYNC_HEALTH}", 200),
            ("/healthz?service=x", 404),
        ):
            deadline = time.monotonic() + 30
            while True:
                try:
                    answered = urllib.request.urlopen(f"http://{metrics}{path}", timeout=5).status
                except urllib.error.HTTPError as error:
                    answered = error.code
                if answered == status or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert answered == status, path
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
    controllers = [f"prod-lanes-controller-{i}.prod-lanes-controller.trading.svc.cluster.local:9193" for i in range(3)]
    broker_args = one(objects, "StatefulSet", "prod-lanes-broker")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--controller {','.join(controllers)}" in broker_args[0], "every controller's internal listener"
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
    peering = one(objects, "KopfPeering", "prod-lanes-operator")
    assert f"--peering={peering['metadata']['name']}" in operator["command"]


def test_the_operator_may_do_what_it_does_and_no_more() -> None:
    """In its release's namespace by default (a Topic elsewhere must not steer the cluster, nor
    the operator scale other teams' workloads); cluster-wide when asked."""
    objects = render({"operator": {"watchAllNamespaces": True}})
    rules = one(objects, "ClusterRole", "lanes-operator-lanes")["rules"]
    assert one(objects, "ClusterKopfPeering", "lanes-operator-lanes")
    granted = {
        (group, resource, verb)
        for r in rules
        for group in r["apiGroups"]
        for resource in r["resources"]
        for verb in r["verbs"]
    }
    for resource in ("topics", "consumergroups", "users"):
        assert {("lanes.dev", resource, verb) for verb in ("get", "list", "watch", "patch")} <= granted
        assert ("lanes.dev", f"{resource}/status", "patch") in granted
    assert ("", "events", "create") in granted
    assert {("apps", "deployments/scale", "patch"), ("apps", "statefulsets/scale", "get")} <= granted
    assert not any(resource in ("deployments", "statefulsets", "pods") for _, resource, _ in granted)
    # Users' Secrets: read by name, written, deleted; never listed or watched (no enumerating them)
    assert {verb for _, resource, verb in granted if resource == "secrets"} == {"get", "create", "delete"}
    assert not any(verb == "*" or (verb == "delete" and resource != "secrets") for _, resource, verb in granted)
    namespaced = render()
    assert not [o for o in namespaced if o["kind"] == "ClusterRole" and "operator" in o["metadata"]["name"]]
    assert one(namespaced, "Role", "lanes-operator")["metadata"]["namespace"] == "lanes"
    assert one(namespaced, "RoleBinding", "lanes-operator")["metadata"]["namespace"] == "lanes"
    assert one(namespaced, "KopfPeering", "lanes-operator")
    command = one(namespaced, "Deployment", "lanes-operator")["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--namespace=lanes" in command
    assert "--all-namespaces" not in command


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
    maps = [
        o for o in render(EVERYTHING_ON) if o["kind"] == "ConfigMap" and "grafana_dashboard" in o["metadata"]["labels"]
    ]
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


def test_the_console_holds_no_rights_of_its_own_and_its_flags_are_the_consoles() -> None:
    objects = render()
    deployment = one(objects, "Deployment", "lanes-console")
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert container["command"] == ["/opt/lanes/bin/python", "-m", "lanes.console"]
    options = console_args(container["args"])
    assert options.login == "required", "users log in with their own Lanes users"
    assert options.bootstrap == "lanes-bootstrap.lanes.svc.cluster.local:9092"
    assert options.tls_ca == "/etc/lanes/ca/ca.crt"
    assert not options.read_only
    assert not options.secure_cookies
    assert options.kubernetes_namespaces == "lanes"
    assert [v.get("configMap", {}).get("name") for v in spec["volumes"] if "secret" in v or "configMap" in v] == [
        "lanes-ca"
    ], "the CA only: no admin password, no certificate"
    role = one(objects, "Role", "lanes-console")
    assert role["rules"] == [
        {"apiGroups": ["lanes.dev"], "resources": ["topics", "consumergroups"], "verbs": ["get", "list"]}
    ], "its token reads the two kinds of the Kubernetes page, nothing else"
    assert one(objects, "RoleBinding", "lanes-console")["subjects"][0]["name"] == "lanes-console"
    hidden = render({"console": {"kubernetes": {"enabled": False}}})
    hidden_spec = one(hidden, "Deployment", "lanes-console")["spec"]["template"]["spec"]
    assert hidden_spec["automountServiceAccountToken"] is False
    assert not [o for o in hidden if o["kind"] == "Role" and o["metadata"]["name"] == "lanes-console"]
    assert one(objects, "Service", "lanes-console")["spec"]["ports"][0]["port"] == 9080
    allowed = one(objects, "NetworkPolicy", "lanes")["spec"]["ingress"][0]["ports"]
    assert {"port": 9080} in allowed

    exposed = render(EVERYTHING_ON)
    options = console_args(
        one(exposed, "Deployment", "lanes-console")["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    assert options.read_only
    assert options.secure_cookies, "behind an HTTPS Ingress"
    assert options.kubernetes_namespaces == "lanes,team-a", "the operator's namespaces"
    ingress = one(exposed, "Ingress", "lanes-console")["spec"]
    assert ingress["tls"] == [{"hosts": ["console.example.com"], "secretName": "console-tls"}]
    assert ingress["rules"][0]["http"]["paths"][0]["backend"]["service"] == {
        "name": "lanes-console",
        "port": {"name": "http"},
    }

    plain = render({"security": {"enabled": False}})
    options = console_args(
        one(plain, "Deployment", "lanes-console")["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    assert options.login == "none"
    assert options.tls_ca is None
    assert not any(
        o["kind"] == "Deployment" and o["metadata"]["name"] == "lanes-console"
        for o in render({"console": {"enabled": False}})
    )


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
    assert args[args.index("--tls-cert") + 1] == "/etc/lanes/tls/broker-3.crt", (
        "each broker presents its own certificate"
    )
    assert args[args.index("--internal-port") + 1] == "9192"
    assert args[args.index("--rack") + 1] == "eu-west-1b"
    assert args[args.index("--advertised-host") + 1] == "lanes-broker-2.lanes-broker.lanes.svc.cluster.local"


def test_the_helm_test_produces_and_consumes_a_record_for_real(tmp_path: Path) -> None:
    pod = one(render(), "Pod", "lanes-test-produce-consume")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    # The kubelet expands $(VAR) and turns $$ into $ in args before the shell sees them (a $$ meant
    # for the shell broke the real helm test): run what the shell would get.
    script = re.sub(r"\$\$", "$", pod["spec"]["containers"][0]["args"][0])
    assert not re.search(r"\$\([A-Za-z_][A-Za-z0-9_]*\)", script), "no $(VAR) the kubelet would expand"
    pod_env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert pod_env["LANES_USERNAME"] == "admin"
    with running_cluster(tmp_path / "cluster", brokers=1, tls=True, auth=True) as cluster:
        described = cluster.describe()
        env = {  # the pod's security settings, pointed at this cluster's CA and admin password
            **os.environ,
            "LANES_BOOTSTRAP": described["bootstrap"],
            "LANES_TLS_CA": described["tls"]["ca"],
            "LANES_USERNAME": described["user"]["name"],
            "LANES_PASSWORD_FILE": described["user"]["password_file"],
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        }
        done = subprocess.run(
            ["/bin/sh", "-ec", script], env=env, capture_output=True, text=True, timeout=120, check=False
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "produced and consumed helm-test-" in done.stdout


def test_the_rack_init_container_reads_the_nodes_zone(
    kubernetes_api: ControlPlane, namespace: str, release: list[dict[str, Any]], tmp_path: Path
) -> None:
    """With the brokers' ServiceAccount's token (the chart's ClusterRole: get nodes, nothing more)."""
    kubernetes_api.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "zone-b"}},
            }
        ]
    )
    kubeconfig = kubernetes_api.service_account_kubeconfig(namespace, "lanes-broker", tmp_path / "kubeconfig")
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    command = [sys.executable, "-m", "lanes_operator.node_zone", "--node", "node-a", "--output", str(tmp_path / "rack")]
    subprocess.run(command, env=env, check=True, capture_output=True)
    assert (tmp_path / "rack").read_text() == "zone-b"
    missing = subprocess.run(
        [*command[:4], "node-x", *command[5:]], env=env, capture_output=True, text=True, check=False
    )
    assert missing.returncode == 1
    assert "cannot read node 'node-x' (404" in missing.stderr
    listing = kubernetes_api.kubectl("get", "nodes", kubeconfig=kubeconfig, check=False)
    assert "forbidden" in listing, "the brokers may read a node by name, not list them"


def test_security_is_on_by_default_with_a_certificate_per_node() -> None:
    """The chart's CA signs one certificate per node, naming it as the node's identity and its
    pod's stable DNS name; nodes run with TLS, an internal listener, users and ACLs; the admin
    user is made with the cluster from a Secret; clients (the operator, helm test) get the CA and
    the admin's password."""
    objects = render(name="prod", namespace="trading")
    authority = x509.load_pem_x509_certificate(
        base64.b64decode(one(objects, "Secret", "prod-lanes-ca")["data"]["ca.crt"])
    )
    assert (
        one(objects, "ConfigMap", "prod-lanes-ca")["data"]["ca.crt"].strip()
        == authority.public_bytes(serialization.Encoding.PEM).decode().strip()
    )
    for component, ids in (("controller", range(3)), ("broker", range(1, 4)), ("coordinator", range(1, 3))):
        secret = one(objects, "Secret", f"prod-lanes-{component}-tls")["data"]
        for ordinal, node_id in enumerate(ids):
            cert = x509.load_pem_x509_certificate(base64.b64decode(secret[f"{component}-{node_id}.crt"]))
            assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == f"{component}-{node_id}"
            names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
                x509.DNSName
            )
            assert f"prod-lanes-{component}-{ordinal}.prod-lanes-{component}.trading.svc.cluster.local" in names
            if component == "broker":  # clients start from the bootstrap Service, and verify it
                assert "prod-lanes-bootstrap.trading.svc.cluster.local" in names
            authority.public_key().verify(  # type: ignore[union-attr, call-arg]
                cert.signature,
                cert.tbs_certificate_bytes,
                padding.PKCS1v15(),
                cert.signature_hash_algorithm,  # type: ignore[arg-type]
            )
        stateful = one(objects, "StatefulSet", f"prod-lanes-{component}")["spec"]["template"]["spec"]
        args = stateful["containers"][0]["args"][0]
        for flag in (
            "--tls-ca /etc/lanes/tls/ca.crt",
            "--auth required",
            '--super-users "User:admin"',
            "--internal-port",
        ):
            assert flag in args, (component, flag)
        assert {"name": "tls", "mountPath": "/etc/lanes/tls", "readOnly": True} in stateful["containers"][0][
            "volumeMounts"
        ]
        assert {v["name"]: v for v in stateful["volumes"]}["tls-kind"]["secret"][
            "secretName"
        ] == f"prod-lanes-{component}-tls"
    controller_args = one(objects, "StatefulSet", "prod-lanes-controller")["spec"]["template"]["spec"]["containers"][0][
        "args"
    ][0]
    assert "--bootstrap-user admin --bootstrap-password-file /etc/lanes/admin/password" in controller_args
    assert len(base64.b64decode(one(objects, "Secret", "prod-lanes-admin")["data"]["password"])) == 32
    operator = one(objects, "Deployment", "prod-lanes-operator")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in operator["env"]}
    assert env["LANES_TLS_CA"] == "/etc/lanes/ca/ca.crt"
    assert env["LANES_PASSWORD_FILE"] == "/etc/lanes/admin/password"
    policy = one(objects, "NetworkPolicy", "prod-lanes")["spec"]["ingress"]
    internal = next(rule for rule in policy if {"port": 9192} in rule["ports"])
    assert internal["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "lanes", "app.kubernetes.io/instance": "prod"}}}
    ]
    clients = next(rule for rule in policy if {"port": 9092} in rule["ports"])
    assert {"port": 9292} in clients["ports"], "certificate listeners take clients where client listeners do"

    # Certificate listeners: every node serves one with the clients' CA (a CA of its own, whose
    # key only the operator mounts, to issue users' certificates).
    clients_ca = x509.load_pem_x509_certificate(
        base64.b64decode(one(objects, "Secret", "prod-lanes-clients-ca")["data"]["ca.crt"])
    )
    assert clients_ca.subject != authority.subject
    assert one(objects, "ConfigMap", "prod-lanes-clients-ca")["data"]["ca.crt"].strip() == (
        clients_ca.public_bytes(serialization.Encoding.PEM).decode().strip()
    )
    for component, port in (("controller", 9293), ("broker", 9292), ("coordinator", 9294)):
        pod = one(objects, "StatefulSet", f"prod-lanes-{component}")["spec"]["template"]["spec"]
        assert (
            f"--certificate-port {port} --tls-client-ca /etc/lanes/clients-ca/ca.crt" in pod["containers"][0]["args"][0]
        )
        assert {"name": "certificates", "containerPort": port} in pod["containers"][0]["ports"]
        assert {v["name"]: v for v in pod["volumes"]}["clients-ca"]["configMap"] == {"name": "prod-lanes-clients-ca"}
        service = one(objects, "Service", f"prod-lanes-{component}")["spec"]["ports"]
        assert {"name": "certificates", "port": port, "targetPort": "certificates"} in service
    bootstrap_ports = one(objects, "Service", "prod-lanes-bootstrap")["spec"]["ports"]
    assert {"name": "certificates", "port": 9292, "targetPort": "certificates"} in bootstrap_ports
    env = {e["name"]: e.get("value") for e in operator["env"]}
    assert env["LANES_OPERATOR_CLIENTS_CA_KEY"] == "/etc/lanes/clients-ca/ca.key"
    mounting_the_key = [
        o["metadata"]["name"]
        for o in objects
        if o["kind"] in ("Deployment", "StatefulSet", "Job", "Pod")
        for v in (o["spec"].get("template", o)["spec"].get("volumes") or [])
        if v.get("secret", {}).get("secretName") == "prod-lanes-clients-ca"
    ]
    assert mounting_the_key == ["prod-lanes-operator"]

    insecure = render({"security": {"enabled": False}})
    assert not [o for o in insecure if o["kind"] == "Secret"]
    for component in ("controller", "broker", "coordinator"):
        args = one(insecure, "StatefulSet", f"lanes-{component}")["spec"]["template"]["spec"]["containers"][0]["args"][
            0
        ]
        assert "--tls-ca" not in args
        assert "--auth" not in args


def test_an_oauth_issuer_reaches_every_node_and_needs_its_audience_and_keys() -> None:
    oauth = {"issuer": "https://id.example.com", "audience": "lanes", "jwksUri": "https://id.example.com/jwks"}
    objects = render({"security": {"oauth": oauth}})
    for component in ("controller", "broker", "coordinator"):
        args = one(objects, "StatefulSet", f"lanes-{component}")["spec"]["template"]["spec"]["containers"][0]["args"][0]
        for flag in (
            '--oauth-issuer "https://id.example.com"',
            '--oauth-audience "lanes"',
            '--oauth-jwks "https://id.example.com/jwks"',
            '--oauth-principal-claim "sub"',
        ):
            assert flag in args, (component, flag)
    plain = one(render(), "StatefulSet", "lanes-broker")["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "--oauth" not in plain
    with pytest.raises(Exception, match=r"security\.oauth\.audience is needed"):
        render({"security": {"oauth": {"issuer": "https://id.example.com"}}})


@pytest.mark.parametrize("cert_manager", [False, True], ids=["chart CA", "cert-manager"])
def test_a_node_container_mounts_its_own_certificate_only(cert_manager: bool) -> None:
    """Every node certificate of a kind is mounted in the node-certificate sidecar only (a
    native sidecar: started, and its first copy whole, before the node); the node's container
    mounts the in-memory directory it fills."""
    values: dict[str, Any] = {}
    if cert_manager:
        values = {"security": {"certManager": {"enabled": True, "issuerRef": {"name": "ca"}, "caCertificate": "x"}}}
    for component in ("controller", "broker", "coordinator"):
        template = one(render(values), "StatefulSet", f"lanes-{component}")["spec"]["template"]["spec"]
        assert {v["name"]: v for v in template["volumes"]}["tls"] == {
            "name": "tls",
            "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"},
        }
        holding_every_node = [
            container["name"]
            for container in containers(template)
            if any(m["name"] == "tls-kind" for m in container.get("volumeMounts", []))
        ]
        assert holding_every_node == ["node-certificate"], component
        sidecar = template["initContainers"][0]
        assert sidecar["name"] == "node-certificate"
        assert sidecar["restartPolicy"] == "Always"
        assert sidecar["startupProbe"]["exec"]["command"] == ["test", "-f", "/etc/lanes/tls/ca.crt"]
        assert f"--kind={component}" in sidecar["command"]
        assert not template.get("shareProcessNamespace"), "the node's processes would reach the sidecar's files"


def test_the_node_certificate_sidecar_publishes_its_pods_certificate_and_renewals(tmp_path: Path) -> None:
    """The sidecar's command from the chart, run on the chart's broker Secret: broker pod 2 gets
    broker 3's certificate and key and the CA, nothing of brokers 1 and 2, readable by the pod's
    group only. A renewal is published as one set (the names are links through one ``..data``
    link, swapped at once); a certificate whose key is another's is not published."""
    objects = render()
    source, target = tmp_path / "tls-kind", tmp_path / "tls"
    source.mkdir()
    target.mkdir()
    for name, content in one(objects, "Secret", "lanes-broker-tls")["data"].items():
        (source / name).write_bytes(base64.b64decode(content))
    sidecar = one(objects, "StatefulSet", "lanes-broker")["spec"]["template"]["spec"]["initContainers"][0]
    command = [
        {"python": sys.executable, "--pod-name=$(POD_NAME)": "--pod-name=lanes-broker-2"}.get(part, part)
        for part in sidecar["command"]
    ]
    command = [part.replace("/etc/lanes", str(tmp_path)) for part in command]

    def publish() -> subprocess.CompletedProcess[str]:
        return subprocess.run([*command, "--once"], capture_output=True, text=True, check=False)

    assert "published broker-3.crt, broker-3.key, ca.crt" in publish().stderr
    names = ["broker-3.crt", "broker-3.key", "ca.crt"]
    assert sorted(p.name for p in target.iterdir() if not p.name.startswith("..")) == names
    for name in names:
        assert (target / name).read_bytes() == (source / name).read_bytes()
        assert (target / name).stat().st_mode & 0o777 == 0o440
        assert os.readlink(target / name) == f"..data/{name}"
    cert = x509.load_pem_x509_certificate((target / "broker-3.crt").read_bytes())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "broker-3"
    first = os.readlink(target / "..data")
    assert "published" not in publish().stderr, "an unchanged set is left alone"

    (source / "broker-3.crt").write_bytes((source / "broker-1.crt").read_bytes())  # half a renewal
    refused = publish()
    assert refused.returncode == 1
    assert "broker-3.crt and broker-3.key: the key is not the certificate's" in refused.stderr
    assert (target / "broker-3.crt").read_bytes() == cert.public_bytes(serialization.Encoding.PEM)
    (source / "broker-3.key").write_bytes((source / "broker-1.key").read_bytes())  # the whole renewal
    assert "published" in publish().stderr
    assert (target / "broker-3.crt").read_bytes() == (source / "broker-1.crt").read_bytes()
    assert (target / "broker-3.key").read_bytes() == (source / "broker-1.key").read_bytes()
    assert os.readlink(target / "..data") != first
    assert not (target / first).exists(), "the previous set is removed"

    (source / "broker-3.key").unlink()
    missing = publish()
    assert missing.returncode == 1
    assert "broker-3.key" in missing.stderr


def test_cert_manager_issues_one_certificate_per_node_projected_where_the_nodes_read_them() -> None:
    """With ``security.certManager``, the chart makes no CA: a cert-manager Certificate per node
    (its identity as common name, the same DNS names as the chart's own certificates, server and
    client use) in a Secret per node, projected into the files the nodes read; clients trust the
    issuer's CA from the ConfigMap. cert-manager renews them; nodes reload renewed files."""
    ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    values = {
        "security": {
            "certManager": {
                "enabled": True,
                "issuerRef": {"name": "lanes-ca", "kind": "ClusterIssuer"},
                "caCertificate": ca_pem,
            }
        },
        "broker": {"replicas": 3},
    }
    objects = render(values)
    nodes_ca = [
        o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"] in ("lanes-ca", "lanes-broker-tls")
    ]
    assert not nodes_ca, "no nodes' CA or certificates of the chart's own (its clients' CA signs only users)"
    assert one(objects, "ConfigMap", "lanes-ca")["data"]["ca.crt"].strip() == ca_pem
    for component, ids in (("controller", range(3)), ("broker", range(1, 4)), ("coordinator", range(1, 3))):
        for ordinal, node_id in enumerate(ids):
            certificate = one(objects, "Certificate", f"lanes-{component}-{node_id}")
            assert certificate["apiVersion"] == "cert-manager.io/v1"
            spec = certificate["spec"]
            assert spec["commonName"] == f"{component}-{node_id}"
            assert spec["secretName"] == f"lanes-{component}-{node_id}-tls"
            assert f"lanes-{component}-{ordinal}.lanes-{component}.lanes.svc.cluster.local" in spec["dnsNames"]
            assert {"server auth", "client auth"} <= set(spec["usages"])
            assert spec["issuerRef"] == {"name": "lanes-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
        template = one(objects, "StatefulSet", f"lanes-{component}")["spec"]["template"]["spec"]
        sources = {v["name"]: v for v in template["volumes"]}["tls-kind"]["projected"]["sources"]
        assert sources[0] == {"configMap": {"name": "lanes-ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
        assert [s["secret"]["name"] for s in sources[1:]] == [f"lanes-{component}-{i}-tls" for i in ids]
        assert all(s["secret"]["optional"] for s in sources[1:]), "a pod waits for its own certificate only"
        assert sources[1]["secret"]["items"] == [
            {"key": "tls.crt", "path": f"{component}-{ids[0]}.crt"},
            {"key": "tls.key", "path": f"{component}-{ids[0]}.key"},
        ]
    with pytest.raises(Exception, match=r"security\.certManager\.caCertificate"):
        render({"security": {"certManager": {"enabled": True, "issuerRef": {"name": "lanes-ca"}}}})
    with pytest.raises(Exception, match=r"security\.certManager\.issuerRef\.name"):
        render({"security": {"certManager": {"enabled": True, "caCertificate": ca_pem}}})
