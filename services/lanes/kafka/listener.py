"""The Kafka listener: a TCP port speaking Kafka's protocol, one connection at a time answered in
order (a Kafka connection's responses come back in the order of its requests; the next request
is read once the previous one is answered, as Kafka mutes a channel while it works).

Bounds: a request is at most ``max_request_bytes`` (the broker's ``--max-request-bytes``), 64 KiB
before its connection is authenticated; at most ``max_connections`` connections at once, and
``max_connections_per_address`` from one address (more are closed at once); a connection idle for
``idle_s`` (Kafka's connections.max.idle.ms, 10 minutes), or whose answer is not taken within
``send_s``, is closed; an answer's fetch memory is given back once it is written. Bytes that are no request, or
a request that does not parse, close the connection (as Kafka does); nothing else is harmed.

With ``ssl_context`` the port speaks TLS only; a verified client certificate names the
connection's user (``lanes.kafka.sasl``). Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import ssl

from lanes.kafka.apis import KafkaApis
from lanes.kafka.codec import MalformedRequestError
from lanes.kafka.frames import MAX_REQUEST_BYTES, SIZE_BYTES, FrameError, frame_size, request_key
from lanes.kafka.sasl import KafkaConnection

_log = logging.getLogger(__name__)

MAX_CONNECTIONS = 4096
IDLE_S = 600.0
#: the longest a TLS handshake may take
HANDSHAKE_S = 10.0
#: the longest an answer may take to be written before its connection is closed
SEND_S = 30.0


class KafkaListener:
    """Serves ``apis`` on ``host:port`` once started (``port`` 0: any free port; ``port`` after)."""

    def __init__(
        self,
        apis: KafkaApis,
        host: str,
        port: int,
        *,
        max_connections: int = MAX_CONNECTIONS,
        idle_s: float = IDLE_S,
        send_s: float = SEND_S,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        ssl_context: ssl.SSLContext | None = None,
        max_connections_per_address: int | None = None,
    ) -> None:
        self._apis = apis
        self._host = host
        self.port = port
        self._max_connections = max_connections
        self._idle_s = idle_s
        self._send_s = send_s
        self._max_request_bytes = max_request_bytes
        self._ssl = ssl_context
        self._per_address_limit = max_connections_per_address or max(1, max_connections // 4)
        self._per_address: collections.Counter[str] = collections.Counter()
        self._connections: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        if self._ssl is None:
            self._server = await asyncio.start_server(self._accepted, self._host, self.port)
        else:
            self._server = await asyncio.start_server(
                self._accepted, self._host, self.port, ssl=self._ssl, ssl_handshake_timeout=HANDSHAKE_S
            )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = writer.get_extra_info("peername")
        host = str(peer[0]) if peer else ""
        if len(self._connections) >= self._max_connections or self._per_address[host] >= self._per_address_limit:
            writer.close()
            return
        self._connections.add(task)
        self._per_address[host] += 1
        connection = KafkaConnection(host=host, certificate_name=_certificate_name(writer))
        try:
            refused = self._apis.authentication.opened(connection)
            if refused is not None:
                _log.info("closing a Kafka connection from %s: %s", peer, refused)
                return
            await self._serve(reader, writer, connection)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        except (FrameError, MalformedRequestError) as exc:
            _log.info("closing a Kafka connection from %s: %s", peer, exc)
        except Exception as exc:  # a request no handler foresaw: that connection ends, nothing else
            _log.warning("closing a Kafka connection from %s after %s: %s", peer, type(exc).__name__, exc)
        finally:
            self._connections.discard(task)
            self._per_address[host] -= 1
            if self._per_address[host] <= 0:
                del self._per_address[host]
            self._apis.authentication.closed(connection)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: KafkaConnection
    ) -> None:
        while True:
            prefix = await asyncio.wait_for(reader.readexactly(SIZE_BYTES), self._idle_s)
            size = frame_size(prefix, connection.max_frame_bytes or self._max_request_bytes)
            frame = await asyncio.wait_for(reader.readexactly(size), self._idle_s)
            key = request_key(frame)
            reply = await self._apis.answer(key, frame, connection)
            if reply is None:
                raise FrameError(f"no API {key.api_key} version {key.api_version} in Kafka's protocol")
            try:
                if reply.frame:
                    writer.write(reply.frame)
                    # a client that does not read its answers holds nothing for long (the records'
                    # fetch memory is held until the answer is written)
                    await asyncio.wait_for(writer.drain(), self._send_s)
            finally:
                if reply.release is not None:
                    reply.release()
            if reply.close:
                return


def _certificate_name(writer: asyncio.StreamWriter) -> str | None:
    """The common name of the peer's verified certificate (None: plaintext, or none given)."""
    certificate = writer.get_extra_info("peercert")
    if not certificate:
        return None
    for entry in certificate.get("subject", ()):
        for key, value in entry:
            if key == "commonName":
                return str(value)
    return None
