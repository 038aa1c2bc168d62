"""Error codes and the exceptions clients raise.

``ErrorCode`` mirrors ``lanes.v1.ErrorCode`` in ``proto/lanes/v1/common.proto`` (Kafka's
numbers); a unit test fails if the two ever disagree. Each code carries:

- ``retriable``: whether the same request may succeed if retried (after a metadata refresh,
  a backoff, or a coordinator lookup); clients retry these within their delivery timeout;
- ``hint``: what the user should do, used when the server's message does not already say.

``LanesError`` is the root of every exception the client library raises for an error code;
``RetriableError`` marks the retriable ones. ``error_for(code, message)`` builds the most
specific exception for a code, so callers can ``except NotLeaderError`` or ``except
LanesError`` as they prefer.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ErrorCode(IntEnum):
    """Per-result error codes (Kafka's numbers), each with a retriable flag and a hint."""

    retriable: bool
    hint: str

    def __new__(cls, value: int, retriable: bool, hint: str) -> ErrorCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.retriable = retriable
        member.hint = hint
        return member

    NONE = 0, False, ""
    UNKNOWN_SERVER_ERROR = -1, False, "the server failed unexpectedly; check its logs"
    OFFSET_OUT_OF_RANGE = 1, False, "seek to a valid offset (see auto_offset_reset)"
    CORRUPT_MESSAGE = 2, False, "the record batch is malformed; nothing was written"
    UNKNOWN_TOPIC_OR_PARTITION = 3, True, "create the topic, or wait for metadata to propagate"
    INVALID_FETCH_SIZE = 4, False, "use positive fetch byte limits"
    LEADER_NOT_AVAILABLE = 5, True, "a leader election is in progress; retry shortly"
    NOT_LEADER_OR_FOLLOWER = 6, True, "refresh metadata and send to the current leader"
    REQUEST_TIMED_OUT = 7, True, "retry, or raise the request timeout"
    BROKER_NOT_AVAILABLE = 8, True, "the broker is unavailable; retry on another"
    REPLICA_NOT_AVAILABLE = 9, True, "a replica is unavailable; retry shortly"
    MESSAGE_TOO_LARGE = 10, False, "send smaller batches, or raise the topic's max.message.bytes"
    OFFSET_METADATA_TOO_LARGE = 12, False, "shorten the offset commit metadata"
    NETWORK_EXCEPTION = 13, True, "the connection broke; retry"
    COORDINATOR_LOAD_IN_PROGRESS = 14, True, "the coordinator is loading the group; retry shortly"
    COORDINATOR_NOT_AVAILABLE = 15, True, "no coordinator is available for the group; retry shortly"
    NOT_COORDINATOR = 16, True, "find the group's coordinator again and retry there"
    INVALID_TOPIC_EXCEPTION = 17, False, "use a valid topic name; internal topics are not writable"
    RECORD_LIST_TOO_LARGE = 18, False, "send fewer batches per request"
    NOT_ENOUGH_REPLICAS = 19, True, "too few in-sync replicas for acks=all; wait for replicas"
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20, True, "the ISR shrank during the write; retry"
    INVALID_REQUIRED_ACKS = 21, False, "use acks 0, 1 or all"
    ILLEGAL_GENERATION = 22, False, "a classic member's generation is stale: rejoin the group"
    INVALID_GROUP_ID = 24, False, "use a valid group id"
    UNKNOWN_MEMBER_ID = 25, False, "the member left or was fenced; rejoin the group"
    INVALID_SESSION_TIMEOUT = 26, False, "use a session timeout within the coordinator's bounds"
    INVALID_COMMIT_OFFSET_SIZE = 28, False, "commit a valid offset"
    TOPIC_AUTHORIZATION_FAILED = 29, False, "ask an administrator for an ACL on the topic (lanes acls create)"
    GROUP_AUTHORIZATION_FAILED = 30, False, "ask an administrator for an ACL on the group (lanes acls create)"
    CLUSTER_AUTHORIZATION_FAILED = 31, False, "this needs an ACL on the cluster, or a super user"
    INVALID_TIMESTAMP = 32, False, "use record timestamps within the topic's allowed range"
    UNSUPPORTED_SASL_MECHANISM = 33, False, "use SCRAM-SHA-256 or SCRAM-SHA-512"
    UNSUPPORTED_VERSION = 35, False, "this server does not support the feature; upgrade it"
    TOPIC_ALREADY_EXISTS = 36, False, "choose another name, or use the existing topic"
    INVALID_PARTITIONS = 37, False, "use a positive partition count; counts can only grow"
    INVALID_REPLICATION_FACTOR = 38, False, "use a replication factor between 1 and the live brokers"
    INVALID_REPLICA_ASSIGNMENT = 39, False, "assign each partition distinct, registered brokers"
    INVALID_CONFIG = 40, False, "fix the config named in the message"
    NOT_CONTROLLER = 41, True, "send the request to the active controller"
    INVALID_REQUEST = 42, False, "fix the request as the message says"
    POLICY_VIOLATION = 44, False, "the cluster's policy forbids this request"
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53, False, "ask an administrator for WRITE on the transactional id"
    SECURITY_DISABLED = 54, False, "start the cluster with --auth required to manage users and ACLs"
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45, False, "records were lost between batches; the producer must reset"
    DUPLICATE_SEQUENCE_NUMBER = 46, False, "the batch was already written; treat as success"
    INVALID_PRODUCER_EPOCH = 47, False, "another producer instance took over this producer id"
    KAFKA_STORAGE_ERROR = 56, True, "the broker's disk failed; retry after the leader moves"
    SASL_AUTHENTICATION_FAILED = 58, False, "check the username and password, or the token"
    UNKNOWN_PRODUCER_ID = 59, False, "the producer's state expired; re-initialise the producer"
    NON_EMPTY_GROUP = 68, False, "stop the group's consumers first"
    GROUP_ID_NOT_FOUND = 69, False, "check the group id"
    FETCH_SESSION_ID_NOT_FOUND = 70, True, "the leader forgot the fetch session; fetch in full again"
    INVALID_FETCH_SESSION_EPOCH = 71, True, "a fetch of the session was lost; fetch in full again"
    FENCED_LEADER_EPOCH = 74, True, "refresh metadata: the leader epoch is stale"
    UNKNOWN_LEADER_EPOCH = 75, True, "the broker is behind on metadata; retry shortly"
    UNSUPPORTED_COMPRESSION_TYPE = 76, False, "use none, gzip, snappy, lz4 or zstd"
    STALE_BROKER_EPOCH = 77, False, "the node re-registered since; register again"
    OFFSET_NOT_AVAILABLE = 78, True, "the new leader is not ready yet; retry shortly"
    PREFERRED_LEADER_NOT_AVAILABLE = 80, True, "the preferred replica is not in sync; retry later"
    GROUP_MAX_SIZE_REACHED = 81, False, "the group is full; raise its maximum size or use another group"
    FENCED_INSTANCE_ID = 82, False, "another consumer with the same group.instance.id took over"
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83, True, "no in-sync replica is alive; bring one back"
    ELECTION_NOT_NEEDED = 84, False, "the preferred replica already leads"
    GROUP_SUBSCRIBED_TO_TOPIC = 86, False, "unsubscribe the group from the topic first"
    INVALID_RECORD = 87, False, "fix the record named in the message"
    THROTTLING_QUOTA_EXCEEDED = (
        89,
        True,
        "the user's controller mutation quota is used up; retry after the throttle time",
    )
    INVALID_UPDATE_VERSION = 95, True, "the partition changed since; refresh and retry"
    RESOURCE_NOT_FOUND = 91, False, "check the name: it does not exist"
    DUPLICATE_RESOURCE = 92, False, "name each resource once per request"
    UNACCEPTABLE_CREDENTIAL = 93, False, "use 4,096 to 16,384 iterations and a non-empty password"
    UNKNOWN_TOPIC_ID = 100, True, "the topic id is unknown; refresh metadata"
    DUPLICATE_BROKER_REGISTRATION = (
        101,
        True,
        "another live process uses this node id; wait or pick another id",
    )
    BROKER_ID_NOT_REGISTERED = 102, False, "register the node first"
    INCONSISTENT_TOPIC_ID = 103, True, "the topic was recreated; refresh metadata"
    INCONSISTENT_CLUSTER_ID = 104, False, "the data directory belongs to another cluster"
    INELIGIBLE_REPLICA = 107, True, "a proposed ISR member is fenced; retry later"
    FENCED_MEMBER_EPOCH = 110, False, "the member was fenced; it must rejoin and drop its partitions"
    UNRELEASED_INSTANCE_ID = 111, True, "the previous instance has not left yet; retry shortly"
    UNSUPPORTED_ASSIGNOR = 112, False, "use the uniform, range or roundrobin assignor"
    STALE_MEMBER_EPOCH = 113, True, "the member is reconciling; retry with its new epoch"
    INVALID_REGULAR_EXPRESSION = 128, False, "fix the subscription regular expression"


class LanesError(Exception):
    """An error reported with an error code. ``str()`` says what happened and what to do."""

    default_code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "", code: ErrorCode | None = None) -> None:
        self.code = code if code is not None else self.default_code
        self.message = message or self.code.hint
        super().__init__(f"{self.code.name}: {self.message}")

    @property
    def retriable(self) -> bool:
        """Whether retrying the same request may succeed."""
        return self.code.retriable


class RetriableError(LanesError):
    """An error that may go away when the request is retried (see ``ErrorCode.retriable``)."""


class CorruptRecordError(LanesError):
    """A record batch failed validation; the message names the field and the byte position."""

    default_code = ErrorCode.CORRUPT_MESSAGE


class MessageTooLargeError(LanesError):
    """A record batch exceeds the size limit (max.message.bytes)."""

    default_code = ErrorCode.MESSAGE_TOO_LARGE


class UnsupportedCompressionError(LanesError):
    """The batch uses a compression codec this implementation does not know."""

    default_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class InvalidTopicError(LanesError):
    """A topic name breaks the naming rules, or the topic is internal."""

    default_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class InvalidGroupIdError(LanesError):
    """A group id breaks the naming rules."""

    default_code = ErrorCode.INVALID_GROUP_ID


class InvalidConfigError(LanesError):
    """A config name is unknown or its value invalid."""

    default_code = ErrorCode.INVALID_CONFIG


class InvalidPartitionsError(LanesError):
    """A partition count is invalid (not positive, or a decrease)."""

    default_code = ErrorCode.INVALID_PARTITIONS


class TopicAlreadyExistsError(LanesError):
    """A topic with that name exists."""

    default_code = ErrorCode.TOPIC_ALREADY_EXISTS


class OffsetOutOfRangeError(LanesError):
    """The offset is outside [log start, log end]."""

    default_code = ErrorCode.OFFSET_OUT_OF_RANGE


class LogTruncationError(OffsetOutOfRangeError):
    """A consumer's position is past the end of its last record's leader epoch on the partition's
    new leader: records it read are not in that leader's log (Kafka's LogTruncationException)."""


class FencedMemberEpochError(LanesError):
    """The group member was fenced and must rejoin."""

    default_code = ErrorCode.FENCED_MEMBER_EPOCH


class StorageError(RetriableError):
    """A disk operation failed (full disk, I/O error); the log is unchanged and still readable."""

    default_code = ErrorCode.KAFKA_STORAGE_ERROR


class UnknownTopicOrPartitionError(RetriableError):
    """The topic or partition does not exist (yet)."""

    default_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class NotLeaderError(RetriableError):
    """The broker does not lead the partition; refresh metadata."""

    default_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class NotEnoughReplicasError(RetriableError):
    """Fewer in-sync replicas than min.insync.replicas."""

    default_code = ErrorCode.NOT_ENOUGH_REPLICAS


class RequestTimedOutError(RetriableError):
    """The request did not complete in time."""

    default_code = ErrorCode.REQUEST_TIMED_OUT


class NotCoordinatorError(RetriableError):
    """The node is not the group's coordinator."""

    default_code = ErrorCode.NOT_COORDINATOR


class NotControllerError(RetriableError):
    """The node is not the active controller."""

    default_code = ErrorCode.NOT_CONTROLLER


class AuthorizationError(LanesError):
    """The caller's principal may not do this (no ACL allows it, or one denies it)."""

    default_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED


class AuthenticationError(LanesError):
    """The cluster does not know who the caller is: no certificate or credentials, or wrong ones."""

    default_code = ErrorCode.SASL_AUTHENTICATION_FAILED


_SPECIFIC: dict[ErrorCode, type[LanesError]] = {
    ErrorCode.GROUP_AUTHORIZATION_FAILED: AuthorizationError,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: AuthorizationError,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: AuthorizationError,
    **{
        cls.default_code: cls
        for cls in (
            CorruptRecordError,
            MessageTooLargeError,
            UnsupportedCompressionError,
            InvalidTopicError,
            InvalidGroupIdError,
            InvalidConfigError,
            InvalidPartitionsError,
            TopicAlreadyExistsError,
            OffsetOutOfRangeError,
            FencedMemberEpochError,
            UnknownTopicOrPartitionError,
            NotLeaderError,
            NotEnoughReplicasError,
            RequestTimedOutError,
            NotCoordinatorError,
            NotControllerError,
            StorageError,
            AuthorizationError,
            AuthenticationError,
        )
    },
}


def exception_class_for(code: ErrorCode) -> type[LanesError]:
    """The most specific exception class for ``code``."""
    if code is ErrorCode.NONE:
        raise ValueError("ErrorCode.NONE is success, not an error")
    specific = _SPECIFIC.get(code)
    if specific is not None:
        return specific
    return RetriableError if code.retriable else LanesError


def error_code(value: int) -> ErrorCode | None:
    """The ErrorCode for a number received on the wire; None for numbers this version lacks."""
    return _BY_VALUE.get(int(value))


def error_for(code: ErrorCode | int, message: str = "") -> LanesError:
    """Build the exception for a code received from a server (unknown numbers included)."""
    known = error_code(code)
    if known is None:
        return LanesError(f"unknown error code {int(code)}: {message}", ErrorCode.UNKNOWN_SERVER_ERROR)
    return exception_class_for(known)(message, known)


_BY_VALUE: dict[int, ErrorCode] = {code.value: code for code in ErrorCode}
