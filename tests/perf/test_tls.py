"""What security costs (run by `make bench`; prints numbers, asserts nothing about time): the same
one-broker cluster plaintext, with TLS and client certificates (``LocalCluster(tls=True)``), and
secure as ``lanes up`` runs it: TLS, a password on every call and ACLs (``tls=True, auth=True``;
the client is a user with WRITE and READ on the topics, not a super user, so every call is
authorized). 1 KiB values (issue #23's aim: under 15% at 1 KiB records), in one run so the ratios
compare like with like.

- client: ``lanes.Producer`` sending records one by one, acks=1, then ``lanes.Consumer`` reading
  them back (records/s);
- wire path: pre-encoded 256-record batches over gRPC (``open_channel`` with the cluster's
  client files), four requests in flight: what the broker and the transport sustain without the
  client's per-record work.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import lanes
from lanes.local.cluster import LocalCluster
from lanes.protocol.records import Record, encode_batch
from lanes.rpc.channels import open_channel
from lanes.rpc.tls import TlsFiles
from lanes.rpc.wire import produce_request
from lanes.v1 import broker_pb2_grpc, common_pb2
from tests.integration.processes import consecutive_free_ports

VALUE_BYTES = 1024
CLIENT_RECORDS = 100_000
RECORDS_PER_BATCH = 256
REQUESTS = 400
IN_FLIGHT = 4


USER = lanes.UserPassword("bench", "bench-password")
Credentials = lanes.UserPassword | None


def _client_produce(bootstrap: str, tls: TlsFiles | None, user: Credentials, value: bytes) -> float:
    with lanes.Producer(
        bootstrap, acks="1", enable_idempotence=False, batch_size=256 * 1024, tls=tls, credentials=user
    ) as producer:
        producer.send("client", value).result(timeout=30)  # warm-up: metadata, channel, handshake
        start = time.perf_counter()
        for _ in range(CLIENT_RECORDS):
            producer.send("client", value)
        producer.flush()
        return time.perf_counter() - start


def _client_consume(bootstrap: str, tls: TlsFiles | None, user: Credentials) -> float:
    with lanes.Consumer(bootstrap, tls=tls, credentials=user) as consumer:
        consumer.assign([lanes.TopicPartition("client", 0)])
        consumer.seek_to_beginning()
        start = time.perf_counter()
        read = 0
        while read < CLIENT_RECORDS + 1:
            read += len(consumer.poll(timeout_ms=1000))
        return time.perf_counter() - start


async def _wire_produce(address: str, tls: TlsFiles | None, user: Credentials, batch: bytes) -> float:
    async with open_channel(address, tls=tls, credentials=user) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        request = produce_request("wire", 0, batch, acks=common_pb2.ACKS_LEADER, timeout_ms=30_000)
        await stub.Produce(request, timeout=30)
        pending = iter(range(REQUESTS))
        start = time.perf_counter()

        async def lane() -> None:
            for _ in pending:
                answer = await stub.Produce(request, timeout=30)
                assert answer.topics[0].partitions[0].error.code == 0

        await asyncio.gather(*(lane() for _ in range(IN_FLIGHT)))
        return time.perf_counter() - start


def _measure(tls: bool, auth: bool, value: bytes, batch: bytes) -> tuple[float, float, float]:
    """Records/s of client produce, client consume and wire produce."""
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(
            Path(tmp), brokers=1, port_base=consecutive_free_ports(LocalCluster.ports_for(1)), tls=tls, auth=auth
        )
        cluster.start()
        try:
            bootstrap = str(cluster.describe()["bootstrap"])
            files = cluster.client_tls
            user = USER if auth else None
            with lanes.Admin(bootstrap, tls=files, credentials=cluster.client_credentials) as admin:
                for topic in ("client", "wire"):
                    admin.create_topic(topic, partitions=1, replication_factor=1)
                if auth:
                    admin.set_user_password(USER.username, USER.password)
                    admin.create_acls(
                        [
                            lanes.AclBinding.of(USER.username, op, topic=t)
                            for t in ("client", "wire")
                            for op in ("read", "write")
                        ]
                    )
            produce_s = _client_produce(bootstrap, files, user, value)
            consume_s = _client_consume(bootstrap, files, user)
            wire_s = asyncio.run(_wire_produce(cluster.broker_processes[1].address, files, user, batch))
        finally:
            cluster.stop()
    return CLIENT_RECORDS / produce_s, CLIENT_RECORDS / consume_s, REQUESTS * RECORDS_PER_BATCH / wire_s


#: Rounds of the three set-ups, interleaved (plaintext, TLS, secure, plaintext, ...): on a shared
#: 2-core machine one run of each differs from the next by more than security costs, so each
#: figure is the median of the rounds.
ROUNDS = 5


def test_tls_against_plaintext() -> None:
    value = os.urandom(VALUE_BYTES)
    batch = encode_batch([Record(i, 1_700_000_000_000, None, value) for i in range(RECORDS_PER_BATCH)])
    setups = ((False, False), (True, False), (True, True))
    runs: dict[tuple[bool, bool], list[tuple[float, float, float]]] = {setup: [] for setup in setups}
    for _ in range(ROUNDS):
        for tls, auth in setups:
            runs[(tls, auth)].append(_measure(tls, auth, value, batch))
    plain, secured, authorized = (
        tuple(statistics.median(run[path] for run in runs[setup]) for path in range(3)) for setup in setups
    )
    lines = [
        f"security against plaintext: one broker, acks=1, {VALUE_BYTES}-byte values, one driver process, "
        f"medians of {ROUNDS} interleaved rounds"
    ]
    for name, p, s, a in zip(
        ("client produce", "client consume", "wire produce"), plain, secured, authorized, strict=True
    ):
        lines.append(
            f"  {name:<15} plaintext {p:>9,.0f}/s   TLS {s:>9,.0f}/s ({100 * (1 - s / p):5.1f}%)   "
            f"TLS+password+ACLs {a:>9,.0f}/s ({100 * (1 - a / p):5.1f}%)"
        )
    print("\n" + "\n".join(lines))
