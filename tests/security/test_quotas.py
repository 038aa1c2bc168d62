"""Issue #23: client quotas (Kafka's produce and fetch byte rates and request time per user and
client id, and the controller mutation rate of KIP-599), against a real cluster with users
(``LocalCluster(tls=True, auth=True)``): a user or client over its quota is answered with
``throttle_time_ms`` and muted (its next requests wait), while another on the same broker goes
at full speed; a user creating and deleting partitions faster than its mutation quota has its
next topics refused for a while.

Rates are measured as Kafka does, over at least ten seconds, so the first ten seconds' worth of a
quota passes at once; the bounds below allow for that burst, one more request, and a 2x margin."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import time
from collections.abc import Iterator

import grpc
import pytest

import lanes
from lanes.cli.watch import scrape, total
from lanes.errors import ErrorCode, LanesError
from lanes.local.cluster import LocalCluster
from lanes.protocol.records import Record, encode_batch
from lanes.rpc.wire import produce_request
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2
from tests.integration.processes import running_cluster, wait_until_brokers_apply_metadata

SLOW = lanes.UserPassword("slow", "slow-password-1")
FAST = lanes.UserPassword("fast", "fast-password-1")
CROWD = lanes.UserPassword("crowd", "crowd-password-1")  # many concurrent callers, one quota
BUILDER = lanes.UserPassword("builder", "builder-password-1")  # creates and deletes topics
MUTATIONS_PER_S = 2.0  # partitions created, added or deleted per second
QUOTA = 64 * 1024  # bytes per second, per broker
WINDOW_S = 10
RUN_S = 6


def _held_at_most(seconds: float) -> int:
    """The most a client held to ``QUOTA`` acknowledges in ``seconds``: the window's worth it may
    owe at once, then the rate. A client not held must do several times that (under the whole
    suite's load on two cores its produce round trips take several milliseconds: a bound taken
    from a quiet machine's throughput would fail there)."""
    return int(QUOTA * (WINDOW_S + seconds))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("quotas"), brokers=1, tls=True, auth=True) as started:
        with lanes.Admin(
            str(started.describe()["bootstrap"]), tls=started.client_tls, credentials=started.client_credentials
        ) as admin:
            for topic in ("slow-lane", "fast-lane", "backlog"):
                admin.create_topic(topic, partitions=1, replication_factor=1)
            for user in (SLOW, FAST, CROWD, BUILDER):
                admin.set_user_password(user.username, user.password)
                admin.create_acls(
                    [lanes.AclBinding.of(user.username, op, topic="*") for op in ("read", "write")]
                    + [lanes.AclBinding.of(user.username, "read", group="*")]
                )
            admin.create_acls(
                [lanes.AclBinding.of(BUILDER.username, op, topic="*") for op in ("create", "delete", "alter")]
            )
            admin.set_quota("producer_byte_rate", QUOTA, user=SLOW.username)
            admin.set_quota("consumer_byte_rate", QUOTA, user=SLOW.username)
            admin.set_quota("producer_byte_rate", QUOTA, user=CROWD.username)
            admin.set_quota("controller_mutation_rate", MUTATIONS_PER_S, user=BUILDER.username)
            assert {(q.user, q.key) for q in admin.describe_quotas() if q.client_id is None} == {
                ("slow", "producer_byte_rate"),
                ("slow", "consumer_byte_rate"),
                ("crowd", "producer_byte_rate"),
                ("builder", "controller_mutation_rate"),
            }
        wait_until_brokers_apply_metadata(started)  # users, ACLs and quotas reach the broker after the controller
        yield started


def _produce_for(
    cluster: LocalCluster, user: lanes.UserPassword, topic: str, seconds: float, client_id: str = "lanes-producer"
) -> int:
    """Bytes acknowledged while producing 16 KiB values as fast as the broker answers."""
    value = os.urandom(16 * 1024)
    acknowledged = 0
    with lanes.Producer(
        str(cluster.describe()["bootstrap"]),
        tls=cluster.client_tls,
        credentials=user,
        client_id=client_id,
        acks="1",
        enable_idempotence=False,
        linger_ms=0,
        max_in_flight_requests_per_partition=1,
        request_timeout_ms=30_000,
    ) as producer:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                producer.send(topic, value).result(timeout=30)
            except TimeoutError as exc:  # (seen once under a loaded make test: say what the broker did)
                log = cluster.broker_processes[1].log_path.read_text()[-4000:]
                raise AssertionError(
                    f"{exc} after {acknowledged:,} bytes; the end of the broker's log:\n{log}"
                ) from exc
            acknowledged += len(value)
    return acknowledged


def test_a_producer_over_its_quota_is_held_and_others_are_not(cluster: LocalCluster) -> None:
    slow = _produce_for(cluster, SLOW, "slow-lane", RUN_S)
    bound = QUOTA * (WINDOW_S + RUN_S) * 2
    assert 0 < slow <= bound, f"{slow:,} bytes in {RUN_S} s against a {QUOTA:,} B/s quota"
    credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(cluster.client_tls.ca_file.read_bytes()),  # type: ignore[union-attr]
        SLOW.call_credentials(),
    )
    request = produce_request(
        "slow-lane",
        0,
        encode_batch([Record(0, 0, None, os.urandom(256 * 1024))]),
        acks=common_pb2.ACKS_LEADER,
        timeout_ms=5000,
    )
    with grpc.secure_channel(cluster.broker_processes[1].address, credentials) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        first = stub.Produce(request, timeout=30)
        started = time.monotonic()
        second = stub.Produce(request, timeout=30)
        held_s = time.monotonic() - started
    assert first.throttle_time_ms >= 1000, "the answer says how long the user owes (256 KiB at 64 KiB/s)"
    assert held_s >= first.throttle_time_ms / 1000 * 0.8, "and its next request waits that long (muted)"
    assert second.topics[0].partitions[0].error.code == common_pb2.NONE
    fast = _produce_for(cluster, FAST, "fast-lane", RUN_S / 2)
    assert fast > 4 * _held_at_most(RUN_S / 2), f"a user without a quota produced only {fast:,} bytes"


def test_a_consumer_over_its_quota_is_held_and_others_are_not(cluster: LocalCluster) -> None:
    backlog = 8 * 1024 * 1024
    with lanes.Producer(
        str(cluster.describe()["bootstrap"]),
        tls=cluster.client_tls,
        credentials=cluster.client_credentials,
        acks="1",
        enable_idempotence=False,
    ) as producer:
        value = os.urandom(16 * 1024)
        for _ in range(backlog // len(value)):
            producer.send("backlog", value)
        producer.flush()

    def consume_for(user: lanes.UserPassword, seconds: float) -> int:
        read = 0
        with lanes.Consumer(
            str(cluster.describe()["bootstrap"]),
            tls=cluster.client_tls,
            credentials=user,
            fetch_max_bytes=64 * 1024,
            max_partition_fetch_bytes=64 * 1024,
        ) as consumer:
            consumer.assign([lanes.TopicPartition("backlog", 0)])
            consumer.seek_to_beginning()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and read < backlog:
                read += sum(len(record.value or b"") for record in consumer.poll(200))
        return read

    slow = consume_for(SLOW, RUN_S)
    fast = consume_for(FAST, RUN_S)
    bound = QUOTA * (WINDOW_S + RUN_S) * 2
    assert 0 < slow <= bound, f"{slow:,} bytes in {RUN_S} s against a {QUOTA:,} B/s quota"
    assert fast == backlog, f"a user without a quota read only {fast:,} of {backlog:,} bytes"


def test_concurrent_requests_do_not_add_up_past_the_quota(cluster: LocalCluster) -> None:
    """A user is muted, not each request: eight concurrent streams of produce calls (what held
    answers let through eight times over) get the quota between them."""
    payload = encode_batch([Record(0, 0, None, os.urandom(32 * 1024))])
    request = produce_request("slow-lane", 0, payload, acks=common_pb2.ACKS_LEADER, timeout_ms=30_000)
    tls = cluster.client_tls
    assert tls is not None
    credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(tls.ca_file.read_bytes()), CROWD.call_credentials()
    )

    async def lanes_of_requests() -> int:
        written = 0
        deadline = time.monotonic() + RUN_S
        async with grpc.aio.secure_channel(cluster.broker_processes[1].address, credentials) as channel:
            stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]

            async def lane() -> None:
                nonlocal written
                while time.monotonic() < deadline:
                    try:
                        await stub.Produce(request, timeout=max(0.1, deadline - time.monotonic()))
                    except grpc.aio.AioRpcError:
                        return  # still waiting at the deadline
                    written += len(payload)

            await asyncio.gather(*(lane() for _ in range(8)))
        return written

    written = asyncio.run(lanes_of_requests())
    bound = QUOTA * (WINDOW_S + RUN_S) * 2
    assert 0 < written <= bound, f"{written:,} bytes in {RUN_S} s by 8 concurrent callers, quota {QUOTA:,} B/s"


def _throttled_mutations(cluster: LocalCluster) -> float:
    samples, _ = scrape(str(c["metrics"]) for c in cluster.describe()["controllers"])
    return total(samples, "lanes_controller_mutations_throttled_total")


def test_topic_changes_past_the_controller_mutation_quota_are_refused_for_a_while(cluster: LocalCluster) -> None:
    """KIP-599: 31 partitions at once pass (the user's token bucket holds 22, 11 seconds at 2 per
    second, and a change is accepted while it is not negative), leaving it 9 below zero; its next
    topic changes are refused with THROTTLING_QUOTA_EXCEEDED and the time to wait (4.5 s, longer
    than this Admin's request timeout), while another user's are not."""
    bootstrap = str(cluster.describe()["bootstrap"])
    with lanes.Admin(bootstrap, tls=cluster.client_tls, credentials=BUILDER, request_timeout_ms=2_000) as builder:
        builder.create_topic("burst", partitions=31, replication_factor=1)
        with pytest.raises(LanesError) as refused:
            builder.create_topic("one-more", partitions=1, replication_factor=1)
        assert refused.value.code is ErrorCode.THROTTLING_QUOTA_EXCEEDED
        assert "retry in" in str(refused.value)
        with pytest.raises(LanesError, match="THROTTLING_QUOTA_EXCEEDED"):
            builder.delete_topic("burst")
        assert "one-more" not in builder.list_topics()
    with lanes.Admin(bootstrap, tls=cluster.client_tls, credentials=cluster.client_credentials) as admin:
        admin.create_topic("unlimited", partitions=31, replication_factor=1)  # no quota: not refused
        admin.create_topic("unlimited-too", partitions=31, replication_factor=1)
    assert _throttled_mutations(cluster) >= 2


def test_admin_waits_out_a_mutation_throttle_and_succeeds(cluster: LocalCluster) -> None:
    """Refused for the quota with time left in the request timeout, a change is sent again after
    ``throttle_time_ms`` and succeeds, as Kafka's Admin does: the creation waits for the bucket
    the earlier test emptied (if it did not refill yet), and takes 5 more partitions from it, so
    the partition added right after is refused at first."""
    bootstrap = str(cluster.describe()["bootstrap"])
    with lanes.Admin(bootstrap, tls=cluster.client_tls, credentials=BUILDER, request_timeout_ms=30_000) as builder:
        builder.create_topic("waited", partitions=5, replication_factor=1)
        before = _throttled_mutations(cluster)
        builder.create_partitions("waited", 6)
        assert len(builder.describe_topic("waited").partitions) == 6
    assert _throttled_mutations(cluster) > before, "the addition was refused at first"


def _set_quotas(cluster: LocalCluster, quotas: list[tuple[str, float, dict[str, object]]]) -> None:
    with lanes.Admin(
        str(cluster.describe()["bootstrap"]), tls=cluster.client_tls, credentials=cluster.client_credentials
    ) as admin:
        for key, rate, entity in quotas:
            admin.set_quota(key, rate, **entity)  # type: ignore[arg-type]
    wait_until_brokers_apply_metadata(cluster)


def test_a_client_id_quota_holds_that_client_across_users_and_no_other_client(cluster: LocalCluster) -> None:
    """A quota on client id ``batch`` (no user part: Kafka's ``/config/clients/batch``) bounds
    every call naming that client, whichever user makes it, together; the same users' other
    clients are not held. A user's own quota comes first (Kafka's precedence), so ``slow``'s
    calls as ``batch`` stay under its user quota, measured apart."""
    _set_quotas(cluster, [("producer_byte_rate", QUOTA, {"client_id": "batch"})])
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        shared = list(pool.map(lambda user: _produce_for(cluster, user, "fast-lane", RUN_S, "batch"), (FAST, BUILDER)))
    bound = QUOTA * (WINDOW_S + RUN_S) * 2
    assert 0 < sum(shared) <= bound, f"{shared} bytes in {RUN_S} s by two users as one client, quota {QUOTA:,} B/s"
    other = _produce_for(cluster, FAST, "fast-lane", RUN_S / 2, "web")
    assert other > 4 * _held_at_most(RUN_S / 2), f"another client of the same user produced only {other:,} bytes"


def test_a_request_time_quota_holds_back_a_client_that_takes_the_brokers_loop(cluster: LocalCluster) -> None:
    """``request_percentage`` on one user's client id (``fast``, ``storm``: Kafka's
    ``/config/users/fast/clients/storm``): its calls may take 1% of the broker's event loop.
    Eight concurrent callers sending small produce requests as fast as they are answered get a
    small fraction of what the same user gets as another client, the answers say what the client
    owes (``throttle_time_ms``), and the broker counts the time it held the client back."""
    _set_quotas(cluster, [("request_percentage", 1.0, {"user": FAST.username, "client_id": "storm"})])
    tls = cluster.client_tls
    assert tls is not None
    credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(tls.ca_file.read_bytes()), FAST.call_credentials()
    )
    request = produce_request(
        "fast-lane", 0, encode_batch([Record(0, 0, None, b"tiny")]), acks=common_pb2.ACKS_LEADER, timeout_ms=30_000
    )

    async def answered_as(client_id: str) -> tuple[int, int]:
        answers, throttled_ms = 0, 0
        deadline = time.monotonic() + RUN_S
        async with grpc.aio.secure_channel(cluster.broker_processes[1].address, credentials) as channel:
            stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]

            async def lane() -> None:
                nonlocal answers, throttled_ms
                while time.monotonic() < deadline:
                    try:
                        answer = await stub.Produce(
                            request,
                            timeout=max(0.1, deadline - time.monotonic()),
                            metadata=(("lanes-client-id", client_id),),
                        )
                    except grpc.aio.AioRpcError:
                        return  # still held at the deadline
                    answers += 1
                    throttled_ms = max(throttled_ms, answer.throttle_time_ms)

            await asyncio.gather(*(lane() for _ in range(8)))
        return answers, throttled_ms

    storm, storm_throttle_ms = asyncio.run(answered_as("storm"))
    calm, calm_throttle_ms = asyncio.run(answered_as("calm"))
    assert storm_throttle_ms > 0
    assert calm_throttle_ms == 0
    assert 0 < storm * 4 < calm, f"{storm} answers as the limited client, {calm} as another"
    samples, _ = scrape(str(b["metrics"]) for b in cluster.describe()["brokers"])
    assert total(samples, "lanes_throttle_seconds_total", quota="request_percentage") > 0


def test_a_client_id_that_cannot_name_a_client_is_refused(cluster: LocalCluster) -> None:
    with pytest.raises(LanesError, match="not a client id"):
        lanes.Producer(str(cluster.describe()["bootstrap"]), client_id="t\u00e9l\u00e9phone")
    tls = cluster.client_tls
    assert tls is not None
    credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(tls.ca_file.read_bytes()), FAST.call_credentials()
    )
    with grpc.secure_channel(cluster.broker_processes[1].address, credentials) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.RpcError) as refused:
            stub.Metadata(broker_pb2.MetadataRequest(), timeout=10, metadata=(("lanes-client-id", "x" * 300),))
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "client id" in (refused.value.details() or "")


def test_a_throttled_producer_waits_on_its_side_not_in_the_brokers_mute(cluster: LocalCluster) -> None:
    """Kafka's clients stop sending to a broker for the ``throttle_time_ms`` it answered (KIP-219):
    a producer over its quota, one request at a time, then reaches the broker when it owes
    nothing, so once past the first window (rates are measured over at least ten seconds, so
    within it waiting does not lower a debt) the broker holds it back for a small part of the run
    (without the pause, each request would wait out its debt in the broker's mute: most of the
    run), and the bytes stay within the quota's bound."""
    polite = lanes.UserPassword("polite", "polite-password-1")
    with lanes.Admin(
        str(cluster.describe()["bootstrap"]), tls=cluster.client_tls, credentials=cluster.client_credentials
    ) as admin:
        admin.set_user_password(polite.username, polite.password)
        admin.create_acls([lanes.AclBinding.of(polite.username, "write", topic="*")])
        admin.set_quota("producer_byte_rate", QUOTA, user=polite.username)
    wait_until_brokers_apply_metadata(cluster)

    def broker_held_s() -> float:
        samples, _ = scrape(str(b["metrics"]) for b in cluster.describe()["brokers"])
        return total(samples, "lanes_throttle_seconds_total", quota="producer_byte_rate")

    _produce_for(cluster, polite, "fast-lane", WINDOW_S + 2)  # the first window's burst, and its debt
    before = broker_held_s()
    started = time.monotonic()
    produced = _produce_for(cluster, polite, "fast-lane", RUN_S)
    elapsed = time.monotonic() - started
    held = broker_held_s() - before
    assert 0 < produced <= QUOTA * (WINDOW_S + elapsed) * 2
    assert held < 0.25 * elapsed, f"the broker held the producer {held:.1f} s of {elapsed:.1f} s"
