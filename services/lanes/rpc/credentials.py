"""Who a client says it is: a username and password, or an OAuth bearer token.

Clients (``Producer``, ``Consumer``, ``Admin``) take ``credentials=``; by default they use the
environment's (``LANES_USERNAME`` with ``LANES_PASSWORD_FILE`` or ``LANES_PASSWORD``, else
``LANES_TOKEN_FILE``), so Spark executors and the operator pick a user up from their pods'
Secrets. Both travel over TLS only (a plaintext channel refuses them).

- A password is never sent: the client proves it by SCRAM to each process it calls and carries
  the session that process opens (``lanes.rpc.sessions``; the cluster keeps SCRAM credentials,
  ``lanes users create``).
- A token (``BearerToken``: a JWT an OpenID Connect issuer signed, checked by
  ``lanes.runtime.access.tokens``) is given as text or as a file, read again when it changes
  (tokens expire and are renewed by whatever writes the file: a sidecar, a projected volume), and
  sent as each call's ``authorization`` metadata (``lanes.rpc.call_metadata``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Union

import grpc

from lanes.rpc.sessions import blocking_call_credentials
from lanes.rpc.tls import process_tls
from lanes.rpc.watched_file import WatchedFile

#: The metadata key credentials travel in.
AUTHORIZATION_KEY = "authorization"


@dataclass(frozen=True)
class UserPassword:
    """A user's name and password (the password is left out of ``repr``)."""

    username: str
    password: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.username or ":" in self.username:
            raise ValueError("a username is not empty and has no ':'")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> UserPassword | None:
        """``LANES_USERNAME`` with ``LANES_PASSWORD_FILE`` (a file holding the password, as a
        mounted Secret) or ``LANES_PASSWORD``; None when ``LANES_USERNAME`` is unset."""
        name = environ.get("LANES_USERNAME")
        if not name:
            return None
        password_file = environ.get("LANES_PASSWORD_FILE")
        password = Path(password_file).read_text().strip() if password_file else environ.get("LANES_PASSWORD", "")
        return cls(name, password)

    def call_credentials(self, channel_credentials: grpc.ChannelCredentials | None = None) -> grpc.CallCredentials:
        """Call credentials for a channel made with ``channel_credentials`` (by default the
        process's TLS, ``lanes.rpc.tls``): each call carries the session this user opened, by
        SCRAM, on the process it goes to (logged in from gRPC's credentials thread)."""
        if channel_credentials is None:
            files = process_tls()
            if files is None:
                raise ValueError("credentials are sent over TLS only: give the cluster's channel credentials")
            channel_credentials = files.channel_credentials()
        return blocking_call_credentials(self, channel_credentials)


class BearerToken:
    """An OAuth bearer token: ``token`` itself, or the current content of ``file`` (read again
    when the file changes, looked at most once a second). Safe to share between threads."""

    def __init__(self, token: str | None = None, *, file: Path | str | None = None) -> None:
        if (token is None) == (file is None):
            raise ValueError("give a token, or the file that holds it")
        self._file = WatchedFile(Path(file), _bearer) if file is not None else None
        self._metadata = _bearer(token) if token is not None else ()
        self.metadata()  # an unreadable file fails now, not at the first call

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> BearerToken | None:
        """``LANES_TOKEN_FILE``; None when it is unset."""
        file = environ.get("LANES_TOKEN_FILE")
        return cls(file=file) if file else None

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The metadata a call carries: ``authorization: Bearer <token>``."""
        return self._file.current() if self._file is not None else self._metadata

    def look_again(self) -> None:
        """Read the token file again at the next call, whenever it was last looked at."""
        if self._file is not None:
            self._file.look_again()

    def call_credentials(self) -> grpc.CallCredentials:
        """Call credentials adding the header to every call of a blocking channel."""
        return grpc.metadata_call_credentials(_Metadata(self.metadata), name="lanes-bearer-token")

    def __repr__(self) -> str:
        return f"BearerToken(file={str(self._file.path)!r})" if self._file is not None else "BearerToken(...)"


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    token = token.strip()
    if not token or any(c.isspace() for c in token):
        raise ValueError("a bearer token is one word, not empty")
    return ((AUTHORIZATION_KEY, f"Bearer {token}"),)


#: Who a client says it is: a user with a password, or a bearer token.
Credentials = Union[UserPassword, BearerToken]  # noqa: UP007 - a runtime alias
#: What a client is given: credentials, "process" for the environment's (``from_environment``), or None.
ClientCredentials = Union[UserPassword, BearerToken, Literal["process"], None]  # noqa: UP007 - a runtime alias


def client_credentials(given: ClientCredentials) -> Credentials | None:
    """The credentials ``given`` names: themselves, the environment's for "process" (a user and
    password, else a token file), or nobody."""
    if given != "process":
        return given
    return UserPassword.from_environment() or BearerToken.from_environment()


class _Metadata(grpc.AuthMetadataPlugin):
    """Adds ``metadata()`` to each call (called by gRPC on its own threads, once per call)."""

    def __init__(self, metadata: Callable[[], tuple[tuple[str, str], ...]]) -> None:
        self._metadata = metadata

    def __call__(self, context: grpc.AuthMetadataContext, callback: grpc.AuthMetadataPluginCallback) -> None:
        callback(self._metadata(), None)
