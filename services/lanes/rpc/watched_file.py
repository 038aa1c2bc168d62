"""A file whose parsed content is kept, and read again when the file is replaced: a renewed
bearer token, an issuer's rotated key set. The file's stamp (inode, size, modification time) is
looked at most once per ``check_interval_s``, so asking costs a clock reading most of the time.
Safe to share between threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


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
            if self._value is None or now - self._checked_s >= self._interval_s:
                stat = self.path.stat()
                stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
                if stamp != self._stamp or self._value is None:
                    self._value = self._parse(self.path.read_text())
                    self._stamp = stamp
                self._checked_s = now
            return self._value

    def look_again(self) -> None:
        """Look at the file's stamp at the next ``current`` (tests; a caller that knows it changed)."""
        with self._lock:
            self._checked_s = float("-inf")
