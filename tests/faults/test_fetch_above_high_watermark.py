"""Issue #21, mechanism 2: a consumer fetching between the high-water mark and the log end gets
an empty answer, not OFFSET_OUT_OF_RANGE.

After a failover, or while a follower lags, a leader's log ends past its high-water mark. A
consumer that has read everything up to the mark asks from there; OFFSET_OUT_OF_RANGE would make
it reset by ``auto_offset_reset`` (with ``latest``, skipping records). Kafka answers empty.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lanes.errors import ErrorCode
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2
from tests.faults.replicated import list_offset, replicated_topic
from tests.integration.processes import client_channel
from tests.integration.test_broker_process import batch, fetch, produce


def test_a_fetch_between_the_high_watermark_and_the_log_end_is_answered_empty(tmp_path: Path) -> None:
    with replicated_topic(tmp_path, min_insync_replicas=1) as cluster:
        leader = cluster.address(cluster.leader)

        async def scenario() -> None:
            async with client_channel(leader) as channel:
                stub = broker_pb2_grpc.BrokerStub(channel)
                with cluster.paused(cluster.followers[0]):
                    written = await stub.Produce(
                        produce(cluster.topic, 0, batch([b"a", b"b", b"c"]), acks=common_pb2.ACKS_LEADER)
                    )
                    assert written.topics[0].partitions[0].error.code == ErrorCode.NONE
                    assert await list_offset(leader, cluster.topic, broker_pb2.OFFSET_SPEC_LATEST) == 0
                    for offset in (0, 2, 3):  # from the mark, inside the unreplicated tail, at the log end
                        part = (await stub.Fetch(fetch(cluster.topic, 0, offset))).topics[0].partitions[0]
                        assert part.error.code == ErrorCode.NONE, f"offset {offset}: {part.error.message}"
                        assert not part.records
                        assert part.high_watermark == 0
                    beyond = (await stub.Fetch(fetch(cluster.topic, 0, 4))).topics[0].partitions[0]
                    assert beyond.error.code == ErrorCode.OFFSET_OUT_OF_RANGE, "past the log end is out of range"

        asyncio.run(scenario())
