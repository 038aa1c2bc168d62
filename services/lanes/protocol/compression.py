"""Compression codecs of RecordBatch v2, byte-compatible with Kafka's.

The codec id lives in bits 0-2 of the batch attributes; the records section (everything after
the 61-byte batch header) is compressed as one unit. Formats, as Kafka's Java client writes them:

- gzip (1): a gzip member (RFC 1952).
- snappy (2): snappy-java's "xerial" stream: a 16-byte header ``\\x82SNAPPY\\x00`` + int32 version
  1 + int32 compatible version 1, then blocks of [int32 big-endian length][raw snappy block].
  Decompression also accepts a single raw snappy block, as snappy-java does.
- lz4 (3): an LZ4 frame with *independent* blocks (Kafka's reader refuses linked blocks).
- zstd (4): a zstd frame.

Libraries: cramjam (snappy, zstd, gzip) and lz4 (frames with independent blocks), all C or
Rust underneath; nothing here loops over bytes in Python.
"""

from __future__ import annotations

import struct
from enum import IntEnum

import cramjam
import lz4.frame

from lanes.errors import CorruptRecordError, UnsupportedCompressionError


class Compression(IntEnum):
    """Codec ids of the batch attributes' low three bits."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def parse(cls, name: str) -> Compression:
        """The codec for a Kafka ``compression.type`` name (none, gzip, snappy, lz4, zstd)."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            names = ", ".join(c.name.lower() for c in cls)
            raise UnsupportedCompressionError(f"unknown compression {name!r}; use one of {names}") from None


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_BYTES = 32 * 1024  # snappy-java's default block size
_BLOCK_LENGTH = struct.Struct(">i")


def _snappy_xerial_compress(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER]
    view = memoryview(data)
    for start in range(0, len(view), _XERIAL_BLOCK_BYTES):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_BYTES]))
        parts.append(_BLOCK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    if len(data) < len(_XERIAL_HEADER):
        raise CorruptRecordError("snappy stream: truncated xerial header")
    view = memoryview(data)
    position = len(_XERIAL_HEADER)
    blocks = []
    while position < len(view):
        if position + 4 > len(view):
            raise CorruptRecordError(f"snappy stream: truncated block length at byte {position}")
        (length,) = _BLOCK_LENGTH.unpack_from(view, position)
        position += 4
        if length < 0 or position + length > len(view):
            raise CorruptRecordError(f"snappy stream: block of {length} bytes at byte {position} overruns")
        blocks.append(bytes(cramjam.snappy.decompress_raw(view[position : position + length])))
        position += length
    return b"".join(blocks)


def compress(codec: Compression, data: bytes) -> bytes:
    """Compress a records section with ``codec`` (NONE returns ``data`` unchanged)."""
    if codec is Compression.NONE:
        return data
    if codec is Compression.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec is Compression.SNAPPY:
        return _snappy_xerial_compress(data)
    if codec is Compression.LZ4:
        return bytes(lz4.frame.compress(data, block_linked=False, store_size=False))
    if codec is Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise UnsupportedCompressionError(f"compression codec {int(codec)} is not supported")


def decompress(codec: Compression, data: bytes) -> bytes:
    """Decompress a records section; raise CorruptRecordError when the stream is damaged."""
    if codec is Compression.NONE:
        return data
    try:
        if codec is Compression.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec is Compression.SNAPPY:
            return _snappy_decompress(data)
        if codec is Compression.LZ4:
            return bytes(lz4.frame.decompress(data))
        if codec is Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except CorruptRecordError:
        raise
    except Exception as exc:  # the libraries raise their own types for damaged input
        raise CorruptRecordError(f"{codec.name.lower()} stream does not decompress: {exc}") from exc
    raise UnsupportedCompressionError(f"compression codec {int(codec)} is not supported")
