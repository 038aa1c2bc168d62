"""gRPC channels to Lanes services, from clients and between services: one place for the options
every channel needs.

Fetch and replica-fetch responses and produce requests carry many record batches, well beyond
gRPC's 4 MiB default message size; a channel opened without lifting it fails every larger
message with RESOURCE_EXHAUSTED (a follower with a backlog over 4 MiB never caught up that way).
Servers accept and send the same ``MAX_MESSAGE_BYTES`` (``lanes.runtime.server``).
"""

from __future__ import annotations

import grpc

from lanes.rpc.tls import ClientTls, process_tls

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


def open_channel(address: str, *, fast_reconnect: bool = False, tls: ClientTls = "process") -> grpc.aio.Channel:
    """A ``grpc.aio`` channel to ``host:port`` that carries messages up to ``MAX_MESSAGE_BYTES``
    both ways: over TLS with ``tls`` (by default the process's, ``lanes.rpc.tls``), plaintext
    with None. Use it for every channel to a Lanes service; ``fast_reconnect`` for a peer whose
    restart must be noticed within a second (controllers)."""
    options = MESSAGE_SIZE_OPTIONS + (FAST_RECONNECT_OPTIONS if fast_reconnect else [])
    files = process_tls() if tls == "process" else tls
    if files is not None:
        return grpc.aio.secure_channel(address, files.channel_credentials(), options=options)
    return grpc.aio.insecure_channel(address, options=options)
