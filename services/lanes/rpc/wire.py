"""Small conversions between the wire's messages and Python values, shared by services and clients.

Messages that carry record batches are built top-down (``.add()``, then the ``records`` field set
once): protobuf copies a submessage passed to a constructor, so building them bottom-up copies
every batch once per level of nesting.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf.message import Message

from lanes.errors import AuthenticationError, AuthorizationError, ErrorCode, LanesError, error_code
from lanes.rpc.session_registry import forget_refused
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2, coordinator_pb2

#: The servicer context of every Lanes RPC handler.
ServicerContext = grpc.aio.ServicerContext[Any, Any]


def message_of(answer: Any) -> Any:
    """The protobuf message of an RPC handler's answer: the answer itself, or, for an answer that
    keeps bulk bytes apart from its message (``lanes.broker.fetch_wire.FetchedRecords``), the
    message it holds as ``response``. Interceptors that add to an answer (refusals, throttles)
    change this."""
    if isinstance(answer, Message):
        return answer
    inner = getattr(answer, "response", None)
    return inner if isinstance(inner, Message) else answer


def wire_error(code: ErrorCode, message: str = "") -> common_pb2.Error:
    """An Error message (NONE carries no message)."""
    return common_pb2.Error(code=int(code), message=message)  # type: ignore[arg-type]


def code_of(error: common_pb2.Error) -> ErrorCode:
    """The ErrorCode of a received Error; numbers this version lacks count as UNKNOWN_SERVER_ERROR."""
    known = error_code(error.code)
    return ErrorCode.UNKNOWN_SERVER_ERROR if known is None else known  # NONE is falsy: no `or`


def produce_request(
    topic: str, partition: int, records: bytes, *, acks: int, timeout_ms: int
) -> broker_pb2.ProduceRequest:
    """A ProduceRequest of one partition's record batch bytes (copied once, into the message)."""
    request = broker_pb2.ProduceRequest(acks=acks, timeout_ms=timeout_ms)  # type: ignore[arg-type]
    request.topics.add(topic=topic).partitions.add(partition=partition).records = records
    return request


def topic_partitions_from_wire(groups: Iterable[common_pb2.TopicPartitions]) -> list[TopicPartition]:
    """The partitions listed by ``TopicPartitions`` messages, in message order."""
    return [TopicPartition(group.topic, number) for group in groups for number in group.partitions]


def topic_partitions_to_wire(partitions: Iterable[TopicPartition]) -> list[common_pb2.TopicPartitions]:
    """``TopicPartitions`` messages listing ``partitions`` once each, topics and numbers sorted."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(set(partitions)):
        by_topic.setdefault(topic, []).append(partition)
    return [common_pb2.TopicPartitions(topic=topic, partitions=numbers) for topic, numbers in by_topic.items()]


def assignment_from_wire(assignment: coordinator_pb2.Assignment) -> frozenset[TopicPartition]:
    """The partitions of an Assignment message."""
    return frozenset(topic_partitions_from_wire(assignment.topic_partitions))


def assignment_to_wire(partitions: Iterable[TopicPartition]) -> coordinator_pb2.Assignment:
    """An Assignment message listing ``partitions`` (topics and partitions sorted)."""
    return coordinator_pb2.Assignment(topic_partitions=topic_partitions_to_wire(partitions))


def peer_host(context: ServicerContext) -> str:
    """The caller's host as gRPC reports the peer (``ipv4:1.2.3.4:5678``, ``ipv6:%5B::1%5D:5678``:
    URL-encoded brackets), without brackets (``::1``)."""
    peer = urllib.parse.unquote(context.peer() or "")
    _, _, address = peer.partition(":")
    host, _, _ = address.rpartition(":")
    return host.strip("[]") or address


#: How the details of a stream ended for its session's end start (``lanes.runtime.access.guard``).
SESSION_EXPIRED = "SESSION_EXPIRED"


def security_refusal(exc: grpc.aio.AioRpcError) -> LanesError | None:
    """The refusal a failed call is when the cluster would not let the caller in: UNAUTHENTICATED
    (no or wrong credentials) or PERMISSION_DENIED (no ACL allows it; the details start with the
    error code, ``lanes.runtime.access.guard``). None for any other failure. Neither goes away by
    retrying, so clients raise it at once. A stream ended because its session expired
    (``SESSION_EXPIRED``, KIP-368's re-authentication) is not one: a new stream is checked again."""
    details = exc.details() or ""
    if details.startswith(SESSION_EXPIRED):
        forget_refused(details)  # its next call logs in again
        return None
    if exc.code() is grpc.StatusCode.UNAUTHENTICATED:
        return AuthenticationError(details.removeprefix(f"{ErrorCode.SASL_AUTHENTICATION_FAILED.name}: "))
    if exc.code() is grpc.StatusCode.PERMISSION_DENIED:
        name, _, message = details.partition(": ")
        code = ErrorCode.__members__.get(name)
        if code is None or not code.name.endswith("AUTHORIZATION_FAILED"):
            return AuthorizationError(details, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return AuthorizationError(message, code)
    return None
