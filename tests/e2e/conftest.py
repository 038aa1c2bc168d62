"""One ``lanes up --detach`` cluster (3 brokers, 1 coordinator) for the e2e tests, stopped with
``lanes down`` at the end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lanes.local.cluster import LocalCluster
from tests.e2e.cli import Workdir
from tests.integration.processes import consecutive_free_ports


@pytest.fixture(scope="session")
def lanes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workdir]:
    workdir = Workdir(tmp_path_factory.mktemp("e2e"))
    workdir.ok(
        "up",
        "--detach",
        "--brokers",
        "3",
        "--port-base",
        str(consecutive_free_ports(LocalCluster.ports_for(3, 1, 3, console=True, kafka=True))),
    )
    try:
        yield workdir
    finally:
        done = workdir.run("down", timeout=120)
        assert done.returncode == 0, done.stderr
