"""One shard of ``__consumer_offsets`` as its owning coordinator reads and writes it.

Records: key = a serialized GroupRecordKey, value = a serialized GroupRecordValue or null (a
tombstone), in ordinary RecordBatch v2 batches written with acks=all. Every batch carries the
shard's producer id and, as producer epoch, the shard epoch the controller gave this owner
(sequences from 0 per epoch), so the partition leader refuses a previous owner's late writes
with INVALID_PRODUCER_EPOCH once this owner has written.

Loading (``fence_and_read``): first append a *fence marker* (empty key, null value) under the new
epoch, then read the shard from its start up to the marker. Any write of the previous owner
either landed before the marker (and is replayed) or is refused after it — never lost between
the replay and the first write. Markers are tombstones, so compaction removes them.
"""

from __future__ import annotations

import logging

from google.protobuf.message import DecodeError

from lanes.clock import Clock
from lanes.coordinator.brokers import BrokerAccess
from lanes.coordinator.group import GroupRecord
from lanes.deadline import Backoff
from lanes.errors import ErrorCode, LanesError
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.protocol.records import Record, decode_batches, encode_batch
from lanes.rpc.wire import code_of
from lanes.v1 import group_records_pb2

_log = logging.getLogger(__name__)
MAX_BATCH_BYTES = 512 * 1024  # well under the topic's max.message.bytes
_RETRY_MIN_S = 0.02
_RETRY_MAX_S = 0.5


class ShardFencedError(LanesError):
    """A newer owner of the shard has written: this coordinator must let the shard go."""

    default_code = ErrorCode.INVALID_PRODUCER_EPOCH


class ShardUnavailableError(LanesError):
    """The shard could not be written or read in time; the coordinator reloads it."""

    default_code = ErrorCode.COORDINATOR_NOT_AVAILABLE


class ShardLog:
    """Append and replay for one shard under one shard epoch."""

    def __init__(
        self,
        brokers: BrokerAccess,
        clock: Clock,
        *,
        shard: int,
        producer_id: int,
        shard_epoch: int,
    ) -> None:
        self.shard = shard
        self.producer_id = producer_id
        self.shard_epoch = shard_epoch
        self._brokers = brokers
        self._clock = clock
        self._sequence = 0
        self._closed = False

    async def fence_and_read(self) -> list[GroupRecord]:
        """Fence the previous owner, then return the shard's records up to the fence, in order."""
        marker_offset = await self._append_batch([(b"", None)])
        records: list[GroupRecord] = []
        offset = 0
        backoff = Backoff(_RETRY_MIN_S, _RETRY_MAX_S)
        while offset <= marker_offset:
            if self._closed:
                raise ShardUnavailableError(f"shard {self.shard} was unloaded")
            answer = await self._brokers.fetch(CONSUMER_OFFSETS_TOPIC, self.shard, offset)
            code = code_of(answer.error)
            if code is ErrorCode.NONE and answer.records:
                for batch in decode_batches(answer.records):
                    for record in batch.records:
                        if offset <= record.offset <= marker_offset and record.key:
                            parsed = _parse(record.key, record.value)
                            if parsed is not None:
                                records.append(parsed)
                            else:
                                _log.error(
                                    "shard %d: record at offset %d does not parse; skipped", self.shard, record.offset
                                )
                    offset = max(offset, batch.header.next_offset)
                backoff = Backoff(_RETRY_MIN_S, _RETRY_MAX_S)
                continue
            if code is ErrorCode.OFFSET_OUT_OF_RANGE and offset < answer.log_start_offset:
                offset = answer.log_start_offset  # the start was compacted or deleted away
                continue
            if code is not ErrorCode.NONE and not code.retriable:
                raise ShardUnavailableError(f"shard {self.shard} could not be read: {code.name}")
            await backoff.pause()  # no leader yet, or the marker is not yet below the HWM
        return records

    async def append(self, records: list[GroupRecord]) -> None:
        """Append records durably (acks=all), in order, in as few batches as fit."""
        chunk: list[tuple[bytes, bytes | None]] = []
        size = 0
        for key, value in records:
            encoded = (
                key.SerializeToString(deterministic=True),
                value.SerializeToString() if value is not None else None,
            )
            record_bytes = len(encoded[0]) + len(encoded[1] or b"") + 16
            if chunk and size + record_bytes > MAX_BATCH_BYTES:
                await self._append_batch(chunk)
                chunk, size = [], 0
            chunk.append(encoded)
            size += record_bytes
        if chunk:
            await self._append_batch(chunk)

    def close(self) -> None:
        """Stop retrying: the shard was unloaded."""
        self._closed = True

    async def _append_batch(self, records: list[tuple[bytes, bytes | None]]) -> int:
        """Append one batch; its base offset.

        Retriable errors (no leader, too few in-sync replicas, network) are retried with the same
        sequence until the write lands or the shard is closed — never given up, since a batch of
        unknown fate would leave the sequence, and the shard's state, ambiguous. Raises
        ShardFencedError when a newer owner took over, ShardUnavailableError when closed or refused.
        """
        now_ms = self._clock.now_ms()
        batch = encode_batch(
            [Record(i, now_ms, key, value) for i, (key, value) in enumerate(records)],
            producer_id=self.producer_id,
            producer_epoch=self.shard_epoch,
            base_sequence=self._sequence,
        )
        backoff = Backoff(_RETRY_MIN_S, _RETRY_MAX_S)
        while not self._closed:
            answer = await self._brokers.produce(CONSUMER_OFFSETS_TOPIC, self.shard, batch, timeout_ms=5000)
            code = code_of(answer.error)
            if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                self._sequence += len(records)
                return answer.base_offset
            if code is ErrorCode.INVALID_PRODUCER_EPOCH:
                raise ShardFencedError(f"shard {self.shard}: a newer owner wrote under a later epoch")
            if not code.retriable:
                raise ShardUnavailableError(f"shard {self.shard} write refused: {code.name}: {answer.error.message}")
            _log.debug("shard %d write: %s; retrying", self.shard, code.name)
            await backoff.pause()
        raise ShardUnavailableError(f"shard {self.shard} was unloaded")


def _parse(key: bytes, value: bytes | None) -> GroupRecord | None:
    """The record, or None when it is not a group record this version understands."""
    try:
        parsed_key = group_records_pb2.GroupRecordKey.FromString(key)
        parsed_value = group_records_pb2.GroupRecordValue.FromString(value) if value is not None else None
    except DecodeError:
        return None
    if parsed_key.WhichOneof("key") is None:
        return None
    return parsed_key, parsed_value
