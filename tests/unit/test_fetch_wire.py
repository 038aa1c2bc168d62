"""A Fetch answer's wire bytes with the records spliced in (``lanes.broker.fetch_wire``): every
protobuf parser reads them as the message with the records set, whatever the message holds."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lanes.broker.fetch_wire import RESPONSE_FIELDS, TOPIC_FIELDS, FetchedRecords, fetch_response_bytes
from lanes.errors import ErrorCode
from lanes.metadata.image import MetadataImage
from lanes.runtime.access.access_rules import Access, answer_refused
from lanes.runtime.quotas.request_quota import tell_throttle
from lanes.security.acls import Authorizer, Operation
from lanes.v1 import broker_pb2, common_pb2

PartitionAnswer = tuple[int, int, str, int, bytes, bool]
Response = tuple[list[tuple[str, list[PartitionAnswer]]], int]

partition_answers = st.tuples(
    st.integers(0, 2**31 - 1),  # partition
    st.integers(0, 100),  # error code
    st.text(max_size=20),  # error message
    st.integers(-1, 2**62),  # high-water mark
    st.binary(max_size=300),  # records
    st.booleans(),  # aborted transactions and a leader hint (fields after records)
)
responses = st.tuples(
    st.lists(st.tuples(st.text(max_size=12), st.lists(partition_answers, max_size=4)), max_size=4),
    st.integers(0, 2**31 - 1),  # throttle time
)


def fetched_of(topics: list[tuple[str, list[PartitionAnswer]]], throttle_ms: int) -> FetchedRecords:
    response = broker_pb2.FetchResponse(throttle_time_ms=throttle_ms)
    records = []
    for name, partitions in topics:
        topic = response.topics.add(topic=name)
        for partition, code, message, mark, data, extras in partitions:
            answer = topic.partitions.add(partition=partition, high_watermark=mark, last_stable_offset=mark)
            answer.error.CopyFrom(common_pb2.Error(code=code, message=message))
            if extras:
                answer.aborted_transactions.add(producer_id=7, first_offset=3)
                answer.current_leader.CopyFrom(common_pb2.LeaderHint(leader_id=2, leader_epoch=5))
            records.append(data)
    return FetchedRecords(response, records)


@given(responses)
def test_the_spliced_bytes_parse_as_the_message_with_its_records_set(response: Response) -> None:
    fetched = fetched_of(*response)
    spliced = fetch_response_bytes(fetched)
    assert broker_pb2.FetchResponse.FromString(spliced) == fetched.message()
    assert len(spliced) == fetched.message().ByteSize()  # nothing more on the wire than protobuf's own


def test_a_mebibyte_of_records_is_carried_as_it_is() -> None:
    data = os.urandom(1 << 20)
    fetched = fetched_of([("t", [(0, 0, "", 10, data, False), (1, 0, "", 10, b"", True)])], 0)
    parsed = broker_pb2.FetchResponse.FromString(fetch_response_bytes(fetched))
    assert parsed.topics[0].partitions[0].records == data
    assert parsed.topics[0].partitions[1].records == b""
    assert list(itertools.islice(fetched.records_in_order(), 3)) == [data, b"", b""]  # (then none: added ones)
    assert not fetched.response.topics[0].partitions[0].records, "the response itself holds no records"


def test_the_fields_written_by_hand_are_all_the_fields_of_those_messages() -> None:
    """``fetch_response_bytes`` writes a FetchResponse's and a FetchTopicResponse's own fields
    itself: a field added to either must be added there."""
    assert tuple(f.name for f in broker_pb2.FetchResponse.DESCRIPTOR.fields) == RESPONSE_FIELDS
    assert tuple(f.name for f in broker_pb2.FetchTopicResponse.DESCRIPTOR.fields) == TOPIC_FIELDS


def test_refusals_and_a_throttle_added_by_interceptors_reach_the_wire() -> None:
    """The guard adds TOPIC_AUTHORIZATION_FAILED partitions, the request-time quota a throttle, to
    the answer's message (``message_of``); the refused partitions come after those with records."""
    fetched = fetched_of([("t", [(0, 0, "", 10, b"batches", False)])], 0)
    access = Access("User:bob", "127.0.0.1", Authorizer([]), MetadataImage())
    answer_refused(fetched, [("secret", [0, 1])], Operation.READ, access)
    tell_throttle(fetched, 250)
    parsed = broker_pb2.FetchResponse.FromString(fetch_response_bytes(fetched))
    assert parsed == fetched.message()
    assert parsed.throttle_time_ms == 250
    assert parsed.topics[0].partitions[0].records == b"batches"
    refused = parsed.topics[1]
    assert refused.topic == "secret"
    assert [(p.partition, p.error.code, p.records) for p in refused.partitions] == [
        (0, ErrorCode.TOPIC_AUTHORIZATION_FAILED, b""),
        (1, ErrorCode.TOPIC_AUTHORIZATION_FAILED, b""),
    ]


def test_more_records_than_partitions_is_refused() -> None:
    fetched = FetchedRecords(broker_pb2.FetchResponse(), [b"stray"])
    with pytest.raises(ValueError, match="1 records for a fetch answer of 0 partitions"):
        fetch_response_bytes(fetched)
