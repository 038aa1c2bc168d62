"""Another client, in a process of its own: one-record acks=all produces to one partition, one
after another, for a while; prints each one's (start, latency) in seconds as JSON.

Run as ``python -m tests.security.produce_latencies ADDRESS TOPIC SECONDS`` with the cluster's
client environment (``tests.integration.processes.clients_of``). A process of its own, so that
the test process's own work (receiving thousands of answers) does not count as the broker's.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from lanes.protocol.records import Record, encode_batch
from lanes.rpc.wire import produce_request
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2
from tests.integration.processes import client_channel


async def latencies(address: str, topic: str, seconds: float) -> list[tuple[float, float]]:
    measured: list[tuple[float, float]] = []
    async with client_channel(address, [("grpc.use_local_subchannel_pool", 1)]) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        end = time.time() + seconds
        while (started := time.time()) < end:
            batch = encode_batch([Record(0, int(started * 1000), None, b"%f" % started)])
            request = produce_request(topic, 0, batch, acks=common_pb2.ACKS_ALL, timeout_ms=30_000)
            answer: broker_pb2.ProduceResponse = await stub.Produce(request, timeout=60)
            assert answer.topics[0].partitions[0].error.code == 0, answer
            measured.append((started, time.time() - started))
    return measured


if __name__ == "__main__":
    print(json.dumps(asyncio.run(latencies(sys.argv[1], sys.argv[2], float(sys.argv[3])))))
