"""Service processes: start ``python -m <module>``, wait for its readiness line, stop by signal.

Every Lanes service prints one JSON line on stdout once it serves (``{"service": ...,
"address": "host:port", ...}``); logs go to stderr, here appended to a log file. Used by the local
cluster supervisor (``lanes up``) and by the integration tests.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes.deadline import Deadline, attempts_blocking


@dataclass
class ServiceProcess:
    """A running service and the readiness line it printed."""

    process: subprocess.Popen[str]
    ready: dict[str, Any]
    log_path: Path

    @property
    def address(self) -> str:
        """``host:port`` the service listens on."""
        return str(self.ready["address"])

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self, timeout_s: float = 15) -> int:
        """SIGTERM and wait for a graceful exit (SIGKILL after ``timeout_s``); the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout=10)


#: What a service must not take from the supervisor's environment: its security comes from the
#: flags the supervisor gives, and a client user's credentials are not a service's.
_SECURITY_ENVIRONMENT = (
    "LANES_TLS_",
    "LANES_AUTH",
    "LANES_SUPER_USERS",
    "LANES_OAUTH_",
    "LANES_USERNAME",
    "LANES_PASSWORD",
    "LANES_TOKEN_FILE",
)


@dataclass
class LaunchedService:
    """A service process started and not yet known to serve (``ready`` waits for it): a cluster
    launches all its processes, then waits for each, so they start up side by side."""

    module: str
    process: subprocess.Popen[str]
    log_path: Path

    def ready(self, timeout_s: float = 30) -> ServiceProcess:
        """Wait for the JSON readiness line; the process killed and RuntimeError (with the end of
        its log) when it exits or does not print one within ``timeout_s``."""
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            for _ in attempts_blocking(Deadline(timeout_s), pause_s=0):  # select() waits up to 0.1 s
                if selector.select(timeout=0.1):
                    line = self.process.stdout.readline()
                    if line:
                        return ServiceProcess(self.process, json.loads(line), self.log_path)
                if self.process.poll() is not None:
                    break
        self.abandon()
        raise RuntimeError(
            f"{self.module} did not become ready; the end of its log:\n{self.log_path.read_text()[-3000:]}"
        )

    def abandon(self) -> None:
        """SIGKILL a process that will not be waited for."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


def launch_service(module: str, args: list[str], log_path: Path, *, launcher: Sequence[str] = ()) -> LaunchedService:
    """Start ``python -m module args`` in a process group of its own, its stderr appended to
    ``log_path``. ``launcher`` is a command that execs the rest in place (``ip netns exec NS``: the
    process is the service)."""
    log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a") as log:
        process = subprocess.Popen(
            [*launcher, sys.executable, "-m", module, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith(_SECURITY_ENVIRONMENT)},
                "PYTHONUNBUFFERED": "1",
            },
            # A group of its own: a terminal's Ctrl-C (SIGINT to the foreground process group)
            # reaches the supervisor only, which stops the services in order (``LocalCluster.stop``).
            process_group=0,
        )
    return LaunchedService(module, process, log_path)


def start_service(
    module: str, args: list[str], log_path: Path, ready_timeout_s: float = 30, *, launcher: Sequence[str] = ()
) -> ServiceProcess:
    """Run ``python -m module args`` (``launch_service``) and wait for its JSON readiness line."""
    return launch_service(module, args, log_path, launcher=launcher).ready(ready_timeout_s)
