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

**Bounded**: ``decompress`` never produces more than ``max_bytes`` (``MAX_DECOMPRESSED_BYTES``
by default) and never holds more than about that much: a batch that inflates beyond it (a
decompression bomb: a few KiB of gzip that inflate to a GiB) is refused with
``MessageTooLargeError`` as soon as the output passes the bound. gzip and zstd decompress into
a buffer that starts at 16 times the input and doubles up to the bound (cramjam's
``decompress_into`` refuses to overrun it; its ``output_len`` is only a hint); lz4 frames stop
at ``max_length``; snappy blocks declare their length, summed before any is inflated.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from enum import IntEnum

import cramjam
import lz4.frame

from lanes.errors import CorruptRecordError, MessageTooLargeError, UnsupportedCompressionError

#: The most bytes one records section may decompress to: a batch is at most a gRPC message
#: (``lanes.rpc.channels.MAX_MESSAGE_BYTES``, 64 MiB) uncompressed.
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
#: The first output buffer, as a multiple of the compressed size (typical ratios stay below it).
_FIRST_GUESS_RATIO = 16
_OVERRUN = "failed to write whole buffer"  # cramjam's words when the output would not fit


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


def _too_large(codec: str, max_bytes: int) -> MessageTooLargeError:
    return MessageTooLargeError(
        f"the {codec} records section decompresses to more than {max_bytes} bytes (a decompression bomb?)"
    )


def _snappy_raw(block: bytes | memoryview, room: int, max_bytes: int) -> bytes:
    """One raw block, refused when its declared length exceeds the ``room`` left in the bound."""
    if int(cramjam.snappy.decompress_raw_len(block)) > room:
        raise _too_large("snappy", max_bytes)
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data: bytes, max_bytes: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_raw(data, max_bytes, max_bytes)
    if len(data) < len(_XERIAL_HEADER):
        raise CorruptRecordError("snappy stream: truncated xerial header")
    view = memoryview(data)
    position = len(_XERIAL_HEADER)
    blocks = []
    remaining = max_bytes
    while position < len(view):
        if position + 4 > len(view):
            raise CorruptRecordError(f"snappy stream: truncated block length at byte {position}")
        (length,) = _BLOCK_LENGTH.unpack_from(view, position)
        position += 4
        if length < 0 or position + length > len(view):
            raise CorruptRecordError(f"snappy stream: block of {length} bytes at byte {position} overruns")
        block = _snappy_raw(view[position : position + length], remaining, max_bytes)
        remaining -= len(block)
        blocks.append(block)
        position += length
    return b"".join(blocks)


def _into_growing_buffer(
    decompress_into: Callable[[bytes, bytearray], int], data: bytes, codec: str, max_bytes: int, size_hint: int = 0
) -> bytes:
    """Decompress into a buffer that grows (doubling) up to ``max_bytes``; refuse beyond.
    ``size_hint``: the size the stream says it inflates to (a first guess, not trusted)."""
    guess = size_hint + 1 if size_hint else max(len(data) * _FIRST_GUESS_RATIO, 64 * 1024)
    size = min(guess, max_bytes + 1)
    buffer = bytearray()
    while True:
        del buffer  # the smaller buffer goes before the larger one is made
        buffer = bytearray(size)
        try:
            written = decompress_into(data, buffer)
        except Exception as exc:
            if _OVERRUN not in str(exc):
                raise
            if size > max_bytes:
                raise _too_large(codec, max_bytes) from None
            size = min(size * 2, max_bytes + 1)
            continue
        if written > max_bytes:
            raise _too_large(codec, max_bytes)
        del buffer[written:]
        return bytes(buffer)


def _gzip_decompress(data: bytes, max_bytes: int) -> bytes:
    """A gzip member's trailer names its inflated size (ISIZE, modulo 2**32): the first guess
    when it is within the bound (a damaged or lying trailer only costs a retry)."""
    declared = struct.unpack_from("<I", data, len(data) - 4)[0] if len(data) >= 18 else 0
    hint = declared if declared <= max_bytes else 0
    return _into_growing_buffer(cramjam.gzip.decompress_into, data, "gzip", max_bytes, hint)


def _lz4_decompress(data: bytes, max_bytes: int) -> bytes:
    decompressor = lz4.frame.LZ4FrameDecompressor()
    output = decompressor.decompress(data, max_length=max_bytes + 1)
    if len(output) > max_bytes:
        raise _too_large("lz4", max_bytes)
    if not decompressor.eof:
        raise CorruptRecordError("lz4 stream does not decompress: the frame is truncated")
    return bytes(output)


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


def decompress(codec: Compression, data: bytes, max_bytes: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress a records section to at most ``max_bytes`` (MessageTooLargeError beyond, see
    the module docstring); raise CorruptRecordError when the stream is damaged."""
    if codec is Compression.NONE:
        return data
    try:
        if codec is Compression.GZIP:
            return _gzip_decompress(data, max_bytes)
        if codec is Compression.SNAPPY:
            return _snappy_decompress(data, max_bytes)
        if codec is Compression.LZ4:
            return _lz4_decompress(data, max_bytes)
        if codec is Compression.ZSTD:
            return _into_growing_buffer(cramjam.zstd.decompress_into, data, "zstd", max_bytes)
    except (CorruptRecordError, MessageTooLargeError):
        raise
    except Exception as exc:  # the libraries raise their own types for damaged input
        raise CorruptRecordError(f"{codec.name.lower()} stream does not decompress: {exc}") from exc
    raise UnsupportedCompressionError(f"compression codec {int(codec)} is not supported")
