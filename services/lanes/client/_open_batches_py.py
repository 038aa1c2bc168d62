"""The producer's hot half, pure-Python reference: what every ``send`` touches.

``OpenBatches`` holds the open batch of each partition (``open``, keyed by ``(topic, partition)``),
the bytes the buffer holds (``buffered``), whether the producer is closed, and ``lock``, which
guards them and the accumulator's queues. ``append`` and ``append_many`` add records to open
batches; what happens once per batch (opening one, closing a full one) and the partition of a
record not placed by its key's hash are the accumulator's (``BatchHooks``), called with ``lock``
held.

``lanes.client._open_batches_c`` implements the same contract in C (one call per record, or per
run of records, with no Python code run for a record but the hooks); ``lanes.client._open_batches``
picks it when it is built, and the unit tests check the two against each other.

Invariants (both implementations): ``buffered`` is the sum of ``size_bytes`` of every record
appended and not yet ``release``d; a batch's ``records`` are ``(index, timestamp, key, value,
headers)`` tuples with index = their position; a record goes to the partition
``(murmur3_32(key) & 0x7fffffff) % num_partitions`` when it has a key, no explicit partition and
``keys_by_hash`` (no user partitioner), else to ``hooks.choose_partition``'s answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, Self, TypeVar

from mmh3 import hash as _murmur3

from lanes.errors import ErrorCode, LanesError

Headers = tuple[tuple[str, bytes | None], ...]
#: varints and attributes of one encoded record, roughly (a record's size in the buffer is this
#: plus its key, value and headers)
RECORD_OVERHEAD_BYTES = 20
#: records ``append_many`` adds under one hold of the lock: the sender waits for it meanwhile
APPEND_MANY_RECORDS = 500


RecordTuple = tuple[int, int, bytes | None, bytes | None, Headers]


class BatchFields:
    """What a send touches of a batch (``_accumulator.Batch``'s base; the C implementation reads
    and writes them without a Python call): its records, their bytes, their shared outcome.
    Created empty, whatever the subclass's constructor takes."""

    __slots__ = ("outcome", "records", "size_bytes")

    records: list[RecordTuple]
    size_bytes: int
    outcome: Any

    def __new__(cls, *_args: object) -> Self:
        fields = super().__new__(cls)
        fields.records = []
        fields.size_bytes = 0
        fields.outcome = None
        return fields


BatchT = TypeVar("BatchT", bound=BatchFields)
FutureT = TypeVar("FutureT")
FutureT_co = TypeVar("FutureT_co", covariant=True)


class BatchHooks(Protocol[BatchT]):
    """The accumulator's once-per-batch work; each is called with ``lock`` held."""

    def choose_partition(self, topic: str, key: bytes | None, num_partitions: int, partition: int | None) -> int:
        """The partition of a record the key's hash does not place (raises for a bad one)."""

    def new_batch(self, topic: str, partition: int) -> BatchT:
        """An empty batch for the partition (the core puts it in ``open``)."""

    def batch_full(self, batch: BatchT) -> None:
        """``batch`` reached ``batch_size``: queue it (and take it out of ``open``)."""


class FutureFields:
    """The fields of a record's future (``RecordFuture``'s base; the C implementation fills them
    without a Python call)."""

    __slots__ = ("_index", "_outcome", "_partition", "_timestamp", "_topic")

    def __init__(self, outcome: Any, topic: str, partition: int, index: int, timestamp: int) -> None:
        self._outcome = outcome
        self._topic = topic
        self._partition = partition
        self._index = index
        self._timestamp = timestamp


class FutureType(Protocol[FutureT_co]):
    def __call__(self, outcome: Any, topic: str, partition: int, index: int, timestamp: int, /) -> FutureT_co: ...


class OpenBatches(Generic[BatchT, FutureT]):
    """Open batches, buffered bytes, the closed flag and the lock (see the module docstring)."""

    def __init__(  # noqa: PLR0917 - as the C type's constructor, which takes positional arguments
        self,
        batch_size: int,
        buffer_limit: int,
        keys_by_hash: bool,
        hooks: BatchHooks[BatchT],
        future_type: FutureType[FutureT],
        partition_counts: dict[str, int],
        now_ms: Callable[[], int] | None,
    ) -> None:
        """``partition_counts``: the producer's metadata, topic -> partition count (read, never
        written here); ``now_ms``: the records' clock (None: the system's)."""
        self.lock = threading.Lock()
        self.open: dict[tuple[str, int], BatchT] = {}
        self.closed = False
        self.batch_size = batch_size
        self.buffer_limit = buffer_limit
        self._buffered = 0
        self._keys_by_hash = keys_by_hash
        self._hooks = hooks
        self._future = future_type
        self._partition_counts: Mapping[str, int] = partition_counts
        self._now_ms = now_ms

    @property
    def buffered(self) -> int:
        """Bytes of records appended and not yet released."""
        return self._buffered

    def has_room(self, size: int) -> bool:
        """Whether ``size`` more bytes fit the buffer (a record larger than it fits an empty one);
        the caller holds the lock."""
        return self._buffered + size <= self.buffer_limit or self._buffered == 0

    def release(self, size: int) -> None:
        """``size`` bytes were written or failed; the caller holds the lock."""
        self._buffered -= size

    def send_at_once(  # noqa: PLR0917 - the hot path of every send: positional arguments cost least
        self,
        topic: str,
        value: object,
        key: object,
        partition: int | None,
        headers: object,
        timestamp: int | None,
    ) -> FutureT | None:
        """``send``'s common record (a bytes value, a bytes key or none, no headers, no timestamp,
        its topic's partition count known, room in the buffer, the producer open) in one call:
        its future. None sends it the long way (the caller's checks, a metadata lookup, waiting
        for room, the closed producer's error), before any partition was chosen. An error
        choosing the partition (a bad explicit one) raises."""
        if headers is not None or timestamp is not None or type(value) is not bytes:
            return None
        if key is not None and type(key) is not bytes:
            return None
        count = self._partition_counts.get(topic)
        if count is None:
            return None
        size = len(value) + (len(key) if key is not None else 0) + RECORD_OVERHEAD_BYTES
        stamp = self._now_ms() if self._now_ms is not None else time.time_ns() // 1_000_000
        with self.lock:
            placed = None if self.closed else self._add_locked(topic, value, key, partition, (), stamp, size, count)
        return None if placed is None else self._future(*placed)

    def append(  # noqa: PLR0917 - the hot path of every send: positional arguments cost least
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int | None,
        headers: Headers,
        timestamp: int,
        size_bytes: int,
        num_partitions: int,
    ) -> FutureT | None:
        """Add one record to its partition's open batch: its future; None when the buffer has no
        room for it. Raises LanesError once the producer is closed."""
        with self.lock:
            if self.closed:
                raise LanesError("the producer is closed", ErrorCode.INVALID_REQUEST)
            placed = self._add_locked(topic, value, key, partition, headers, timestamp, size_bytes, num_partitions)
        return None if placed is None else self._future(*placed)

    def append_many(  # noqa: PLR0917 - the batch path of send_batch: positional arguments cost least
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        timestamp: int,
        num_partitions: int,
        start: int,
    ) -> list[FutureT]:
        """``append`` for records ``start``.. of ``values`` (with ``keys``, one per value; None:
        keyless), at most ``APPEND_MANY_RECORDS`` under one hold of the lock: their futures; fewer
        when the buffer is full (the caller waits for room and goes on from there). A value or key
        that is not bytes (or None) is a TypeError; the records before it are in."""
        placed: list[tuple[Any, str, int, int, int]] = []
        with self.lock:
            if self.closed:
                raise LanesError("the producer is closed", ErrorCode.INVALID_REQUEST)
            for position in range(start, min(len(values), start + APPEND_MANY_RECORDS)):
                value = values[position]
                key = keys[position] if keys is not None else None
                if (value is not None and type(value) is not bytes) or (key is not None and type(key) is not bytes):
                    raise TypeError(f"record {position}: values and keys are bytes or None; encode them first")
                size = (len(value) if value else 0) + (len(key) if key else 0) + RECORD_OVERHEAD_BYTES
                one = self._add_locked(topic, value, key, partition, (), timestamp, size, num_partitions)
                if one is None:
                    break
                placed.append(one)
        return [self._future(*one) for one in placed]

    def _add_locked(  # noqa: PLR0917 - called once per record: positional arguments cost least
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int | None,
        headers: Headers,
        timestamp: int,
        size_bytes: int,
        num_partitions: int,
    ) -> tuple[Any, str, int, int, int] | None:
        """Pick the record's partition and add it to that partition's open batch (the batch is
        handed to ``batch_full`` once full): its future's fields; None when the buffer has no
        room. The caller holds the lock."""
        if not (self._buffered + size_bytes <= self.buffer_limit or self._buffered == 0):
            return None
        if key is not None and partition is None and self._keys_by_hash and num_partitions > 0:
            chosen = (_murmur3(key, 0, False) & 0x7FFFFFFF) % num_partitions  # = partition_for_key
        else:
            chosen = self._hooks.choose_partition(topic, key, num_partitions, partition)
        batch = self.open.get((topic, chosen))
        if batch is None:
            batch = self.open[(topic, chosen)] = self._hooks.new_batch(topic, chosen)
        self._buffered += size_bytes
        records = batch.records
        index = len(records)
        records.append((index, timestamp, key, value, headers))
        batch.size_bytes += size_bytes
        if batch.size_bytes >= self.batch_size:
            self._hooks.batch_full(batch)
        return (batch.outcome, topic, chosen, index, timestamp)
