"""The seeds' first walkthrough, with the Lanes CLI (the README's Quick start): a topic of three
partitions, five keyed records, where they landed, and reading each partition back in order."""

from __future__ import annotations

from lanes.protocol.partitioner import partition_for_key
from tests.e2e.cli import Workdir

TYPED = "foo:first message\nfoo:second message\nbar:first message\nfoo:third message\nbar:second message\n"


def test_streams_intro(lanes: Workdir) -> None:
    created = lanes.ok("topics", "create", "streams-intro", "--partitions", "3", "--replication-factor", "1")
    assert created.strip() == "created topic streams-intro (3 partitions, replication factor 1)"

    produced = lanes.json("produce", "streams-intro", "--key-separator", ":", input=TYPED)
    foo, bar = partition_for_key(b"foo", 3), partition_for_key(b"bar", 3)
    expected = {foo: {"records": 3, "first": 0, "last": 2}, bar: {"records": 2, "first": 0, "last": 1}}
    if foo == bar:  # the documented partitioner decides; both keys in one partition is allowed
        expected = {foo: {"records": 5, "first": 0, "last": 4}}
    assert produced["records"] == 5
    assert {
        p["partition"]: {"records": p["records"], "first": p["first_offset"], "last": p["last_offset"]}
        for p in produced["partitions"]
    } == expected

    described = lanes.json("topics", "describe", "streams-intro")
    assert (described["name"], described["partitions"], described["replication_factor"]) == ("streams-intro", 3, 1)
    for partition in described["partition_details"]:
        records = expected.get(partition["partition"], {"records": 0})["records"]
        assert partition["low_watermark"] == 0
        assert partition["high_watermark"] == records  # first offset 0, last offset records - 1
        assert (partition["size_bytes"] > 0) == (records > 0)
        assert partition["leader"] in partition["replicas"]
        assert partition["isr"] == partition["replicas"]
    table = lanes.ok("topics", "describe", "streams-intro")
    assert "LOW-WATER" in table
    assert "HIGH-WATER" in table

    for partition, key in ((foo, "foo"), (bar, "bar")):
        lines = lanes.ok("consume", "streams-intro", "--partition", str(partition), "--format", "%o %k:%v").splitlines()
        wanted = [line for line in TYPED.splitlines() if partition_for_key(line.split(":")[0].encode(), 3) == partition]
        assert [line.split(" ", 1)[1] for line in lines] == wanted, key
        assert [int(line.split(" ", 1)[0]) for line in lines] == list(range(len(wanted)))

    everything = lanes.ok("consume", "streams-intro", "--format", "%k:%v").splitlines()
    assert sorted(everything) == sorted(TYPED.splitlines())
    second = lanes.ok("consume", "streams-intro", "--partition", str(foo), "--from", "1", "--max-records", "1")
    assert second == "second message\n"
