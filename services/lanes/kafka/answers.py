"""What a Kafka API handler gives back when it is more than a response, and what the listener
then writes and does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Answer:
    """A handler's answer when it is more than a response: ``release`` once it was sent (the
    fetch memory its records hold), ``close`` the connection after it (no response for acks=0,
    and an error the producer must notice: Kafka closes the connection then)."""

    response: Any | None
    release: Callable[[], None] | None = None
    close: bool = False


@dataclass(frozen=True)
class Reply:
    """What the listener writes (``frame``, possibly empty), then does."""

    frame: bytes
    release: Callable[[], None] | None = None
    close: bool = False
