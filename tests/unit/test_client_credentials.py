"""What a client says it is (``lanes.rpc.credentials``): a user and password, or a bearer token
given as text or as a file read again when renewed; by default, the environment's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lanes.rpc.credentials import BearerToken, UserPassword, client_credentials


def test_a_password_never_shows() -> None:
    """It is never sent either: a channel proves it by SCRAM (tests/unit/test_session_channel.py)."""
    user = UserPassword("alice", "s3cret")
    assert not hasattr(user, "metadata")
    assert "s3cret" not in repr(user)
    with pytest.raises(ValueError, match="no ':'"):
        UserPassword("a:b", "x")


def test_a_token_file_is_read_again_once_renewed(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first.token.value\n")
    token = BearerToken(file=token_file)
    assert token.metadata() == (("authorization", "Bearer first.token.value"),)
    renewed = tmp_path / "token.new"
    renewed.write_text("second.token.value")
    renewed.replace(token_file)
    token.look_again()  # as if a second went by (the file is looked at once a second)
    assert token.metadata() == (("authorization", "Bearer second.token.value"),)
    assert "value" not in repr(token)
    assert "value" not in repr(BearerToken("in.line.value"))


def test_tokens_must_be_one_word_and_files_readable(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one word"):
        BearerToken("two words")
    with pytest.raises(ValueError, match="a token, or the file"):
        BearerToken("a.b.c", file=tmp_path / "token")
    with pytest.raises(FileNotFoundError):
        BearerToken(file=tmp_path / "missing")


def test_the_process_credentials_are_a_password_else_a_token_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LANES_USERNAME", "LANES_PASSWORD", "LANES_PASSWORD_FILE", "LANES_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    assert client_credentials("process") is None
    token_file = tmp_path / "token"
    token_file.write_text("the.token")
    monkeypatch.setenv("LANES_TOKEN_FILE", str(token_file))
    found = client_credentials("process")
    assert isinstance(found, BearerToken)
    assert found.metadata() == (("authorization", "Bearer the.token"),)
    monkeypatch.setenv("LANES_USERNAME", "alice")
    monkeypatch.setenv("LANES_PASSWORD", "pw")
    assert client_credentials("process") == UserPassword("alice", "pw")
    assert client_credentials(None) is None
    assert os.environ["LANES_USERNAME"] == "alice"
