"""What a leader checks of a produce request before it appends (Kafka's ``LogValidator``): pure,
over the log's configs and the broker's time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lanes.errors import ErrorCode, LanesError
from lanes.protocol.records import BatchHeader, check_produced_records, validate_batches

if TYPE_CHECKING:
    from lanes.storage.log import LogConfig


def validate_produce(data: bytes | bytearray, config: LogConfig, now_ms: int) -> list[BatchHeader]:
    """Check one produce request's data for this partition against this log's configs; its
    batch's header, or the error ``append_as_leader`` would raise (CorruptRecordError,
    MessageTooLargeError, UnsupportedCompressionError, INVALID_RECORD for a record a producer
    cannot have written, a keyless record on a compacted topic or more than one batch,
    INVALID_TIMESTAMP for a record later than ``message.timestamp.after.max.ms`` at
    ``now_ms``). Every record is checked, compressed batches inflated within their bound, as
    Kafka's LogValidator does: a batch no consumer could decode is never stored."""
    headers = validate_batches(data, max_batch_bytes=config.max_message_bytes, producer_batch=True)
    if len(headers) > 1:  # as Kafka's LogValidator: each batch could name a producer of its own
        raise LanesError(
            f"a produce request carries one record batch per partition, not {len(headers)}",
            ErrorCode.INVALID_RECORD,
        )
    if not config.log_append_time:  # KIP-937: a record's time keeps its producer's state alive
        latest_ms = now_ms + config.timestamp_after_max_ms
        ahead_ms = max((header.max_timestamp for header in headers), default=latest_ms)
        if ahead_ms > latest_ms:
            raise LanesError(
                f"a record's timestamp {ahead_ms} is {ahead_ms - latest_ms} ms beyond "
                f"message.timestamp.after.max.ms ({config.timestamp_after_max_ms} ms ahead of the "
                "broker's clock)",
                ErrorCode.INVALID_TIMESTAMP,
            )
    check_produced_records(data, headers, require_keys=config.compact)
    return headers
