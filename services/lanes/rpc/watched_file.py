"""A file whose parsed content is kept, and read again when the file is replaced: a renewed
bearer token, an issuer's rotated key set. The file's stamp (inode, size, modification time) is
looked at most once per ``check_interval_s``, so asking costs a clock reading most of the time.
A file that cannot be read or parsed (caught half-written) leaves the last good content in use,
and is read again only once its stamp changes (warned of once); with no good content yet, the
error is raised (the first time as it was, then as a ValueError naming it). Safe to share
between threads."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")
_log = logging.getLogger(__name__)


class WatchedFile(Generic[T]):
    """``parse(text)`` of ``path``, current within ``check_interval_s``."""

    def __init__(self, path: Path, parse: Callable[[str], T], check_interval_s: float = 1.0) -> None:
        self.path = path
        self._parse = parse
        self._interval_s = check_interval_s
        self._lock = threading.Lock()
        self._stamp: tuple[int, ...] | None = None
        #: the stamp of a file that could not be used, and why: read again only once it changes
        self._failed: tuple[tuple[int, ...], Exception] | None = None
        self._checked_s = float("-inf")
        self._value: T | None = None

    def current(self) -> T:
        """The parsed content; OSError when the file cannot be read, or what ``parse`` raises."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked_s >= self._interval_s:
                self._checked_s = now
                self._look()
            if self._value is None:
                raise ValueError(f"{self.path} could not be read: {self._failed[1] if self._failed else ''}")
            return self._value

    def _look(self) -> None:
        """Read and parse the file if its stamp changed since it was last read or failed; a
        failure is raised while nothing good was read, else logged once per stamp."""
        stamp: tuple[int, ...] = ()  # a file that cannot even be stat'ed
        try:
            stat = self.path.stat()
            stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
            if stamp == self._stamp or (self._failed is not None and stamp == self._failed[0]):
                return
            value = self._parse(self.path.read_text())
        except Exception as exc:
            if self._failed is None or self._failed[0] != stamp:
                if self._value is not None:
                    _log.warning("%s changed but cannot be used yet (%s): keeping what it held", self.path, exc)
                self._failed = (stamp, exc)
                if self._value is None:
                    raise
            return
        self._value, self._stamp, self._failed = value, stamp, None

    def look_again(self) -> None:
        """Look at the file's stamp at the next ``current`` (a caller that knows or suspects it changed)."""
        with self._lock:
            self._checked_s = float("-inf")
