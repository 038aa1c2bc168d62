"""Every RPC has an access rule (``lanes.runtime.access_rules``): a new RPC without one is refused
to everyone but the cluster's nodes and super users, and this test names it."""

from __future__ import annotations

from lanes.runtime.access_rules import RULES
from lanes.v1 import broker_pb2, controller_pb2, coordinator_pb2


def test_every_rpc_of_every_service_has_a_rule() -> None:
    methods = {
        f"/{service.full_name}/{method.name}"
        for module in (broker_pb2, controller_pb2, coordinator_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    assert methods - set(RULES) == set()
