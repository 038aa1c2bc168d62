"""Incremental fetch sessions for replication (Kafka's KIP-227), as a pure core.

A follower fetches every partition it follows from a leader in one long-polling ReplicaFetch
loop. Without sessions, each request names every partition and each answer names them all again:
with thousands of idle partitions, that is all an idle broker does. With a session:

- the first request is *full* (session id 0, epoch 0): it names every partition; the leader opens
  a session for the follower (replacing any older one of that follower) and answers every
  partition with the session's id;
- then each request is *incremental* (that id, epoch 1, 2, ...): it names only the partitions
  whose position (fetch offset, last fetched epoch, log start, leader epoch) changed since the
  last request, and those the follower stopped fetching (*forgotten*); the leader keeps the others
  at their last position, updates every follower position it tracks as if they had been named
  (so the ISR and the high-water mark see the follower as before), and answers the partitions
  the request named and, of the others, only those with records, an error, a divergence, or a
  high-water mark or log start that changed since the session last told the follower (Kafka
  answers a named partition only if something changed; naming it always tells a follower that
  just caught up the mark at once, see decision 0022);
- an unknown session (the leader restarted, or gave it to a newer full request) is answered
  FETCH_SESSION_ID_NOT_FOUND, an epoch that does not follow (a request or answer was lost)
  INVALID_FETCH_SESSION_EPOCH; after either, or after any failed call, the follower sends a full
  request. A follower never sends the next request before the previous one's answer arrived or
  failed, so a session's epochs advance one answer at a time.

``FetchSessionCache`` is the leader side (one session per follower broker: memory bounded by the
cluster's size); ``FetchSessionBuilder`` the follower side (one per leader). Neither is
thread-safe: each is used from one event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from lanes.errors import ErrorCode
from lanes.topic_partition import TopicPartition

#: the id and epoch of a full request (it opens a new session)
NO_SESSION = 0
FULL_EPOCH = 0


class FetchPosition(NamedTuple):
    """What a follower says of one partition in a fetch."""

    topic_id: str
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int


@dataclass
class SessionPartition:
    """One partition of a leader's session: the follower's last position, and what the session
    last told it (-1: nothing yet)."""

    position: FetchPosition
    sent_high_watermark: int = -1
    sent_log_start_offset: int = -1


@dataclass
class FetchSession:
    """A leader's session with one follower."""

    session_id: int
    #: the epoch the follower's next request must carry
    next_epoch: int = 1
    partitions: dict[TopicPartition, SessionPartition] = field(default_factory=dict)

    def must_answer(self, key: TopicPartition, high_watermark: int, log_start_offset: int) -> bool:
        """Whether an incremental answer names ``key`` for its offsets alone (records, errors and
        divergences are always named)."""
        entry = self.partitions.get(key)
        return entry is None or (entry.sent_high_watermark, entry.sent_log_start_offset) != (
            high_watermark,
            log_start_offset,
        )

    def answered(self, key: TopicPartition, high_watermark: int, log_start_offset: int) -> None:
        """The answer sent to the follower named ``key`` with these offsets."""
        entry = self.partitions.get(key)
        if entry is not None:
            entry.sent_high_watermark = high_watermark
            entry.sent_log_start_offset = log_start_offset


class FetchSessionCache:
    """The leader's sessions, one per follower broker."""

    def __init__(self, new_session_id: Callable[[], int]) -> None:
        """``new_session_id``: a fresh nonzero id (randomness injected)."""
        self._new_session_id = new_session_id
        self._sessions: dict[int, FetchSession] = {}

    def resolve(
        self,
        replica_id: int,
        session_id: int,
        session_epoch: int,
        named: Mapping[TopicPartition, FetchPosition],
        forgotten: Iterable[TopicPartition],
    ) -> tuple[FetchSession, bool] | ErrorCode:
        """The session a request belongs to, updated with its positions, and whether it is full;
        or the error that ends the follower's session."""
        if session_epoch == FULL_EPOCH:
            opened = FetchSession(self._new_session_id())
            opened.partitions = {key: SessionPartition(position) for key, position in named.items()}
            self._sessions[replica_id] = opened
            return opened, True
        session = self._sessions.get(replica_id)
        if session is None or session.session_id != session_id:
            return ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        if session_epoch != session.next_epoch:
            del self._sessions[replica_id]
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH
        session.next_epoch += 1
        for key in forgotten:
            session.partitions.pop(key, None)
        for key, position in named.items():
            entry = session.partitions.get(key)
            if entry is None:
                session.partitions[key] = SessionPartition(position)
            else:
                entry.position = position
        return session, False

    def __len__(self) -> int:
        return len(self._sessions)


class FetchSessionBuilder:
    """The follower's side of its session with one leader."""

    def __init__(self) -> None:
        self.session_id = NO_SESSION
        self.epoch = FULL_EPOCH
        self._sent: dict[TopicPartition, FetchPosition] = {}

    def request(
        self, positions: Mapping[TopicPartition, FetchPosition]
    ) -> tuple[dict[TopicPartition, FetchPosition], list[TopicPartition]]:
        """For the next request over ``positions`` (every followed partition): the partitions to
        name, and those to forget (``session_id`` and ``epoch`` say which request it is)."""
        if self.session_id == NO_SESSION:
            return dict(positions), []
        sent = self._sent
        named = {key: position for key, position in positions.items() if sent.get(key) != position}
        forgotten = [key for key in sent if key not in positions]
        return named, forgotten

    def answered(self, session_id: int, positions: Mapping[TopicPartition, FetchPosition]) -> None:
        """The leader answered the request built over ``positions`` within session ``session_id``."""
        if session_id == NO_SESSION:
            self.reset()
            return
        self.epoch = 1 if session_id != self.session_id else self.epoch + 1
        self.session_id = session_id
        self._sent = dict(positions)

    def reset(self) -> None:
        """The session ended (an error, a failed call): the next request is full."""
        self.session_id = NO_SESSION
        self.epoch = FULL_EPOCH
        self._sent = {}
