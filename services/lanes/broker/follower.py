"""Follower replication: fetch from partition leaders, truncate where logs diverged, append.

One ``FollowerFetcher`` per leader broker fetches every partition this broker follows from it, in
one long-polling ReplicaFetch loop. Each request carries, per partition, the follower's log end
offset and the epoch of its last batch; the leader answers with records, its high-water mark and
log start, or a *diverging epoch* when the follower's log holds records the leader's does not (it
led in an epoch that ended earlier on the new leader): the follower truncates at
``truncation_offset`` and fetches again, so no diverged log survives a failover.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

import grpc

from lanes.broker.replication import follower_truncation
from lanes.errors import ErrorCode, LanesError, error_code
from lanes.rpc.channels import open_channel
from lanes.runtime.logs import fields
from lanes.storage.log import PartitionLog
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, broker_pb2_grpc

_log = logging.getLogger(__name__)
_RETRY_S = 0.1


class FollowerFetcher:
    """Replicates the partitions ``partitions()`` names from one leader."""

    def __init__(
        self,
        *,
        broker_id: int,
        broker_epoch: Callable[[], int],
        leader_address: str,
        partitions: Callable[[], dict[TopicPartition, tuple[PartitionLog, int, str]]],
        leader_high_watermarks: dict[TopicPartition, int],
        replica_lock: Callable[[TopicPartition], threading.Lock],
        still_following: Callable[[TopicPartition, int], bool],
        max_wait_ms: int = 500,
    ) -> None:
        """``replica_lock`` and ``still_following``: a fetched append is written under the
        partition's role lock, and only while the broker still follows the partition at the
        leader epoch it was fetched for (a response that arrives after the broker became the
        partition's leader, or followed a newer leader, is dropped)."""
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._channel = open_channel(leader_address)
        self._stub = broker_pb2_grpc.BrokerStub(self._channel)  # type: ignore[no-untyped-call]
        self._partitions = partitions  # key -> (log, current leader epoch, topic id)
        self._max_wait_ms = max_wait_ms
        #: the leader's high-water mark per partition, as last fetched (the broker's replica lag
        #: metrics read it; the broker drops the partitions it stops following)
        self._leader_high_watermarks = leader_high_watermarks
        self._replica_lock = replica_lock
        self._still_following = still_following

    async def run(self) -> None:
        """Fetch until there is nothing left to follow from this leader, or cancelled."""
        try:
            while True:
                followed = self._partitions()
                if not followed:
                    return
                fetched_from = {key: log.log_end_offset for key, (log, _, _) in followed.items()}
                request = self._request(followed, fetched_from)
                try:
                    response = await self._stub.ReplicaFetch(request, timeout=10)
                except grpc.aio.AioRpcError as exc:
                    _log.debug("replica fetch failed: %s", exc.code().name)
                    await asyncio.sleep(_RETRY_S)
                    continue
                if not await asyncio.to_thread(self._apply, followed, fetched_from, response):
                    await asyncio.sleep(_RETRY_S)
        finally:
            await self._channel.close()

    def _request(
        self, followed: dict[TopicPartition, tuple[PartitionLog, int, str]], fetched_from: dict[TopicPartition, int]
    ) -> broker_pb2.ReplicaFetchRequest:
        """One request for every followed partition, each from ``fetched_from`` (its log end)."""
        topics: dict[str, broker_pb2.ReplicaFetchTopic] = {}
        for key, (log, leader_epoch, topic_id) in sorted(followed.items()):
            topic, partition = key
            entry = topics.setdefault(topic, broker_pb2.ReplicaFetchTopic(topic=topic, topic_id=topic_id))
            entry.partitions.append(
                broker_pb2.ReplicaFetchPartition(
                    partition=partition,
                    current_leader_epoch=leader_epoch,
                    fetch_offset=fetched_from[key],
                    last_fetched_epoch=log.epochs.latest_epoch,
                    log_start_offset=log.log_start_offset,
                    partition_max_bytes=1024 * 1024,
                )
            )
        return broker_pb2.ReplicaFetchRequest(
            replica_id=self._broker_id,
            broker_epoch=self._broker_epoch(),
            max_wait_ms=self._max_wait_ms,
            min_bytes=1,
            max_bytes=16 * 1024 * 1024,
            topics=list(topics.values()),
        )

    def _apply(
        self,
        followed: dict[TopicPartition, tuple[PartitionLog, int, str]],
        fetched_from: dict[TopicPartition, int],
        response: broker_pb2.ReplicaFetchResponse,
    ) -> bool:
        """Apply one response; return whether every partition made normal progress. A partition's
        answer is applied only while the broker still follows it at the epoch it fetched for and
        its log still ends where the fetch started (as Kafka's fetcher checks): an answer about a
        log that moved meanwhile, a diverging epoch above all, would cut records it never saw."""
        healthy = True
        for topic in response.topics:
            for part in topic.partitions:
                key = TopicPartition(topic.topic, part.partition)
                entry = followed.get(key)
                if entry is None:
                    continue
                log, leader_epoch, _ = entry
                with self._replica_lock(key):
                    if self._still_following(key, leader_epoch) and log.log_end_offset == fetched_from.get(key):
                        healthy &= self._apply_partition(key, log, part)
        return healthy

    def _apply_partition(
        self, key: TopicPartition, log: PartitionLog, part: broker_pb2.ReplicaFetchPartitionResponse
    ) -> bool:
        """Apply one partition of a response (the caller holds its role lock); whether it made
        normal progress."""
        code = error_code(part.error.code)
        try:
            if part.HasField("diverging_epoch"):
                diverging = (part.diverging_epoch.leader_epoch, part.diverging_epoch.end_offset)
                target = follower_truncation(log.epochs.entries, log.log_end_offset, log.high_watermark, diverging)
                if diverging[1] < 0:  # the leader cannot say where our epoch ends: pause after
                    log.truncate_to(target)
                    return False
                _log.info(
                    "%s-%d diverged from its leader: truncating to %d",
                    key.topic,
                    key.partition,
                    target,
                    extra=fields(topic=key.topic, partition=key.partition),
                )
                log.truncate_to(target)
                return True
            if code is ErrorCode.OFFSET_OUT_OF_RANGE and log.log_end_offset < part.log_start_offset:
                log.truncate_fully_and_start_at(part.log_start_offset)
                return True
            if code is not ErrorCode.NONE:
                return False
            self._leader_high_watermarks[key] = part.high_watermark
            records = part.records  # each read of a bytes field copies it: read once
            if records:
                log.append_as_follower(records)
            log.update_high_watermark(min(part.high_watermark, log.log_end_offset))
            if part.log_start_offset > log.log_start_offset:
                log.delete_records_before(min(part.log_start_offset, log.high_watermark))
        except LanesError as exc:
            _log.warning(
                "replicating %s-%d failed: %s",
                key.topic,
                key.partition,
                exc,
                extra=fields(topic=key.topic, partition=key.partition),
            )
            return False
        return True
