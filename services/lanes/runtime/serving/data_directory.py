"""A node's data directory: used by one process at a time, and bound to one cluster.

- ``.lock``: an exclusive ``flock`` held for the process's life (released by the kernel when it
  exits, however it exits): a second process started on the same directory refuses to start
  instead of writing the same logs.
- ``meta.properties``: the cluster id the node first registered with (Kafka's file of the same
  name): the node registers with it from then on, and its controller link refuses metadata of
  another cluster, so a controller that lost its volume and started a new cluster can never make
  the node delete its data.
- ``metadata-applied``: ``<offset> <epoch>`` of the last metadata entry the node applied
  (replaced as it applies more, not fsynced: after a crash it may name an earlier entry, which
  only makes the check below less strict). Its controller link refuses a controller whose
  committed log does not hold that entry (``ControllerLink._check_lineage``).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from lanes.errors import ErrorCode, LanesError
from lanes.storage.files import write_atomically

LOCK_FILE = ".lock"
META_FILE = "meta.properties"
APPLIED_FILE = "metadata-applied"


class DataDirectory:
    """Holds ``path``'s lock from construction until ``close`` (or the process's end)."""

    def __init__(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock_fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise LanesError(
                f"the data directory {path} is in use by another process (it holds {path / LOCK_FILE}); "
                "two nodes never share one",
                ErrorCode.INVALID_REQUEST,
            ) from None

    def _properties(self) -> dict[str, str]:
        meta = self.path / META_FILE
        if not meta.exists():
            return {}
        pairs = (line.split("=", 1) for line in meta.read_text().splitlines() if "=" in line)
        return {key.strip(): value.strip() for key, value in pairs}

    @property
    def cluster_id(self) -> str:
        """The cluster this directory belongs to ("" until the node first registered)."""
        return self._properties().get("cluster.id", "")

    def adopt_cluster_id(self, cluster_id: str) -> None:
        """Bind the directory to ``cluster_id`` (the first registration's); a different one is
        refused (the caller never applies that cluster's metadata)."""
        known = self.cluster_id
        if known == cluster_id or not cluster_id:
            return
        if known:
            raise LanesError(
                f"{self.path} belongs to cluster {known}, not {cluster_id}", ErrorCode.INCONSISTENT_CLUSTER_ID
            )
        write_atomically(self.path / META_FILE, f"version=1\ncluster.id={cluster_id}\n".encode())

    @property
    def applied(self) -> tuple[int, int]:
        """(offset, epoch) of the last metadata entry applied; (-1, -1) when none is known."""
        try:
            offset, epoch = (self.path / APPLIED_FILE).read_text().split()
            return int(offset), int(epoch)
        except (OSError, ValueError):
            return -1, -1

    def record_applied(self, offset: int, epoch: int) -> None:
        """Keep (offset, epoch) as the last metadata entry applied (see the module docstring)."""
        temporary = self.path / f"{APPLIED_FILE}.tmp"
        temporary.write_text(f"{offset} {epoch}\n")
        temporary.replace(self.path / APPLIED_FILE)

    def close(self) -> None:
        os.close(self._lock_fd)
