"""gRPC channels to Lanes services, from clients and between services: one place for the options
every channel needs.

Fetch and replica-fetch responses and produce requests carry many record batches, well beyond
gRPC's 4 MiB default message size; a channel opened without lifting it fails every larger
message with RESOURCE_EXHAUSTED (a follower with a backlog over 4 MiB never caught up that way).
Servers accept and send the same ``MAX_MESSAGE_BYTES`` (``lanes.runtime.server``).
"""

from __future__ import annotations

import grpc

#: Largest message a Lanes channel or server sends or accepts.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

#: Options of every channel (``open_channel``) and, for message sizes, of every server.
MESSAGE_SIZE_OPTIONS: list[tuple[str, int]] = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


def open_channel(address: str) -> grpc.aio.Channel:
    """An insecure ``grpc.aio`` channel to ``host:port`` that carries messages up to
    ``MAX_MESSAGE_BYTES`` both ways. Use it for every channel to a Lanes service."""
    return grpc.aio.insecure_channel(address, options=MESSAGE_SIZE_OPTIONS)
