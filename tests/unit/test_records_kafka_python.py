"""The codec against an independent implementation of Kafka RecordBatch v2 (kafka-python),
in both directions and with every compression codec."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from lanes.protocol.compression import Compression
from lanes.protocol.records import Record, decode_batch, encode_batch, validate_batch
from tests.unit.strategies import compressions, contiguous_record_lists

# kafka-python's timestamps are non-negative (it substitutes "now" for None).
kafka_timestamps = st.integers(min_value=0, max_value=2**50)


@st.composite
def kafka_record_lists(draw: st.DrawFn) -> list[Record]:
    records = draw(contiguous_record_lists())
    return [r._replace(timestamp=draw(kafka_timestamps)) for r in records]


def kafka_python_encode(records: list[Record], compression: Compression, producer: tuple[int, int, int]) -> bytes:
    producer_id, producer_epoch, base_sequence = producer
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(compression),
        is_transactional=False,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=2**30,
    )
    for record in records:
        assert builder.append(record.offset, record.timestamp, record.key, record.value, list(record.headers))
    return bytes(builder.build())


def kafka_python_decode(buffer: bytes) -> tuple[DefaultRecordBatch, list[Record]]:
    batch = DefaultRecordBatch(buffer)
    assert batch.validate_crc()
    decoded = [Record(r.offset, r.timestamp, r.key, r.value, tuple((k, v) for k, v in r.headers)) for r in batch]
    return batch, decoded


producers = st.sampled_from([(-1, -1, -1), (4242, 7, 100)])


def lanes_encode(
    records: list[Record], compression: Compression, producer: tuple[int, int, int], leader_epoch: int = -1
) -> bytes:
    producer_id, producer_epoch, base_sequence = producer
    return encode_batch(
        records,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=leader_epoch,
    )


@given(records=kafka_record_lists(), compression=compressions, producer=producers)
def test_batches_we_encode_decode_identically_in_kafka_python(
    records: list[Record], compression: Compression, producer: tuple[int, int, int]
) -> None:
    encoded = lanes_encode(records, compression, producer)
    batch, decoded = kafka_python_decode(encoded)
    assert decoded == records
    assert batch.compression_type == int(compression)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.last_offset_delta == len(records) - 1
    assert batch.max_timestamp == max(r.timestamp for r in records)


@given(records=kafka_record_lists(), compression=compressions, producer=producers)
def test_batches_kafka_python_encodes_decode_identically_here(
    records: list[Record], compression: Compression, producer: tuple[int, int, int]
) -> None:
    encoded = kafka_python_encode(records, compression, producer)
    header = validate_batch(encoded, whole_buffer=True, producer_batch=True)
    # kafka-python falls back to no compression when compressing does not shrink the batch.
    assert header.compression in {compression, Compression.NONE}
    assert int(header.compression) == DefaultRecordBatch(encoded).compression_type
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == producer
    assert decode_batch(encoded).records == records


@given(records=kafka_record_lists(), producer=producers)
def test_uncompressed_batches_are_byte_identical(records: list[Record], producer: tuple[int, int, int]) -> None:
    # kafka-python writes partitionLeaderEpoch 0 where the Java producer (and Lanes) write -1.
    ours = lanes_encode(records, Compression.NONE, producer, leader_epoch=0)
    assert ours == kafka_python_encode(records, Compression.NONE, producer)
