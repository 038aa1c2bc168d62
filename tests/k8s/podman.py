"""podman as the image tests and the one-node cluster run it: with the settings of
``tools/images/podman-env.sh`` (runc, cgroupfs, ulimits, image layers under ~/.cache/lanes)."""

from __future__ import annotations

import os
import subprocess
from functools import cache

from tests.k8s.control_plane import ROOT


@cache
def environment() -> dict[str, str]:
    """The environment tools/images/podman-env.sh sets up."""
    script = f"source {ROOT / 'tools' / 'images' / 'podman-env.sh'} && env -0"
    dump = subprocess.run(["bash", "-c", script], check=True, capture_output=True).stdout.decode()
    return dict(line.split("=", 1) for line in dump.split("\0") if "=" in line)


def podman(*args: str, check: bool = True, timeout_s: float = 600) -> str:
    """``podman ARGS``' stdout; with ``check=False`` stdout and stderr, whatever the exit status."""
    done = subprocess.run(
        ["podman", *args], env=environment(), capture_output=True, text=True, check=False, timeout=timeout_s
    )
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args[:3])} ... exited {done.returncode}: {done.stderr[-3000:]}")
    return done.stdout + ("" if check else done.stderr)


def exists(image: str) -> bool:
    return subprocess.run(["podman", "image", "exists", image], env=environment(), check=False).returncode == 0


def build(image: str) -> str:
    """``tools/images/build.sh IMAGE`` (``make images``) on local bases, as
    ``localhost/lanes-test/IMAGE:<version>``; the built image's name. Layers are cached: a build
    with nothing changed takes seconds."""
    done = subprocess.run(
        [str(ROOT / "tools" / "images" / "build.sh"), image],
        env={**os.environ, "LOCAL_BASE": "1", "IMAGE_REPOSITORY": "localhost/lanes-test"},
        capture_output=True,
        text=True,
        check=False,
        timeout=1100,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return done.stdout.strip().splitlines()[-1]
