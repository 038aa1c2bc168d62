"""A client's username and password, sent with every call as gRPC call credentials.

They travel in the ``authorization`` metadata as HTTP ``Basic`` (what the guard,
``lanes.runtime.guard``, reads) and only over TLS: gRPC refuses call credentials on a plaintext
channel, and so does ``open_channel``. The cluster checks them against the user's SCRAM
credential (``lanes users create``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

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

    def header(self) -> str:
        """The ``authorization`` metadata value."""
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()

    def call_credentials(self) -> grpc.CallCredentials:
        """Call credentials adding the header to every call of a channel."""
        return grpc.metadata_call_credentials(_Header(self.header()), name="lanes-user-password")


class _Header(grpc.AuthMetadataPlugin):
    """Adds one fixed header (called by gRPC on its own threads, once per call)."""

    def __init__(self, value: str) -> None:
        self._metadata = ((AUTHORIZATION_KEY, value),)

    def __call__(self, context: grpc.AuthMetadataContext, callback: grpc.AuthMetadataPluginCallback) -> None:
        callback(self._metadata, None)
