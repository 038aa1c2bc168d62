"""A file whose parsed content is kept, and read again when the file is replaced: a renewed
bearer token, an issuer's rotated key set. The file's stamp (inode, size, modification time) is
looked at most once per ``check_interval_s``, so asking costs a clock reading most of the time.
A file that cannot be read or parsed (caught half-written) leaves the last good content in use,
and is tried again at the next interval; with no good content yet, the error is raised. Safe to
share between threads."""

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
        self._stamp: tuple[int, int, int] | None = None
        self._checked_s = float("-inf")
        self._value: T | None = None

    def current(self) -> T:
        """The parsed content; OSError when the file cannot be read, or what ``parse`` raises."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked_s >= self._interval_s:
                self._checked_s = now
                try:
                    stat = self.path.stat()
                    stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
                    if stamp != self._stamp:
                        self._value = self._parse(self.path.read_text())
                        self._stamp = stamp
                except Exception as exc:
                    if self._value is None:
                        raise
                    _log.warning("%s changed but cannot be used yet (%s): keeping what it held", self.path, exc)
            if self._value is None:
                raise ValueError(f"{self.path} could not be read")
            return self._value

    def look_again(self) -> None:
        """Look at the file's stamp at the next ``current`` (tests; a caller that knows it changed)."""
        with self._lock:
            self._checked_s = float("-inf")
