"""The Spark data source's pure parts: options and offset planning (admission control, task
splitting, data loss), with property tests for the invariants micro-batches rely on."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lanes
from lanes_spark.options import EARLIEST, LATEST, ClusterAccess, LanesOptionError, read_options, write_options
from lanes_spark.planning import OffsetRange, admit, from_checkpoint, lost, ranges, resolve, to_checkpoint

partitions = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5)),
    st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
    min_size=1,
)


@given(partitions, st.integers(1, 3000))
def test_admission_never_exceeds_the_limit_nor_a_partitions_end(spans: dict, limit: int) -> None:
    start = {p: min(a, b) for p, (a, b) in spans.items()}
    latest = {p: max(a, b) for p, (a, b) in spans.items()}
    end = admit(start, latest, limit)
    taken = {p: end[p] - start[p] for p in latest}
    assert all(0 <= taken[p] <= latest[p] - start[p] for p in latest)
    assert sum(taken.values()) == min(limit, sum(latest[p] - start[p] for p in latest))


def test_admission_shares_the_limit_in_proportion_to_the_backlog() -> None:
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 100}
    latest = {("t", 0): 300, ("t", 1): 100, ("t", 2): 100}
    assert admit(start, latest, 100) == {("t", 0): 75, ("t", 1): 25, ("t", 2): 100}
    assert admit(start, latest, None) == latest


@given(partitions, st.integers(1, 20))
def test_ranges_cover_exactly_what_is_between_start_and_end(spans: dict, min_partitions: int) -> None:
    start = {p: min(a, b) for p, (a, b) in spans.items()}
    end = {p: max(a, b) for p, (a, b) in spans.items()}
    pieces = ranges(start, end, min_partitions)
    covered = sorted((r.topic, r.partition, o) for r in pieces for o in range(r.start, r.end))
    assert covered == sorted((t, p, o) for (t, p), e in end.items() for o in range(start[(t, p)], e))
    total = sum(end[p] - start[p] for p in end)
    assert len(pieces) >= min(min_partitions, total), "at least minPartitions tasks when there are records enough"


def test_a_new_partition_starts_at_zero_and_empty_ranges_are_dropped() -> None:
    assert ranges({("t", 0): 5}, {("t", 0): 5, ("t", 1): 3}) == [OffsetRange("t", 1, 0, 3)]


def test_resolving_specs_and_finding_lost_records() -> None:
    parts = [("t", 0), ("t", 1)]
    earliest, latest = {("t", 0): 10, ("t", 1): 0}, {("t", 0): 50, ("t", 1): 7}
    assert resolve("earliest", parts, earliest, latest) == earliest
    assert resolve("latest", parts, earliest, latest) == latest
    assert resolve({"t": {0: LATEST}}, parts, earliest, latest) == {("t", 0): 50, ("t", 1): 0}
    assert resolve({"t": {0: 20, 1: EARLIEST}}, parts, earliest, latest) == {("t", 0): 20, ("t", 1): 0}
    assert lost({("t", 0): 4, ("t", 1): 0}, earliest) == {("t", 0): (4, 10)}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bootstrap": "b:1"}, "set exactly one of the options subscribe"),
        ({"bootstrap": "b:1", "subscribe": "a", "assign": '{"a": [0]}'}, "set exactly one"),
        ({"subscribe": "a"}, "option bootstrap is required"),
        (
            {"bootstrap": "b:1", "subscribe": "a", "startingOffsets": "first"},
            "startingOffsets must be earliest, latest or JSON",
        ),
        ({"bootstrap": "b:1", "subscribePattern": "("}, "is not a regular expression"),
        ({"bootstrap": "b:1", "subscribe": "a", "maxRecordsPerTrigger": "0"}, "at least 1"),
        ({"bootstrap": "b:1", "subscribe": "a", "failOnDataLoss": "maybe"}, "true or false"),
        ({"bootstrap": "b:1", "subscribe": "a", "subscibe": "b"}, "unknown option(s) subscibe"),
        ({"bootstrap": "b:1", "assign": "[0]"}, "assign must be JSON"),
    ],
)
def test_read_options_refuse_what_cannot_work(options: dict[str, str], message: str) -> None:
    with pytest.raises(LanesOptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_options(options, streaming=False)


def test_read_options_defaults_and_case() -> None:
    stream = read_options(
        {"BOOTSTRAP": "b:1", "SubscribePattern": "prices-.*", "startingoffsets": '{"prices-a": {"0": 5}}'},
        streaming=True,
    )
    assert stream.wants("prices-a")
    assert not stream.wants("__consumer_offsets")
    assert not stream.wants("orders")
    assert stream.starting == {"prices-a": {0: 5}}
    assert read_options({"bootstrap": "b:1", "subscribe": "a"}, streaming=True).starting == "latest"
    assert read_options({"bootstrap": "b:1", "subscribe": "a"}, streaming=False).starting == "earliest"
    with pytest.raises(LanesOptionError, match="endingOffsets is for batch queries"):
        read_options({"bootstrap": "b:1", "subscribe": "a", "endingOffsets": "latest"}, streaming=True)


def test_write_options() -> None:
    assert write_options({"bootstrap": "b:1", "acks": "-1"}).acks == "all"
    with pytest.raises(LanesOptionError, match="compression 'brotli'"):
        write_options({"bootstrap": "b:1", "compression": "brotli"})


def test_access_options_name_the_ca_and_user_else_the_process(tmp_path: Path) -> None:
    """Without access options the clients take their process's (``"process"``); a password file
    is read where the options are parsed (the driver), so executors need only the CA file."""
    assert write_options({"bootstrap": "b:1"}).access == ClusterAccess("process", "process")
    secret = tmp_path / "password"
    secret.write_text("s3cret\n")
    parsed = read_options(
        {"bootstrap": "b:1", "subscribe": "a", "tls.ca": "/ca.crt", "username": "reader", "passwordFile": str(secret)},
        streaming=False,
    ).access
    assert parsed == ClusterAccess(lanes.TlsFiles(Path("/ca.crt")), lanes.UserPassword("reader", "s3cret"))
    assert parsed.client_settings() == {"tls": parsed.tls, "credentials": parsed.credentials}
    assert "s3cret" not in repr(parsed)
    given = {"bootstrap": "b:1", "tls.ca": "/ca.crt", "tls.cert": "/c.crt", "tls.key": "/c.key"}
    assert write_options(given).access.tls == lanes.TlsFiles(Path("/ca.crt"), Path("/c.crt"), Path("/c.key"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tls.cert": "/c.crt"}, "tls.cert and tls.key go together"),
        ({"tls.cert": "/c.crt", "tls.key": "/c.key"}, "tls.cert needs tls.ca"),
        ({"password": "p"}, "a password needs the option username"),
        ({"username": "u"}, "needs passwordFile"),
        ({"username": "u", "password": "p", "passwordFile": "/f"}, "not both"),
        ({"username": "u", "passwordFile": "/nonexistent/password"}, "cannot be read"),
        ({"username": "a:b", "password": "p"}, "has no ':'"),
    ],
)
def test_access_options_refuse_what_cannot_work(options: dict[str, str], message: str) -> None:
    with pytest.raises(LanesOptionError, match=message):
        write_options({"bootstrap": "b:1", **options})


def test_checkpoint_offsets_round_trip_in_kafkas_layout() -> None:
    offsets = {("prices", 1): 7, ("prices", 0): 3, ("orders", 0): 0}
    assert to_checkpoint(offsets) == {"orders": {"0": 0}, "prices": {"0": 3, "1": 7}}
    assert from_checkpoint(to_checkpoint(offsets)) == offsets
