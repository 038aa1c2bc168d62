"""Issue #23: one address cannot take a broker's whole pool of calls. Against a real cluster whose
processes let one address have 100 calls in progress (``--max-calls-per-address``; the default
is 5,000, a quarter of a server's 20,000): 150 long-poll fetches from one address get 100 held
and 50 refused at once with RESOURCE_EXHAUSTED naming the address and the limit; the broker
serves on, and once the polls end the address may call again. (That another address is not
refused meanwhile is proved over IPv4 and IPv6 loopback in ``tests/unit/test_address_limits.py``:
every process of a local cluster sees its callers as 127.0.0.1.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import grpc
import pytest

import lanes
from lanes.local.cluster import LocalCluster
from lanes.v1 import broker_pb2, broker_pb2_grpc
from tests.integration.processes import client_channel, running_cluster

LIMIT = 100


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("per-address"), brokers=1, max_calls_per_address=LIMIT) as started:
        with lanes.Admin(str(started.describe()["bootstrap"])) as admin:
            admin.create_topic("quiet", partitions=1, replication_factor=1)
        with lanes.Producer(str(started.describe()["bootstrap"])) as producer:
            producer.send("quiet", b"warm-up").result(timeout=30)  # the leader serves: polls from offset 1 wait
        yield started


def test_calls_beyond_an_addresss_limit_are_refused_and_the_broker_serves_on(cluster: LocalCluster) -> None:
    broker = cluster.broker_processes[1]
    # held 10 s: all 150 arrive well within it, even on a loaded machine
    request = broker_pb2.FetchRequest(max_wait_ms=10_000, min_bytes=1, max_bytes=1024)
    request.topics.add(topic="quiet").partitions.add(
        partition=0, fetch_offset=1, current_leader_epoch=-1, partition_max_bytes=1024
    )

    async def flood() -> list[broker_pb2.FetchResponse | BaseException]:
        channels = [client_channel(broker.address, [("grpc.use_local_subchannel_pool", 1)]) for _ in range(3)]
        try:
            stubs = [broker_pb2_grpc.BrokerStub(c) for c in channels]  # type: ignore[no-untyped-call]
            polls = [stubs[i % 3].Fetch(request, timeout=60) for i in range(150)]
            return await asyncio.gather(*polls, return_exceptions=True)
        finally:
            for channel in channels:
                await channel.close()

    answers = asyncio.run(flood())
    refused = [a for a in answers if isinstance(a, grpc.aio.AioRpcError)]
    assert len(refused) == 50, [repr(a)[:200] for a in answers if isinstance(a, BaseException)][:3]
    assert {a.code() for a in refused} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert "127.0.0.1 has 100 calls in progress" in (refused[0].details() or "")
    assert "--max-calls-per-address" in (refused[0].details() or "")
    held = [a for a in answers if isinstance(a, broker_pb2.FetchResponse)]
    assert len(held) == 150 - len(refused)
    assert all(a.topics[0].partitions[0].error.code == 0 for a in held)
    assert broker.process.poll() is None
    with lanes.Producer(str(cluster.describe()["bootstrap"])) as producer:
        producer.send("quiet", b"after the flood").result(timeout=30)
