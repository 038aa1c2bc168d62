"""Who the quorum's voters are (KIP-853): the newest configuration entry of the log, or, without
one, the voters as of the log start (the latest snapshot's, or the ones the nodes were started
with). Raft uses a configuration as soon as it is in the log, committed or not; a truncation
takes the configurations it removes away with it. Pure; owned by the Raft core."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lanes.controller.raft_log import RaftLog
from lanes.controller.raft_messages import Entry, Voter


@dataclass
class VoterConfigs:
    """The voters in force and the configuration entries of the log."""

    #: the voters in force, and their ids
    voter_set: tuple[Voter, ...] = ()
    voters: frozenset[int] = frozenset()
    #: the voters as of the log start
    base_voters: tuple[Voter, ...] = ()
    #: the base voters come from the node's start-up configuration, not from the log or a snapshot
    base_is_bootstrap: bool = True
    #: (offset, voters) of every configuration entry in the log, oldest first
    entries: list[tuple[int, tuple[Voter, ...]]] = field(default_factory=list)

    @classmethod
    def of_log(cls, log: RaftLog, bootstrap: frozenset[int] | tuple[Voter, ...]) -> VoterConfigs:
        """The configurations of ``log`` (at a restart): its snapshot's voters, else the
        ``bootstrap`` voters the node was started with, then its configuration entries."""
        started = (
            tuple(sorted(bootstrap, key=lambda v: v.node_id))
            if isinstance(bootstrap, tuple)
            else tuple(Voter(node) for node in sorted(bootstrap))
        )
        configs = cls(base_voters=log.snapshot_voters or started, base_is_bootstrap=log.snapshot_voters is None)
        configs.scan(log, log.start_offset)
        return configs

    def change_refusal(self, voters: tuple[Voter, ...], high_watermark: int) -> str | None:
        """Why ``voters`` cannot be the next configuration (None: they can): one voter added or
        removed at a time, never while an earlier change is uncommitted (below ``high_watermark``)."""
        if self.entries and self.entries[-1][0] >= high_watermark:
            return "an earlier change of the quorum is not committed yet"
        wanted = {v.node_id for v in voters}
        if len(wanted) != len(voters) or not wanted:
            return "the voters must be distinct, and at least one"
        if len(wanted ^ self.voters) != 1:
            return "a change adds or removes exactly one voter"
        return None

    @property
    def quorum(self) -> int:
        return len(self.voters) // 2 + 1

    @property
    def last_change_offset(self) -> int | None:
        """The offset of the newest configuration entry (None: the log holds none)."""
        return self.entries[-1][0] if self.entries else None

    def voters_at(self, offset: int) -> tuple[Voter, ...] | None:
        """The voters the log records as in force at ``offset`` (for a snapshot ending there);
        None when it records none yet (the nodes' start-up configuration decides)."""
        found = None if self.base_is_bootstrap else self.base_voters
        for config_offset, voters in self.entries:
            if config_offset < offset:
                found = voters
        return found

    def scan(self, log: RaftLog, start: int) -> None:
        """Find the configuration entries of ``log`` from ``start`` (at a restart)."""
        offset = start
        while offset < log.end_offset:
            entries = log.entries(offset, 10_000)
            if not entries:
                break
            self.note(offset, entries)
            offset += len(entries)

    def note(self, first_offset: int, entries: Sequence[Entry]) -> None:
        """``entries`` were appended from ``first_offset``."""
        for index, entry in enumerate(entries):
            if entry.voters is not None:
                self.entries.append((first_offset + index, entry.voters))

    def truncated(self, end_offset: int) -> None:
        """The log was truncated to end at ``end_offset``."""
        self.entries = [entry for entry in self.entries if entry[0] < end_offset]

    def installed(self, snapshot_voters: tuple[Voter, ...] | None) -> None:
        """A snapshot replaced the log: its voters (if it records any) are the base, the log holds
        no configuration entry."""
        if snapshot_voters is not None:
            self.base_voters, self.base_is_bootstrap = snapshot_voters, False
        self.entries = []

    def refresh(self) -> bool:
        """Put the newest configuration in force; whether the voters' ids changed."""
        self.voter_set = self.entries[-1][1] if self.entries else self.base_voters
        voters = frozenset(v.node_id for v in self.voter_set)
        if voters == self.voters:
            return False
        self.voters = voters
        return True
