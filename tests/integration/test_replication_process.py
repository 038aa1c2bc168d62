"""Replication across real broker processes: acks=all on RF 3, a leader killed with SIGKILL,
a new leader elected from the ISR with every acknowledged record, the old one back in the ISR."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import lanes
from lanes.broker.fetcher_manager import FOLLOWER_MAX_WAIT_MS
from lanes.cli.watch import scrape, total
from lanes.errors import ErrorCode
from lanes.protocol.records import decode_batches
from lanes.v1 import broker_pb2_grpc, common_pb2, controller_pb2, controller_pb2_grpc
from tests.integration.processes import ServiceProcess, client_channel, free_port, running_cluster, start_controller
from tests.integration.test_broker_process import batch, fetch, produce, start_broker, wait_for, wait_for_live_brokers


async def partition_state(controller: str, topic: str, partition: int) -> controller_pb2.PartitionDescription:
    async with client_channel(controller) as channel:
        stub = controller_pb2_grpc.ControllerStub(channel)
        described = await stub.DescribeTopics(controller_pb2.DescribeTopicsRequest(names=[topic]))
        return described.topics[0].partitions[partition]


async def produce_acks_all(address: str, topic: str, values: list[bytes]) -> ErrorCode:
    """Produce to partition 0 at ``address``; a leader still taking over (the broker applies the
    metadata a moment after the controller answered) is asked again for up to 10 s."""
    deadline = time.monotonic() + 10
    async with client_channel(address) as channel:
        while True:
            answer = await broker_pb2_grpc.BrokerStub(channel).Produce(produce(topic, 0, batch(values)))
            code = ErrorCode(answer.topics[0].partitions[0].error.code)
            taking_over = code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE)
            if not taking_over or time.monotonic() > deadline:
                return code
            await asyncio.sleep(0.05)


async def read_all(address: str, topic: str) -> list[bytes]:
    async with client_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        values: list[bytes] = []
        offset = 0
        while True:
            part = (await stub.Fetch(fetch(topic, 0, offset))).topics[0].partitions[0]
            assert part.error.code == ErrorCode.NONE, part.error.message
            records = [r for b in decode_batches(part.records) for r in b.records if r.offset >= offset]
            if not records:
                return values
            values.extend(r.value or b"" for r in records)
            offset = records[-1].offset + 1


def test_acks_all_survives_the_loss_of_the_leader(tmp_path: Path) -> None:
    log = tmp_path / "services.log"
    controller = start_controller(tmp_path / "controller", free_port(), log, session_timeout_ms=1500)
    ports = {b: free_port() for b in (1, 2, 3)}
    brokers: dict[int, ServiceProcess] = {
        b: start_broker(b, tmp_path / f"broker-{b}", controller.address, ports[b], log) for b in (1, 2, 3)
    }
    address = {b: f"127.0.0.1:{ports[b]}" for b in (1, 2, 3)}

    async def scenario() -> None:
        async with client_channel(controller.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)

            await wait_for_live_brokers(stub, 3)
            created = await stub.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[
                        controller_pb2.CreatableTopic(
                            name="payments",
                            num_partitions=1,
                            replication_factor=3,
                            configs=[common_pb2.ConfigValue(name="min.insync.replicas", value="2")],
                        )
                    ]
                )
            )
            assert created.topics[0].error.code == 0, created.topics[0].error.message

        acknowledged: list[bytes] = []
        leader = (await partition_state(controller.address, "payments", 0)).leader_id
        for round_ in range(5):
            values = [b"before-%d-%d" % (round_, i) for i in range(20)]
            assert await produce_acks_all(address[leader], "payments", values) is ErrorCode.NONE
            acknowledged.extend(values)

        brokers[leader].kill()

        async def new_leader():  # type: ignore[no-untyped-def]
            state = await partition_state(controller.address, "payments", 0)
            return state.leader_id if state.leader_id not in (leader, -1) else None

        started = time.monotonic()
        successor = await wait_for(new_leader, "a new leader", timeout_s=20)
        print(f"time to new leader: {time.monotonic() - started:.2f} s")
        deadline = time.monotonic() + 20
        for round_ in range(5):
            values = [b"after-%d-%d" % (round_, i) for i in range(20)]
            while (outcome := await produce_acks_all(address[successor], "payments", values)) is not ErrorCode.NONE:
                assert outcome.retriable, outcome
                assert time.monotonic() < deadline, f"acks=all kept failing with {outcome.name}"
                await asyncio.sleep(0.1)
            acknowledged.extend(values)
        assert await read_all(address[successor], "payments") == acknowledged, "every acknowledged record, in order"

        brokers[leader] = start_broker(leader, tmp_path / f"broker-{leader}", controller.address, ports[leader], log)

        async def back_in_isr():  # type: ignore[no-untyped-def]
            return leader in (await partition_state(controller.address, "payments", 0)).isr

        await wait_for(back_in_isr, "the restarted broker to rejoin the ISR", timeout_s=30)

    asyncio.run(scenario())
    for broker in brokers.values():
        assert broker.terminate() == 0
    assert controller.terminate() == 0


def test_a_paused_follower_leaves_the_isr_and_rejoins_after_it_resumes(tmp_path: Path) -> None:
    log = tmp_path / "services.log"
    # A session timeout longer than the test's pause: the paused broker is not fenced, only out of the ISR.
    controller = start_controller(tmp_path / "controller", free_port(), log, session_timeout_ms=30_000)
    ports = {b: free_port() for b in (1, 2, 3)}
    brokers = {
        b: start_broker(b, tmp_path / f"broker-{b}", controller.address, ports[b], log, replica_lag_time_max_ms=1500)
        for b in (1, 2, 3)
    }
    address = {b: f"127.0.0.1:{ports[b]}" for b in (1, 2, 3)}

    async def scenario() -> None:
        async with client_channel(controller.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)

            await wait_for_live_brokers(stub, 3)
            await stub.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[
                        controller_pb2.CreatableTopic(
                            name="strict",
                            num_partitions=1,
                            replication_factor=3,
                            configs=[common_pb2.ConfigValue(name="min.insync.replicas", value="3")],
                        )
                    ]
                )
            )
        state = await partition_state(controller.address, "strict", 0)
        leader = state.leader_id
        assert await produce_acks_all(address[leader], "strict", [b"all three"]) is ErrorCode.NONE
        follower = next(b for b in state.replicas if b != leader)

        brokers[follower].process.send_signal(signal.SIGSTOP)
        try:

            async def left_isr():  # type: ignore[no-untyped-def]
                return follower not in (await partition_state(controller.address, "strict", 0)).isr

            started = time.monotonic()
            await wait_for(left_isr, "the paused follower to leave the ISR", timeout_s=20)
            print(f"paused follower left the ISR after {time.monotonic() - started:.2f} s")
            refused = await produce_acks_all(address[leader], "strict", [b"needs three"])
            assert refused is ErrorCode.NOT_ENOUGH_REPLICAS
        finally:
            brokers[follower].process.send_signal(signal.SIGCONT)

        async def rejoined():  # type: ignore[no-untyped-def]
            return follower in (await partition_state(controller.address, "strict", 0)).isr

        await wait_for(rejoined, "the resumed follower to rejoin the ISR", timeout_s=20)
        assert await produce_acks_all(address[leader], "strict", [b"all three again"]) is ErrorCode.NONE

    asyncio.run(scenario())
    for broker in brokers.values():
        assert broker.terminate() == 0
    assert controller.terminate() == 0


def test_a_diverged_former_leader_truncates_and_ends_byte_identical(tmp_path: Path) -> None:
    log = tmp_path / "services.log"
    controller = start_controller(tmp_path / "controller", free_port(), log, session_timeout_ms=3000)
    ports = {b: free_port() for b in (1, 2)}
    brokers = {b: start_broker(b, tmp_path / f"broker-{b}", controller.address, ports[b], log) for b in (1, 2)}
    address = {b: f"127.0.0.1:{ports[b]}" for b in (1, 2)}

    async def produce_acks(broker: int, values: list[bytes], acks: int) -> ErrorCode:
        deadline = time.monotonic() + 10  # a leader still taking over answers LEADER_NOT_AVAILABLE
        async with client_channel(address[broker]) as channel:
            while True:
                answer = await broker_pb2_grpc.BrokerStub(channel).Produce(produce("ledger", 0, batch(values), acks))
                code = ErrorCode(answer.topics[0].partitions[0].error.code)
                if code is not ErrorCode.LEADER_NOT_AVAILABLE or time.monotonic() > deadline:
                    return code
                await asyncio.sleep(0.05)

    async def scenario() -> tuple[int, int]:
        async with client_channel(controller.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)

            await wait_for_live_brokers(stub, 2)
            await stub.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[controller_pb2.CreatableTopic(name="ledger", num_partitions=1, replication_factor=2)]
                )
            )
        old_leader = (await partition_state(controller.address, "ledger", 0)).leader_id
        successor = 2 if old_leader == 1 else 1
        assert (
            await produce_acks(old_leader, [b"replicated-%d" % i for i in range(10)], common_pb2.ACKS_ALL)
            is ErrorCode.NONE
        )
        # Cut the follower off, let the leader accept writes it will never replicate, then lose it.
        brokers[successor].process.send_signal(signal.SIGSTOP)
        try:
            # A fetch already in flight would still deliver what the leader appends next (the
            # paused process reads it on SIGCONT). Outlast the follower's long poll.
            await asyncio.sleep(FOLLOWER_MAX_WAIT_MS / 1000 + 0.5)
            for i in range(3):
                assert await produce_acks(old_leader, [b"doomed-%d" % i], common_pb2.ACKS_LEADER) is ErrorCode.NONE
            brokers[old_leader].kill()
        finally:
            brokers[successor].process.send_signal(signal.SIGCONT)

        async def took_over():  # type: ignore[no-untyped-def]
            return (await partition_state(controller.address, "ledger", 0)).leader_id == successor

        await wait_for(took_over, "the follower to take over", timeout_s=20)
        deadline = time.monotonic() + 20
        while (outcome := await produce_acks(successor, [b"new-leader"], common_pb2.ACKS_LEADER)) is not ErrorCode.NONE:
            assert outcome.retriable, outcome
            assert time.monotonic() < deadline, outcome
            await asyncio.sleep(0.05)
        return old_leader, successor

    old_leader, successor = asyncio.run(scenario())
    diverged = (tmp_path / f"broker-{old_leader}" / "logs" / "ledger-0" / f"{0:020d}.log").read_bytes()
    brokers[old_leader] = start_broker(
        old_leader, tmp_path / f"broker-{old_leader}", controller.address, ports[old_leader], log
    )
    leader_log = tmp_path / f"broker-{successor}" / "logs" / "ledger-0" / f"{0:020d}.log"
    follower_log = tmp_path / f"broker-{old_leader}" / "logs" / "ledger-0" / f"{0:020d}.log"
    deadline = time.monotonic() + 30
    while follower_log.read_bytes() != leader_log.read_bytes():
        assert time.monotonic() < deadline, "the former leader never converged on the new leader's log"
        time.sleep(0.05)
    assert b"doomed" in diverged, "the former leader held records the new leader never had"
    assert b"doomed" not in follower_log.read_bytes(), "the diverged tail was truncated"
    assert b"new-leader" in follower_log.read_bytes()
    for broker in brokers.values():
        assert broker.terminate() == 0
    assert controller.terminate() == 0


def test_brokers_keep_serving_while_the_controller_is_down(tmp_path: Path) -> None:
    log = tmp_path / "services.log"
    controller_port = free_port()
    controller = start_controller(tmp_path / "controller", controller_port, log, session_timeout_ms=3000)
    ports = {b: free_port() for b in (1, 2, 3)}
    brokers = {b: start_broker(b, tmp_path / f"broker-{b}", controller.address, ports[b], log) for b in (1, 2, 3)}
    address = {b: f"127.0.0.1:{ports[b]}" for b in (1, 2, 3)}

    async def setup() -> tuple[int, list[bytes]]:
        async with client_channel(controller.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)

            await wait_for_live_brokers(stub, 3)
            await stub.CreateTopics(
                controller_pb2.CreateTopicsRequest(
                    topics=[
                        controller_pb2.CreatableTopic(
                            name="audit",
                            num_partitions=1,
                            replication_factor=3,
                            configs=[
                                common_pb2.ConfigValue(name="retention.ms", value="86400000"),
                                common_pb2.ConfigValue(name="min.insync.replicas", value="2"),
                            ],
                        )
                    ]
                )
            )
        leader = (await partition_state(controller.address, "audit", 0)).leader_id
        values = [b"with-controller-%d" % i for i in range(5)]
        assert await produce_acks_all(address[leader], "audit", values) is ErrorCode.NONE
        return leader, values

    leader, acknowledged = asyncio.run(setup())
    before = asyncio.run(partition_state(controller.address, "audit", 0))
    controller.kill()

    async def without_controller() -> list[bytes]:
        values = [b"without-controller-%d" % i for i in range(5)]
        assert await produce_acks_all(address[leader], "audit", values) is ErrorCode.NONE, "acks=all still works"
        return values

    acknowledged += asyncio.run(without_controller())
    assert asyncio.run(read_all(address[leader], "audit")) == acknowledged, "fetch still works"

    controller = start_controller(tmp_path / "controller", controller_port, log, session_timeout_ms=3000)
    after = asyncio.run(partition_state(controller.address, "audit", 0))
    assert (after.leader_id, after.leader_epoch, sorted(after.replicas)) == (
        before.leader_id,
        before.leader_epoch,
        sorted(before.replicas),
    ), "leadership intact"

    async def configs() -> dict[str, str]:
        async with client_channel(controller.address) as channel:
            described = await controller_pb2_grpc.ControllerStub(channel).DescribeConfigs(
                controller_pb2.DescribeConfigsRequest(
                    resources=[
                        controller_pb2.DescribeConfigsResource(
                            resource_type=common_pb2.CONFIG_RESOURCE_TYPE_TOPIC,
                            resource_name="audit",
                            names=["retention.ms", "min.insync.replicas"],
                        )
                    ]
                )
            )
            return {c.name: c.value for c in described.results[0].configs}

    assert asyncio.run(configs()) == {"retention.ms": "86400000", "min.insync.replicas": "2"}
    values = [b"controller-back-%d" % i for i in range(5)]
    assert asyncio.run(produce_acks_all(address[leader], "audit", values)) is ErrorCode.NONE
    assert asyncio.run(read_all(address[leader], "audit")) == acknowledged + values
    for broker in brokers.values():
        assert broker.terminate() == 0
    assert controller.terminate() == 0


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_an_idle_replicated_cluster_does_not_spin(tmp_path: Path) -> None:
    """Followers long-poll their leader; one follower's fetch must not wake the other's in a loop."""
    with running_cluster(tmp_path / "lanes", 3) as cluster:
        admin = lanes.Admin(str(cluster.describe()["bootstrap"]))
        admin.create_topic("quiet", partitions=3, replication_factor=3)
        deadline = time.monotonic() + 30
        while not all(  # the followers are fetching, of __consumer_offsets too: the cluster is settled
            len(p.isr) == 3 for topic in ("quiet", "__consumer_offsets") for p in admin.describe_topic(topic).partitions
        ):
            assert time.monotonic() < deadline, "the followers never joined the ISRs"
            time.sleep(0.05)
        coordinator = str(cluster.coordinator_processes[1].ready["metrics_address"])
        shards = cluster.offsets_topic_partitions
        while total(scrape([coordinator])[0], "lanes_coordinator_shards", state="loaded") < shards:  # its reads end
            assert time.monotonic() < deadline, "the coordinator never loaded its shards"
            time.sleep(0.05)
        before = {i: _cpu_seconds(p.pid) for i, p in cluster.broker_processes.items()}
        time.sleep(3)
        used = {i: _cpu_seconds(p.pid) - before[i] for i, p in cluster.broker_processes.items()}
    assert all(seconds < 0.6 for seconds in used.values()), f"CPU seconds in 3 idle seconds per broker: {used}"


def test_leadership_returns_to_preferred_replicas_when_a_broker_comes_back(tmp_path: Path) -> None:
    with running_cluster(
        tmp_path / "lanes", 3, session_timeout_ms=2000, leader_imbalance_check_interval_ms=300
    ) as cluster:
        admin = lanes.Admin(str(cluster.describe()["bootstrap"]))
        admin.create_topic("balanced", partitions=6, replication_factor=3)

        def leaders() -> list[tuple[int, int]]:
            return [(p.leader, p.replicas[0]) for p in admin.describe_topic("balanced").partitions]

        assert all(leader == preferred for leader, preferred in leaders())
        cluster.broker_processes[1].terminate()  # controlled shutdown: its partitions get other leaders
        assert all(leader != 1 for leader, _ in leaders())
        cluster.start_broker(1)
        deadline = time.monotonic() + 30
        while not all(leader == preferred for leader, preferred in leaders()):
            assert time.monotonic() < deadline, f"leadership never went back to the preferred replicas: {leaders()}"
            time.sleep(0.1)


def test_a_follower_catches_up_a_backlog_larger_than_grpcs_default_message_limit(tmp_path: Path) -> None:
    """A paused follower's first fetch after it resumes brings back up to 1 MiB per partition it
    follows from the leader: with five partitions that is over gRPC's default 4 MiB message size,
    which the brokers' channels to each other must lift (they once did not, and such a follower
    never caught up: every fetch failed with RESOURCE_EXHAUSTED)."""
    topic, partitions, value = "backlog", 10, os.urandom(64 * 1024)
    with running_cluster(tmp_path, brokers=2, session_timeout_ms=20_000) as cluster:
        bootstrap = str(cluster.describe()["bootstrap"])
        with lanes.Admin(bootstrap) as admin:
            admin.create_topic(topic, partitions=partitions, replication_factor=2)
            led_by_1 = [p.partition for p in admin.describe_topic(topic).partitions if p.leader == 1]
        assert len(led_by_1) >= 5, f"placement gave broker 1 only {led_by_1}"
        follower = cluster.broker_processes[2].process
        follower.send_signal(signal.SIGSTOP)  # shorter than the session timeout: paused, not fenced
        try:
            with lanes.Producer(bootstrap, acks="1", enable_idempotence=False) as producer:
                for partition in led_by_1:
                    for _ in range(24):  # 1.5 MiB per partition
                        producer.send(topic, value, partition=partition)
                producer.flush()
        finally:
            follower.send_signal(signal.SIGCONT)

        def caught_up() -> bool:
            with lanes.Admin(bootstrap) as admin:
                logs = admin.describe_logs([topic])
            ends = {(log.broker_id, log.partition): log.log_end_offset for log in logs}
            return all(ends.get((2, partition)) == ends[(1, partition)] == 24 for partition in led_by_1)

        deadline = time.monotonic() + 20
        while not caught_up():
            assert time.monotonic() < deadline, "the resumed follower did not catch up with its leader"
            time.sleep(0.1)
