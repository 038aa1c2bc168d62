"""A one-node Kubernetes cluster on this machine, for the tests that need pods to run
(``test_one_node_cluster.py``, behind ``LANES_K8S_NODE=1``; docs/kubernetes.md#a-one-node-cluster).

On top of a ``ControlPlane`` advertised on the host's address: containerd and runc and the CNI
plugins from Debian, the pause image compiled from Kubernetes' own C source, and kube-scheduler,
kube-controller-manager, kubelet and kube-proxy (iptables) from the same Kubernetes module, with
CoreDNS from its module as a host process answering ``cluster.local`` only. Pods get addresses on
the bridge ``lanesnode0`` (10.244.0.0/24); images come from podman's store (``ctr import``), as no
registry can be reached; volumes are hostPath PersistentVolumes made here.

Needs root, a kernel with bridges, netfilter and overlayfs, and cgroup v1 or v2 (on v1 the
kubelet runs with ``failCgroupV1: false``: Kubernetes 1.35 and later refuse v1 otherwise). Every
process runs in a session of its own and is stopped on ``stop``; pods' containers are stopped by
the kubelet's runtime, then containerd.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from contextlib import suppress
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.cli import wait_for
from tests.integration.processes import free_port
from tests.k8s.control_plane import CACHE, PINNED, ControlPlane, HostProcesses, binary
from tests.k8s.podman import exists as podman_image_exists
from tests.k8s.podman import podman

NODE_NAME = "lanes-node"
POD_SUBNET = "10.244.0.0/24"
BRIDGE = "lanesnode0"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
RUN_DIR = Path("/run/lanes-node")  # short: unix socket paths are limited to 108 bytes


def host_address() -> str:
    """The host's own address on its default route (pods reach the API server and DNS on it);
    ``ip route get`` only looks the route up, it sends nothing."""
    route = subprocess.run(
        ["ip", "-4", "-j", "route", "get", "198.51.100.1"], capture_output=True, text=True, check=True
    )
    return str(json.loads(route.stdout)[0]["prefsrc"])


class Node:
    """containerd, kubelet, kube-proxy, kube-scheduler, kube-controller-manager and CoreDNS for
    ``plane``; ``directory`` holds their state and logs."""

    def __init__(self, plane: ControlPlane, directory: Path) -> None:
        self.plane = plane
        self.directory = directory
        self.address = plane.advertise_address
        self.socket = RUN_DIR / "containerd.sock"
        self.processes = HostProcesses(directory)

    # -- start-up ----------------------------------------------------------------------------

    def start(self) -> Node:
        self.directory.mkdir(parents=True, exist_ok=True)
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        self._start_containerd()
        self.load_image(self._pause_image())
        self._start_dns()
        self._start_control_loops()
        self._start_kubelet()
        self._start_proxy()
        wait_for(self.ready, f"node {NODE_NAME} Ready (logs in {self.directory})", timeout_s=120)
        return self

    def _start_containerd(self) -> None:
        cni = self.directory / "cni"
        cni.mkdir(exist_ok=True)
        (cni / "10-lanes.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "0.4.0",
                    "name": "lanes-node",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": BRIDGE,
                            "isGateway": True,
                            "ipMasq": True,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [[{"subnet": POD_SUBNET}]],
                                "routes": [{"dst": "0.0.0.0/0"}],
                                "dataDir": str(self.directory / "cni-ipam"),
                            },
                        },
                        {"type": "portmap", "capabilities": {"portMappings": True}},
                    ],
                }
            )
        )
        config = self.directory / "containerd.toml"
        config.write_text(
            f"""version = 2
root = "{self.directory / "containerd"}"
state = "{RUN_DIR / "state"}"
[grpc]
  address = "{self.socket}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # This machine refuses a process lowering its oom_score_adj (no CAP_SYS_RESOURCE in effect):
  # clamp pods' adjustments to containerd's own instead of failing every sandbox.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni}"
"""
        )
        self.processes.start("containerd", ["containerd", f"--config={config}"])
        wait_for(self.socket.exists, f"containerd's socket (log: {self.processes.log('containerd')})", timeout_s=30)

    def _pause_image(self) -> str:
        """registry.k8s.io/pause built from Kubernetes' build/pause/linux/pause.c (static), once."""
        if podman_image_exists(PAUSE_IMAGE):
            return PAUSE_IMAGE
        build = self.directory / "pause"
        build.mkdir(exist_ok=True)
        version = PINNED["KUBERNETES"]
        downloaded = subprocess.run(  # the module the build script already fetched: no download
            ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "GOMODCACHE": os.environ.get("GOMODCACHE", str(CACHE / "go" / "mod"))},
        )
        source = Path(json.loads(downloaded.stdout)["Dir"]) / "build" / "pause" / "linux" / "pause.c"
        subprocess.run(
            ["gcc", "-Os", "-Wall", "-static", "-DVERSION=3.10-lanes", "-o", str(build / "pause"), str(source)],
            check=True,
        )
        (build / "Containerfile").write_text(
            'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n'
        )
        podman("build", "--quiet", "-t", PAUSE_IMAGE, str(build))
        return PAUSE_IMAGE

    def load_image(self, image: str) -> None:
        """Copy ``image`` from podman's store into containerd's ``k8s.io`` namespace."""
        archive = self.directory / "image.tar"
        podman("save", "--quiet", "--format=oci-archive", "-o", str(archive), image)
        done = subprocess.run(
            [
                "ctr",
                f"--address={self.socket}",
                "--namespace=k8s.io",
                "images",
                "import",
                f"--index-name={image}",
                str(archive),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        archive.unlink()
        assert done.returncode == 0, f"ctr images import {image}: {done.stderr}"

    def _start_dns(self) -> None:
        """CoreDNS on the host's address, port 53: the cluster's names only (nothing forwarded)."""
        corefile = self.directory / "Corefile"
        corefile.write_text(
            f"""cluster.local:53 in-addr.arpa:53 {{
    bind {self.address}
    errors
    kubernetes cluster.local in-addr.arpa {{
        kubeconfig {self.plane.admin_kubeconfig}
        pods insecure
    }}
}}
.:53 {{
    bind {self.address}
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""
        )
        self.processes.start("coredns", [str(binary("coredns")), f"-conf={corefile}"])

    def _start_control_loops(self) -> None:
        pki, kubeconfig = self.plane.pki, str(self.plane.admin_kubeconfig)
        common = [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
        ]
        self.processes.start("kube-scheduler", [str(binary("kube-scheduler")), *common, f"--secure-port={free_port()}"])
        self.processes.start(
            "kube-controller-manager",
            [
                str(binary("kube-controller-manager")),
                *common,
                f"--secure-port={free_port()}",
                f"--service-account-private-key-file={pki.service_account_key}",
                f"--root-ca-file={pki.ca_file}",
                "--use-service-account-credentials=true",
                "--controllers=*,-nodeipam",
            ],
        )

    def _start_kubelet(self) -> None:
        pki = self.plane.pki
        cert, key = pki.issue("kubelet", f"system:node:{NODE_NAME}", groups=["system:nodes"])
        kubeconfig = self.directory / "kubelet.kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(self.plane.kubeconfig(user={"client-certificate": str(cert), "client-key": str(key)}))
        )
        config = self.directory / "kubelet.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubelet.config.k8s.io/v1beta1",
                    "kind": "KubeletConfiguration",
                    "containerRuntimeEndpoint": f"unix://{self.socket}",
                    "cgroupDriver": "cgroupfs",
                    "failCgroupV1": False,
                    "failSwapOn": False,
                    "address": self.address,
                    "port": free_port(),
                    "readOnlyPort": 0,
                    "healthzBindAddress": "127.0.0.1",
                    "healthzPort": free_port(),
                    "authentication": {
                        "anonymous": {"enabled": False},
                        "webhook": {"enabled": False},
                        "x509": {"clientCAFile": str(pki.ca_file)},
                    },
                    "authorization": {"mode": "AlwaysAllow"},
                    "clusterDomain": "cluster.local",
                    "clusterDNS": [self.address],
                    "resolvConf": str(self._resolv_conf()),
                    "tlsCertFile": str(pki.server_cert),
                    "tlsPrivateKeyFile": str(pki.server_key),
                    # a test machine's disk and memory: evict only when they are really short
                    "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
                    "imageGCHighThresholdPercent": 100,
                    "maxPods": 40,
                    "serializeImagePulls": False,
                    "enforceNodeAllocatable": [],
                    "cgroupsPerQOS": True,
                    "localStorageCapacityIsolation": False,
                }
            )
        )
        self.processes.start(
            "kubelet",
            [
                str(binary("kubelet")),
                f"--config={config}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={self.directory / 'kubelet'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={self.address}",
                "--node-labels=topology.kubernetes.io/zone=zone-a",
                "-v=1",
            ],
        )

    def _resolv_conf(self) -> Path:
        """What a pod whose DNS policy is Default gets: no server outside the cluster."""
        path = self.directory / "resolv.conf"
        path.write_text(f"nameserver {self.address}\n")
        return path

    def _start_proxy(self) -> None:
        config = self.directory / "kube-proxy.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
                    "kind": "KubeProxyConfiguration",
                    "mode": "iptables",
                    "clusterCIDR": "10.244.0.0/16",
                    "hostnameOverride": NODE_NAME,
                    "clientConnection": {"kubeconfig": str(self.plane.admin_kubeconfig)},
                    "conntrack": {"maxPerCore": 0},  # leave the host's conntrack table size alone
                    "metricsBindAddress": f"127.0.0.1:{free_port()}",
                    "healthzBindAddress": f"127.0.0.1:{free_port()}",
                }
            )
        )
        self.processes.start("kube-proxy", [str(binary("kube-proxy")), f"--config={config}"])

    # -- what tests use ----------------------------------------------------------------------

    def ready(self) -> bool:
        self.processes.check_alive()
        found = self.plane.kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
        if not found.startswith("{"):
            return False
        conditions = {c["type"]: c["status"] for c in json.loads(found)["status"].get("conditions", [])}
        return conditions.get("Ready") == "True"

    def volumes(self, count: int, size: str = "10Gi") -> None:
        """``count`` hostPath PersistentVolumes without a class (claims without one bind to them),
        writable by the pods' non-root users."""
        documents: list[dict[str, Any]] = []
        for index in range(count):
            path = self.directory / "volumes" / str(index)
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o1777)
            documents.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": f"lanes-node-{index}"},
                    "spec": {
                        "capacity": {"storage": size},
                        "accessModes": ["ReadWriteOnce"],
                        "persistentVolumeReclaimPolicy": "Delete",
                        "storageClassName": "",
                        "hostPath": {"path": str(path), "type": "Directory"},
                    },
                }
            )
        self.plane.apply(documents)

    def stop(self) -> None:
        """Every process, newest first; then what they leave on the host: containerd's shims (and
        with them the pods' containers), mounts under the node's directories, pods' network
        namespaces, kube-proxy's iptables chains and the bridge."""
        self.processes.stop(grace_s=20)
        subprocess.run(["pkill", "-9", "-f", f"containerd-shim-runc-v2 .*-address {self.socket}"], check=False)
        # The pods' processes outlive their shims: every process in the kubelet's cgroups goes.
        hierarchies = [*Path("/sys/fs/cgroup").glob("*/kubepods"), *Path("/sys/fs/cgroup").glob("kubepods")]
        for hierarchy in hierarchies:
            for procs in hierarchy.rglob("cgroup.procs"):
                for pid in procs.read_text().split():
                    with suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
        for hierarchy in hierarchies:
            for group in sorted(hierarchy.rglob("*"), key=lambda path: len(path.parts), reverse=True):
                if group.is_dir():
                    with suppress(OSError):
                        group.rmdir()
            with suppress(OSError):
                hierarchy.rmdir()
        mounts = Path("/proc/self/mounts").read_text().split("\n")
        points = [line.split()[1] for line in mounts if len(line.split()) > 1]
        for point in sorted(points, reverse=True):
            if point.startswith((str(self.directory), str(RUN_DIR), "/run/netns/cni-", "/var/run/netns/cni-")):
                subprocess.run(["umount", "-l", point], check=False, capture_output=True)
        for namespace in Path("/run/netns").glob("cni-*"):
            subprocess.run(["ip", "netns", "delete", namespace.name], check=False, capture_output=True)
        subprocess.run([str(binary("kube-proxy")), "--cleanup"], check=False, capture_output=True)
        subprocess.run(["ip", "link", "delete", BRIDGE], check=False, capture_output=True)
        shutil.rmtree(RUN_DIR, ignore_errors=True)
