"""How ``lanes consume`` prints records: kcat-style format strings, and JSON lines.

A format is text with directives, rendered once per record and followed by a newline:

====  ==============================================  ====  ==========================
%t    topic                                           %T    timestamp (ms since epoch)
%p    partition                                       %h    headers as k=v,k=v
%o    offset                                          %K    key length in bytes (-1: null)
%k    key (empty when null)                           %S    value length in bytes (-1: null)
%v    value (empty when null)                         %%    a literal %
====  ==============================================  ====  ==========================

Escapes ``\\n``, ``\\t``, ``\\r`` and ``\\\\`` work inside the format. Keys and values are written as
their bytes (binary passes through untouched); ``pretty`` re-indents values that parse as JSON.
Pure: no I/O.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from typing import Any

from lanes.cli.values import UsageError
from lanes.client.consumer import ConsumerRecord
from lanes.protocol.records import TimestampType

DEFAULT_FORMAT = "%v"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def _text(data: bytes | None) -> bytes:
    return b"" if data is None else data


def _length(data: bytes | None) -> bytes:
    return b"-1" if data is None else str(len(data)).encode()


def headers_text(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """Headers as ``k=v,k=v`` (a null header value prints as just ``k``)."""
    return b",".join(k.encode() if v is None else k.encode() + b"=" + v for k, v in headers)


def pretty_json(value: bytes | None) -> bytes | None:
    """``value`` re-indented when it is a JSON object or array; otherwise unchanged."""
    if not value or value.lstrip()[:1] not in (b"{", b"["):
        return value
    try:
        return json.dumps(json.loads(value), indent=2, ensure_ascii=False).encode()
    except ValueError:
        return value


Field = Callable[[ConsumerRecord, bool], bytes]
_FIELDS: dict[str, Field] = {
    "t": lambda r, _: r.topic.encode(),
    "p": lambda r, _: str(r.partition).encode(),
    "o": lambda r, _: str(r.offset).encode(),
    "k": lambda r, _: _text(r.key),
    "v": lambda r, pretty: _text(pretty_json(r.value) if pretty else r.value),
    "h": lambda r, _: headers_text(r.headers),
    "T": lambda r, _: str(r.timestamp).encode(),
    "K": lambda r, _: _length(r.key),
    "S": lambda r, _: _length(r.value),
}


class RecordFormat:
    """A compiled format; ``render(record)`` gives the record's line (newline included)."""

    def __init__(self, text: str, *, pretty: bool = False) -> None:
        self.pretty = pretty
        self._parts: list[bytes | Field] = []
        literal = []
        position = 0
        while position < len(text):
            char = text[position]
            following = text[position + 1] if position + 1 < len(text) else ""
            if char == "%":
                if following == "%":
                    literal.append("%")
                elif following in _FIELDS:
                    if literal:
                        self._parts.append("".join(literal).encode())
                        literal = []
                    self._parts.append(_FIELDS[following])
                else:
                    raise UsageError(
                        f"--format: unknown directive %{following} at position {position}; "
                        "use %t %p %o %k %v %h %T %K %S or %% for a literal %"
                    )
                position += 2
            elif char == "\\" and following in _ESCAPES:
                literal.append(_ESCAPES[following])
                position += 2
            else:
                literal.append(char)
                position += 1
        literal.append("\n")
        self._parts.append("".join(literal).encode())

    def render(self, record: ConsumerRecord) -> bytes:
        """The record's bytes under this format, with a trailing newline."""
        return b"".join(part if isinstance(part, bytes) else part(record, self.pretty) for part in self._parts)


def _json_text(data: bytes | None, name: str, document: dict[str, Any]) -> None:
    if data is None:
        document[name] = None
        return
    try:
        document[name] = data.decode()
    except UnicodeDecodeError:
        document[name] = None
        document[f"{name}_base64"] = base64.b64encode(data).decode()


def record_document(record: ConsumerRecord) -> dict[str, Any]:
    """A record as the stable JSON object of ``lanes consume --output json`` (docs/cli.md).

    ``key``/``value`` are text when valid UTF-8; otherwise null with ``key_base64``/``value_base64``."""
    document: dict[str, Any] = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": "log_append_time"
        if record.timestamp_type == TimestampType.LOG_APPEND_TIME
        else "create_time",
    }
    _json_text(record.key, "key", document)
    _json_text(record.value, "value", document)
    headers = []
    for name, value in record.headers:
        header: dict[str, Any] = {"key": name}
        _json_text(value, "value", header)
        headers.append(header)
    document["headers"] = headers
    return document
