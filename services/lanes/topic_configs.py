"""Topic configs: Kafka's names, types, defaults and validation rules, in one registry.

``TOPIC_CONFIGS`` lists every topic-level config Lanes understands. ``parse_topic_configs``
turns user text (``{"retention.ms": "3600000"}``) into typed values, refusing unknown names and
invalid values with InvalidConfigError messages that name the config and state the rule. The
log engine, the controller and the CLI all read configs through this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lanes.errors import InvalidConfigError

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_DAY_MS = 24 * 60 * 60 * 1000
#: The smallest segment.bytes a cluster lets a topic set by default (Kafka 4.0, KIP-1030; the
#: controller's --min-segment-bytes): a segment per batch would fill a broker with files and
#: descriptors that every topic on it shares. The rule below (14) is only the format's floor.
MIN_SEGMENT_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ConfigDef:
    """One config: its name, value type, default, rule and documentation."""

    name: str
    type: str  # "int", "long", "double", "boolean", "string", "list"
    default: Any
    doc: str
    validator: Callable[[Any], str | None] | None = None  # returns what is wrong, or None

    def parse(self, text: str) -> Any:
        """The typed value of ``text``; InvalidConfigError naming the config and the rule."""
        value = _PARSERS[self.type](self, text.strip())
        if self.validator is not None:
            problem = self.validator(value)
            if problem is not None:
                raise InvalidConfigError(f"{self.name}={text!r} is invalid: {problem}")
        return value

    def render(self, value: Any) -> str:
        """``value`` as config text."""
        if self.type == "boolean":
            return "true" if value else "false"
        if self.type == "list":
            return ",".join(value)
        return str(value)


def _parse_integer(config: ConfigDef, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InvalidConfigError(f"{config.name}={text!r} is not an integer") from None
    limit = _INT32_MAX if config.type == "int" else _INT64_MAX
    if not -limit - 1 <= value <= limit:
        raise InvalidConfigError(f"{config.name}={text!r} is out of range for a {config.type}")
    return value


def _parse_double(config: ConfigDef, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InvalidConfigError(f"{config.name}={text!r} is not a number") from None


def _parse_boolean(config: ConfigDef, text: str) -> bool:
    lowered = text.lower()
    if lowered not in {"true", "false"}:
        raise InvalidConfigError(f"{config.name}={text!r} must be true or false")
    return lowered == "true"


def _parse_list(config: ConfigDef, text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


_PARSERS: dict[str, Callable[[ConfigDef, str], Any]] = {
    "int": _parse_integer,
    "long": _parse_integer,
    "double": _parse_double,
    "boolean": _parse_boolean,
    "string": lambda config, text: text,
    "list": _parse_list,
}


def _at_least(minimum: int) -> Callable[[Any], str | None]:
    return lambda value: None if value >= minimum else f"must be at least {minimum}"


def _minus_one_or_at_least(minimum: int) -> Callable[[Any], str | None]:
    return lambda value: None if value == -1 or value >= minimum else f"must be -1 (unlimited) or at least {minimum}"


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    return lambda value: None if value in choices else f"must be one of {', '.join(choices)}"


def _cleanup_policy(value: tuple[str, ...]) -> str | None:
    if not value or not set(value) <= {"delete", "compact"}:
        return "must be delete, compact, or compact,delete"
    return None


def _ratio(value: float) -> str | None:
    return None if 0.0 <= value <= 1.0 else "must be between 0 and 1"


_DEFINITIONS = [
    ConfigDef(
        "cleanup.policy",
        "list",
        ("delete",),
        "delete: remove old segments by retention.ms/retention.bytes; compact: keep the latest value per key; "
        "both: compact,delete.",
        _cleanup_policy,
    ),
    ConfigDef(
        "compression.type",
        "string",
        "producer",
        "Codec of the stored batches. Lanes stores batches as the producer compressed them (producer); "
        "recompression on the broker is not supported.",
        lambda value: None if value == "producer" else "only 'producer' is supported: batches are stored as sent",
    ),
    ConfigDef(
        "delete.retention.ms",
        "long",
        _DAY_MS,
        "How long a tombstone stays readable after compaction first saw it.",
        _at_least(0),
    ),
    ConfigDef(
        "flush.messages",
        "long",
        _INT64_MAX,
        "Fsync after this many records (1: every append is on disk before it is acknowledged).",
        _at_least(1),
    ),
    ConfigDef("flush.ms", "long", _INT64_MAX, "Fsync when the oldest unflushed append is this old.", _at_least(0)),
    ConfigDef("index.interval.bytes", "int", 4096, "Bytes of log between offset/time index entries.", _at_least(0)),
    ConfigDef(
        "max.compaction.lag.ms",
        "long",
        _INT64_MAX,
        "Longest time a record stays uncompacted (compacted topics).",
        _at_least(1),
    ),
    ConfigDef(
        "max.message.bytes",
        "int",
        1_048_588,
        "Largest record batch the topic accepts (bytes, after compression).",
        _at_least(0),
    ),
    ConfigDef(
        "message.timestamp.after.max.ms",
        "long",
        60 * 60 * 1000,
        "With CreateTime, refuse a batch holding a record more than this far ahead of the broker's clock "
        "(Kafka 4.0's default, KIP-937: producer state kept by a record's time never expires otherwise).",
        _at_least(0),
    ),
    ConfigDef(
        "message.timestamp.type",
        "string",
        "CreateTime",
        "CreateTime: keep the producer's timestamps; LogAppendTime: stamp the broker's time.",
        _one_of("CreateTime", "LogAppendTime"),
    ),
    ConfigDef(
        "min.cleanable.dirty.ratio",
        "double",
        0.5,
        "Compact once this fraction of the log is uncompacted.",
        _ratio,
    ),
    ConfigDef("min.compaction.lag.ms", "long", 0, "Shortest time a record stays uncompacted.", _at_least(0)),
    ConfigDef(
        "min.insync.replicas",
        "int",
        1,
        "In-sync replicas needed for an acks=all write to succeed.",
        _at_least(1),
    ),
    ConfigDef(
        "retention.bytes",
        "long",
        -1,
        "Delete old segments while the partition is larger than this (-1: no size limit).",
        _minus_one_or_at_least(0),
    ),
    ConfigDef(
        "retention.ms",
        "long",
        7 * _DAY_MS,
        "Delete segments whose newest record is older than this (-1: keep forever).",
        _minus_one_or_at_least(0),
    ),
    ConfigDef("segment.bytes", "int", 1024 * 1024 * 1024, "Roll a new segment at this size.", _at_least(14)),
    ConfigDef("segment.ms", "long", 7 * _DAY_MS, "Roll a new segment when the active one is this old.", _at_least(1)),
    ConfigDef(
        "unclean.leader.election.enable",
        "boolean",
        False,
        "Allow an out-of-sync replica to lead when no in-sync one is alive (may lose acknowledged records).",
    ),
]

#: Every topic config, by name.
TOPIC_CONFIGS: dict[str, ConfigDef] = {config.name: config for config in _DEFINITIONS}


def parse_topic_configs(overrides: Mapping[str, str]) -> dict[str, Any]:
    """Typed values for ``overrides`` (config text by name); unknown names are refused."""
    values = {}
    for name, text in overrides.items():
        config = TOPIC_CONFIGS.get(name)
        if config is None:
            known = ", ".join(sorted(TOPIC_CONFIGS))
            raise InvalidConfigError(f"unknown topic config {name!r}; known topic configs: {known}")
        values[name] = config.parse(text)
    return values


def topic_config_values(overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every topic config's effective typed value: defaults, then ``overrides``."""
    values = {name: config.default for name, config in TOPIC_CONFIGS.items()}
    values.update(parse_topic_configs(overrides or {}))
    return values
