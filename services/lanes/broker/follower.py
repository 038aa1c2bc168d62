"""Follower replication: fetch from partition leaders, truncate where logs diverged, append.

One ``FollowerFetcher`` per leader broker fetches every partition this broker follows from it, in
one long-polling ReplicaFetch loop. Each request carries, per partition, the follower's log end
offset and the epoch of its last batch; the leader answers with records, its high-water mark and
log start, or a *diverging epoch* when the follower's log holds records the leader's does not (it
led in an epoch that ended earlier on the new leader): the follower truncates at
``truncation_offset`` and fetches again, so no diverged log survives a failover.

Requests belong to a fetch session (KIP-227, ``lanes.broker.fetch_session``): after a full first
request, each names only the partitions whose position moved, and each answer only the partitions
with something to say, so thousands of idle partitions cost an idle follower next to nothing. Any
failed call or session error starts a new session with a full request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import grpc

from lanes.broker.fetch_session import FetchPosition, FetchSessionBuilder
from lanes.broker.partition import FetchedPartition, Partition
from lanes.deadline import Backoff
from lanes.errors import ErrorCode, LanesError, error_code
from lanes.rpc.channels import ChannelCache
from lanes.runtime.serving.logs import fields
from lanes.topic_partition import TopicPartition
from lanes.v1 import broker_pb2, broker_pb2_grpc

_log = logging.getLogger(__name__)
#: pauses after a failed fetch: from 0.1 s, doubling to 0.5 s while failures go on (a leader
#: away is not asked ten times a second); back to 0.1 s after an answer
_RETRY_S, _RETRY_MAX_S = 0.1, 0.5
_PARTITION_MAX_BYTES = 1024 * 1024

#: what a fetcher follows: each partition with the leader epoch it follows it at
Followed = dict[TopicPartition, tuple[Partition, int]]


class FollowerFetcher:
    """Replicates the partitions ``partitions()`` names from one leader."""

    def __init__(
        self,
        *,
        broker_id: int,
        broker_epoch: Callable[[], int],
        leader_address: str,
        partitions: Callable[[], Followed],
        max_wait_ms: int = 500,
    ) -> None:
        """Each answer is applied by its ``Partition`` (``apply_fetched``), which drops it when the
        broker no longer follows at the epoch it was fetched for."""
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._leader_address = leader_address
        self._channels = ChannelCache()
        self._partitions = partitions
        self._max_wait_ms = max_wait_ms

    async def run(self) -> None:
        """Fetch until there is nothing left to follow from this leader, or cancelled."""
        session = FetchSessionBuilder()
        backoff = Backoff(_RETRY_S, _RETRY_MAX_S)
        try:
            while True:
                followed = self._partitions()
                if not followed:
                    return
                positions = self.positions(followed)
                named, forgotten = session.request(positions)
                request = self.request(named, forgotten, session)
                try:
                    channel = self._channels.get(self._leader_address)
                    stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
                    response = await stub.ReplicaFetch(request, timeout=10)
                except grpc.aio.AioRpcError as exc:
                    _log.debug("replica fetch failed: %s", exc.code().name)
                    session.reset()  # the leader may have moved the session on: start a new one
                    await backoff.pause()
                    continue
                if response.error.code:  # the leader forgot the session, or does not know this epoch yet
                    _log.debug("fetch session %d ended: %s", session.session_id, response.error.message)
                    session.reset()
                    if response.error.code == ErrorCode.STALE_BROKER_EPOCH:
                        await backoff.pause()  # its metadata lags this registration
                    continue
                session.answered(response.session_id, positions)
                fetched_from = {key: position.fetch_offset for key, position in positions.items()}
                if await asyncio.to_thread(self.apply, followed, fetched_from, response):
                    backoff.reset()
                else:
                    await backoff.pause()
        finally:
            await self._channels.close()

    @staticmethod
    def positions(followed: Followed) -> dict[TopicPartition, FetchPosition]:
        """Where each followed partition's log stands (its next request names those that moved)."""
        positions = {}
        for key, (partition, leader_epoch) in followed.items():
            log = partition.log
            positions[key] = FetchPosition(
                partition.topic_id,
                leader_epoch,
                log.log_end_offset,
                log.epochs.latest_epoch,
                log.log_start_offset,
                _PARTITION_MAX_BYTES,
            )
        return positions

    def request(
        self,
        named: dict[TopicPartition, FetchPosition],
        forgotten: list[TopicPartition],
        session: FetchSessionBuilder,
    ) -> broker_pb2.ReplicaFetchRequest:
        """The next request of ``session``: the partitions it names, and those it forgets."""
        topics: dict[str, broker_pb2.ReplicaFetchTopic] = {}
        for key, position in sorted(named.items()):
            entry = topics.setdefault(
                key.topic, broker_pb2.ReplicaFetchTopic(topic=key.topic, topic_id=position.topic_id)
            )
            entry.partitions.append(
                broker_pb2.ReplicaFetchPartition(
                    partition=key.partition,
                    current_leader_epoch=position.current_leader_epoch,
                    fetch_offset=position.fetch_offset,
                    last_fetched_epoch=position.last_fetched_epoch,
                    log_start_offset=position.log_start_offset,
                    partition_max_bytes=position.partition_max_bytes,
                )
            )
        gone: dict[str, list[int]] = {}
        for key in forgotten:
            gone.setdefault(key.topic, []).append(key.partition)
        return broker_pb2.ReplicaFetchRequest(
            replica_id=self._broker_id,
            broker_epoch=self._broker_epoch(),
            max_wait_ms=self._max_wait_ms,
            min_bytes=1,
            max_bytes=16 * 1024 * 1024,
            topics=list(topics.values()),
            session_id=session.session_id,
            session_epoch=session.epoch,
            forgotten=[broker_pb2.ReplicaFetchForgotten(topic=t, partitions=p) for t, p in sorted(gone.items())],
        )

    def apply(
        self, followed: Followed, fetched_from: dict[TopicPartition, int], response: broker_pb2.ReplicaFetchResponse
    ) -> bool:
        """Apply one response (worker thread); whether every partition made normal progress."""
        healthy = True
        for topic in response.topics:
            for part in topic.partitions:
                key = TopicPartition(topic.topic, part.partition)
                entry = followed.get(key)
                if entry is None:
                    continue
                partition, leader_epoch = entry  # answers name only partitions of the request's session
                code = error_code(part.error.code)
                fetched = FetchedPartition(
                    error=ErrorCode.UNKNOWN_SERVER_ERROR if code is None else code,
                    high_watermark=part.high_watermark,
                    log_start_offset=part.log_start_offset,
                    records=part.records,  # each read of a bytes field copies it: read once
                    diverging=(
                        (part.diverging_epoch.leader_epoch, part.diverging_epoch.end_offset)
                        if part.HasField("diverging_epoch")
                        else None
                    ),
                )
                try:
                    healthy &= partition.apply_fetched(leader_epoch, fetched_from[key], fetched)
                except (OSError, LanesError) as exc:
                    _log.warning(
                        "replicating %s-%d failed: %s",
                        key.topic,
                        key.partition,
                        exc,
                        extra=fields(topic=key.topic, partition=key.partition),
                    )
                    healthy = False
        return healthy
