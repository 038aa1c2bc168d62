"""The producer's open batches (``OpenBatches``, contract in ``_open_batches_py``) the fields
of a record's future (``FutureFields``) and of a batch (``BatchFields``): the C
implementation (``_open_batches_c``) when it is built, else the pure-Python reference. Both are
tested against each other (tests/unit/test_open_batches.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lanes.client._open_batches_py import APPEND_MANY_RECORDS, RECORD_OVERHEAD_BYTES

if TYPE_CHECKING:
    from lanes.client._open_batches_py import BatchFields, FutureFields, OpenBatches
else:
    try:
        from lanes.client._open_batches_c import BatchFields, FutureFields, OpenBatches
    except ImportError:  # pragma: no cover - exercised only where the extension cannot be built
        from lanes.client._open_batches_py import BatchFields, FutureFields, OpenBatches

__all__ = ["APPEND_MANY_RECORDS", "RECORD_OVERHEAD_BYTES", "BatchFields", "FutureFields", "OpenBatches"]
