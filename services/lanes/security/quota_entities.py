"""Whom a client quota is for, and which quota a call falls under: Kafka's quota entities and
their precedence (KIP-55), as a pure core.

An entity has a user part, a client-id part, or both; each part is a name or ``DEFAULT`` (every
user, or client id, without an entity of its own). A call made by user ``u`` with client id
``c`` falls under the first entity that has a quota for the key asked, in this order (Kafka's):

1. ``(u, c)``   2. ``(u, DEFAULT)``   3. ``(u, -)``   4. ``(DEFAULT, c)``
5. ``(DEFAULT, DEFAULT)``   6. ``(DEFAULT, -)``   7. ``(-, c)``   8. ``(-, DEFAULT)``

(``-``: the entity has no such part). What is *measured* is the entity with its default parts
filled in by the caller's names (``measured_as``): a quota on ``(DEFAULT, -)`` bounds each user
on its own, one on ``(u, -)`` bounds every client of ``u`` together, one on ``(u, DEFAULT)``
each client of ``u`` on its own. Clients name themselves in each call's ``lanes-client-id``
metadata (``lanes.rpc.call_metadata.CLIENT_ID_KEY``); a call without one has client id ``""``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from lanes.security.scram import USER_NAME
from lanes.v1 import metadata_pb2


class Default(enum.Enum):
    """The default of an entity part (Kafka's ``<default>``)."""

    DEFAULT = "<default>"

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = Default.DEFAULT
#: ``DEFAULT`` as the ``lanes`` package names it (``Admin.set_quota(..., user=lanes.QUOTA_DEFAULT)``).
QUOTA_DEFAULT = DEFAULT

#: One part of an entity: a name, ``DEFAULT``, or None (not part of the entity).
Part = str | Default | None

#: The entity part types on the wire (Kafka's names).
USER = "user"
CLIENT_ID = "client-id"

#: What a client id may be (it names a quota entity and travels as gRPC metadata, which is
#: printable ASCII): at most 255 printable ASCII characters, spaces included (Kafka takes any
#: string up to 32 KiB; Lanes' ids are short). Ids are what clients say they are: a client-id
#: quota bounds clients that name themselves, not a security boundary (user quotas are).
MAX_CLIENT_ID_CHARS = 255
_CLIENT_ID_TEXT = re.compile(r"[\x20-\x7e]{0,255}")


def valid_client_id(client_id: str) -> bool:
    """Whether ``client_id`` may name a client (``""``, a call's id when it gives none, included)."""
    return _CLIENT_ID_TEXT.fullmatch(client_id) is not None


@dataclass(frozen=True)
class QuotaEntity:
    """A user part, a client-id part, or both (each a name or ``DEFAULT``; None: no such part)."""

    user: Part = None
    client_id: Part = None

    def problem(self) -> str | None:
        """Why this entity cannot hold a quota (None: it can)."""
        if self.user is None and self.client_id is None:
            return "a quota is for a user, a client id, or both (either may be the default)"
        if isinstance(self.user, str) and not USER_NAME.fullmatch(self.user):
            return f"{self.user[:140]!r} is not a user name"
        if isinstance(self.client_id, str) and (not self.client_id or not valid_client_id(self.client_id)):
            return (
                f"{self.client_id[:140]!r} is not a client id (1 to {MAX_CLIENT_ID_CHARS} printable ASCII characters)"
            )
        return None

    def to_proto(self) -> list[metadata_pb2.QuotaEntityPart]:
        """The entity's parts as a record carries them (user first)."""
        parts = []
        for type_, part in ((USER, self.user), (CLIENT_ID, self.client_id)):
            if part is not None:
                parts.append(metadata_pb2.QuotaEntityPart(type=type_, name=None if part is DEFAULT else part))
        return parts

    @classmethod
    def from_proto(cls, parts: list[metadata_pb2.QuotaEntityPart]) -> QuotaEntity | None:
        """The entity ``parts`` name; None when they name none (an unknown or repeated type)."""
        found: dict[str, Part] = {}
        for part in parts:
            if part.type not in (USER, CLIENT_ID) or part.type in found:
                return None
            found[part.type] = part.name if part.HasField("name") else DEFAULT
        if not found:
            return None
        return cls(found.get(USER), found.get(CLIENT_ID))

    def sort_key(self) -> tuple[int, str, int, str]:
        """Defaults first, then by names: a stable order for listings and snapshots."""
        return (*_part_key(self.user), *_part_key(self.client_id))

    def __str__(self) -> str:
        shown = []
        for label, part in (("user", self.user), ("client-id", self.client_id)):
            if part is not None:
                shown.append(f"{label}={'<default>' if part is DEFAULT else part}")
        return ", ".join(shown)


def _part_key(part: Part) -> tuple[int, str]:
    if part is None:
        return (0, "")
    if part is DEFAULT:
        return (1, "")
    return (2, part)


def candidates(user: str, client_id: str) -> tuple[QuotaEntity, ...]:
    """The entities a call of ``user`` with ``client_id`` may fall under, first one first."""
    return (
        QuotaEntity(user, client_id),
        QuotaEntity(user, DEFAULT),
        QuotaEntity(user, None),
        QuotaEntity(DEFAULT, client_id),
        QuotaEntity(DEFAULT, DEFAULT),
        QuotaEntity(DEFAULT, None),
        QuotaEntity(None, client_id),
        QuotaEntity(None, DEFAULT),
    )


def measured_as(entity: QuotaEntity, user: str, client_id: str) -> QuotaEntity:
    """What a call under ``entity`` is measured as: the entity with its defaults made the
    caller's names (each user, or each client, then has a window of its own)."""
    return QuotaEntity(
        user if entity.user is DEFAULT else entity.user,
        client_id if entity.client_id is DEFAULT else entity.client_id,
    )
