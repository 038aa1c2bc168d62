"""Issue #23: users with client certificates beside users with passwords, against a real cluster
(``LocalCluster(certificate_listeners=True)``: every process also serves a certificate listener
that takes only certificates a separate clients' CA signed, Kafka's SSL listener with
``ssl.client.auth=required`` beside its SASL_SSL one).

- A user whose certificate the clients' CA signed reads what its ACLs allow through the
  certificate listeners, and is told those listeners' addresses (brokers, coordinators, the
  active controller), as Kafka answers with the listener a request came in on; it cannot write
  or see other topics. The administrator's password keeps working on the client listeners.
- The same certificate gets nothing on a client listener (which asks for none): UNAUTHENTICATED.
- A certificate of the clients' CA naming a node, and a certificate of the cluster's own CA
  (which signs nodes), are refused on the certificate listener.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

import lanes
from lanes.errors import AuthorizationError
from lanes.local.certificates import create_authority, issue
from lanes.rpc.tls import TlsFiles
from lanes.v1 import broker_pb2, broker_pb2_grpc
from tests.integration.processes import running_cluster, wait_until_brokers_apply_metadata


async def _metadata(address: str, tls: TlsFiles) -> broker_pb2.MetadataResponse:
    """A Metadata call with ``tls``'s certificate and no password."""
    async with grpc.aio.secure_channel(address, tls.channel_credentials()) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)  # type: ignore[no-untyped-call]
        answer: broker_pb2.MetadataResponse = await stub.Metadata(broker_pb2.MetadataRequest(), timeout=10)
        return answer


def _port(address: str) -> int:
    return int(address.rpartition(":")[2])


def test_certificate_users_use_certificate_listeners_beside_password_users(tmp_path: Path) -> None:
    with running_cluster(tmp_path, brokers=2, certificate_listeners=True) as cluster:
        described = cluster.describe()
        bootstrap, certificate_bootstrap = str(described["bootstrap"]), str(described["certificate_bootstrap"])
        with lanes.Admin(bootstrap) as admin:  # the administrator, by password on the client listeners
            admin.create_topic("a", partitions=2, replication_factor=2)
            admin.create_topic("b", partitions=1, replication_factor=1)
            admin.create_acls(
                [
                    lanes.AclBinding.of("alice", "read", topic="a"),
                    lanes.AclBinding.of("alice", "read", group="alice-", prefixed=True),
                ]
            )
        with lanes.Producer(bootstrap, acks="all") as producer:
            for index in range(10):
                producer.send("a", f"record-{index}".encode(), key=str(index).encode())
            producer.flush()
        wait_until_brokers_apply_metadata(cluster)
        alice = cluster.issue_user_certificate("alice")
        first_broker = certificate_bootstrap.split(",", maxsplit=1)[0]

        told = asyncio.run(_metadata(first_broker, alice))
        assert [topic.name for topic in told.topics] == ["a"], "alice sees only what she may describe"
        certificate_ports = {_port(p.ready["certificate_address"]) for p in cluster.broker_processes.values()}
        assert {broker.port for broker in told.brokers} == certificate_ports, "brokers' certificate listeners"
        coordinator = cluster.coordinator_processes[1]
        assert [c.port for c in told.coordinators] == [_port(coordinator.ready["certificate_address"])]
        controller_ports = {_port(p.ready["certificate_address"]) for p in cluster.controller_processes.values()}
        assert told.controller.port in controller_ports, "the active controller's certificate listener"

        with lanes.Consumer(
            certificate_bootstrap, group_id="alice-readers", auto_offset_reset="earliest", tls=alice, credentials=None
        ) as consumer:
            consumer.subscribe(["a"])
            seen: list[bytes] = []
            for _ in range(60):
                seen.extend(record.value for record in consumer.poll(500))
                if len(seen) >= 10:
                    break
            assert sorted(seen) == sorted(f"record-{index}".encode() for index in range(10))
            consumer.commit()
        with (
            lanes.Producer(certificate_bootstrap, acks="all", tls=alice, credentials=None) as producer,
            pytest.raises(AuthorizationError),
        ):
            producer.send("a", b"not alice's to write").result(timeout=30)

        with pytest.raises(grpc.aio.AioRpcError) as on_client_listener:
            asyncio.run(_metadata(bootstrap.split(",", maxsplit=1)[0], alice))
        assert on_client_listener.value.code() is grpc.StatusCode.UNAUTHENTICATED

        posing = issue(cluster.clients_authority(), tmp_path / "posing", "broker-1", hosts=(), server=False)
        with pytest.raises(grpc.aio.AioRpcError) as as_node:
            asyncio.run(_metadata(first_broker, TlsFiles(alice.ca_file, posing.cert_file, posing.key_file)))
        assert as_node.value.code() is grpc.StatusCode.PERMISSION_DENIED
        assert "a user may not take a node's name" in str(as_node.value.details())

        foreign = issue(create_authority(tmp_path / "foreign-ca"), tmp_path / "foreign", "alice", hosts=())
        nodes_ca = create_authority(cluster.data_dir / "tls")  # the cluster's CA: it signs nodes, not users
        mallory = issue(nodes_ca, tmp_path / "mallory", "mallory", hosts=(), server=False)
        for refused in (mallory, foreign):
            with pytest.raises(grpc.aio.AioRpcError) as handshake:
                asyncio.run(_metadata(first_broker, TlsFiles(alice.ca_file, refused.cert_file, refused.key_file)))
            assert handshake.value.code() is grpc.StatusCode.UNAVAILABLE, "the TLS handshake fails"

        with lanes.Admin(bootstrap) as admin:
            assert set(admin.list_topics()) >= {"a", "b"}, "password users are served as before"
