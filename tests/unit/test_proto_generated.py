"""The wire contract: generated code is current, and every element of it is documented."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "services" / "lanes" / "v1"
PROTO_ROOT = ROOT / "proto"


def _load_generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("genproto", ROOT / "tools" / "genproto.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_code_matches_the_proto_files() -> None:
    """Fails when a .proto changed without `make proto`, or generated code was edited by hand."""
    generator = _load_generator()
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "v1"
        generator.generate(fresh)
        expected = {p.name: p.read_bytes() for p in fresh.iterdir() if p.is_file()}
    committed = {p.name: p.read_bytes() for p in GENERATED.iterdir() if p.is_file()}
    stale = sorted(name for name in expected.keys() | committed.keys() if expected.get(name) != committed.get(name))
    assert not stale, f"services/lanes/v1 is stale or hand-edited ({', '.join(stale)}): run `make proto`"


def _descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "contract.pb"
        protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "lanes" / "v1").glob("*.proto"))
        include = Path(protoc.__file__).parent / "_proto"
        status = protoc.main(
            [
                "protoc",
                f"-I{PROTO_ROOT}",
                f"-I{include}",
                "--include_source_info",
                f"--descriptor_set_out={out}",
                *protos,
            ]
        )
        assert status == 0
        return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


def _elements(file: descriptor_pb2.FileDescriptorProto):  # type: ignore[no-untyped-def]
    """(path, name) of every message, field, oneof, enum, enum value, service and method."""

    def message(path: tuple[int, ...], msg: descriptor_pb2.DescriptorProto, prefix: str):  # type: ignore[no-untyped-def]
        name = f"{prefix}{msg.name}"
        yield path, name
        for i, field in enumerate(msg.field):
            yield (*path, 2, i), f"{name}.{field.name}"
        for i, oneof in enumerate(msg.oneof_decl):
            if not oneof.name.startswith("_"):  # synthetic oneofs of proto3 `optional`
                yield (*path, 8, i), f"{name}.{oneof.name}"
        for i, nested in enumerate(msg.nested_type):
            yield from message((*path, 3, i), nested, f"{name}.")
        for i, enum in enumerate(msg.enum_type):
            yield from enum_elements((*path, 4, i), enum, f"{name}.")

    def enum_elements(path: tuple[int, ...], enum: descriptor_pb2.EnumDescriptorProto, prefix: str):  # type: ignore[no-untyped-def]
        yield path, f"{prefix}{enum.name}"
        for i, value in enumerate(enum.value):
            yield (*path, 2, i), f"{prefix}{enum.name}.{value.name}"

    for i, msg in enumerate(file.message_type):
        yield from message((4, i), msg, "")
    for i, enum in enumerate(file.enum_type):
        yield from enum_elements((5, i), enum, "")
    for i, service in enumerate(file.service):
        yield (6, i), service.name
        for j, method in enumerate(service.method):
            yield (6, i, 2, j), f"{service.name}.{method.name}"


CONTRACT = _descriptor_set()


@pytest.mark.parametrize("file", CONTRACT.file, ids=lambda f: f.name)
def test_every_element_of_the_contract_is_commented(file: descriptor_pb2.FileDescriptorProto) -> None:
    commented = {
        tuple(location.path)
        for location in file.source_code_info.location
        if location.leading_comments.strip() or location.trailing_comments.strip()
    }
    missing = [name for path, name in _elements(file) if path not in commented]
    assert not missing, f"{file.name}: uncommented: {', '.join(missing)}"


def test_the_services_offer_every_rpc_of_the_design() -> None:
    services = {s.name: {m.name for m in s.method} for f in CONTRACT.file for s in f.service}
    assert {
        "Metadata",
        "Produce",
        "Fetch",
        "ListOffsets",
        "ReplicaFetch",
        "OffsetForLeaderEpoch",
        "DeleteRecords",
        "InitProducerId",
    } <= services["Broker"]
    assert {
        "RegisterBroker",
        "BrokerHeartbeat",
        "WatchMetadata",
        "CreateTopics",
        "DeleteTopics",
        "CreatePartitions",
        "DescribeTopics",
        "DescribeCluster",
        "AlterConfigs",
        "DescribeConfigs",
        "AlterPartition",
        "ElectLeaders",
        "RegisterCoordinator",
        "CoordinatorHeartbeat",
        "AllocateProducerIds",
    } <= services["Controller"]
    assert {
        "FindCoordinator",
        "Heartbeat",
        "LeaveGroup",
        "CommitOffsets",
        "FetchOffsets",
        "ListGroups",
        "DescribeGroups",
        "DeleteGroups",
        "ResetOffsets",
        "DeleteOffsets",
    } <= services["GroupCoordinator"]


def test_generated_package_imports_cleanly() -> None:
    for module in ("broker", "controller", "coordinator", "metadata", "group_records", "common"):
        __import__(f"lanes.v1.{module}_pb2")
        __import__(f"lanes.v1.{module}_pb2_grpc")
    assert "lanes.v1.broker_pb2" in sys.modules
