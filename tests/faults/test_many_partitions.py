"""Issue #21, mechanism 9: a broker taking over many partitions at once must go on heartbeating.
Opening logs, reading producer state and listing the data directory ran on the broker's event
loop while it applied the metadata: with thousands of partitions, heartbeats stalled past the
session timeout, the controller fenced the brokers, leadership moved, and the next application
stalled again (a cascade measured at 37-80% of a core on an idle cluster)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import lanes
from lanes.v1 import broker_pb2, broker_pb2_grpc, controller_pb2, controller_pb2_grpc
from tests.integration.processes import client_channel, running_cluster

PARTITIONS = int(os.environ.get("LANES_MANY_PARTITIONS", "1500"))


def test_creating_thousands_of_partitions_fences_no_broker(tmp_path: Path) -> None:
    with running_cluster(tmp_path, 3, session_timeout_ms=3_000, offsets_topic_partitions=3) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        assert cluster.controller is not None
        controller = cluster.controller.address
        lanes.Admin(bootstrap).create_topic("many", PARTITIONS, 3)

        async def leaders() -> list[int]:
            async with client_channel(controller) as channel:
                stub = controller_pb2_grpc.ControllerStub(channel)
                described = await stub.DescribeTopics(controller_pb2.DescribeTopicsRequest(names=["many"]))
            return [p.leader_id for p in described.topics[0].partitions]

        async def every_broker_holds_them() -> bool:  # every log opened, every role taken
            for process in cluster.broker_processes.values():
                async with client_channel(process.address) as channel:
                    described = await broker_pb2_grpc.BrokerStub(channel).DescribeLogs(
                        broker_pb2.DescribeLogsRequest(topics=["many"])
                    )
                if len(described.replicas) < PARTITIONS:
                    return False
            return True

        started = time.monotonic()
        before = asyncio.run(leaders())
        deadline = time.monotonic() + 120
        while not asyncio.run(every_broker_holds_them()):
            assert time.monotonic() < deadline, "the brokers never opened every log"
            time.sleep(0.5)
        with lanes.Producer(bootstrap) as producer:  # every leader serves: none still taking over
            futures = [producer.send("many", b"served", partition=p) for p in range(PARTITIONS)]
            producer.flush()
            assert all(f.result(timeout=60).offset >= 0 for f in futures)
        after = asyncio.run(leaders())
        fenced = (tmp_path / "logs" / "controller.log").read_text().count("fencing broker")
        moved = sum(1 for a, b in zip(before, after, strict=True) if a != b)
        took_s = time.monotonic() - started
        print(f"\n{PARTITIONS} partitions x RF 3: {fenced} fencings, {moved} leaderships moved in {took_s:.0f} s")
        assert fenced == 0, f"brokers missed their heartbeats while taking over partitions ({fenced} fencings)"
        assert moved == 0, f"{moved} leaderships moved while the brokers took them over"
