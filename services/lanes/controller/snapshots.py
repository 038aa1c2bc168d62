"""Snapshots of the metadata image, taken every ``snapshot_every_records`` applied records (Kafka's
``SnapshotGenerator``).

A snapshot is the image as it is when taken: its records are taken on the loop, the file is
written in a worker thread (the disk never stalls the quorum), then the log below the snapshot
before is dropped. Best effort: without a snapshot the log just keeps more. One is written at a
time.

Owned by the controller's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from lanes.controller.metadata_log import MetadataLog
from lanes.controller.quorum import Quorum
from lanes.errors import LanesError
from lanes.metadata.image import MetadataImage
from lanes.runtime.quotas.loop_time import service_task

_log = logging.getLogger(__name__)


class SnapshotScheduler:
    """Counts applied records and writes a snapshot when enough are; see the module docstring."""

    def __init__(
        self, log: MetadataLog, quorum: Quorum, image: Callable[[], MetadataImage], *, every_records: int
    ) -> None:
        self._log = log
        self._quorum = quorum
        self._image = image
        self.every_records = every_records
        self._records_since = 0
        self._writing: asyncio.Task[None] | None = None

    def applied(self, records: int) -> None:
        """``records`` more were applied to the image: snapshot when enough are."""
        self._records_since += records
        if self._records_since >= self.every_records and self._writing is None:
            self._records_since = 0
            self._writing = service_task(self._snapshot())

    def reset(self) -> None:
        """The image was replaced by an installed snapshot: count from it."""
        self._records_since = 0

    async def wait(self) -> None:
        """Until the snapshot under way (if any) is written."""
        if self._writing is not None:
            await self._writing

    async def _snapshot(self) -> None:
        image = self._image()
        records, end_offset = image.to_records(), image.last_offset + 1
        try:
            header = self._log.snapshot_header(end_offset, self._quorum.core.voters_at(end_offset))
            path = await asyncio.to_thread(self._log.write_snapshot, header, records)
            if self._log.start_offset < end_offset <= self._log.end_offset:
                self._log.adopt_snapshot(header, path, self._quorum.core.snapshots_in_transfer())
            else:  # the leader's snapshot replaced the log meanwhile
                path.unlink(missing_ok=True)
        except (OSError, LanesError) as exc:
            _log.warning("metadata snapshot at offset %d not written: %s", end_offset - 1, exc)
        finally:
            self._writing = None
