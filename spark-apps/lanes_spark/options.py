"""The data source's options, parsed and checked once, with errors that say what to write instead.
Names and formats are those of Spark's Kafka source, so habits carry over:

- exactly one of ``subscribe`` (comma-separated topics), ``subscribePattern`` (a regular
  expression) or ``assign`` (JSON ``{"topic": [0, 1]}``);
- ``startingOffsets``: ``earliest``, ``latest`` (streaming default) or JSON
  ``{"topic": {"0": 23, "1": -2}}`` where -2 is earliest and -1 latest; ``startingTimestamp``
  (milliseconds) instead: the first record at or after it, per partition;
- ``endingOffsets`` (batch): ``latest`` (default) or JSON as above (-1 latest);
- ``maxRecordsPerTrigger``, ``minPartitions``, ``failOnDataLoss`` (default true), ``groupId``,
  ``includeHeaders`` (default false), ``pollTimeoutMs`` (how long a task waits for records it
  knows exist, default 120000);
- writes: ``topic`` (or a ``topic`` column), ``acks`` (``all`` default, ``1``, ``0``),
  ``compression`` (``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd``), ``lingerMs``;
- reaching a secure cluster (reads and writes; ``ClusterAccess``): ``tls.ca`` (the cluster's CA
  file, with ``tls.cert`` and ``tls.key`` for a client certificate), ``username`` with
  ``passwordFile`` (read once, where the query is planned) or ``password``. Without them the
  source's clients use their process's (``LANES_TLS_CA``, ``LANES_USERNAME``,
  ``LANES_PASSWORD_FILE``: what pods get from Secrets).

Option names are case-insensitive, as everywhere in Spark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lanes import TlsFiles, UserPassword

EARLIEST = -2
LATEST = -1
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")

#: Explicit offsets per topic and partition (EARLIEST / LATEST allowed as values).
PartitionOffsets = dict[str, dict[int, int]]


class LanesOptionError(ValueError):
    """An option is missing, unknown or malformed; the message says what to write."""


@dataclass(frozen=True)
class ClusterAccess:
    """How the source's clients reach the cluster: the TLS files and user the options name, or
    (``"process"``) those of the Python worker's environment. Travels to executors with the
    query's options: the CA and certificate files must be there too; the password is carried."""

    tls: TlsFiles | Literal["process"] = "process"
    credentials: UserPassword | Literal["process"] = "process"

    def client_settings(self) -> dict[str, Any]:
        """Keyword arguments of ``lanes.Producer``, ``Consumer`` and ``Admin``."""
        return {"tls": self.tls, "credentials": self.credentials}


@dataclass(frozen=True)
class ReadOptions:
    bootstrap: str
    access: ClusterAccess = ClusterAccess()
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: Mapping[str, tuple[int, ...]] | None = None
    starting: str | PartitionOffsets = "latest"
    ending: str | PartitionOffsets = "latest"
    starting_timestamp_ms: int | None = None
    max_records_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    group_id: str | None = None
    include_headers: bool = False
    poll_timeout_ms: int = 120_000

    def wants(self, topic: str) -> bool:
        """Whether a topic is read (``subscribe`` / ``subscribePattern``)."""
        if self.subscribe_pattern is not None:
            return re.fullmatch(self.subscribe_pattern, topic) is not None and not topic.startswith("__")
        return topic in self.subscribe


@dataclass(frozen=True)
class WriteOptions:
    bootstrap: str
    access: ClusterAccess = ClusterAccess()
    topic: str | None = None
    acks: str = "all"
    compression: str = "none"
    linger_ms: int = 5
    producer_settings: Mapping[str, Any] = field(default_factory=dict)


ACCESS_KEYS = {"tls.ca", "tls.cert", "tls.key", "username", "password", "passwordfile"}
READ_KEYS = ACCESS_KEYS | {
    "bootstrap",
    "subscribe",
    "subscribepattern",
    "assign",
    "startingoffsets",
    "endingoffsets",
    "startingtimestamp",
    "maxrecordspertrigger",
    "minpartitions",
    "failondataloss",
    "groupid",
    "includeheaders",
    "polltimeoutms",
}
WRITE_KEYS = ACCESS_KEYS | {"bootstrap", "topic", "acks", "compression", "lingerms"}
SPARK_KEYS = {"path", "checkpointlocation", "queryname"}  # options Spark itself may pass along


def read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """``ReadOptions`` from a query's options; LanesOptionError when they cannot work."""
    given = _lowered(options, READ_KEYS)
    sources = [name for name in ("subscribe", "subscribepattern", "assign") if given.get(name)]
    if len(sources) != 1:
        raise LanesOptionError(
            "set exactly one of the options subscribe (topics, comma-separated), subscribePattern (a regular "
            f'expression) or assign (JSON such as {{"prices": [0, 1]}}); got {sources or "none"}'
        )
    subscribe = tuple(t.strip() for t in given.get("subscribe", "").split(",") if t.strip())
    pattern = given.get("subscribepattern") or None
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise LanesOptionError(f"subscribePattern {pattern!r} is not a regular expression: {exc}") from None
    assign = _assignment(given["assign"]) if given.get("assign") else None
    if "endingoffsets" in given and streaming:
        raise LanesOptionError("endingOffsets is for batch queries (spark.read); a stream has no end")
    starting = _offsets_spec(given.get("startingoffsets", "latest" if streaming else "earliest"), "startingOffsets")
    ending = _offsets_spec(given.get("endingoffsets", "latest"), "endingOffsets")
    if ending == "earliest":
        raise LanesOptionError("endingOffsets cannot be earliest: use latest or JSON offsets")
    if isinstance(ending, dict) and any(o == EARLIEST for parts in ending.values() for o in parts.values()):
        raise LanesOptionError("endingOffsets cannot use -2 (earliest) for a partition: use an offset or -1 (latest)")
    return ReadOptions(
        bootstrap=_required(given, "bootstrap", "host:port of Lanes brokers, comma-separated"),
        access=_access(given),
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=starting,
        ending=ending,
        starting_timestamp_ms=_integer(given, "startingtimestamp", "startingTimestamp", minimum=0),
        max_records_per_trigger=_integer(given, "maxrecordspertrigger", "maxRecordsPerTrigger", minimum=1),
        min_partitions=_integer(given, "minpartitions", "minPartitions", minimum=1),
        fail_on_data_loss=_boolean(given, "failondataloss", "failOnDataLoss", default=True),
        group_id=given.get("groupid") or None,
        include_headers=_boolean(given, "includeheaders", "includeHeaders", default=False),
        poll_timeout_ms=_integer(given, "polltimeoutms", "pollTimeoutMs", minimum=1) or 120_000,
    )


def write_options(options: Mapping[str, str]) -> WriteOptions:
    """``WriteOptions`` from a query's options; LanesOptionError when they cannot work."""
    given = _lowered(options, WRITE_KEYS)
    acks = given.get("acks", "all")
    if acks not in ("all", "-1", "1", "0"):
        raise LanesOptionError(f"acks {acks!r}: use all, 1 or 0")
    compression = given.get("compression", "none")
    if compression not in COMPRESSIONS:
        raise LanesOptionError(f"compression {compression!r}: use one of {', '.join(COMPRESSIONS)}")
    return WriteOptions(
        bootstrap=_required(given, "bootstrap", "host:port of Lanes brokers, comma-separated"),
        access=_access(given),
        topic=given.get("topic") or None,
        acks="all" if acks == "-1" else acks,
        compression=compression,
        linger_ms=_integer(given, "lingerms", "lingerMs", minimum=0) or 5,
    )


def _access(given: Mapping[str, str]) -> ClusterAccess:
    """``ClusterAccess`` from the ``tls.*``, ``username`` and password options."""
    ca, cert, key = (given.get(name, "").strip() or None for name in ("tls.ca", "tls.cert", "tls.key"))
    if (cert is None) != (key is None):
        raise LanesOptionError("tls.cert and tls.key go together: a client certificate and its private key")
    if cert is not None and ca is None:
        raise LanesOptionError("tls.cert needs tls.ca: the CA that signed the cluster's certificates")
    tls: TlsFiles | Literal["process"] = "process"
    if ca is not None:
        tls = TlsFiles(Path(ca), Path(cert) if cert else None, Path(key) if key else None)
    username = given.get("username", "").strip() or None
    password, password_file = given.get("password"), given.get("passwordfile", "").strip() or None
    if password is not None and password_file is not None:
        raise LanesOptionError("set password or passwordFile, not both")
    if username is None:
        if password is not None or password_file is not None:
            raise LanesOptionError("a password needs the option username")
        return ClusterAccess(tls)
    if password_file is not None:
        try:
            password = Path(password_file).read_text().strip()
        except OSError as exc:
            raise LanesOptionError(f"passwordFile {password_file!r} cannot be read: {exc.strerror}") from None
    if not password:
        raise LanesOptionError(f"username {username!r} needs passwordFile (a file holding its password) or password")
    try:
        return ClusterAccess(tls, UserPassword(username, password))
    except ValueError as exc:
        raise LanesOptionError(f"username {username!r}: {exc}") from None


def _lowered(options: Mapping[str, str], known: set[str]) -> dict[str, str]:
    given = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    unknown = sorted(set(given) - known - SPARK_KEYS)
    if unknown:
        raise LanesOptionError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return given


def _required(given: Mapping[str, str], name: str, what: str) -> str:
    value = given.get(name, "").strip()
    if not value:
        raise LanesOptionError(f"option {name} is required: {what}")
    return value


def _integer(given: Mapping[str, str], key: str, name: str, *, minimum: int) -> int | None:
    if key not in given:
        return None
    try:
        value = int(given[key])
    except ValueError:
        raise LanesOptionError(f"{name} must be an integer, got {given[key]!r}") from None
    if value < minimum:
        raise LanesOptionError(f"{name} must be at least {minimum}, got {value}")
    return value


def _boolean(given: Mapping[str, str], key: str, name: str, *, default: bool) -> bool:
    raw = given.get(key)
    if raw is None:
        return default
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise LanesOptionError(f"{name} must be true or false, got {raw!r}")


def _assignment(raw: str) -> dict[str, tuple[int, ...]]:
    try:
        document = json.loads(raw)
        assert isinstance(document, dict)
        return {str(t): tuple(sorted(int(p) for p in parts)) for t, parts in document.items()}
    except (ValueError, TypeError, AssertionError):
        raise LanesOptionError(f'assign must be JSON such as {{"prices": [0, 1]}}, got {raw!r}') from None


def _offsets_spec(raw: str, name: str) -> str | PartitionOffsets:
    text = raw.strip()
    if text in ("earliest", "latest"):
        return text
    try:
        document = json.loads(text)
        assert isinstance(document, dict)
        offsets = {str(topic): {int(p): int(o) for p, o in parts.items()} for topic, parts in document.items()}
    except (ValueError, TypeError, AttributeError, AssertionError):
        raise LanesOptionError(
            f'{name} must be earliest, latest or JSON such as {{"prices": {{"0": 23, "1": -2}}}} '
            f"(-2 earliest, -1 latest); got {raw!r}"
        ) from None
    for topic, parts in offsets.items():
        for partition, offset in parts.items():
            if offset < EARLIEST or partition < 0:
                raise LanesOptionError(f"{name}: {topic}/{partition} -> {offset} is not an offset, -1 or -2")
    return offsets
