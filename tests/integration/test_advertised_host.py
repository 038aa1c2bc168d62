"""Listening on every interface and advertising a name (how pods run: ``--host 0.0.0.0
--advertised-host <pod DNS name>``): the cluster's metadata carries the advertised name, and a
wildcard without a name is refused at start with what to set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lanes.client import Admin
from tests.e2e.cli import wait_for
from tests.integration.processes import free_port, start_service


def test_nodes_listen_on_every_interface_and_advertise_their_name(tmp_path: Path) -> None:
    controller_port, broker_port = free_port(), free_port()
    common = ["--host", "0.0.0.0", "--advertised-host", "localhost"]
    controller = start_service(
        "lanes.controller",
        [*common, "--port", str(controller_port), "--data-dir", str(tmp_path / "controller")],
        tmp_path / "controller.log",
    )
    broker = start_service(
        "lanes.broker",
        [
            *common,
            "--port",
            str(broker_port),
            "--broker-id",
            "1",
            "--data-dir",
            str(tmp_path / "broker"),
            "--controller",
            f"localhost:{controller_port}",
        ],
        tmp_path / "broker.log",
    )
    try:
        with Admin(f"127.0.0.1:{broker_port}") as admin:
            cluster = wait_for(lambda: (c := admin.describe_cluster()).brokers and c, "the broker registered")
            assert cluster.controller == f"localhost:{controller_port}"
            assert [(b.host, b.port) for b in cluster.brokers] == [("localhost", broker_port)]
    finally:
        broker.terminate()
        controller.terminate()


def test_a_wildcard_host_without_an_advertised_name_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lanes.controller", "--host", "0.0.0.0", "--port", "0", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "--host 0.0.0.0 listens on every interface" in done.stderr
    assert "--advertised-host" in done.stderr
