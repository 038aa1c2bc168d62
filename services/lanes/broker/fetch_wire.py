"""A consumer Fetch answer with its records kept apart from the protobuf message, and its wire
bytes with them spliced in.

protobuf (upb) copies a ``bytes`` field when it is set and again when the message is serialized:
two copies of every MiB a broker sends, on top of the read from the page cache, gRPC's own copy
and the kernel's (a third of the broker's CPU when a consumer reads a backlog of 1 KiB records).
So a fetch's response is built without its records (``FetchedRecords.response``, the records in
``records``, one per partition in the response's order), and ``fetch_response_bytes`` writes the
message gRPC sends: each partition message serialized without its records, its ``records`` field
appended after its other fields, the lengths of the enclosing messages worked out, and one join,
the only copy. Fields may come in any order on the wire: every protobuf parser reads these bytes
as the message ``FetchResponse.SerializeToString`` gives with the records set (a client needs no
change). Faces that need the records as values (Kafka's) take them from ``records``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import NamedTuple

from google.protobuf.message import Message

from lanes.v1 import broker_pb2


class FetchedRecords(NamedTuple):
    """A fetch's response, its partitions' ``records`` unset, and those records (``b""``: none)
    one per partition, topic by topic, in the response's order. Partitions added to the response
    after the last one ``records`` names have none (refusals an interceptor adds: ``message_of``)."""

    response: broker_pb2.FetchResponse
    records: list[bytes]

    def message(self) -> broker_pb2.FetchResponse:
        """The response with its records set (a copy of each: for tests and tools, not the hot path)."""
        whole = broker_pb2.FetchResponse()
        whole.CopyFrom(self.response)
        records = self.records_in_order()
        for topic in whole.topics:
            for partition in topic.partitions:
                partition.records = next(records)
        return whole

    def records_in_order(self) -> Iterator[bytes]:
        """Each partition's records in order, then ``b""`` for the partitions added after them.
        Raises ValueError when there are more records than partitions."""
        count = sum(len(topic.partitions) for topic in self.response.topics)
        if len(self.records) > count:
            raise ValueError(f"{len(self.records)} records for a fetch answer of {count} partitions")
        return itertools.chain(self.records, itertools.repeat(b""))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(message: type[Message], field: str) -> bytes:
    """The key of a length-delimited field (its number, wire type 2)."""
    return _varint(message.DESCRIPTOR.fields_by_name[field].number << 3 | 2)


_TOPICS = _key(broker_pb2.FetchResponse, "topics")
_PARTITIONS = _key(broker_pb2.FetchTopicResponse, "partitions")
_RECORDS = _key(broker_pb2.FetchPartitionResponse, "records")
#: the fields ``fetch_response_bytes`` writes itself besides the nested ones (a new field of these
#: two messages must be added there: ``tests/unit/test_fetch_wire.py`` checks the lists)
RESPONSE_FIELDS = ("topics", "throttle_time_ms")
TOPIC_FIELDS = ("topic", "partitions")


def fetch_response_bytes(fetched: FetchedRecords) -> bytes:
    """The wire bytes of ``fetched``: its response with each partition's records (module
    docstring). An answer without records is protobuf's own serialization; so is a topic's part
    of it when none of its partitions has records (long-polls answered empty, many partitions)."""
    records = fetched.records_in_order()
    if not any(fetched.records):
        return fetched.response.SerializeToString()
    pieces: list[bytes] = []
    for topic in fetched.response.topics:
        topic_records = [next(records) for _ in topic.partitions]
        if not any(topic_records):
            body = topic.SerializeToString()
            pieces += [_TOPICS, _varint(len(body)), body]
            continue
        topic_pieces = [broker_pb2.FetchTopicResponse(topic=topic.topic).SerializeToString()]
        for partition, data in zip(topic.partitions, topic_records, strict=True):
            body = partition.SerializeToString()
            tail = [_RECORDS, _varint(len(data)), data] if data else []
            topic_pieces += [_PARTITIONS, _varint(len(body) + sum(map(len, tail))), body, *tail]
        pieces += [_TOPICS, _varint(sum(map(len, topic_pieces))), *topic_pieces]
    pieces.append(broker_pb2.FetchResponse(throttle_time_ms=fetched.response.throttle_time_ms).SerializeToString())
    return b"".join(pieces)
