"""What a Kafka API handler is given (``KafkaCall``) and gives back when it is more than a
response (``Answer``), and what the listener then writes and does (``Reply``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lanes.kafka.access import KafkaCaller
    from lanes.kafka.sasl import KafkaConnection
    from lanes.runtime.access.access_rules import Access


@dataclass(frozen=True)
class KafkaCall:
    """One request: its header and body (kio's dataclasses) and version, who makes it, what it
    may do (``access``: None when everything passes) and the connection it came on."""

    header: Any
    body: Any
    version: int
    caller: KafkaCaller
    access: Access | None
    connection: KafkaConnection


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
