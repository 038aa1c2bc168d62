"""Every RPC has an access rule (``lanes.runtime.access.access_rules``): a new RPC without one is refused
to everyone but the cluster's nodes and super users, and this test names it."""

from __future__ import annotations

from pathlib import Path

from lanes.runtime.access.access_rules import RULES
from lanes.runtime.access.rules_table import with_table
from lanes.v1 import broker_pb2, controller_pb2, coordinator_pb2


def test_every_rpc_of_every_service_has_a_rule() -> None:
    methods = {
        f"/{service.full_name}/{method.name}"
        for module in (broker_pb2, controller_pb2, coordinator_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    assert methods - set(RULES) == set()


def test_streaming_rules_need_nothing_of_a_request_they_cannot_see() -> None:
    """A client-streaming call is admitted before its requests are read: its rule may only split
    per topic (ProduceStream), never need something of a request."""
    streaming = {
        f"/{service.full_name}/{method.name}"
        for module in (broker_pb2, controller_pb2, coordinator_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
        if method.client_streaming
    }
    for name in streaming:
        rule = RULES[name]
        assert list(rule.needs(None, None)) == [], name  # type: ignore[arg-type]
        assert not rule.nodes_only, name


def test_the_clusters_own_rpcs_are_for_nodes_only() -> None:
    own = {
        "/lanes.v1.Controller/RegisterBroker",
        "/lanes.v1.Controller/BrokerHeartbeat",
        "/lanes.v1.Controller/WatchMetadata",
        "/lanes.v1.Controller/AlterPartition",
        "/lanes.v1.Controller/RegisterCoordinator",
        "/lanes.v1.Controller/CoordinatorHeartbeat",
        "/lanes.v1.Controller/AllocateProducerIds",
        "/lanes.v1.ControllerQuorum/Send",
        "/lanes.v1.Broker/ReplicaFetch",
    }
    assert {name for name, rule in RULES.items() if rule.nodes_only} == own
    follower = broker_pb2.OffsetForLeaderEpochRequest(replica_id=2)
    consumer = broker_pb2.OffsetForLeaderEpochRequest(replica_id=-1)
    rule = RULES["/lanes.v1.Broker/OffsetForLeaderEpoch"]
    assert rule.for_nodes_only(follower)
    assert not rule.for_nodes_only(consumer)


def test_the_security_docs_table_is_the_one_the_rules_generate() -> None:
    """docs/security.md's table of what every RPC needs is generated from RULES and NODE_RULES
    (``tools/gen_access_table.py``); a rule changed without regenerating it fails here."""
    document = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    assert with_table(document) == document, "run .venv/bin/python tools/gen_access_table.py"
