"""A client's username and password, sent with every call as its ``authorization`` metadata.

Clients (``Producer``, ``Consumer``, ``Admin``) take ``credentials=``; by default they use the
environment's (``LANES_USERNAME`` with ``LANES_PASSWORD_FILE`` or ``LANES_PASSWORD``), so Spark
executors and the operator pick a user up from their pods' Secrets. They travel in the
``authorization`` metadata as HTTP ``Basic`` (what the guard,
``lanes.runtime.guard``, reads) and only over TLS: ``open_channel`` adds them to each call
(``lanes.rpc.call_metadata``) and refuses them on a plaintext channel, as gRPC refuses call
credentials (``call_credentials``, for blocking channels) there. The cluster checks them against the user's SCRAM
credential (``lanes users create``).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Union

import grpc

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

    def header(self) -> str:
        """The ``authorization`` metadata value."""
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The metadata a call carries: the ``authorization`` header."""
        return ((AUTHORIZATION_KEY, self.header()),)

    def call_credentials(self) -> grpc.CallCredentials:
        """Call credentials adding the header to every call of a channel."""
        return grpc.metadata_call_credentials(_Header(self.header()), name="lanes-user-password")


#: What a client is given: a user, "process" for the environment's (``from_environment``), or None.
ClientCredentials = Union[UserPassword, Literal["process"], None]  # noqa: UP007 - a runtime alias


def client_credentials(given: ClientCredentials) -> UserPassword | None:
    """The user ``given`` names: itself, the environment's for "process", or nobody."""
    return UserPassword.from_environment() if given == "process" else given


class _Header(grpc.AuthMetadataPlugin):
    """Adds one fixed header (called by gRPC on its own threads, once per call)."""

    def __init__(self, value: str) -> None:
        self._metadata = ((AUTHORIZATION_KEY, value),)

    def __call__(self, context: grpc.AuthMetadataContext, callback: grpc.AuthMetadataPluginCallback) -> None:
        callback(self._metadata, None)
