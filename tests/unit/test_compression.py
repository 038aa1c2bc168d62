"""Compression codecs: round trips, Kafka's framings, damaged streams."""

from __future__ import annotations

import os

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
