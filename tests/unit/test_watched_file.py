"""``lanes.rpc.watched_file``: a file read again when its stamp changes, and, when it cannot be
used, read again only once it changes (a caller that looks again for every hostile request, as a
bearer token's unknown key id makes the verifier do, costs a ``stat``, not a read and a log line)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from lanes.rpc.watched_file import WatchedFile


def test_a_file_that_cannot_be_used_is_read_again_only_once_it_changes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "keys.json"
    path.write_text('{"keys": 1}')
    reads: list[str] = []

    def parse(text: str) -> object:
        reads.append(text)
        return json.loads(text)

    watched = WatchedFile(path, parse, check_interval_s=3600)
    assert watched.current() == {"keys": 1}
    path.write_text('{"keys": ')  # caught half-written
    with caplog.at_level(logging.WARNING):
        for _ in range(100):
            watched.look_again()
            assert watched.current() == {"keys": 1}, "the last good content stays in use"
    assert len(reads) == 2, "the broken file was read once, not once per look"
    assert len([r for r in caplog.records if "cannot be used yet" in r.message]) == 1
    path.write_text('{"keys": 2}')
    watched.look_again()
    assert watched.current() == {"keys": 2}
    watched.look_again()
    assert watched.current() == {"keys": 2}
    assert len(reads) == 3, "an unchanged file is not read again"


def test_with_nothing_good_yet_the_error_is_raised_until_the_file_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "token"
    watched = WatchedFile(path, str.strip, check_interval_s=3600)
    with pytest.raises(FileNotFoundError):
        watched.current()
    watched.look_again()
    with pytest.raises(ValueError, match="could not be read"):
        watched.current()
    path.write_text("abc\n")
    watched.look_again()
    assert watched.current() == "abc"
