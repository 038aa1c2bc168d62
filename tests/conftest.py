"""Shared test settings.

- Benchmarks (tests/perf) are collected only under `make bench` (LANES_BENCH=1), never by a
  plain `pytest` or `make test`: they print numbers and take time.
- ``lanes_cluster`` / ``bootstrap``: a real cluster of processes (controller, 2 brokers, a
  coordinator) shared by a test module, for the modules that need one and no special settings.
- ``kubernetes_api``: one real Kubernetes control plane (etcd + kube-apiserver, RBAC on) for the
  whole session, with the chart's CRDs created by the server (tests/k8s/control_plane.py); the
  tests of the chart, the operator, the images and the Spark manifests use it.
- ``make test`` runs the tests on two workers (pytest-xdist, ``--dist loadgroup``). Tests that
  must not overlap one another share an xdist group and so run one after the other on one
  worker (``_GROUPS``): the fault scenarios (each a cluster whose timing they measure, some in
  network namespaces), the Kubernetes tests (one control plane per worker that runs them), the
  e2e tests (one ``lanes up``, when run on workers), the simulations (which use one core each
  under a worker: ``tests/simulation/harness.py``). Every other module is a group of its own. The
  long groups are collected first (``_FIRST``), so that they start at once. ``make test`` runs the
  Spark tests, then the e2e tests, beside the workers, in processes of their own (``BESIDE`` in the
  Makefile).
- Hypothesis prints a reproduction blob for every failure.
- Services the tests start by hand serve no metrics endpoint (``LANES_METRICS_PORT=-1``): their
  default ports would collide, and a free port picked by the kernel could take a port another
  service of the same test is about to bind. ``LocalCluster`` (``lanes up``) gives each process
  an explicit metrics port, so cluster tests scrape for real.
"""

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from lanes.local.cluster import LocalCluster
from tests.integration.processes import running_cluster
from tests.k8s.control_plane import ControlPlane, control_plane
from tests.k8s.crds import CRD_DIR

collect_ignore = [] if os.environ.get("LANES_BENCH") else ["perf"]
os.environ.setdefault("LANES_METRICS_PORT", "-1")

settings.register_profile(
    "lanes",
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("lanes")


#: xdist groups by path prefix (the first that matches); see the module docstring
_GROUPS = (
    ("tests/faults/", "faults"),
    ("tests/k8s/", "kubernetes"),
    ("tests/spark/test_manifests.py", "kubernetes"),
    ("tests/e2e/", "e2e"),
    ("tests/simulation/", "simulation"),
)


#: the long groups first, longest first: xdist hands out groups in collection order (a quarter of
#: them round-robin at the start), so the two longest chains start at once on the two workers
#: and the many short modules fill in around them, instead of one long chain starting late
_FIRST = ("faults", "kubernetes", "simulation", "e2e")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (its own hook)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    groups: dict[int, str] = {}
    for item in items:
        path = os.path.relpath(str(item.path), root)
        # every other module is a group of its own: its tests share its fixtures (one cluster per
        # module, not one per worker) and run in order (some read what an earlier one wrote)
        group = next((name for prefix, name in _GROUPS if path.startswith(prefix)), path.split("::")[0])
        item.add_marker(pytest.mark.xdist_group(group))
        groups[id(item)] = group
    # a stable sort: each module's tests keep their order
    items.sort(key=lambda item: _FIRST.index(groups[id(item)]) if groups[id(item)] in _FIRST else len(_FIRST))


@pytest.fixture(scope="module")
def lanes_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # small segments allowed: the tests of retention roll a segment per batch
    # (the brokers also serve Kafka's protocol: Spark's own Kafka source reads through it)
    with running_cluster(tmp_path_factory.mktemp("lanes"), brokers=2, min_segment_bytes=100, kafka=True) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def bootstrap(lanes_cluster: LocalCluster) -> str:
    return str(lanes_cluster.describe()["bootstrap"])


@pytest.fixture(scope="session")
def kubernetes_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with control_plane(tmp_path_factory.mktemp("kubernetes")) as plane:
        plane.kubectl("create", "-f", str(CRD_DIR))
        plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        yield plane
