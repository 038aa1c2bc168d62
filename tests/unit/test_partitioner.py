"""Partitioner: the documented keyed formula, stability across processes, sticky keyless."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lanes.errors import LanesError
from lanes.protocol.partitioner import Partitioner, StickyPartitioner, partition_for_key


def test_foo_and_bar_go_where_the_documented_formula_says() -> None:
    # murmur3_32("foo", seed=0) = 0xf6a5c420; & 0x7fffffff = 0x76a5c420 = 1990575136; % 3 = 1
    # murmur3_32("bar", seed=0) = 0x450e998d;                                = 1158584717; % 3 = 2
    assert 0x76A5C420 % 3 == 1
    assert 0x450E998D % 3 == 2
    assert partition_for_key(b"foo", 3) == 1
    assert partition_for_key(b"bar", 3) == 2


KEYS = [f"key-{i}".encode() for i in range(200)] + [b"", b"\x00", "ünïcode".encode()]
_CHILD = """
import json, sys
from lanes.protocol.partitioner import partition_for_key
keys = [bytes.fromhex(k) for k in json.load(sys.stdin)]
print(json.dumps([partition_for_key(k, 7) for k in keys]))
"""


@pytest.mark.parametrize("hash_seed", ["0", "12345"])
def test_the_same_key_maps_to_the_same_partition_in_other_processes(hash_seed: str) -> None:
    expected = [partition_for_key(k, 7) for k in KEYS]
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps([k.hex() for k in KEYS]),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": hash_seed, "PATH": ""},
    )
    assert json.loads(child.stdout) == expected


@given(key=st.binary(max_size=64), partitions=st.integers(1, 10_000))
def test_keyed_partition_is_in_range_and_deterministic(key: bytes, partitions: int) -> None:
    chosen = partition_for_key(key, partitions)
    assert 0 <= chosen < partitions
    assert chosen == partition_for_key(key, partitions)


@given(seed=st.integers(0, 2**32), partitions=st.integers(1, 50))
def test_keyless_records_stick_to_a_partition_per_batch_and_cover_all_partitions(seed: int, partitions: int) -> None:
    sticky = StickyPartitioner(random.Random(seed))
    seen = []
    for _ in range(partitions):
        batch_partition = sticky.partition("t", partitions)
        assert all(sticky.partition("t", partitions) == batch_partition for _ in range(10))
        seen.append(batch_partition)
        sticky.batch_completed("t", (batch_partition + 1) % partitions, partitions)  # another partition's batch
        assert sticky.partition("t", partitions) == batch_partition, "only its own batch moves it on"
        sticky.batch_completed("t", batch_partition, partitions)
    assert sorted(seen) == list(range(partitions)), "one full round visits every partition once"


def test_keyless_partition_follows_a_shrunk_view_of_partitions() -> None:
    sticky = StickyPartitioner(random.Random(1))
    for _ in range(5):
        sticky.batch_completed("t", sticky.partition("t", 10), 10)
    assert 0 <= sticky.partition("t", 2) < 2


def test_precedence_explicit_then_user_then_key_then_sticky() -> None:
    def user(topic: str, key: bytes | None, partitions: int) -> int:
        return partitions - 1

    plain = Partitioner(random.Random(0))
    custom = Partitioner(random.Random(0), user_partitioner=user)
    assert plain.partition("t", b"foo", 3, explicit_partition=0) == 0
    assert custom.partition("t", b"foo", 3, explicit_partition=0) == 0
    assert custom.partition("t", b"foo", 3) == 2
    assert plain.partition("t", b"foo", 3) == 1
    keyless = plain.partition("t", None, 3)
    assert keyless == plain.partition("t", None, 3)


@pytest.mark.parametrize("bad", [3, -1, True, "1", None])
def test_out_of_range_choices_are_refused_with_the_valid_range(bad: object) -> None:
    partitioner = Partitioner(random.Random(0), user_partitioner=lambda t, k, n: bad)  # type: ignore[arg-type,return-value]
    with pytest.raises(LanesError, match=r"partitions 0\.\.2"):
        partitioner.partition("t", b"k", 3)
