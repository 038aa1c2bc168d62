"""Requests and responses of Kafka's protocol as kio's dataclasses: which class an API key and
version have, decoding a request frame (header, then body), encoding a response (header, body,
size), and building a response of any API and version from the values a handler knows, every
other field at its empty value (``build``: versions differ in their fields; ``refusal``: an
answer carrying only an error code, for APIs or versions not served).

Decoding reads only within the frame (a length that points past it is a malformed request:
``MalformedRequestError``), so a hostile size costs nothing beyond the frame already bounded by
``lanes.kafka.frames``.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import types
import typing
from typing import Any

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode as KafkaError
from kio.serial import entity_reader, entity_writer

from lanes.kafka.frames import framed

#: an ``*_authorized_operations`` field's value when the caller did not ask for them (Kafka's INT32_MIN)
OPERATIONS_OMITTED = -(2**31)


def milliseconds(value: int) -> datetime.timedelta:
    """A duration field (``throttle_time``, ``session_lifetime``...) of ``value`` ms."""
    return datetime.timedelta(milliseconds=value)


def whole_ms(value: datetime.timedelta) -> int:
    """A duration field's value in whole milliseconds."""
    return int(value.total_seconds() * 1000)


def kafka_brokers(image: Any) -> list[Any]:
    """The live brokers with a Kafka listener, by id: what Metadata, DescribeCluster and
    FindCoordinator name."""
    return [b for _, b in sorted(image.brokers.items()) if not b.fenced and b.kafka_port]


class MalformedRequestError(ValueError):
    """A request whose bytes do not parse as its API and version say."""


def request_class(api_key: int, version: int) -> type[Any] | None:
    """kio's class of that request, or None when the protocol has no such API or version."""
    try:
        return load_request_schema(api_key, version)
    except (KioIndexError, ImportError):
        return None


def response_class(api_key: int, version: int) -> type[Any]:
    """kio's class of that response (the API and version must exist)."""
    return load_response_schema(api_key, version)


def decode(frame: bytes, cls: type[Any]) -> tuple[Any, Any]:
    """(header, body) of a request frame of class ``cls``."""
    try:
        header, used = entity_reader(cls.__header_schema__)(frame, 0)
        body, _ = entity_reader(cls)(frame, used)
    except Exception as exc:  # kio's BufferUnderflow, a bad UTF-8 string, an unknown enum value
        raise MalformedRequestError(f"{cls.__name__} v{cls.__version__}: {exc}") from exc
    return header, body


def encode(correlation_id: int, response: Any) -> bytes:
    """A response with its header and size, ready to write."""
    buffer = io.BytesIO()
    header_class = response.__header_schema__
    entity_writer(header_class)(buffer, build(header_class, correlation_id=correlation_id))
    entity_writer(type(response))(buffer, response)
    return framed(buffer.getvalue())


def _empty(field: dataclasses.Field[Any]) -> Any:
    """The empty value of a field: none, zero, nothing (for what a handler does not set)."""
    kind = field.type
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return build(kind)
    if _nullable(field):
        return None
    if typing.get_origin(kind) is tuple:
        return ()
    kafka_type = field.metadata.get("kafka_type")
    if kafka_type == "error_code":
        return KafkaError.none
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(0)
    if kafka_type == "datetime_i64":  # (a nullable one was answered None above)
        return datetime.datetime.fromtimestamp(0, datetime.UTC)
    if kafka_type == "string":
        return ""
    if kafka_type == "bool":
        return False
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "float64":
        return 0.0
    return 0


def _nullable(field: dataclasses.Field[Any]) -> bool:
    kind = field.type
    return typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in typing.get_args(kind)


def build(cls: type[Any], **values: Any) -> Any:
    """``cls`` with ``values`` for the fields it has (others ignored: versions differ; None where
    this version's field is not nullable: its empty value), every other field at the default
    Kafka's schema gives it, or else empty."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    given = {
        name: _empty(fields[name]) if value is None and not _nullable(fields[name]) else value
        for name, value in values.items()
        if name in fields
    }
    for name, field in fields.items():
        has_default = field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
        if name not in given and not has_default:  # (Kafka's schema defaults, which kio carries, stand)
            given[name] = _empty(field)
    return cls(**given)


def nested(cls: type[Any], name: str) -> type[Any]:
    """The class ``name`` of the module ``cls`` is defined in (a response's nested entities)."""
    module = __import__(cls.__module__, fromlist=[name])
    found: type[Any] = getattr(module, name)
    return found


def refusal(api_key: int, version: int, code: KafkaError) -> Any:
    """A response of that API and version answering ``code`` where it has a top-level error code
    (ApiVersions, the group and admin APIs); others say nothing (empty lists)."""
    return build(response_class(api_key, version), error_code=code)
