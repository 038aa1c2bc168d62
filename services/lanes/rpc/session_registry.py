"""The password sessions this process's clients hold, by fingerprint, so that a refusal naming one
(SESSION_EXPIRED: the process that opened it no longer knows it, having pushed it out) makes
its holder forget it and log in again at its next call, rather than send it until renewal.
Servers name sessions in refusals by ``session_fingerprint`` (a hash prefix: it opens nothing).
"""

from __future__ import annotations

import hashlib
import re
import weakref
from typing import Protocol


class Forgettable(Protocol):
    """A session holder (``lanes.rpc.sessions``)."""

    def forget(self) -> None: ...


#: Sessions in use, by fingerprint (a holder that is gone drops out by itself).
_LIVE: weakref.WeakValueDictionary[str, Forgettable] = weakref.WeakValueDictionary()
_NAMED = re.compile(r"\(session ([0-9a-f]{16})\)")


def session_fingerprint(token: str) -> str:
    """What a refusal names a session by."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def register(token: str, holder: Forgettable) -> None:
    """``holder`` now sends ``token``."""
    _LIVE[session_fingerprint(token)] = holder


def forget_refused(details: str) -> None:
    """Make the holder of the session a refusal's ``details`` name forget it."""
    named = _NAMED.search(details)
    holder = _LIVE.pop(named.group(1), None) if named else None
    if holder is not None:
        holder.forget()
