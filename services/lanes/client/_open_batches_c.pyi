"""Type stub of the C implementation; the contract is documented in ``_open_batches_py``."""

from collections.abc import Callable, Sequence
from typing import Any, Generic

from lanes.client._open_batches_py import BatchHooks, BatchT, FutureT, FutureType, Headers, RecordTuple

def murmur3_32(data: bytes, /) -> int: ...

class BatchFields:
    records: list[RecordTuple]
    size_bytes: int
    outcome: Any
    def __new__(cls, *args: object) -> BatchFields: ...

class FutureFields:
    _outcome: Any
    _topic: str
    _partition: int
    _index: int
    _timestamp: int
    def __init__(self, outcome: Any, topic: str, partition: int, index: int, timestamp: int, /) -> None: ...

class Lock:
    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool: ...
    def release(self) -> None: ...
    def locked(self) -> bool: ...
    def __enter__(self) -> bool: ...
    def __exit__(self, *exc: object) -> None: ...

class OpenBatches(Generic[BatchT, FutureT]):
    lock: Lock
    open: dict[tuple[str, int], BatchT]
    closed: bool
    batch_size: int
    buffer_limit: int
    buffered: int
    def __init__(
        self,
        batch_size: int,
        buffer_limit: int,
        keys_by_hash: bool,
        hooks: BatchHooks[BatchT],
        future_type: FutureType[FutureT],
        partition_counts: dict[str, int],
        now_ms: Callable[[], int] | None,
        /,
    ) -> None: ...
    def send_at_once(
        self,
        topic: str,
        value: object,
        key: object,
        partition: int | None,
        headers: object,
        timestamp: int | None,
        /,
    ) -> FutureT | None: ...
    def has_room(self, size: int, /) -> bool: ...
    def release(self, size: int, /) -> None: ...
    def append(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int | None,
        headers: Headers,
        timestamp: int,
        size_bytes: int,
        num_partitions: int,
        /,
    ) -> FutureT | None: ...
    def append_many(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        timestamp: int,
        num_partitions: int,
        start: int,
        /,
    ) -> list[FutureT]: ...
