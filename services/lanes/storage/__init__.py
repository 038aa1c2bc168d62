"""The log engine: segmented, indexed, crash-safe partition logs with retention and compaction.

Public interface:

- ``PartitionLog.open(directory, LogConfig, clock=..., files=FileCache)``: open one partition
  replica's log (``loader.LogLoader`` finishes an interrupted compaction and recovers after an
  unclean stop); ``append_as_leader`` / ``append_as_follower``, ``read``,
  ``offset_for_timestamp``, ``truncate_to``, ``truncate_fully_and_start_at``,
  ``delete_records_before``, ``apply_retention``, ``flush``, ``checkpoint``, ``close``,
  ``delete``; bounds ``log_start_offset``, ``log_end_offset``, ``recovery_point``,
  ``size_bytes``; the leader-epoch cache ``epochs``.
- ``LogCleaner`` / ``CleanerThread``: compaction.
- ``LogManager``: every partition log of a broker under one data directory, with one bounded
  ``FileCache`` and the periodic maintenance (retention, flush.ms, checkpoints).

Layout and invariants are documented in ``log``, ``segment``, ``index`` and ``cleaner``.
"""

from lanes.storage.cleaner import CleanerThread, CleanResult, LogCleaner
from lanes.storage.files import FileCache
from lanes.storage.log import AppendInfo, LogConfig, PartitionLog, ReadResult, TimestampOffset

__all__ = [
    "AppendInfo",
    "CleanResult",
    "CleanerThread",
    "FileCache",
    "LogCleaner",
    "LogConfig",
    "PartitionLog",
    "ReadResult",
    "TimestampOffset",
]
