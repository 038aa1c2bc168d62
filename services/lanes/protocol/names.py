"""Naming rules for topics and consumer groups, with errors that state the rule.

Topics: 1 to 249 characters from ``[a-zA-Z0-9._-]``, not ``.`` or ``..``; names starting with
``__`` are reserved for internal topics such as ``__consumer_offsets``. As in Kafka, ``.`` and
``_`` collide in metric names, so two topics whose names differ only by them cannot coexist
(``collision_key`` gives the name they share).

Groups: 1 to 255 characters, no control characters and no leading or trailing whitespace.
"""

from __future__ import annotations

import re

from lanes.errors import InvalidGroupIdError, InvalidTopicError

TOPIC_NAME_MAX_CHARS = 249
GROUP_ID_MAX_CHARS = 255
INTERNAL_PREFIX = "__"
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
TOPIC_NAME_RULE = f"1 to {TOPIC_NAME_MAX_CHARS} characters from a-z, A-Z, 0-9, '.', '_' and '-', not '.' or '..'"
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")
_GROUP_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")


def is_internal_topic(name: str) -> bool:
    """Whether ``name`` is in the reserved internal namespace (``__`` prefix)."""
    return name.startswith(INTERNAL_PREFIX)


def validate_topic_name(name: str, *, allow_internal: bool = False) -> str:
    """Return ``name`` if it is a valid topic name; raise InvalidTopicError saying the rule."""
    if not isinstance(name, str):
        raise InvalidTopicError(f"a topic name must be a string, not {type(name).__name__}")
    if not name:
        raise InvalidTopicError(f"the topic name is empty; use {TOPIC_NAME_RULE}")
    if name in {".", ".."}:
        raise InvalidTopicError(f"{name!r} is not a valid topic name; use {TOPIC_NAME_RULE}")
    if len(name) > TOPIC_NAME_MAX_CHARS:
        raise InvalidTopicError(f"topic name of {len(name)} characters is too long; use {TOPIC_NAME_RULE}")
    if not _TOPIC_CHARS.fullmatch(name):
        bad = sorted({c for c in name if not _TOPIC_CHARS.fullmatch(c)})
        raise InvalidTopicError(
            f"topic name {name!r} contains {', '.join(repr(c) for c in bad)}; use {TOPIC_NAME_RULE}"
        )
    if is_internal_topic(name) and not allow_internal:
        raise InvalidTopicError(
            f"topic name {name!r} starts with {INTERNAL_PREFIX!r}, which is reserved for internal topics"
        )
    return name


def collision_key(name: str) -> str:
    """The name as metrics see it: topics with the same key cannot coexist."""
    return name.replace(".", "_")


def validate_group_id(group_id: str) -> str:
    """Return ``group_id`` if valid; raise InvalidGroupIdError saying the rule."""
    rule = f"1 to {GROUP_ID_MAX_CHARS} characters, no control characters, no surrounding spaces"
    if not isinstance(group_id, str):
        raise InvalidGroupIdError(f"a group id must be a string, not {type(group_id).__name__}")
    if not group_id:
        raise InvalidGroupIdError(f"the group id is empty; use {rule}")
    if len(group_id) > GROUP_ID_MAX_CHARS:
        raise InvalidGroupIdError(f"group id of {len(group_id)} characters is too long; use {rule}")
    if _GROUP_FORBIDDEN.search(group_id):
        raise InvalidGroupIdError(f"group id {group_id!r} contains control characters; use {rule}")
    if group_id != group_id.strip():
        raise InvalidGroupIdError(f"group id {group_id!r} has leading or trailing whitespace; use {rule}")
    return group_id
