"""Running the real ``lanes`` command as subprocesses in a working directory of its own, as a user
would: ``lanes up --detach`` there writes ``.lanes/cluster.json``, from which every later command
finds the cluster (no ``--bootstrap`` needed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes.client import Admin, Consumer
from lanes.rpc.credentials import UserPassword
from lanes.rpc.tls import TlsFiles

LANES = [sys.executable, "-m", "lanes.cli"]


@dataclass
class Workdir:
    """A directory where ``lanes`` runs; ``run`` gives the finished process, ``start`` a running one."""

    path: Path

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("LANES_BOOTSTRAP", None)
        return env

    def run(self, *args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*LANES, *args],
            cwd=self.path,
            env=self.env(),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def _access(self) -> tuple[str, TlsFiles, UserPassword]:
        """Bootstrap, CA and the admin user of this directory's cluster, found as its commands
        find them (its ``.lanes/cluster.json``; paths relative to here)."""
        cluster = json.loads((self.path / ".lanes" / "cluster.json").read_text())
        user = cluster["user"]
        return (
            cluster["bootstrap"],
            TlsFiles(self.path / cluster["tls"]["ca"]),
            UserPassword(user["name"], (self.path / user["password_file"]).read_text().strip()),
        )

    def admin(self) -> Admin:
        """An in-process Admin on this directory's cluster, as its admin user."""
        bootstrap, tls, credentials = self._access()
        return Admin(bootstrap, tls=tls, credentials=credentials)

    def consumer(self) -> Consumer:
        """An in-process Consumer (no group) on this directory's cluster, as its admin user."""
        bootstrap, tls, credentials = self._access()
        return Consumer(bootstrap, tls=tls, credentials=credentials)

    def ok(self, *args: str, input: str | None = None) -> str:
        """stdout of a command that must succeed."""
        done = self.run(*args, input=input)
        assert done.returncode == 0, f"lanes {' '.join(args)} exited {done.returncode}: {done.stderr}"
        return done.stdout

    def json(self, *args: str, input: str | None = None) -> Any:
        """The parsed ``--output json`` of a command that must succeed."""
        return json.loads(self.ok(*args, "--output", "json", input=input))

    def start(self, shell_command: str) -> subprocess.Popen[str]:
        """A long-running shell pipeline of lanes commands (``lanes`` is this checkout's CLI)."""
        lanes = " ".join(LANES)
        return subprocess.Popen(
            ["bash", "-c", shell_command.replace("lanes ", f"{lanes} ")],
            cwd=self.path,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 30) -> Any:
    """Poll ``condition`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def stop(process: subprocess.Popen[str]) -> str:
    """SIGTERM a pipeline started with ``Workdir.start`` (its whole process group); its stdout."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    return out
