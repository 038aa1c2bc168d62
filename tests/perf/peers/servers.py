"""The peers Lanes is compared with, as real servers on 127.0.0.1 ports of their own, each with a
data directory of its own, started here and stopped by PID.

- Redis (Debian ``redis-server``): append-only file on, ``appendfsync everysec`` (Redis's
  recommended durable setting: an acknowledged XADD is in memory and in the AOF within a second),
  RDB snapshots off.
- NATS JetStream (Debian ``nats-server``): ``-js`` with file storage under the data directory; a
  publish is acknowledged once the stream stored it (JetStream's own notion of durable; it
  fsyncs on its sync interval, default 2 minutes).

``tools/ensure-debian-packages.sh`` (run by ``make bench``) installs both when they are missing. The
loopback gRPC limit's sink server (``limits.py``) is started the same way.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Server:
    """A running peer server."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    data_dir: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, timeout_s: float = 20) -> None:
        """SIGTERM by PID, then SIGKILL if it does not exit in time."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if found is None:
        raise RuntimeError(f"{name} is not installed; make bench installs it (tools/ensure-debian-packages.sh)")
    return found


def wait_for_port(server: Server, timeout_s: float = 20) -> Server:
    deadline = time.monotonic() + timeout_s
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"{server.name} exited with {server.process.returncode}; see {server.data_dir}/server.log"
            )
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=0.5):
                return server
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"{server.name} did not listen on {server.port}") from None
            time.sleep(0.05)


_REPOSITORY = Path(__file__).resolve().parents[3]


def launch(name: str, command: list[str], port: int, data_dir: Path) -> Server:
    """``command`` started with its output in ``data_dir/server.log`` (not waited for)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / "server.log", "wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=_REPOSITORY
        )
    return Server(name, process, port, data_dir)


def _start(name: str, command: list[str], port: int, data_dir: Path) -> Server:
    return wait_for_port(launch(name, command, port, data_dir))


def start_redis(data_dir: Path, port: int) -> Server:
    """redis-server with AOF (everysec), no snapshots, bound to loopback."""
    command = [_binary("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data_dir)]
    command += ["--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no"]
    command += ["--protected-mode", "yes", "--logfile", ""]
    return _start("redis", command, port, data_dir)


def start_nats(data_dir: Path, port: int) -> Server:
    """nats-server with JetStream file storage, bound to loopback."""
    command = [_binary("nats-server"), "-js", "-sd", str(data_dir / "jetstream"), "-a", "127.0.0.1", "-p", str(port)]
    return _start("nats", command, port, data_dir)


def start_grpc_sink(data_dir: Path, port: int) -> Server:
    """The loopback gRPC limit's server (``tests.perf.peers.limits``), in a process of its own."""
    return _start("grpc sink", [sys.executable, "-m", "tests.perf.peers.limits", str(port)], port, data_dir)
