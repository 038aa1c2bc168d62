"""Issue #23, against a real cluster: a member subscribing by the pattern ``(a+)+$`` stalled the
group coordinator 15.6 s for every group (Python's ``re`` backtracks exponentially on a topic
named ``aaa…a-1``), once long enough for the controller to fence it and move every shard. Now
patterns are RE2 programs (linear time, at most 1,024 characters, no backreferences), matched
against the topics on a worker thread once per pattern and topic set, never per heartbeat: a
hostile group of members with such patterns, heartbeating without pause, leaves another group on
the same shard answered at once, and gets exactly the topics its patterns fully match."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import lanes
from lanes.errors import ErrorCode
from lanes.v1 import common_pb2, coordinator_pb2, coordinator_pb2_grpc
from tests.integration.processes import client_channel, running_cluster
from tests.security.raw import heartbeat

#: Topics Python's ``re`` needs hours to refuse for ``(a+)+$`` (2**40 ways to split the a's).
BAIT_TOPICS = [f"{'a' * 40}-{n}" for n in range(3)]
HOSTILE_PATTERNS = ["(a+)+$", "(a|a)+$", "(a*)*$", "(a|aa)+$", "(aa|a)+b?$"]
HOSTILE_MEMBERS = 40


def _join(group_id: str, *, names: tuple[str, ...] = (), regex: str = "") -> coordinator_pb2.HeartbeatRequest:
    return coordinator_pb2.HeartbeatRequest(
        group_id=group_id,
        member_id=str(uuid.uuid4()),
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscription=coordinator_pb2.Subscription(topic_names=names, topic_regex=regex),
    )


def _assigned(answer: coordinator_pb2.HeartbeatResponse) -> set[str]:
    return {tp.topic for tp in answer.assignment.topic_partitions if tp.partitions}


async def _attack_and_measure(address: str) -> tuple[list[float], set[str], dict[str, common_pb2.Error]]:
    """Hostile members heartbeat their patterns without pause while an honest member of another
    group heartbeats every 100 ms; the honest round trips (s), the topics the hostile members were
    given, and the answers to patterns RE2 refuses."""
    async with client_channel(address) as channel:
        stub = coordinator_pb2_grpc.GroupCoordinatorStub(channel)  # type: ignore[no-untyped-call]
        honest = await heartbeat(stub, _join("honest", names=("orders",)))
        assert honest.error.code == 0, honest.error
        hostile = [_join("hostile", regex=HOSTILE_PATTERNS[n % len(HOSTILE_PATTERNS)]) for n in range(HOSTILE_MEMBERS)]
        joined = await asyncio.gather(*(heartbeat(stub, request) for request in hostile))
        assert all(answer.error.code == 0 for answer in joined), [a.error for a in joined if a.error.code][:3]
        stop = asyncio.Event()
        given: set[str] = set()

        async def keep_heartbeating(request: coordinator_pb2.HeartbeatRequest, epoch: int) -> None:
            while not stop.is_set():
                beat = coordinator_pb2.HeartbeatRequest(
                    group_id=request.group_id, member_id=request.member_id, member_epoch=epoch
                )
                answer = await heartbeat(stub, beat)
                if answer.error.code == 0:
                    epoch = answer.member_epoch
                    given.update(_assigned(answer))

        attackers = [
            asyncio.create_task(keep_heartbeating(request, answer.member_epoch))
            for request, answer in zip(hostile, joined, strict=True)
        ]
        round_trips: list[float] = []
        epoch = honest.member_epoch
        for _ in range(30):
            started = time.monotonic()
            beat = coordinator_pb2.HeartbeatRequest(group_id="honest", member_id=honest.member_id, member_epoch=epoch)
            answer = await heartbeat(stub, beat)
            round_trips.append(time.monotonic() - started)
            assert answer.error.code == 0, answer.error
            epoch = answer.member_epoch
            await asyncio.sleep(0.1)
        stop.set()
        await asyncio.gather(*attackers)
        refused = {
            regex: (await heartbeat(stub, _join("refused", regex=regex))).error
            for regex in (r"(a)\1", "(?=a)a", "a" * 1_025)
        }
        return round_trips, given, refused


def test_hostile_patterns_match_in_linear_time_off_the_loop_and_other_groups_go_on(tmp_path: Path) -> None:
    with running_cluster(tmp_path, brokers=1, offsets_topic_partitions=1) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            for topic in ["orders", "aaaa", *BAIT_TOPICS]:
                admin.create_topic(topic, partitions=2, replication_factor=1)
        coordinator = cluster.coordinator_processes[1]
        round_trips, given, refused = asyncio.run(_attack_and_measure(coordinator.address))

        assert given == {"aaaa"}, "the hostile members get exactly the topic their patterns fully match"
        slowest = max(round_trips)
        assert slowest < 2.0, f"the honest group waited {slowest:.2f} s for a heartbeat while patterns were matched"
        assert refused[r"(a)\1"].code == int(ErrorCode.INVALID_REGULAR_EXPRESSION), refused[r"(a)\1"]
        assert refused["(?=a)a"].code == int(ErrorCode.INVALID_REGULAR_EXPRESSION), refused["(?=a)a"]
        too_long = refused["a" * 1_025]
        assert too_long.code == int(ErrorCode.INVALID_REQUEST), too_long
        assert "at most 1024" in too_long.message
        assert coordinator.process.poll() is None, "the coordinator is up"
