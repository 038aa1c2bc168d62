"""The wire-level core of Lanes, pure and free of I/O.

- ``records``: Kafka RecordBatch v2 encode/decode/validate/patch (C fast path + reference);
- ``compression``: the batch compression codecs;
- ``partitioner``: keyed (mmh3), sticky keyless, explicit and user partitioning;
- ``names``: topic and group naming rules;
- ``errors``: error codes with retriable flags, and the exceptions clients raise.
"""

from lanes.errors import ErrorCode, LanesError, RetriableError, error_for
from lanes.protocol.compression import Compression
from lanes.protocol.records import (
    BatchHeader,
    Record,
    RecordBatch,
    TimestampType,
    decode_batch,
    decode_batches,
    encode_batch,
    validate_batch,
    validate_batches,
)

__all__ = [
    "BatchHeader",
    "Compression",
    "ErrorCode",
    "LanesError",
    "Record",
    "RecordBatch",
    "RetriableError",
    "TimestampType",
    "decode_batch",
    "decode_batches",
    "encode_batch",
    "error_for",
    "validate_batch",
    "validate_batches",
]
