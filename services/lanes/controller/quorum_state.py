"""A controller's durable quorum state (KRaft's ``quorum-state`` file): the epoch, the vote given
in it, and whether this voter may vote (False after it lost its state, until it caught up).

Written atomically (``write_atomically``: a temporary file fsynced, renamed, the directory
fsynced) before any message of the step that changed it leaves, and only when it changed. A
missing file means the controller has no state at all (a new or wiped voter). Owned by the
quorum driver's event loop."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lanes.storage.files import write_atomically

QUORUM_STATE_FILE = "quorum-state"


@dataclass(frozen=True)
class QuorumState:
    """What a voter must not forget."""

    epoch: int = 0
    voted_for: int | None = None
    can_vote: bool = True


class QuorumStateStore:
    """The ``quorum-state`` file in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / QUORUM_STATE_FILE
        #: no state was ever written here (a new controller, or one whose directory was emptied)
        self.fresh = not self.path.exists()
        self._written = self.load()

    def load(self) -> QuorumState:
        try:
            loaded = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return QuorumState()
        if not isinstance(loaded, dict):
            raise ValueError(f"{self.path} is not a quorum state")
        return QuorumState(int(loaded.get("epoch") or 0), loaded.get("voted_for"), bool(loaded.get("can_vote", True)))

    def save(self, state: QuorumState) -> None:
        """Make ``state`` durable (nothing to do when it is what was written last)."""
        if state == self._written:
            return
        payload = {"epoch": state.epoch, "voted_for": state.voted_for, "can_vote": state.can_vote}
        write_atomically(self.path, json.dumps(payload).encode())
        self._written = state
