"""Raw Kafka requests for tests of the Kafka face: a request encoded with kio (its header and
size), a response read and decoded, a request entity's nested classes, and a connection (TLS with
the cluster's CA when the environment names one: ``LANES_TLS_CA``)."""

from __future__ import annotations

import io
import socket
import ssl
import struct
from typing import Any

from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer

from lanes.kafka.codec import build, response_class
from lanes.rpc.tls import TlsFiles


def request(api_key: int, version: int, correlation_id: int, **body: Any) -> bytes:
    """A request frame of that API and version (``body``'s fields, the rest empty)."""
    cls = load_request_schema(api_key, version)
    buffer = io.BytesIO()
    header = cls.__header_schema__
    entity_writer(header)(buffer, build(header, request_api_key=api_key, request_api_version=version,
                                        correlation_id=correlation_id, client_id="lanes-tests"))  # fmt: skip
    entity_writer(cls)(buffer, build(cls, **body))
    payload = buffer.getvalue()
    return struct.pack(">i", len(payload)) + payload


def response(connection: socket.socket, api_key: int, version: int) -> tuple[int, Any]:
    """(correlation id, body) of the next response on ``connection``."""
    size = struct.unpack(">i", exactly(connection, 4))[0]
    data = exactly(connection, size)
    cls = response_class(api_key, version)
    header, used = entity_reader(cls.__header_schema__)(data, 0)
    body, _ = entity_reader(cls)(data, used)
    return header.correlation_id, body


def exactly(connection: socket.socket, count: int) -> bytes:
    """``count`` bytes; ConnectionError when the connection closes first."""
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def nested(api_key: int, version: int, name: str) -> Any:
    """The request entity ``name`` of that API and version (a topic or partition of a request)."""
    cls = load_request_schema(api_key, version)
    return getattr(__import__(cls.__module__, fromlist=[name]), name)


def connect(address: str, *, timeout_s: float = 10.0) -> socket.socket:
    """A connection to a Kafka listener ``host:port``: over TLS when ``LANES_TLS_CA`` is set."""
    host, port = address.rsplit(":", 1)
    connection = socket.create_connection((host, int(port)), timeout=timeout_s)
    tls = TlsFiles.from_environment()
    if tls is None:
        return connection
    context = ssl.create_default_context(cafile=str(tls.ca_file))
    return context.wrap_socket(connection, server_hostname=host)
