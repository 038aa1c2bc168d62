"""Network faults as test inputs: each service on its own host (a network namespace), and links
between hosts cut one way or both ways.

Layout (all names carry a per-network tag, so leftovers of a crashed run never collide)::

    root namespace (the test and its clients)
      bridge lb<tag>  10.<a>.<b>.1/24
        veth lv<tag><i>  <->  eth0 in namespace lanes-<tag>-<host>  10.<a>.<b>.<i+1>/24

The test's clients stay in the root namespace and reach every host through the bridge. A cut
is an iptables rule inside a host's namespace: ``cut(a, b)`` drops what ``a`` sends to ``b``
(OUTPUT) and what it receives from ``b`` (INPUT); ``one_way=True`` drops only what ``a`` sends.
``heal()`` flushes every rule. A slow link is a ``tbf`` rate limit on a host's eth0 (this kernel
has no netem). Everything made is removed in ``close()``, also after a failure.

Needs root, ``ip`` (iproute2) and ``iptables``; ``available()`` says whether this machine has them.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from dataclasses import dataclass


def available() -> str | None:
    """None when network namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for program in ("ip", "iptables", "tc"):
        if shutil.which(program) is None and not os.path.exists(f"/usr/sbin/{program}"):
            return f"{program} is not installed (make test installs it)"
    return None


def _run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, text=True)


@dataclass(frozen=True)
class Host:
    """One namespace with one address on the bridge."""

    name: str
    namespace: str
    address: str

    @property
    def launcher(self) -> list[str]:
        """The command prefix that runs a program on this host."""
        return ["ip", "netns", "exec", self.namespace]

    def run(self, *command: str) -> None:
        _run(*self.launcher, *command)


class Network:
    """Hosts on one bridge, and the cuts between them (see the module docstring)."""

    def __init__(self) -> None:
        self.tag = f"{random.randrange(16**4):04x}"
        self._subnet = f"10.{random.randrange(100, 200)}.{random.randrange(1, 250)}"
        self.bridge = f"lb{self.tag}"
        self.gateway = f"{self._subnet}.1"
        self.hosts: dict[str, Host] = {}
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")

    def add_host(self, name: str) -> Host:
        index = len(self.hosts) + 1
        host = Host(name, f"lanes-{self.tag}-{name}", f"{self._subnet}.{index + 1}")
        veth = f"lv{self.tag}{index}"
        _run("ip", "netns", "add", host.namespace)
        self.hosts[name] = host
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", host.namespace)
        _run("ip", "link", "set", veth, "master", self.bridge)
        _run("ip", "link", "set", veth, "up")
        host.run("ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
        host.run("ip", "link", "set", "eth0", "up")
        host.run("ip", "link", "set", "lo", "up")
        return host

    def cut(self, host: Host, *peers: Host, one_way: bool = False) -> None:
        """``host`` stops reaching ``peers`` (and, unless ``one_way``, hearing from them)."""
        for peer in peers:
            host.run("iptables", "-I", "OUTPUT", "-d", peer.address, "-j", "DROP")
            if not one_way:
                host.run("iptables", "-I", "INPUT", "-s", peer.address, "-j", "DROP")

    def slow(self, host: Host, rate: str = "96kbit") -> None:
        """Rate-limit everything ``host`` sends (a token bucket: requests queue, then time out)."""
        host.run("tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "16kb", "latency", "400ms")

    def heal(self) -> None:
        """Remove every cut and rate limit."""
        for host in self.hosts.values():
            host.run("iptables", "-F")
            subprocess.run(
                [*host.launcher, "tc", "qdisc", "del", "dev", "eth0", "root"], check=False, capture_output=True
            )

    def close(self) -> None:
        """Delete every namespace, link and the bridge (what is already gone is skipped)."""
        for host in self.hosts.values():
            subprocess.run(["ip", "netns", "delete", host.namespace], check=False, capture_output=True)
        subprocess.run(["ip", "link", "delete", self.bridge], check=False, capture_output=True)
