"""Compression codecs: round trips, Kafka's framings, damaged streams."""

from __future__ import annotations

import os
import subprocess
import sys

import cramjam
import lz4.frame
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lanes.errors import CorruptRecordError, UnsupportedCompressionError
from lanes.protocol.compression import Compression, compress, decompress


@given(codec=st.sampled_from(list(Compression)), data=st.binary(max_size=100_000))
def test_round_trip(codec: Compression, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_snappy_uses_the_xerial_framing_kafka_writes_and_accepts_raw_blocks() -> None:
    data = os.urandom(100_000)  # spans several 32 KiB xerial blocks
    framed = compress(Compression.SNAPPY, data)
    assert framed.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    assert decompress(Compression.SNAPPY, framed) == data
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_lz4_frames_have_independent_blocks() -> None:
    frame = compress(Compression.LZ4, os.urandom(300_000))
    flags = frame[4]
    assert flags & 0x20, "Kafka refuses LZ4 frames with linked blocks"
    assert lz4.frame.decompress(frame)


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
def test_damaged_streams_raise_corrupt_record_errors(codec: Compression) -> None:
    stream = compress(codec, b"hello world " * 1000)
    with pytest.raises(CorruptRecordError, match=r"decompress|snappy stream"):
        decompress(codec, stream[: len(stream) // 2])


def test_compression_names_parse_like_kafkas_compression_type() -> None:
    assert Compression.parse("zstd") is Compression.ZSTD
    assert Compression.parse(" LZ4 ") is Compression.LZ4
    with pytest.raises(UnsupportedCompressionError, match="use one of none, gzip, snappy, lz4, zstd"):
        Compression.parse("brotli")


BOMB_SCRIPT = """
import struct, sys, zlib
import cramjam, lz4.frame
from lanes.errors import MessageTooLargeError
from lanes.protocol.compression import Compression, decompress

codec = Compression[sys.argv[1]]
zeros, chunks = bytes(1024 * 1024), 256  # 256 MiB of zeros, compressed chunk by chunk
if codec is Compression.GZIP:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(z.compress(zeros) for _ in range(chunks)) + z.flush()
elif codec is Compression.ZSTD:
    z = cramjam.zstd.Compressor()
    for _ in range(chunks):
        z.compress(zeros)
    bomb = bytes(z.finish())
elif codec is Compression.LZ4:
    z = lz4.frame.LZ4FrameCompressor(block_linked=False)
    bomb = z.begin() + b"".join(z.compress(zeros) for _ in range(chunks)) + z.flush()
else:
    block = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
    framed = struct.pack(">i", len(block)) + block
    bomb = b"\\x82SNAPPY\\x00" + struct.pack(">ii", 1, 1) + framed * (chunks * 32)

def peak_kib():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))

before = peak_kib()
try:
    decompress(codec, bomb, max_bytes=8 * 1024 * 1024)
except MessageTooLargeError as exc:
    print(len(bomb), peak_kib() - before, exc)
"""


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
def test_a_decompression_bomb_is_refused_at_the_bound_without_inflating_it(codec: Compression) -> None:
    """Issue #23: a batch that inflates to 256 MiB is refused once the output passes the bound,
    and the process's peak memory (a fresh one, VmHWM) grows by little more than the bound."""
    done = subprocess.run(
        [sys.executable, "-c", BOMB_SCRIPT, codec.name], capture_output=True, text=True, check=True, timeout=120
    )
    size, grown_kib, message = done.stdout.split(maxsplit=2)
    assert int(size) < 16 * 1024 * 1024, "a bomb: small on the wire"
    assert "decompresses to more than 8388608 bytes" in message
    assert int(grown_kib) < 40 * 1024, f"peak memory grew by {int(grown_kib) // 1024} MiB"


def test_the_bound_is_inclusive() -> None:
    for codec in Compression:
        assert decompress(codec, compress(codec, b"x" * 1000), max_bytes=1000) == b"x" * 1000
