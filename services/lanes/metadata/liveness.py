"""How nodes tell that the active controller went silent, so that a failover fences nobody.

The active controller sends a keepalive on every metadata stream with nothing else to send, every
``METADATA_KEEPALIVE_MS``; a node leaves a stream silent for ``METADATA_SILENCE_S`` (three
keepalives missed) for another controller, as a Raft follower leaves a silent leader. Without
that, a node whose controller was cut off waited on TCP retransmissions and followed no metadata
for many seconds after a new controller took over.

A heartbeat's call gives up after ``heartbeat_timeout_s``, well within the session, and the next
one goes to the next controller at once: a node reaches a new active controller, which gave every
registered node a fresh session when it took over, long before that session ends.
"""

from __future__ import annotations

#: how often the active controller sends a keepalive on a metadata stream with nothing to send
METADATA_KEEPALIVE_MS = 1000
#: a metadata stream silent this long is left for another controller
METADATA_SILENCE_S = 3 * METADATA_KEEPALIVE_MS / 1000
#: the longest a heartbeat call waits, whatever the session
HEARTBEAT_TIMEOUT_MAX_S = 2.0


def heartbeat_timeout_s(session_timeout_s: float | None) -> float:
    """How long one heartbeat call may wait: a quarter of the session (at most
    ``HEARTBEAT_TIMEOUT_MAX_S``, at least 0.2 s), so that several attempts, on other
    controllers, fit in one session."""
    if session_timeout_s is None:
        return HEARTBEAT_TIMEOUT_MAX_S
    return max(0.2, min(HEARTBEAT_TIMEOUT_MAX_S, session_timeout_s / 4))
