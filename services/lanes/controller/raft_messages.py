"""What the controllers' Raft core is made of and speaks (KRaft's model, KIP-595): voters, log
entries, snapshot ids, roles, the messages between voters and the settings. Plain values."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

NO_LEADER = -1
#: a leader forgets an observer silent for this many election timeouts
OBSERVER_FORGOTTEN_TIMEOUTS = 10


@dataclass(frozen=True)
class Voter:
    """A member of the quorum: its node id and where its peers reach it (the driver's concern)."""

    node_id: int
    address: str = ""


@dataclass(frozen=True)
class Entry:
    """One log entry: the epoch of the leader that appended it, and the state machine's payload.

    ``ends_write``: the last entry of one ``propose`` (a decision written as one batch). A log
    that stores writes as units (the metadata log's batches) keeps the leader's boundaries on
    followers with it, so a truncation at a write boundary never takes more than asked.

    ``voters``: a configuration entry (KIP-853's VotersRecord, alone in its write, no payload):
    from this offset on, the quorum is these voters."""

    epoch: int
    data: bytes
    ends_write: bool = True
    voters: tuple[Voter, ...] | None = None


@dataclass(frozen=True)
class SnapshotId:
    """A snapshot of the committed state: every entry below ``end_offset``, the last of which is
    of ``epoch`` (KRaft's snapshot id)."""

    end_offset: int
    epoch: int


class DivergedHistoryError(Exception):
    """The leader's log differs from this node's below what this node holds as committed: this
    node's history is another quorum's (a controller that started a cluster of its own). Going on
    would mix the two; the driver stops the process."""


class Role(Enum):
    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre-candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"


@dataclass(frozen=True)
class VoteRequest:
    sender: int
    to: int
    epoch: int  # the epoch the candidate stands in (for a pre-vote: the one it would start)
    last_epoch: int
    end_offset: int
    pre_vote: bool


@dataclass(frozen=True)
class VoteResponse:
    sender: int
    to: int
    epoch: int  # the voter's epoch (a candidate behind it steps down)
    granted: bool
    pre_vote: bool
    #: the leader the voter follows and heard from recently (a refused candidate follows it)
    leader: int = NO_LEADER


@dataclass(frozen=True)
class BeginEpoch:
    sender: int
    to: int
    epoch: int


@dataclass(frozen=True)
class EndEpoch:
    """A leader resigns (it is stopping): followers elect at once instead of after an election
    timeout (KRaft's EndQuorumEpoch). Changes no durable state."""

    sender: int
    to: int
    epoch: int


@dataclass(frozen=True)
class FetchRequest:
    sender: int
    to: int
    epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True)
class FetchResponse:
    sender: int
    to: int
    epoch: int
    leader: int  # NO_LEADER: the sender does not lead this epoch
    fetch_offset: int  # the request's, so the follower can tell an answer about a log that moved
    entries: tuple[Entry, ...] = ()
    diverging: tuple[int, int] | None = None
    high_watermark: int = 0
    #: the follower's fetch is below what the leader's log holds: fetch this snapshot first
    snapshot: SnapshotId | None = None
    #: the request's, with ``fetch_offset``: a late answer about a log that was truncated and
    #: grew back to the same length is told apart by the epoch of its last entry
    last_fetched_epoch: int = -1


@dataclass(frozen=True)
class FetchSnapshotRequest:
    """A follower asks for the snapshot's bytes from ``position`` (KIP-630's FetchSnapshot)."""

    sender: int
    to: int
    epoch: int
    snapshot: SnapshotId
    position: int


@dataclass(frozen=True)
class FetchSnapshotResponse:
    sender: int
    to: int
    epoch: int
    leader: int  # NO_LEADER: the sender does not lead this epoch
    snapshot: SnapshotId
    position: int
    data: bytes = b""
    #: the snapshot's whole size; -1: the leader does not hold it (any more): fetch again
    size: int = -1
    high_watermark: int = 0


Message = (
    VoteRequest
    | VoteResponse
    | BeginEpoch
    | EndEpoch
    | FetchRequest
    | FetchResponse
    | FetchSnapshotRequest
    | FetchSnapshotResponse
)


@dataclass(frozen=True)
class RaftConfig:
    election_timeout_ms: int = 1_000
    #: how long a follower waits between fetches when nothing came back (a lost answer)
    fetch_timeout_ms: int = 250
    max_fetch_entries: int = 64
    #: the most snapshot bytes one FetchSnapshot answer carries
    max_snapshot_chunk_bytes: int = 1024 * 1024
    #: an election skips up to this many epochs at random (Raft allows any increase): a
    #: directory restored from an old copy then does not hand out the epochs of the history it
    #: lost again, so nodes that applied that history can tell (0: epochs go up by one)
    max_epoch_skip: int = 0
