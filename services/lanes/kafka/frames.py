"""Kafka's framing: every request is a 4-byte big-endian size and that many bytes, which begin
with the API key (int16), the API version (int16) and the correlation id (int32).

A size below the 8 bytes every request starts with, or above ``MAX_REQUEST_BYTES``, is refused
(``FrameError``) before anything is read or allocated: the connection is closed, as Kafka closes
it (``socket.request.max.bytes``). Pure: bytes in, numbers out.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

#: the largest request accepted (Kafka's socket.request.max.bytes default: 100 MiB)
MAX_REQUEST_BYTES = 100 * 1024 * 1024
SIZE_BYTES = 4
_SIZE = struct.Struct(">i")
_KEY = struct.Struct(">hhi")


class FrameError(ValueError):
    """A frame that cannot be a request; the connection is closed."""


class RequestKey(NamedTuple):
    """What every request starts with."""

    api_key: int
    api_version: int
    correlation_id: int


def frame_size(prefix: bytes, max_bytes: int = MAX_REQUEST_BYTES) -> int:
    """The size a 4-byte prefix announces; FrameError when no request can have it."""
    size: int = _SIZE.unpack(prefix)[0]
    if size < _KEY.size:
        raise FrameError(f"a request of {size} bytes is shorter than its {_KEY.size}-byte header")
    if size > max_bytes:
        raise FrameError(f"a request of {size} bytes is larger than the {max_bytes} bytes accepted")
    return size


def request_key(frame: bytes) -> RequestKey:
    """The API key, version and correlation id at the start of a frame."""
    api_key, api_version, correlation_id = _KEY.unpack_from(frame)
    return RequestKey(api_key, api_version, correlation_id)


def framed(payload: bytes) -> bytes:
    """``payload`` with its size in front (a response)."""
    return _SIZE.pack(len(payload)) + payload
