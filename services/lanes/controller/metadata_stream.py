"""The committed metadata log as a stream for brokers and coordinators (``WatchMetadata``, Kafka's
``MetadataPublisher`` feed seen from the nodes' side).

A stream starts from the node's ``from_offset`` (a snapshot of the image first when the node has
nothing, or asks for what the log no longer holds), then sends every change as it is committed
and applied, with keepalives every ``keepalive_s``. Each update names the epoch of its last entry;
the first also says which epoch this log holds at the node's ``applied_offset``, so the node
refuses another history. A stream ends (NotControllerError) once this controller is no longer
active: its nodes follow the new one.

Owned by the controller's event loop; ``notify`` is called whenever the applied image changed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from lanes.controller.metadata_log import MetadataLog
from lanes.errors import NotControllerError
from lanes.metadata.image import MetadataImage
from lanes.runtime.broadcast import Broadcast
from lanes.v1 import controller_pb2


class MetadataStream:
    """Serves the metadata streams of one controller; see the module docstring."""

    def __init__(
        self,
        log: MetadataLog,
        image: Callable[[], MetadataImage],
        active: Callable[[], bool],
        not_leader_message: Callable[[], str],
        *,
        keepalive_s: float,
    ) -> None:
        self._log = log
        self._image = image
        self._active = active
        self._not_leader_message = not_leader_message
        self._keepalive_s = keepalive_s
        self._changed = Broadcast()  # the applied image changed, or leadership did

    def notify(self) -> None:
        """The applied image changed, or this controller stopped being active: streams look again."""
        self._changed.notify_all()

    async def watch(self, request: controller_pb2.WatchMetadataRequest) -> AsyncIterator[controller_pb2.MetadataUpdate]:
        """The committed metadata log from ``from_offset`` (a snapshot first when the node has
        nothing or asks for what is gone), then every change as it commits, with keepalives.
        Each update names the epoch of its last entry; the first also says which epoch this
        log holds at the node's ``applied_offset``, so the node refuses another history."""
        next_offset = request.from_offset
        first = True
        while True:
            ticket = self._changed.ticket()
            if not self._active():
                raise NotControllerError(self._not_leader_message())
            if next_offset < 0 or next_offset < self._log.start_offset or next_offset > self._image().last_offset + 1:
                # the node has nothing, asks for what is gone, or fell behind a trimmed log while
                # it streamed: the whole image instead
                at = self._image().last_offset
                yield controller_pb2.MetadataUpdate(
                    snapshot=True,
                    base_offset=at,
                    records=self._image().to_records(),
                    next_offset=at + 1,
                    log_end_offset=self._log.end_offset,
                    last_epoch=self._epoch_at(at),
                    applied_offset_epoch=self._epoch_at(request.applied_offset) if first else -1,
                )
                next_offset, first = at + 1, False
                continue
            applied_end = self._image().last_offset + 1
            if next_offset < applied_end:
                chunk = [(o, r) for o, r in self._log.read(next_offset) if o < applied_end]
                if chunk:
                    yield controller_pb2.MetadataUpdate(
                        base_offset=chunk[0][0],
                        records=[r for _, r in chunk],
                        next_offset=chunk[-1][0] + 1,
                        log_end_offset=self._log.end_offset,
                        last_epoch=self._epoch_at(chunk[-1][0]),
                        applied_offset_epoch=self._epoch_at(request.applied_offset) if first else -1,
                    )
                    next_offset, first = chunk[-1][0] + 1, False
                    continue
            if first:  # nothing to send yet: the node still learns whether its history is this one
                yield controller_pb2.MetadataUpdate(
                    next_offset=next_offset,
                    log_end_offset=self._log.end_offset,
                    last_epoch=self._epoch_at(next_offset - 1),
                    applied_offset_epoch=self._epoch_at(request.applied_offset),
                )
                first = False
                continue
            if await self._changed.wait(ticket, self._keepalive_s):
                continue
            yield controller_pb2.MetadataUpdate(
                next_offset=next_offset,
                log_end_offset=self._log.end_offset,
                last_epoch=self._epoch_at(next_offset - 1),
            )

    def _epoch_at(self, offset: int) -> int:
        """The epoch of the committed (applied) entry at ``offset``; -1 when there is none."""
        if offset < 0 or offset > self._image().last_offset:
            return -1
        return self._log.epoch_at(offset)
