"""Issue #23: TLS on every listener, against a real cluster (``LocalCluster(tls=True, auth=False)``: a local
CA issues each process a certificate, every listener requires a client certificate the CA
signed, the cluster's own traffic included).

- A client with the cluster's ``admin`` certificate creates a topic, produces and consumes.
- Plaintext, TLS without a client certificate, and a certificate from another CA are refused
  before any RPC runs.
- A caller is only the node its certificate names: registering as a broker, fetching as a
  follower, voting as a controller or writing ``__consumer_offsets`` needs that node's
  certificate.
- A renewed certificate is served without a restart: the next connection's handshake presents
  it (checked with Python's ``ssl`` against the broker's port).
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509

import lanes
from lanes.errors import ErrorCode, LanesError
from lanes.local.certificates import create_authority, issue
from lanes.local.cluster import LocalCluster
from lanes.protocol.names import CONSUMER_OFFSETS_TOPIC
from lanes.protocol.records import Record, encode_batch
from lanes.rpc.tls import TlsFiles
from lanes.rpc.wire import produce_request
from lanes.v1 import broker_pb2, broker_pb2_grpc, controller_pb2, controller_pb2_grpc
from tests.integration.processes import running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("tls"), brokers=2, tls=True, auth=False) as started:
        yield started


def _bootstrap(cluster: LocalCluster) -> str:
    return str(cluster.describe()["bootstrap"])


def test_clients_with_the_clusters_certificate_work_end_to_end(cluster: LocalCluster) -> None:
    tls = cluster.client_tls
    assert tls is not None
    assert cluster.describe()["tls"]["cert"] == str(tls.cert_file), "cluster.json names the client's files"
    with lanes.Admin(_bootstrap(cluster), tls=tls) as admin:
        admin.create_topic("secured", partitions=2, replication_factor=2)
    with lanes.Producer(_bootstrap(cluster), tls=tls) as producer:
        for index in range(20):
            producer.send("secured", b"value-%d" % index, key=b"%d" % index)
        producer.flush()
    with lanes.Consumer(_bootstrap(cluster), tls=tls, auto_offset_reset="earliest", group_id="readers") as consumer:
        consumer.subscribe(["secured"])
        seen: list[lanes.ConsumerRecord] = []
        deadline = time.monotonic() + 30
        while len(seen) < 20 and time.monotonic() < deadline:
            seen.extend(consumer.poll(500))
        consumer.commit()
    assert sorted(record.value or b"" for record in seen) == sorted(b"value-%d" % index for index in range(20))


def _metadata(address: str, credentials: grpc.ChannelCredentials | None) -> None:
    channel = grpc.secure_channel(address, credentials) if credentials is not None else grpc.insecure_channel(address)
    with channel:
        broker_pb2_grpc.BrokerStub(channel).Metadata(broker_pb2.MetadataRequest(), timeout=5)  # type: ignore[no-untyped-call]


def test_plaintext_anonymous_and_foreign_callers_are_refused(cluster: LocalCluster, tmp_path: Path) -> None:
    tls = cluster.client_tls
    assert tls is not None
    address = cluster.broker_processes[1].address
    foreign = issue(create_authority(tmp_path / "other-ca", "Another CA"), tmp_path / "other-ca", "intruder")
    assert foreign.cert_file is not None
    assert foreign.key_file is not None
    callers = {
        "plaintext": None,
        "no client certificate": grpc.ssl_channel_credentials(tls.ca_file.read_bytes()),
        "another CA's certificate": grpc.ssl_channel_credentials(
            tls.ca_file.read_bytes(), foreign.key_file.read_bytes(), foreign.cert_file.read_bytes()
        ),
    }
    for name, credentials in callers.items():
        with pytest.raises(grpc.RpcError) as refused:
            _metadata(address, credentials)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, name
    _metadata(address, tls.channel_credentials())
    plaintext = lanes.Admin(_bootstrap(cluster), tls=None, request_timeout_ms=3000)
    with plaintext, pytest.raises(LanesError, match=r"could name the controller|did not answer"):
        plaintext.list_topics()


def _served_serial(address: str, tls: TlsFiles) -> int:
    """The serial number of the certificate the server presents to a new connection."""
    assert tls.cert_file is not None
    assert tls.key_file is not None
    context = ssl.create_default_context(cafile=str(tls.ca_file))
    context.load_cert_chain(str(tls.cert_file), str(tls.key_file))
    context.set_alpn_protocols(["h2"])
    host, port = address.rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=host) as secured,
    ):
        der = secured.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_a_renewed_certificate_is_served_without_a_restart(cluster: LocalCluster) -> None:
    tls = cluster.client_tls
    assert tls is not None
    broker = cluster.broker_processes[2]
    before = _served_serial(broker.address, tls)
    directory = cluster.data_dir / "tls"
    renewed = issue(create_authority(directory), directory, "broker-2")
    assert renewed.cert_file is not None
    new_serial = x509.load_pem_x509_certificate(renewed.cert_file.read_bytes()).serial_number
    assert new_serial != before
    assert _served_serial(broker.address, tls) == new_serial
    assert broker.process.poll() is None, "the same process serves on"
    with lanes.Admin(_bootstrap(cluster), tls=tls) as admin:
        assert "secured" in admin.list_topics()


def test_a_caller_is_only_the_node_its_certificate_names(cluster: LocalCluster) -> None:
    """Before: anyone could register as a broker, fetch as a follower, vote as a controller or
    write ``__consumer_offsets`` with a shard's producer id. Now each such call must come with
    that node's certificate: the cluster's own RPCs need a node's (``lanes.runtime.access.guard``), and
    that node's (``lanes.rpc.tls.check_claim``)."""
    tls = cluster.client_tls
    assert tls is not None
    admin_credentials = tls.channel_credentials()
    broker_2 = TlsFiles(
        tls.ca_file, cluster.data_dir / "tls" / "broker-2.crt", cluster.data_dir / "tls" / "broker-2.key"
    )
    leader = cluster.broker_processes[1].address
    controller = cluster.controller_addresses.split(",")[0]
    fetch = broker_pb2.ReplicaFetchRequest(replica_id=1, broker_epoch=1, max_wait_ms=0)
    expected = {  # the admin's certificate names no node at all; broker-2's names another one
        "admin": "for the cluster's nodes only; the caller's certificate names admin",
        "broker-2": "this call is broker-1's; the caller's certificate names broker-2",
    }
    for name, credentials in (("admin", admin_credentials), ("broker-2", broker_2.channel_credentials())):
        with grpc.secure_channel(leader, credentials) as channel, pytest.raises(grpc.RpcError) as denied:
            broker_pb2_grpc.BrokerStub(channel).ReplicaFetch(fetch, timeout=5)  # type: ignore[no-untyped-call]
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert expected[name] in (denied.value.details() or ""), name
    register = controller_pb2.RegisterBrokerRequest(broker_id=1, incarnation_id="impostor")
    vote = controller_pb2.RaftMessage(sender=0, to=0, epoch=99)
    with grpc.secure_channel(controller, admin_credentials) as channel:
        controllers = controller_pb2_grpc.ControllerStub(channel)  # type: ignore[no-untyped-call]
        quorum = controller_pb2_grpc.ControllerQuorumStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.RpcError) as denied:
            controllers.RegisterBroker(register, timeout=5)
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.RpcError) as denied:
            quorum.Send(vote, timeout=5)
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    forged = encode_batch([Record(0, 0, b"forged", b"value")])
    request = produce_request(CONSUMER_OFFSETS_TOPIC, 0, forged, acks=1, timeout_ms=5000)
    errors = []
    for broker in cluster.broker_processes.values():  # the shard's leader refuses; the other is no leader
        with grpc.secure_channel(broker.address, admin_credentials) as channel:
            answer = broker_pb2_grpc.BrokerStub(channel).Produce(request, timeout=10)  # type: ignore[no-untyped-call]
        errors.append(answer.topics[0].partitions[0].error)
    refused = [e for e in errors if e.code == int(ErrorCode.INVALID_TOPIC_EXCEPTION)]
    assert len(refused) == 1, errors
    assert "not admin" in refused[0].message
