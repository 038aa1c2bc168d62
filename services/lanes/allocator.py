"""glibc's allocator kept from handing megabyte buffers back to the kernel after each use.

A broker answers a consumer's fetch with about a megabyte of records (a read buffer, the encoded
response, gRPC's send buffer), and a client receives it the same way. glibc's ``malloc`` serves
such sizes with ``mmap`` (above 128 KiB at first) and trims the top of its heaps once 128 KiB lie
free there, so each fetch mapped and unmapped megabytes: measured on the broker, 700 page faults
(2.8 MiB) per 1 MiB fetch, and a quarter of its CPU in the kernel zeroing and freeing those pages
(decision 0046). glibc raises both thresholds itself as it sees large buffers freed, up to an
``mmap`` threshold of 32 MiB and a trim threshold of twice that; ``keep_freed_memory`` starts
the process at that ``mmap`` threshold (buffers under 32 MiB come from the heaps) with a trim
threshold of 16 MiB, below glibc's own ceiling: up to 16 MiB may stay free at the top of each heap
for the next buffers (each of glibc's arenas, up to eight per core, has its own heap), reused
instead of returned and faulted in again.

Left alone when the allocator is not glibc's (musl, macOS), when the user set glibc's malloc
tunables themselves (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``,
``glibc.malloc.*`` in ``GLIBC_TUNABLES``), and when ``LANES_KEEP_FREED_MEMORY=0``.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
from collections.abc import Mapping

#: ``mallopt`` parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: glibc's own ceiling for its dynamic mmap threshold on 64-bit machines
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
#: what each heap may keep free: several 1 MiB fetches' buffers, a quarter of glibc's own ceiling
TRIM_THRESHOLD_BYTES = 16 * 1024 * 1024

_USER_TUNABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")
_lock = threading.Lock()
_decided: bool | None = None


def wanted(environ: Mapping[str, str]) -> bool:
    """Whether to tune, given the environment: not when the user tuned malloc or opted out."""
    if environ.get("LANES_KEEP_FREED_MEMORY", "1") == "0":
        return False
    if any(name in environ for name in _USER_TUNABLES):
        return False
    return "glibc.malloc." not in environ.get("GLIBC_TUNABLES", "")


def keep_freed_memory() -> bool:
    """Set the thresholds once per process (later calls return the first call's outcome);
    whether they were set."""
    global _decided  # noqa: PLW0603 - once per process, as the allocator it tunes
    with _lock:
        if _decided is None:
            _decided = _tune() if wanted(os.environ) else False
        return _decided


def _tune() -> bool:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # (setting either ends glibc's dynamic adjustment of both)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
