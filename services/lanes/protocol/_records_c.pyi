"""Type stub of the C fast path; the contract is documented in ``_records_py``."""

from collections.abc import Sequence
from typing import Any

def encode_records(records: Sequence[Any], base_offset: int, base_timestamp: int, /) -> tuple[bytes, int, int]: ...
def decode_records(
    section: bytes | memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    record_type: type,
    trailer: tuple[Any, ...] = (),
    /,
) -> list[Any]: ...
def check_records(section: bytes | memoryview, count: int, base_timestamp: int, require_keys: bool, /) -> None: ...
