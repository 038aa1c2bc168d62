"""The producer's open batches: the C implementation (``_open_batches_c``) and the pure-Python
reference (``_open_batches_py``) hold the same state after the same random sends (partitions by
key hash and by the hooks, batches opened and filled, the buffer full, records refused with a
TypeError, a closed producer), and the C hash is mmh3's."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import mmh3
import pytest

from lanes.client import _open_batches_py
from lanes.errors import LanesError

_open_batches_c = pytest.importorskip("lanes.client._open_batches_c")
IMPLEMENTATIONS = [_open_batches_py.OpenBatches, _open_batches_c.OpenBatches]


def batch_type(module: Any) -> Any:
    class Batch(module.BatchFields):  # type: ignore[misc,name-defined]
        __slots__ = ("partition", "topic")

        def __init__(self, topic: str, partition: int) -> None:
            self.topic, self.partition = topic, partition
            self.outcome = object()

    return Batch


Batch = Any
BATCH_TYPES = {
    _open_batches_py.OpenBatches: batch_type(_open_batches_py),
    _open_batches_c.OpenBatches: batch_type(_open_batches_c),
}


class Hooks:
    """Records every call; keyless records go round robin, as a partitioner could."""

    def __init__(self, batch: Any) -> None:
        self.batch = batch
        self.calls: list[tuple[Any, ...]] = []
        self.core: Any = None
        self.closed: list[Batch] = []
        self._next = 0

    def choose_partition(self, topic: str, key: bytes | None, num_partitions: int, partition: int | None) -> int:
        self.calls.append(("choose", topic, key, num_partitions, partition))
        if partition is not None:
            if not 0 <= partition < num_partitions:
                raise LanesError(f"no partition {partition}")
            return partition
        self._next = (self._next + 1) % num_partitions
        return self._next

    def new_batch(self, topic: str, partition: int) -> Batch:
        self.calls.append(("new", topic, partition))
        return self.batch(topic, partition)

    def batch_full(self, batch: Batch) -> None:
        self.calls.append(("full", batch.topic, batch.partition, len(batch.records)))
        del self.core.open[(batch.topic, batch.partition)]
        self.closed.append(batch)


def future(outcome: object, topic: str, partition: int, index: int, timestamp: int) -> tuple[Any, ...]:
    return (outcome, topic, partition, index, timestamp)


COUNTS = {"t": 3, "u": 3}
NOW_MS = 1_700_000_000_000


def make(
    implementation: Any, *, keys_by_hash: bool = True, batch_size: int = 400, buffer: int = 5000, now: Any = None
) -> Any:
    hooks = Hooks(BATCH_TYPES[implementation])
    clock = now if now is not None else (lambda: NOW_MS)
    core = implementation(batch_size, buffer, keys_by_hash, hooks, future, COUNTS, None if now == "system" else clock)
    hooks.core = core
    return core, hooks


def state(core: Any, hooks: Hooks, results: list[Any]) -> Any:
    def batch(b: Any) -> Any:
        return (b.topic, b.partition, b.records, b.size_bytes)

    def plain(result: Any) -> Any:  # outcomes are per-run objects: their batch instead
        if isinstance(result, tuple) and len(result) == 5:
            return result[1:]
        return result

    return (
        sorted((key, batch(b)) for key, b in core.open.items()),
        [batch(b) for b in hooks.closed],
        hooks.calls,
        core.buffered,
        [plain(r) if not isinstance(r, list) else [plain(x) for x in r] for r in results],
    )


def run(implementation: Any, seed: int, *, keys_by_hash: bool) -> Any:
    rng = random.Random(seed)
    core, hooks = make(implementation, keys_by_hash=keys_by_hash)
    keys = [None, b"", b"a", b"ticker-1", b"ticker-22", bytes(range(7))]
    results: list[Any] = []
    for step in range(300):
        choice = rng.random()
        topic = rng.choice(["t", "u"])
        key = rng.choice(keys)
        value = rng.choice([None, b"", b"v" * rng.randrange(1, 120)])
        partition = rng.choice([None, None, None, 0, 2, 9])
        size = len(value or b"") + len(key or b"") + 20
        try:
            if choice < 0.3:
                results.append(core.append(topic, value, key, partition, (), step, size, 3))
            elif choice < 0.6:
                headers = rng.choice([None, None, None, {"h": b"v"}])
                stamp = rng.choice([None, None, None, 5])
                odd = rng.choice([value, value, value, "text"])
                results.append(core.send_at_once(rng.choice([topic, "unknown"]), odd, key, partition, headers, stamp))
            elif choice < 0.8:
                values: list[Any] = [rng.choice([b"x" * 30, None, b"y"]) for _ in range(rng.randrange(0, 30))]
                batch_keys: list[Any] | None = [rng.choice(keys) for _ in values] if rng.random() < 0.5 else None
                if values and rng.random() < 0.1:
                    values[rng.randrange(len(values))] = "not bytes"
                results.append(core.append_many(topic, values, batch_keys, partition, step, 3, 0))
            elif choice < 0.95:
                with core.lock:
                    core.release(min(core.buffered, rng.randrange(0, 800)))
                results.append(("released", core.buffered))
            else:
                with core.lock:
                    core.closed = not core.closed
                results.append(("closed", core.closed))
        except (LanesError, TypeError) as exc:
            results.append((type(exc).__name__, str(exc)))
    return state(core, hooks, results)


@pytest.mark.parametrize("keys_by_hash", [True, False])
def test_the_c_and_python_cores_agree_over_random_sends(keys_by_hash: bool) -> None:
    for seed in range(60):
        python = run(_open_batches_py.OpenBatches, seed, keys_by_hash=keys_by_hash)
        c = run(_open_batches_c.OpenBatches, seed, keys_by_hash=keys_by_hash)
        assert c == python, f"seed {seed}"


def test_the_c_hash_is_mmh3s_murmur3_32() -> None:
    rng = random.Random(7)
    for length in range(64):
        data = rng.randbytes(length)
        assert _open_batches_c.murmur3_32(data) == mmh3.hash(data, 0, False)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_send_at_once_is_stamped_by_the_injected_clock_or_the_systems(implementation: Any) -> None:
    core, _ = make(implementation)
    assert core.send_at_once("t", b"v", None, 1, None, None)[4] == NOW_MS
    core, _ = make(implementation, now="system")
    before = time.time_ns() // 1_000_000
    stamped = core.send_at_once("t", b"v", None, 1, None, None)[4]
    assert before <= stamped <= time.time_ns() // 1_000_000
    core.closed = True
    assert core.send_at_once("t", b"v", None, 1, None, None) is None, "the long way raises the closed error"


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_keyed_records_go_to_their_hash_partition_without_a_hook(implementation: Any) -> None:
    core, hooks = make(implementation)
    future_fields = core.append("t", b"v", b"ticker-5", None, (), 1, 30, 6)
    assert future_fields[2] == (mmh3.hash(b"ticker-5", 0, False) & 0x7FFFFFFF) % 6
    assert [call[0] for call in hooks.calls] == ["new"]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_full_buffer_refuses_and_a_record_larger_than_it_fits_an_empty_one(implementation: Any) -> None:
    core, _ = make(implementation, buffer=100, batch_size=10_000)
    assert core.append("t", b"x" * 500, None, 0, (), 1, 520, 1) is not None, "an empty buffer takes anything"
    assert core.append("t", b"x", None, 0, (), 1, 21, 1) is None
    assert core.append_many("t", [b"x"], None, 0, 1, 1, 0) == []
    with core.lock:
        core.release(520)
    assert len(core.append_many("t", [b"x"] * 10, None, 0, 1, 1, 0)) == 4, "100 bytes hold four 21-byte records"


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_bad_record_in_a_batch_raises_after_the_ones_before_it_went_in(implementation: Any) -> None:
    core, _ = make(implementation)
    with pytest.raises(TypeError, match="record 2: values and keys are bytes or None"):
        core.append_many("t", [b"a", b"b", "c", b"d"], None, 0, 1, 1, 0)
    assert [record[3] for record in core.open[("t", 0)].records] == [b"a", b"b"]
    with pytest.raises(TypeError, match="record 1"):
        core.append_many("t", [b"a", b"b"], [b"k", bytearray(b"k")], 0, 1, 1, 0)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_closed_core_refuses_and_at_most_500_records_go_in_per_call(implementation: Any) -> None:
    core, _ = make(implementation, buffer=10**9, batch_size=10**9)
    assert len(core.append_many("t", [b"v"] * 1200, None, 0, 1, 1, 0)) == 500
    assert len(core.append_many("t", [b"v"] * 1200, None, 0, 1, 1, 1000)) == 200
    core.closed = True
    with pytest.raises(LanesError, match="the producer is closed"):
        core.append("t", b"v", None, 0, (), 1, 21, 1)
    with pytest.raises(LanesError, match="the producer is closed"):
        core.append_many("t", [b"v"], None, 0, 1, 1, 0)


def test_the_c_lock_is_a_lock_for_threading_condition() -> None:
    core, _ = make(_open_batches_c.OpenBatches)
    lock = core.lock
    assert lock.acquire()
    assert lock.locked()
    assert not lock.acquire(False), "not reentrant"
    assert not lock.acquire(timeout=0.01)
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()
    condition = threading.Condition(lock)
    woken = threading.Event()

    def waiter() -> None:
        with condition:
            condition.wait_for(lambda: core.buffered == 0, 10)
            woken.set()

    core.append("t", b"v", None, 0, (), 1, 21, 1)
    thread = threading.Thread(target=waiter)
    thread.start()
    with condition:
        core.release(21)
        condition.notify_all()
    thread.join(10)
    assert woken.is_set()
