"""gRPC channels to Lanes services, from clients and between services: one place for the options
every channel needs.

Fetch and replica-fetch responses and produce requests carry many record batches, well beyond
gRPC's 4 MiB default message size; a channel opened without lifting it fails every larger
message with RESOURCE_EXHAUSTED (a follower with a backlog over 4 MiB never caught up that way).
Servers accept and send the same ``MAX_MESSAGE_BYTES`` (``lanes.runtime.serving.server``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import TypeVar, cast

import grpc

from lanes.rpc.call_metadata import CLIENT_ID_KEY, MetadataChannel, MetadataPairs
from lanes.rpc.credentials import Credentials, UserPassword
from lanes.rpc.sessions import SessionChannel
from lanes.rpc.tls import ClientTls, process_tls

StubT = TypeVar("StubT")

#: Largest message a Lanes channel or server sends or accepts.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

#: Options of every channel (``open_channel``) and, for message sizes, of every server.
MESSAGE_SIZE_OPTIONS: list[tuple[str, int]] = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


#: Reconnect quickly to a peer that restarted: gRPC's default backoff grows to 2 minutes, so a
#: channel to a controller that was down for 10 s kept failing for seconds after it came back
#: (its answers lost: an election among the two others took 3.7 s in CI).
FAST_RECONNECT_OPTIONS: list[tuple[str, int]] = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
]


def open_channel(
    address: str,
    *,
    fast_reconnect: bool = False,
    tls: ClientTls = "process",
    credentials: Credentials | None = None,
    client_id: str | None = None,
) -> grpc.aio.Channel:
    """A ``grpc.aio`` channel to ``host:port`` that carries messages up to ``MAX_MESSAGE_BYTES``
    both ways: over TLS with ``tls`` (by default the process's, ``lanes.rpc.tls``), plaintext
    with None; every call carries ``credentials`` when given (TLS only) and ``client_id`` (for
    client-id quotas), as each call's metadata (``lanes.rpc.call_metadata``). Use it for every
    channel to a Lanes service; ``fast_reconnect`` for a peer whose restart must be noticed
    within a second (controllers)."""
    options = MESSAGE_SIZE_OPTIONS + (FAST_RECONNECT_OPTIONS if fast_reconnect else [])
    files = process_tls() if tls == "process" else tls
    named: MetadataPairs = ((CLIENT_ID_KEY, client_id),) if client_id else ()
    if files is None:
        if credentials is not None:
            raise ValueError("credentials are sent over TLS only: give tls= (the cluster's CA) too")
        channel = grpc.aio.insecure_channel(address, options=options)
    elif isinstance(credentials, UserPassword):  # proved by SCRAM, once per process called
        secure = files.channel_credentials()
        return SessionChannel(
            lambda interceptors: grpc.aio.secure_channel(address, secure, options=options, interceptors=interceptors),
            credentials,
            lambda: named,
        )
    else:
        channel = grpc.aio.secure_channel(address, files.channel_credentials(), options=options)
    if credentials is None:
        return MetadataChannel(channel, lambda: named) if named else channel
    if not named:
        return MetadataChannel(channel, credentials.metadata)
    given = credentials.metadata
    return MetadataChannel(channel, lambda: (*given(), *named))


#: How often a cache looks at its TLS files' stamps (a few stat calls).
_TLS_CHECK_INTERVAL_S = 1.0
#: How long calls on a channel replaced for renewed TLS files may go on before it closes.
RETIRE_GRACE_S = 30.0


class ChannelCache:
    """The channels a component keeps, one per address, opened on first use (``open_channel``).

    A channel presents the TLS client certificate it was opened with for its whole life, so when
    the TLS files it uses are replaced (looked at most once a second), the next ``get`` opens a
    new channel for that address and the old one closes once its calls finished or after
    ``RETIRE_GRACE_S``: a renewed certificate reaches a process's own outgoing calls without a
    restart. Owned by one event loop."""

    def __init__(
        self,
        *,
        fast_reconnect: bool = False,
        tls: ClientTls = "process",
        credentials: Credentials | None = None,
        client_id: str | None = None,
    ) -> None:
        self._fast_reconnect = fast_reconnect
        self._tls: ClientTls = tls
        self._credentials = credentials
        self._client_id = client_id
        self._channels: dict[str, tuple[grpc.aio.Channel, tuple[int, ...]]] = {}
        self._stamp: tuple[int, ...] = ()
        self._checked_at = -_TLS_CHECK_INTERVAL_S
        self._retiring: set[asyncio.Task[None]] = set()
        #: (address, stub class) -> (the channel it was made on, the stub)
        self._stubs: dict[tuple[str, object], tuple[grpc.aio.Channel, object]] = {}

    def _current_stamp(self) -> tuple[int, ...]:
        now = time.monotonic()
        if now - self._checked_at >= _TLS_CHECK_INTERVAL_S:
            self._checked_at = now
            files = process_tls() if self._tls == "process" else self._tls
            with contextlib.suppress(OSError):  # being replaced right now: keep the channels until it is whole
                self._stamp = files.stamp() if files is not None else ()
        return self._stamp

    def get(self, address: str) -> grpc.aio.Channel:
        """The channel to ``address``: the one kept, unless the TLS files changed since it opened."""
        stamp = self._current_stamp()
        kept = self._channels.get(address)
        if kept is not None:
            channel, opened_with = kept
            if opened_with == stamp:
                return channel
            self._retire(channel)
        channel = open_channel(
            address,
            fast_reconnect=self._fast_reconnect,
            tls=self._tls,
            credentials=self._credentials,
            client_id=self._client_id,
        )
        self._channels[address] = (channel, stamp)
        return channel

    def stub(self, address: str, stub_class: Callable[[grpc.aio.Channel], StubT]) -> StubT:
        """A ``stub_class`` on the channel ``get`` gives, made once per channel: a generated stub
        builds a callable per method of its service, too much for every request."""
        channel = self.get(address)
        key = (address, stub_class)
        kept = self._stubs.get(key)
        if kept is None or kept[0] is not channel:
            kept = self._stubs[key] = (channel, stub_class(channel))
        return cast(StubT, kept[1])

    def _retire(self, channel: grpc.aio.Channel) -> None:
        task = asyncio.get_running_loop().create_task(channel.close(grace=RETIRE_GRACE_S))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def close(self) -> None:
        """Close every channel, those being retired too."""
        channels = [channel for channel, _ in self._channels.values()]
        self._channels.clear()
        for channel in channels:
            await channel.close()
        for task in list(self._retiring):
            task.cancel()
