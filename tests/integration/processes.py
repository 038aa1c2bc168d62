"""Real service processes for integration tests: start, wait until ready, stop by signal."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A TCP port nobody listens on right now (the kernel picked it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ServiceProcess:
    """A running service and the readiness line it printed."""

    process: subprocess.Popen[str]
    ready: dict[str, Any]
    log_path: Path

    @property
    def address(self) -> str:
        return str(self.ready["address"])

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self, timeout_s: float = 15) -> int:
        """SIGTERM and wait for a graceful exit; return the exit status."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout_s)


def start_service(module: str, args: list[str], log_path: Path, ready_timeout_s: float = 30) -> ServiceProcess:
    """Run ``python -m module args`` and wait for its JSON readiness line on stdout."""
    log = log_path.open("a")
    process = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if selector.select(timeout=0.1):
            line = process.stdout.readline()
            if line:
                return ServiceProcess(process, json.loads(line), log_path)
        if process.poll() is not None:
            break
    process.kill()
    raise AssertionError(f"{module} did not become ready; its log:\n{log_path.read_text()[-3000:]}")


def start_controller(
    data_dir: Path, port: int, log_path: Path, *, session_timeout_ms: int = 2000, heartbeat_interval_ms: int = 200
) -> ServiceProcess:
    """``python -m lanes.controller`` on ``port`` with short liveness timeouts for tests."""
    return start_service(
        "lanes.controller",
        [
            "--data-dir",
            str(data_dir),
            "--port",
            str(port),
            "--session-timeout-ms",
            str(session_timeout_ms),
            "--heartbeat-interval-ms",
            str(heartbeat_interval_ms),
        ],
        log_path,
    )
