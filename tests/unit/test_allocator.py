"""Decision 0046: a Lanes process reuses freed megabyte buffers instead of returning them to the
kernel and faulting them in again (glibc's malloc), unless the user tuned malloc or opted out."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from lanes.allocator import wanted

_CHURN = """
import resource
from lanes.allocator import keep_freed_memory
tuned = keep_freed_memory()
def faults(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
buffers = [bytearray(1 << 20) for _ in range(3)]  # (a fetch: read buffer, response, send buffer)
del buffers
before = faults()
for _ in range(100):
    buffers = [bytearray(1 << 20) for _ in range(3)]
    del buffers
print(tuned, faults() - before)
"""


def _churn(env: dict[str, str]) -> tuple[bool, int]:
    """Run 100 rounds of three 1 MiB buffers allocated, written and freed in a fresh process: whether
    it tuned malloc, and the page faults the rounds took."""
    done = subprocess.run([sys.executable, "-c", _CHURN], env=env, capture_output=True, text=True, check=True)
    tuned, faults = done.stdout.split()
    return tuned == "True", int(faults)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
def test_freed_megabyte_buffers_are_reused_without_page_faults() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    tuned, faults = _churn(env)
    assert tuned
    assert faults < 100 * 256 // 20  # the rounds reuse the first round's memory
    untuned, untuned_faults = _churn({**env, "LANES_KEEP_FREED_MEMORY": "0"})
    assert not untuned
    assert untuned_faults > 100 * 256  # glibc's defaults: each round mapped afresh (what 0046 removes)


@pytest.mark.parametrize(
    ("environ", "tune"),
    [
        ({}, True),
        ({"LANES_KEEP_FREED_MEMORY": "1"}, True),
        ({"LANES_KEEP_FREED_MEMORY": "0"}, False),
        ({"MALLOC_TRIM_THRESHOLD_": "131072"}, False),
        ({"MALLOC_MMAP_THRESHOLD_": "131072"}, False),
        ({"MALLOC_TOP_PAD_": "0"}, False),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"}, False),
        ({"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=512"}, True),
    ],
)
def test_the_user_s_own_malloc_settings_win(environ: dict[str, str], tune: bool) -> None:
    assert wanted(environ) is tune
