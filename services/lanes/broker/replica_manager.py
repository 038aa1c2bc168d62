"""The partition replicas of one broker and what can be asked of them (Kafka's ``ReplicaManager``).

``ReplicaManager`` holds the open ``Partition`` of every replica stored here (the one owner of
each replica's log, role and high-water mark, ``lanes.broker.partition``) and answers, partition
by partition, what a face asks: append as leader (with acks 0, 1 and all), list offsets, find an
epoch's end offset, delete records. It decides who may be served as leader: a partition led here
at the caller's leader epoch (``led``), and for clients, only while this broker can vouch for
that leadership (``leading``). Requests that wait on partitions park in the ``Purgatory``.

What it is not: the roles come from the metadata (``lanes.broker.metadata_publisher`` changes
``partitions`` and the roles), follower fetching is ``lanes.broker.fetcher_manager``'s, ISR
proposals are ``lanes.broker.alter_partition``'s. It knows nothing of gRPC: its answers are the
contract's partition-level messages, whose fields are Kafka's, and a face puts them in its
responses.

Owned by the broker's event loop; log I/O runs in worker threads. ``partitions`` changes on the
loop only.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from lanes.broker.metrics import BrokerMetrics
from lanes.broker.partition import Partition
from lanes.broker.producer_state import Verdict
from lanes.broker.purgatory import Purgatory
from lanes.clock import Clock
from lanes.deadline import Deadline
from lanes.errors import CorruptRecordError, ErrorCode, LanesError, MessageTooLargeError, OffsetOutOfRangeError
from lanes.metadata.image import NO_LEADER, MetadataImage, PartitionImage
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.protocol.records import BatchHeader
from lanes.rpc.tls import node_identity
from lanes.rpc.wire import wire_error
from lanes.storage.log import AppendInfo
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, common_pb2

_log = logging.getLogger(__name__)
#: how often an acks=all wait checks that this broker can still vouch for its leadership
VOUCH_CHECK_INTERVAL_S = 0.25
T = TypeVar("T")


class ControllerView(Protocol):
    """What the replicas need of the node's link to the controllers (``ControllerLink``)."""

    @property
    def image(self) -> MetadataImage: ...

    @property
    def session_timeout_s(self) -> float | None: ...

    def lease_held(self) -> bool: ...


@dataclass(frozen=True)
class Writer:
    """Who appends: the common name of the caller's verified certificate (None without one),
    and whether this listener verifies certificates at all."""

    identity: str | None
    verified: bool


#: Appends of requests up to this many bytes of records run on the event loop; larger ones in a
#: worker thread (decision 0041).
INLINE_APPEND_BYTES = 64 * 1024


async def finish_in_thread(work: Callable[[], T]) -> T:
    """Run ``work`` in a worker thread to its end: a cancellation of the caller waits for the
    thread to finish and is raised after it, so a lock the caller holds is never released while
    the work it guards still runs."""
    future = asyncio.ensure_future(asyncio.to_thread(work))
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait([future])  # (asyncio.wait never cancels what it waits for)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    try:
        return future.result()
    finally:
        # An error's traceback holds this frame: without the future, no reference cycle keeps the
        # work (a request's records) and its error alive until a garbage collection.
        del future, work


class ReplicaManager:
    """The replicas stored on broker ``broker_id``; see the module docstring."""

    def __init__(
        self, broker_id: int, controller: ControllerView, clock: Clock, purgatory: Purgatory, metrics: BrokerMetrics
    ) -> None:
        self.broker_id = broker_id
        self.metrics = metrics
        self.controller = controller
        self.purgatory = purgatory
        self._clock = clock
        #: every partition replica whose log is open, by (topic, partition): changed on the loop only
        self.partitions: dict[TopicPartition, Partition] = {}
        #: ``in_sync``'s last answer, with the image and the image's offset it read
        self._in_sync_as_of: tuple[MetadataImage, int, bool] | None = None

    @property
    def image(self) -> MetadataImage:
        return self.controller.image

    # -----------------------------------------------------------------------------------------
    # who leads

    def led(self, topic: str, partition: int, current_leader_epoch: int = -1) -> Partition | common_pb2.Error:
        """The partition if this broker leads it, or the error to answer: not led here, or the
        caller's ``current_leader_epoch`` is older (FENCED_LEADER_EPOCH) or newer
        (UNKNOWN_LEADER_EPOCH) than this leader's; -1 skips the epoch check (as Kafka)."""
        led = self.partitions.get(TopicPartition(topic, partition))
        leader_epoch = led.leader_epoch if led is not None else None
        if led is None or leader_epoch is None:
            return self.unknown_or_not_leader(topic, partition, current_leader_epoch)
        if current_leader_epoch >= 0 and current_leader_epoch != leader_epoch:
            code = (
                ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < leader_epoch else ErrorCode.UNKNOWN_LEADER_EPOCH
            )
            return wire_error(code, f"{topic}-{partition}: leader epoch is {leader_epoch}")
        return led

    def leading(self, topic: str, partition: int, current_leader_epoch: int = -1) -> Partition | common_pb2.Error:
        """As ``led``, for clients: also NOT_LEADER_OR_FOLLOWER when this broker can no longer
        vouch for its leadership (``vouched``), so that clients look for the new leader."""
        led = self.led(topic, partition, current_leader_epoch)
        if isinstance(led, Partition) and not self.vouched(led):
            return self._not_vouched(topic, partition)
        return led

    def fetchable(self, key: TopicPartition, current_leader_epoch: int, offset: int) -> Partition | common_pb2.Error:
        """The partition a consumer may read from ``offset``: committed records are served by any
        leader that has them; a consumer that waits for new ones is sent on once this broker
        cannot vouch for leading."""
        led = self.led(key.topic, key.partition, current_leader_epoch)
        if isinstance(led, Partition) and offset >= led.log.high_watermark and not self.vouched(led):
            return self._not_vouched(key.topic, key.partition)
        return led

    def _not_vouched(self, topic: str, partition: int) -> common_pb2.Error:
        return wire_error(
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            f"{topic}-{partition}: broker {self.broker_id} lost touch with the controller and its followers; "
            "another broker may lead it now",
        )

    def vouched(self, partition: Partition) -> bool:
        """Whether this broker may still act as the partition's leader: its controller lease holds
        (no other leader can have been elected), or every other ISR member still fetches from it
        (so the controller is away, not this broker cut off: followers stop fetching from a
        leader they no longer follow). A broker cut from both stops answering clients as the
        leader once its lease lapses, instead of holding their requests until they time out."""
        if self.controller.lease_held():
            return True
        window_ms = int((self.controller.session_timeout_s or 0) * 1000)
        return partition.followed_within(self._clock.monotonic_ms(), window_ms)

    def taking_over(self, topic: str, partition: PartitionImage) -> bool:
        """Whether the image names this broker leader of ``partition`` and it does not serve as
        such yet (its log still opening): its own Metadata says no leader until then, so nobody
        is sent here to be told it does not lead."""
        if partition.leader != self.broker_id:
            return False
        led = self.partitions.get(TopicPartition(topic, partition.partition))
        return led is None or led.leader_epoch != partition.leader_epoch

    def named_leader(self, topic: str, partition: PartitionImage) -> int:
        """The leader this broker's Metadata names for ``partition``: none while this broker is
        still taking it over, or leads it without being able to vouch for it (``vouched``), so
        that its own answer never sends a client back to a leadership it would refuse (the
        client takes a broker naming itself leader as contradicting its earlier refusal)."""
        if partition.leader != self.broker_id:
            return partition.leader
        if self.taking_over(topic, partition):
            return NO_LEADER
        led = self.partitions[TopicPartition(topic, partition.partition)]
        return partition.leader if self.vouched(led) else NO_LEADER

    def unknown_or_not_leader(self, topic: str, partition: int, current_leader_epoch: int = -1) -> common_pb2.Error:
        """Why this broker does not serve ``partition`` as its leader. A caller that knows a newer
        leader epoch than this broker's metadata is told UNKNOWN_LEADER_EPOCH (this broker has not
        heard of it yet: retry soon), as Kafka's ``checkCurrentLeaderEpoch`` does, not that this
        broker does not lead (a client would then distrust the newer metadata naming it)."""
        found = self.image.topic(topic)
        if found is None or partition not in found.partitions:
            return wire_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist")
        known_epoch = found.partitions[partition].leader_epoch
        if current_leader_epoch > known_epoch:
            return wire_error(
                ErrorCode.UNKNOWN_LEADER_EPOCH,
                f"{topic}-{partition}: broker {self.broker_id} knows leader epoch {known_epoch}, not yet "
                f"{current_leader_epoch}",
            )
        if self.taking_over(topic, found.partitions[partition]):
            return wire_error(
                ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition}: broker {self.broker_id} is taking over"
            )
        leader = found.partitions[partition].leader
        where = "no broker (offline)" if leader == NO_LEADER else f"broker {leader}"
        return wire_error(
            ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{topic}-{partition} is led by {where}, not broker {self.broker_id}"
        )

    def leader_hint(self, topic: str, partition: int) -> common_pb2.LeaderHint | None:
        found = self.image.topic(topic)
        if found is None or partition not in found.partitions:
            return None
        state = found.partitions[partition]
        return common_pb2.LeaderHint(leader_id=state.leader, leader_epoch=state.leader_epoch)

    def in_sync(self) -> bool:
        """In the ISR of every partition it replicates that has a leader (see ``BrokerNode.in_sync``).
        Worked out again only when the image changed (health checks ask every second)."""
        image = self.image
        as_of = image.last_offset  # (read first: a record applied meanwhile makes the next call count again)
        known = self._in_sync_as_of
        if known is not None and known[0] is image and known[1] == as_of:
            return known[2]
        answer = all(
            self.broker_id in partition.isr
            for topic in image.topics.values()
            for partition in topic.partitions.values()
            if self.broker_id in partition.replicas and partition.leader != NO_LEADER
        )
        self._in_sync_as_of = (image, as_of, answer)
        return answer

    # -----------------------------------------------------------------------------------------
    # append

    async def append(
        self, topic: str, data: broker_pb2.PartitionProduceData, acks: int, timeout_s: float, writer: Writer
    ) -> broker_pb2.PartitionProduceResponse:
        """Append one partition's batches as its leader and answer as Kafka does: the offset, or
        DUPLICATE_SEQUENCE_NUMBER with the original's for a retried batch, and with acks=all only
        once the high-water mark covers the batch (REQUEST_TIMED_OUT after ``timeout_s``).
        Appends reach the log in the order this method is called: no ``await`` comes before the
        partition's FIFO ``append_queue``, which stays held until the worker thread's append is
        done, also when the caller is cancelled."""
        response = broker_pb2.PartitionProduceResponse(partition=data.partition, base_offset=-1, log_append_time_ms=-1)
        current_leader_epoch = data.current_leader_epoch if data.HasField("current_leader_epoch") else -1
        led = self.leading(topic, data.partition, current_leader_epoch)
        leader_epoch = led.leader_epoch if isinstance(led, Partition) else None
        if not isinstance(led, Partition) or leader_epoch is None:
            response.error.CopyFrom(
                led
                if not isinstance(led, Partition)
                else self.unknown_or_not_leader(topic, data.partition, current_leader_epoch)
            )
            hint = self.leader_hint(topic, data.partition)
            if hint is not None:
                response.current_leader.CopyFrom(hint)
            return response
        acks_all = acks == common_pb2.ACKS_ALL
        try:
            async with led.append_queue:
                # (each read of a bytes field copies it: read once)
                appended = await self._validate_and_append(
                    led, leader_epoch, data.records, acks_all=acks_all, writer=writer
                )
        except LanesError as exc:
            response.error.CopyFrom(wire_error(exc.code, exc.message))
            return response
        if isinstance(appended, Verdict):
            if appended.duplicate_of is None:  # refused: a sequence or epoch error
                response.error.CopyFrom(wire_error(appended.error, appended.message))
                return response
            # a retry of an earlier batch is answered as the original was, with its offset
            response.base_offset = appended.duplicate_of.first_offset
            response.error.CopyFrom(
                wire_error(ErrorCode.DUPLICATE_SEQUENCE_NUMBER, "already written: the original offset is returned")
            )
            last_offset = appended.duplicate_of.last_offset
        else:
            self.purgatory.moved(led.key)  # followers' long-polls wait for new records
            self.metrics.appended(topic, appended.records, appended.size_bytes)
            response.base_offset = appended.first_offset
            response.log_append_time_ms = appended.log_append_time_ms
            response.log_start_offset = led.log.log_start_offset
            response.error.CopyFrom(wire_error(ErrorCode.NONE))
            last_offset = appended.last_offset
        if acks_all:
            # Also for a retry (Kafka parks it the same way): the original may still be on this
            # leader alone, and is acknowledged only once the high-water mark covers it.
            outcome = await self._replicated(led, leader_epoch, last_offset + 1, timeout_s)
            if outcome is not ErrorCode.NONE:
                response.error.CopyFrom(wire_error(outcome, f"{topic}-{data.partition}: {outcome.hint}"))
        return response

    async def _validate_and_append(
        self, partition: Partition, leader_epoch: int, records: bytes, *, acks_all: bool, writer: Writer
    ) -> AppendInfo | Verdict:
        """Validate the batches and check their writer, then append them at ``leader_epoch``
        (``Partition.append_as_leader``). A request of at most ``INLINE_APPEND_BYTES`` is
        validated on the loop (C checksums of a few kilobytes) and, when the append is light (no
        segment roll, no fsync: ``PartitionLog.append_is_light``), appended there too; anything
        else takes one hop to a worker thread (decision 0041)."""
        if len(records) > INLINE_APPEND_BYTES:
            return await self._appended_in_thread(
                functools.partial(self._append_validated, partition, leader_epoch, records, acks_all, writer)
            )
        headers = self._validated(partition, records, writer)
        append = functools.partial(
            partition.append_as_leader, records, headers, leader_epoch=leader_epoch, acks_all=acks_all
        )
        if partition.log.append_is_light(len(records), headers):
            appended = append(wait=False)  # never waits for a thread holding the partition or its log
            if appended is not None:
                return appended
        return await self._appended_in_thread(append)

    @staticmethod
    async def _appended_in_thread(append: Callable[[], AppendInfo | Verdict | None]) -> AppendInfo | Verdict:
        appended = await finish_in_thread(append)
        assert appended is not None  # (a waiting append always appends or refuses)
        return appended

    def _append_validated(
        self, partition: Partition, leader_epoch: int, records: bytes, acks_all: bool, writer: Writer
    ) -> AppendInfo | Verdict | None:
        """``_validate_and_append`` in a worker thread."""
        headers = self._validated(partition, records, writer)
        return partition.append_as_leader(records, headers, leader_epoch=leader_epoch, acks_all=acks_all)

    def _validated(self, partition: Partition, records: bytes, writer: Writer) -> list[BatchHeader]:
        """The headers of a produce request's batches, validated against the partition's log,
        and their writer checked."""
        headers = partition.log.validate_produce(records)
        self._check_internal_writer(partition.key.topic, partition.key.partition, headers, writer)
        return headers

    def _check_internal_writer(self, topic: str, partition: int, headers: list[BatchHeader], writer: Writer) -> None:
        """Only a shard's coordinator writes ``__consumer_offsets``: with the shard's producer id
        (header-only check; the producer epoch check that follows fences old owners) and, with
        TLS, the certificate of the coordinator owning the shard (a batch naming the shard's
        producer id with a newer epoch would otherwise fence it)."""
        if topic != CONSUMER_OFFSETS_TOPIC:
            return
        shard = self.image.shards.get(partition)
        owner = node_identity("coordinator", shard.coordinator_id) if shard is not None else None
        caller = writer.identity
        if writer.verified and caller != owner:
            if caller is not None and caller.startswith("coordinator-"):  # this broker's metadata may lag a move
                raise LanesError(
                    f"shard {partition} is {owner}'s in this broker's metadata, not {caller}'s (yet): retry",
                    ErrorCode.NOT_COORDINATOR,
                )
            raise LanesError(
                f"{topic} is internal: only the group coordinator owning shard {partition} ({owner}) writes it, "
                f"not {caller or 'a caller without a certificate'}",
                ErrorCode.INVALID_TOPIC_EXCEPTION,
            )
        if shard is None or any(h.producer_id != shard.producer_id for h in headers):
            raise LanesError(
                f"{topic} is internal: only the group coordinator owning shard {partition} writes it",
                ErrorCode.INVALID_TOPIC_EXCEPTION,
            )

    async def _replicated(
        self, partition: Partition, leader_epoch: int, required_offset: int, timeout_s: float
    ) -> ErrorCode:
        """An acks=all append's outcome: NONE once the high-water mark covers ``required_offset``
        at ``leader_epoch``; an error as soon as that can no longer happen here."""

        async def attempt() -> ErrorCode | None:
            result = partition.acks_all_outcome(leader_epoch, required_offset)
            if result is not None:
                return result  # committed before any lapse below is answered as such
            return None if self.vouched(partition) else ErrorCode.NOT_LEADER_OR_FOLLOWER

        outcome = await self.purgatory.park(
            (partition.key,), attempt, Deadline(timeout_s), recheck_s=VOUCH_CHECK_INTERVAL_S
        )
        return ErrorCode.REQUEST_TIMED_OUT if outcome is None else outcome

    # -----------------------------------------------------------------------------------------
    # offsets and records

    def epoch_end_offset(
        self, topic: str, partition: int, current_leader_epoch: int, leader_epoch: int
    ) -> broker_pb2.OffsetForLeaderEpochPartitionResponse:
        """Where ``leader_epoch`` ends in this leader's log (Kafka's OffsetForLeaderEpoch)."""
        result = broker_pb2.OffsetForLeaderEpochPartitionResponse(partition=partition)
        led = self.led(topic, partition, current_leader_epoch)
        if not isinstance(led, Partition):
            result.error.CopyFrom(led)
            return result
        epoch, end = led.log.epochs.end_offset_for(leader_epoch, led.log.log_end_offset)
        result.error.CopyFrom(wire_error(ErrorCode.NONE))
        result.end.CopyFrom(broker_pb2.EpochEndOffset(leader_epoch=epoch, end_offset=end))
        return result

    async def delete_records(
        self, topic: str, partition: int, offset: int
    ) -> broker_pb2.DeleteRecordsPartitionResponse:
        """Move the log start to ``offset`` (-1: the high-water mark); followers adopt it from
        their next fetch."""
        result = broker_pb2.DeleteRecordsPartitionResponse(partition=partition, low_watermark=-1)
        led = self.leading(topic, partition)
        leader_epoch = led.leader_epoch if isinstance(led, Partition) else None
        if not isinstance(led, Partition) or leader_epoch is None:
            result.error.CopyFrom(
                led if not isinstance(led, Partition) else self.unknown_or_not_leader(topic, partition)
            )
            return result
        target = led.log.high_watermark if offset == -1 else offset
        try:
            result.low_watermark = await asyncio.to_thread(led.delete_records_before, leader_epoch, target)
            result.error.CopyFrom(wire_error(ErrorCode.NONE))
            self.purgatory.moved(led.key)  # a new log start: followers' fetches tell them now
        except LanesError as exc:
            result.error.CopyFrom(wire_error(exc.code, exc.message))
        return result

    async def list_offset(
        self, topic: str, wanted: broker_pb2.ListOffsetsPartition
    ) -> broker_pb2.ListOffsetsPartitionResponse:
        """The earliest offset, the latest (the high-water mark), the first at or after a
        timestamp, or the first record at or after an offset with its time, of a partition led here."""
        result = broker_pb2.ListOffsetsPartitionResponse(
            partition=wanted.partition, offset=-1, timestamp_ms=-1, leader_epoch=-1
        )
        led = self.led(topic, wanted.partition, wanted.current_leader_epoch)
        if not isinstance(led, Partition):
            result.error.CopyFrom(led)
        elif wanted.spec == broker_pb2.OFFSET_SPEC_EARLIEST:
            result.offset = led.log.log_start_offset
        elif led.log.high_watermark < led.leader_epoch_start_offset:
            # A new leader learns the high-water mark from its followers' next fetches; until
            # then "latest" would be too low (as Kafka: OFFSET_NOT_AVAILABLE).
            result.error.CopyFrom(
                wire_error(
                    ErrorCode.OFFSET_NOT_AVAILABLE,
                    f"{topic}-{wanted.partition} has a new leader that has not yet established its "
                    "high-water mark; retry shortly",
                )
            )
        elif wanted.spec == broker_pb2.OFFSET_SPEC_LATEST:
            result.offset = led.log.high_watermark
        elif wanted.spec == broker_pb2.OFFSET_SPEC_TIMESTAMP:
            try:
                found = await asyncio.to_thread(led.log.offset_for_timestamp, wanted.timestamp_ms)
            except (CorruptRecordError, MessageTooLargeError) as exc:  # a batch it cannot decode
                result.error.CopyFrom(wire_error(exc.code, f"{topic}-{wanted.partition}: {exc.message}"))
                found = None
            if found is not None and found.offset < led.log.high_watermark:
                result.offset, result.timestamp_ms, result.leader_epoch = (
                    found.offset,
                    found.timestamp_ms,
                    found.leader_epoch,
                )
        elif wanted.spec == broker_pb2.OFFSET_SPEC_RECORD_TIME:
            try:
                found = await asyncio.to_thread(led.log.record_time_at, wanted.offset)
            except (CorruptRecordError, MessageTooLargeError, OffsetOutOfRangeError) as exc:
                result.error.CopyFrom(wire_error(exc.code, f"{topic}-{wanted.partition}: {exc.message}"))
                found = None
            if found is not None:
                result.offset, result.timestamp_ms, result.leader_epoch = (
                    found.offset,
                    found.timestamp_ms,
                    found.leader_epoch,
                )
        else:
            result.error.CopyFrom(
                wire_error(
                    ErrorCode.UNSUPPORTED_VERSION, "use OFFSET_SPEC_EARLIEST, _LATEST, _TIMESTAMP or _RECORD_TIME"
                )
            )
        if not result.HasField("error"):
            result.error.CopyFrom(wire_error(ErrorCode.NONE))
        return result
