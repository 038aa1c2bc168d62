"""Every partition log of a broker, under one data directory.

Layout: ``<data_dir>/<topic>-<partition>/`` per partition replica (see lanes.storage.log), with a
``partition.metadata`` file naming the topic's id (``topic_id: <id>``), so a directory left by a
deleted topic is never taken for a new topic of the same name. Every log's recovery point, log
start and high-water mark live in three files at the top (``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint``: ``DataDirectoryOffsets``),
written by ``maintenance`` when they changed, and at once after a truncation or DeleteRecords.
Topic names cannot contain ``/`` and the partition is the text after the last ``-``, so the name
is unambiguous.

The manager shares one ``FileCache`` between all logs, so a broker with 10,000 partitions holds
at most ``max_open_files`` descriptors, and opens logs lazily: opening reads a few bytes per
segment (no index is loaded into memory). One ``.clean-shutdown`` marker covers the whole data
directory: it is consumed when the manager starts and written by ``close`` after every log is
closed, so a clean restart of thousands of logs costs no per-log fsync. ``maintenance`` is what a
broker runs periodically: retention, flush.ms and checkpoints. Thread-safe.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from lanes.clock import Clock
from lanes.protocol.names import validate_topic_name
from lanes.storage.checkpoint import (
    HIGH_WATERMARK_FILE,
    LOG_START_FILE,
    RECOVERY_POINT_FILE,
    DataDirectoryOffsets,
)
from lanes.storage.files import DEFAULT_MAX_OPEN_FILES, FileCache, fsync_directory, read_small, write_atomically
from lanes.storage.loader import CLEAN_SHUTDOWN_FILE
from lanes.storage.log import LogConfig, PartitionLog
from lanes.topic_partition import TopicPartition

_log = logging.getLogger(__name__)

#: The file naming a partition directory's topic id.
PARTITION_METADATA_FILE = "partition.metadata"


def log_topic_id(directory: Path) -> str:
    """The topic id a partition directory records ("" when it records none)."""
    try:
        text = read_small(directory / PARTITION_METADATA_FILE).decode()
    except OSError:
        return ""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "topic_id":
            return value.strip()
    return ""


def log_directory_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>``."""
    return f"{topic}-{partition}"


def parse_log_directory_name(name: str) -> TopicPartition | None:
    """(topic, partition) of a partition directory name, or None if it is not one."""
    topic, _, partition = name.rpartition("-")
    if not topic or not partition.isdigit():
        return None
    return TopicPartition(topic, int(partition))


class LogManager:
    """Opens, tracks, maintains and closes the partition logs under ``data_dir``."""

    def __init__(
        self,
        data_dir: Path,
        *,
        clock: Clock,
        max_open_files: int = DEFAULT_MAX_OPEN_FILES,
        on_flush_s: Callable[[float], None] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self._on_flush_s = on_flush_s  # given to every log: the seconds of each fsync pass
        data_dir.mkdir(parents=True, exist_ok=True)
        self.files = FileCache(max_open_files)
        self._clock = clock
        self._lock = threading.Lock()
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._topic_ids: dict[TopicPartition, str] = {}  # what each open log's partition.metadata says
        #: every log's recovery point, log start and high-water mark, in three data-directory files
        self.offsets = DataDirectoryOffsets(data_dir)
        marker = data_dir / CLEAN_SHUTDOWN_FILE
        #: Whether the previous run closed every log cleanly (then no log needs recovery).
        self.clean_shutdown = marker.exists()
        if self.clean_shutdown:
            marker.unlink()
            fsync_directory(data_dir)
        #: After an unclean stop, the logs on disk not yet opened (so not yet recovered) in this
        #: run: while any is left, closing does not mark the data directory clean.
        self._unrecovered: set[str] = (
            set() if self.clean_shutdown else {log_directory_name(*key) for key in self.discover()}
        )

    def discover(self) -> list[TopicPartition]:
        """(topic, partition) of every partition directory on disk."""
        found = []
        for path in sorted(self.data_dir.iterdir()):
            parsed = parse_log_directory_name(path.name) if path.is_dir() else None
            if parsed is not None:
                found.append(parsed)
        return found

    def open_log(self, topic: str, partition: int, config: LogConfig, *, topic_id: str = "") -> PartitionLog:
        """The log of ``topic``-``partition``, opened (and recovered if needed) on first use.

        ``topic_id``: the topic's id, kept in the directory's ``partition.metadata`` (Kafka's
        KIP-516). A directory holding another id belongs to a deleted topic of the same name: it
        is deleted and the log starts empty. A directory without an id is adopted."""
        validate_topic_name(topic, allow_internal=True)
        key = TopicPartition(topic, partition)
        with self._lock:
            log = self._logs.get(key)
            directory = self.data_dir / log_directory_name(topic, partition)
            if log is not None and topic_id and self._topic_ids.get(key, "") not in ("", topic_id):
                del self._logs[key]
                log.delete()  # a new topic of the same name, created while this one was open
                log = None
            if log is None:
                stored = log_topic_id(directory)
                if topic_id and stored and stored != topic_id:
                    _log.warning(
                        "%s-%d: the directory belongs to topic id %s, not %s (a deleted topic of the same "
                        "name): deleting it",
                        topic,
                        partition,
                        stored,
                        topic_id,
                    )
                    shutil.rmtree(directory)
                    fsync_directory(self.data_dir)
                    stored = ""
                existed = directory.exists()
                if not existed:  # a new log: no offsets of an earlier one of that name
                    self.offsets.forget(directory)
                clean = self.clean_shutdown and existed
                log = PartitionLog.open(
                    directory, config, clock=self._clock, files=self.files, clean_shutdown=clean, offsets=self.offsets
                )
                log.on_flush_s = self._on_flush_s
                self._unrecovered.discard(directory.name)
                self._retire_partition_files(log)
                self._logs[key] = log
                self._topic_ids[key] = stored
            if topic_id and self._topic_ids[key] != topic_id:  # a new directory, or one adopted
                write_atomically(log.directory / PARTITION_METADATA_FILE, f"topic_id: {topic_id}\n".encode())
                self._topic_ids[key] = topic_id
            return log

    def _retire_partition_files(self, log: PartitionLog) -> None:
        """A log directory from before the data-directory files keeps its offsets in files of its
        own: once the data-directory files hold them, those go (stale, they would be read again if
        the data-directory files were ever lost)."""
        legacy = [log.directory / name for name in (RECOVERY_POINT_FILE, LOG_START_FILE, HIGH_WATERMARK_FILE)]
        assert log.names_at_open is not None  # (just opened: its listing not taken yet)
        if not log.names_at_open.isdisjoint(path.name for path in legacy):  # the open's listing, not 3 stats
            log.checkpoint()
            self.offsets.flush()
            for path in legacy:
                path.unlink(missing_ok=True)

    def get_for(self, topic: str, partition: int, topic_id: str) -> PartitionLog | None:
        """The open log of ``topic``-``partition`` if it belongs to topic id ``topic_id`` (or records
        none); None when ``open_log`` has work to do."""
        key = TopicPartition(topic, partition)
        with self._lock:
            log = self._logs.get(key)
            stored = self._topic_ids.get(key, "")
        return log if log is not None and (not topic_id or stored == topic_id) else None

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        """The open log of ``topic``-``partition``, if any."""
        with self._lock:
            return self._logs.get(TopicPartition(topic, partition))

    def logs(self) -> list[PartitionLog]:
        """Every open log."""
        with self._lock:
            return list(self._logs.values())

    def logs_by_partition(self) -> list[tuple[TopicPartition, PartitionLog]]:
        """Every open log with its (topic, partition), sorted."""
        with self._lock:
            return sorted(self._logs.items(), key=lambda item: item[0])

    def delete_log(self, topic: str, partition: int) -> None:
        """Delete a partition's log from disk (its topic was deleted or the replica moved), open
        or not (a topic deleted while the broker was down left a directory never opened since)."""
        with self._lock:
            log = self._logs.pop(TopicPartition(topic, partition), None)
            self._topic_ids.pop(TopicPartition(topic, partition), None)
            directory = self.data_dir / log_directory_name(topic, partition)
            self.offsets.forget(directory)
            self.offsets.flush()  # a crash must not leave its offsets for a later log of that name
            if log is not None:
                log.delete()
                return
            if directory.is_dir():
                shutil.rmtree(directory)
                fsync_directory(self.data_dir)

    def maintenance(self) -> None:
        """Retention, time-based flushes and checkpoints for every log (the data-directory files
        are written only when an offset changed: an idle broker writes nothing)."""
        for log in self.logs():
            log.apply_retention()
            log.maybe_flush_by_time()
            log.checkpoint()
        self.offsets.flush()

    def close(self) -> None:
        """Close every log cleanly; the next start skips recovery unless a log on disk was not
        opened since an unclean stop (it was never recovered)."""
        with self._lock:
            logs = list(self._logs.values())
            self._logs.clear()
            self._topic_ids.clear()
        for log in logs:
            log.close()
        self.offsets.flush()
        self.files.close()
        unrecovered = [name for name in self._unrecovered if (self.data_dir / name).exists()]
        if unrecovered:  # (a stop before every log was opened after a crash: recovered next time)
            _log.info("%d logs were not opened since an unclean stop: the next start recovers them", len(unrecovered))
            return
        (self.data_dir / CLEAN_SHUTDOWN_FILE).touch()
        fsync_directory(self.data_dir)
