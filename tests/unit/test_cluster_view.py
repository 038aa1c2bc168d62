"""The client's cluster view against real in-process Metadata servers: a stale answer (older leader
epoch) never replaces a newer leader, a recreated topic starts its epochs again, and a broker
that failed a request is asked last."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc

from lanes.client._cluster import ClusterView
from lanes.errors import ErrorCode
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2


class MetadataServer(broker_pb2_grpc.BrokerServicer):
    """Answers Metadata with one topic whose partition 0 is led by ``leader`` at ``epoch``."""

    def __init__(self, leader: int, epoch: int, topic_id: str = "id-1") -> None:
        self.leader, self.epoch, self.topic_id = leader, epoch, topic_id
        self.asked = 0
        self.address = ""
        self.directory: dict[int, str] = {}  # the brokers it names: broker id -> address

    async def Metadata(self, request: broker_pb2.MetadataRequest, context: object) -> broker_pb2.MetadataResponse:
        self.asked += 1
        partition = broker_pb2.PartitionMetadata(partition=0, leader_id=self.leader, leader_epoch=self.epoch)
        brokers = [
            common_pb2.Node(node_id=b, host=address.split(":")[0], port=int(address.split(":")[1]))
            for b, address in self.directory.items()
        ]
        return broker_pb2.MetadataResponse(
            brokers=brokers,
            topics=[broker_pb2.TopicMetadata(name="t", topic_id=self.topic_id, partitions=[partition])],
        )


@asynccontextmanager
async def serving(*servicers: MetadataServer) -> AsyncIterator[None]:
    servers = []
    for servicer in servicers:
        server = grpc.aio.server()
        broker_pb2_grpc.add_BrokerServicer_to_server(servicer, server)
        servicer.address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
        await server.start()
        servers.append(server)
    try:
        yield
    finally:
        for server in servers:
            await server.stop(None)


def view_of(*servicers: MetadataServer) -> ClusterView:
    view = ClusterView([s.address for s in servicers], request_timeout_s=5)
    return view


def test_an_answer_with_an_older_leader_epoch_never_replaces_a_newer_leader() -> None:
    async def scenario() -> None:
        stale, current = MetadataServer(leader=1, epoch=3), MetadataServer(leader=2, epoch=4)
        async with serving(stale, current):
            view = view_of(current, stale)
            await view.refresh(["t"])
            assert (view.leaders[("t", 0)], view.leader_epoch("t", 0)) == (2, 4)
            view.bootstrap = [stale.address]
            view.brokers = {}
            await view.refresh(["t"])
            assert stale.asked == 1
            assert (view.leaders[("t", 0)], view.leader_epoch("t", 0)) == (2, 4), "the stale answer was taken"
            stale.topic_id, stale.epoch = "id-2", 0  # the topic was deleted and made again
            await view.refresh(["t"])
            assert (view.leaders[("t", 0)], view.leader_epoch("t", 0)) == (1, 0)
            view.bootstrap, view.brokers = [current.address], {}  # a lagging broker: the old topic's id
            await view.refresh(["t"])
            assert (view.topic_ids["t"], view.leaders[("t", 0)], view.leader_epoch("t", 0)) == ("id-2", 1, 0)
            await view.close()

    asyncio.run(scenario())


def test_a_broker_that_failed_a_request_is_asked_for_metadata_last() -> None:
    async def scenario() -> None:
        zombie, healthy = MetadataServer(leader=1, epoch=3), MetadataServer(leader=2, epoch=4)
        async with serving(zombie, healthy):
            view = view_of(zombie, healthy)
            await view.refresh(["t"])
            assert (zombie.asked, healthy.asked) == (1, 0)
            view.forget_leader("t", 0, suspect=zombie.address)
            await view.refresh(["t"])
            assert (zombie.asked, healthy.asked) == (1, 1), "the suspect was asked first"
            assert view.leaders[("t", 0)] == 2
            await view.close()

    asyncio.run(scenario())


def test_a_leader_that_denied_leading_is_not_taken_again_from_a_stale_broker() -> None:
    """Review of issue #21's change: a broker whose image stopped (cut from the controller)
    still names the old leader at the old epoch. Once that leader said it does not lead, the
    client asks the next broker instead of going back to it."""

    async def scenario() -> None:
        zombie, stale, current = (
            MetadataServer(leader=1, epoch=3),
            MetadataServer(leader=1, epoch=3),
            MetadataServer(leader=2, epoch=4),
        )
        async with serving(zombie, stale, current):
            directory = {3: stale.address, 2: current.address, 1: zombie.address}  # the stale one first
            for server in (zombie, stale, current):
                server.directory = directory
            view = view_of(zombie, stale, current)
            await view.refresh(["t"])
            assert view.leaders[("t", 0)] == 1
            for server in (zombie, stale, current):
                server.asked = 0
            view.forget_leader("t", 0, suspect=zombie.address, denied=True)
            await view.refresh(["t"])
            assert stale.asked == 1
            assert current.asked == 1, "the denied leader's name from a stale broker was taken"
            assert (view.leaders[("t", 0)], view.leader_epoch("t", 0)) == (2, 4)
            await view.close()

    asyncio.run(scenario())


def test_a_broker_that_has_not_heard_of_the_epoch_yet_stays_the_leader_and_is_not_suspected() -> None:
    async def scenario() -> None:
        current = MetadataServer(leader=1, epoch=4)
        async with serving(current):
            current.directory = {1: current.address}
            view = view_of(current)
            await view.refresh(["t"])
            view.refused("t", 0, current.address, ErrorCode.UNKNOWN_LEADER_EPOCH)
            assert view.leader_address("t", 0) == current.address, "retried at once, at the same broker"
            assert view.metadata_sources()[0] == current.address, "not suspected"
            await view.close()

    asyncio.run(scenario())


def test_a_denial_ends_when_the_denying_broker_itself_names_itself_leader_at_that_epoch() -> None:
    """Issue #35: a broker whose metadata lagged denied leading the epoch the producer knew; the
    producer then ignored correct metadata naming that broker for 10 s. A broker names itself
    leader only when it serves as one (``ReplicaManager.named_leader``): its own answer ends
    the denial."""

    async def scenario() -> None:
        caught_up, other = MetadataServer(leader=1, epoch=4), MetadataServer(leader=1, epoch=4)
        async with serving(caught_up, other):
            directory = {1: caught_up.address, 2: other.address}
            caught_up.directory = other.directory = directory
            view = view_of(other, caught_up)
            await view.refresh(["t"])
            view.refused("t", 0, caught_up.address, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            await view.refresh(["t"])
            assert view.leader_address("t", 0) == caught_up.address, "its own answer contradicts its denial"
            assert view.metadata_sources() == [caught_up.address, other.address], "no longer a suspect"
            await view.close()

    asyncio.run(scenario())


def test_concurrent_refreshes_of_a_topic_share_one_metadata_call() -> None:
    """Issue #39: a producer retrying many leaderless partitions asked the broker for the whole
    topic's metadata once per partition and retry; a refresh under way is now shared."""

    async def scenario() -> None:
        server = MetadataServer(leader=1, epoch=0)
        async with serving(server):
            view = view_of(server)
            view.brokers = {1: server.address}
            answers = await asyncio.gather(*(view.refresh(["t"]) for _ in range(200)))
            assert server.asked == 1
            assert all(answer == answers[0] for answer in answers)
            await view.refresh(["t"])  # once it is over, the next refresh asks again
            assert server.asked == 2
            await view.close()

    asyncio.run(scenario())
