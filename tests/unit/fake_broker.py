"""A real in-process gRPC broker for client tests: ``OneBroker`` answers Metadata as the leader
(node 1, leader epoch 0) of partition 0 of every topic asked for; subclasses add the calls a test
needs. ``serving`` runs one on a free port of 127.0.0.1 (its ``address`` set) while held."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

import grpc

from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2


class OneBroker(broker_pb2_grpc.BrokerServicer):
    address = ""

    async def Metadata(self, request: broker_pb2.MetadataRequest, context: object) -> broker_pb2.MetadataResponse:
        host, port = self.address.split(":")
        partition = broker_pb2.PartitionMetadata(partition=0, leader_id=1, leader_epoch=0)
        topics = [
            broker_pb2.TopicMetadata(name=name, topic_id=f"id-{name}", partitions=[partition])
            for name in request.topics
        ]
        return broker_pb2.MetadataResponse(
            brokers=[common_pb2.Node(node_id=1, host=host, port=int(port))], topics=topics
        )


Served = TypeVar("Served", bound=OneBroker)


@contextlib.asynccontextmanager
async def serving(broker: Served) -> AsyncIterator[Served]:
    """``broker`` served on a free port of 127.0.0.1 while held."""
    server = grpc.aio.server()
    broker_pb2_grpc.add_BrokerServicer_to_server(broker, server)
    broker.address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    try:
        yield broker
    finally:
        await server.stop(None)
