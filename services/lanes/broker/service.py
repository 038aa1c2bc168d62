"""The Broker gRPC service: the broker's face for clients and followers (Kafka's ``KafkaApis``).

Each RPC decodes its request, applies the caller's byte-rate quota (``ByteRateQuotas``; who may
call at all is the server's guard, ``lanes.runtime.access.guard``), asks the broker's engine
(``lanes.broker.node.BrokerNode``) partition by partition, and encodes the answer:

- ``Metadata`` from the image (the controller is never on the data path);
- ``Produce`` and ``ProduceStream``: appends with acks 0, 1 and all (``ReplicaManager.append``);
- ``Fetch``: whole batches up to the high-water mark, long-polling for ``min_bytes`` up to
  ``max_wait_ms`` within the broker's fetch memory (``ConsumerFetches``); ``FetchStream``: the
  same, reading on where each full answer ended (the consumer decodes one while the next is read),
  and for a caught-up consumer that ``follow``s, long-polling again after each answer;
- ``ListOffsets``, ``OffsetForLeaderEpoch``, ``DeleteRecords`` (``ReplicaManager``);
- ``ReplicaFetch``: followers' long-polls (``ReplicaFetches``), from the broker they claim to be;
- ``InitProducerId``: ids for idempotent producers (``ProducerIds``);
- ``DescribeLogs``: offsets, size and segments of every replica stored here;
- ``Scan``: a search of one partition, filtered where it is read (``lanes.broker.scans``); the
  bytes it reads count against the caller's consumer byte-rate quota.

Sizes and waits are capped here (``lanes.broker.fetch_limits``). Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, NamedTuple

import grpc

from lanes.broker.byte_rate_quotas import ByteRateQuotas, measured
from lanes.broker.consumer_fetch import ConsumerFetch
from lanes.broker.fetch_limits import FETCH_MAX_BYTES, REPLICA_FETCH_RESPONSE_MAX_BYTES, FetchLimits
from lanes.broker.fetch_wire import FetchedRecords, fetch_response_bytes
from lanes.broker.node import BrokerNode
from lanes.broker.replica_fetch import ReplicaFetchAsk
from lanes.broker.replica_manager import Writer
from lanes.errors import ErrorCode
from lanes.metadata.image import CONSUMER_BYTE_RATE, NO_LEADER, PRODUCER_BYTE_RATE, PartitionImage
from lanes.protocol.fetch_stream import FOLLOW_FOR_S
from lanes.rpc.tls import check_claim, node_identity
from lanes.rpc.wire import ServicerContext, wire_error
from lanes.runtime.access.guard import RequestContext, request_context
from lanes.security.quotas import Limited, window_bytes
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2

#: Produce requests one stream may have waiting for their answers (``ProduceStream``).
STREAM_UNANSWERED_BYTES = 64 * 1024 * 1024
#: answers of one ``FetchStream`` at most (decision 0050)
FETCH_STREAM_ANSWERS = 8
#: answers of one ``FetchStream`` that ``follow``s at most: each is authorized, charged to quotas
#: and awaited by the consumer on its own, so the cap only bounds how long a call lives (0052)
FOLLOWING_STREAM_ANSWERS = 64


class _ServedFetch(NamedTuple):
    """A fetch's response, ``release`` (call once gRPC sent it: its records' memory goes back
    to the broker's fetch memory) and the request reading on from where it ended, if any
    (``ConsumerFetch.read_on``)."""

    fetched: FetchedRecords
    release: Callable[[], None]
    read_on: broker_pb2.FetchRequest | None


def _nothing_held() -> None:
    """``release`` of a fetch that holds no memory."""


def _writer(call: RequestContext) -> Writer:
    return Writer(call.identity, call.verified)


class BrokerService(broker_pb2_grpc.BrokerServicer):
    """The gRPC face of ``node``; see the module docstring."""

    def __init__(
        self,
        node: BrokerNode,
        *,
        fetch_max_bytes: int = FETCH_MAX_BYTES,
        replica_fetch_response_max_bytes: int = REPLICA_FETCH_RESPONSE_MAX_BYTES,
        quotas: ByteRateQuotas | None = None,
    ) -> None:
        self._node = node
        self._replicas = node.replicas
        self._metrics = node.metrics
        #: (shared with the Kafka face: a client's rate counts over both)
        self._quotas = quotas if quotas is not None else ByteRateQuotas(node.clock, node.metrics.service)
        self._fetch_max_bytes = fetch_max_bytes
        self._replica_fetch_response_max_bytes = replica_fetch_response_max_bytes

    def _quota_of(self, call: RequestContext, key: str, topics: list[str]) -> Limited | None:
        """(what the caller is measured as, quota) when the caller's requests under ``key`` are
        limited (``RequestContext.quota``); never for internal topics only (``measured``)."""
        return call.quota(self._node.image, key) if measured(topics) else None

    # -----------------------------------------------------------------------------------------
    # Metadata

    async def Metadata(  # noqa: N802 - gRPC method names
        self, request: broker_pb2.MetadataRequest, context: ServicerContext
    ) -> broker_pb2.MetadataResponse:
        image = self._node.image
        if request.cluster_only:
            names = []
        elif request.topics:
            names = list(dict.fromkeys(request.topics))  # a name given again is answered once
        else:
            names = sorted(t.name for t in image.topics.values() if request.include_internal or not t.internal)
        topics = []
        for name in names:
            topic = image.topic(name)
            if topic is None:
                topics.append(
                    broker_pb2.TopicMetadata(
                        name=name,
                        error=wire_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"),
                    )
                )
                continue
            fenced = {b.broker_id for b in image.brokers.values() if b.fenced}
            topics.append(
                broker_pb2.TopicMetadata(
                    name=name,
                    topic_id=topic.topic_id,
                    error=wire_error(ErrorCode.NONE),
                    is_internal=topic.internal,
                    partitions=[self._partition_metadata(name, p, fenced) for _, p in sorted(topic.partitions.items())],
                )
            )
        # clients dial the active controller's client listener, once it registered one; a controller
        # without an internal listener is dialled where nodes dial it; else port 0: not known yet
        # (the certificate listener's ports to a caller on a certificate listener)
        certificates = request_context(context).on_certificate_listener
        active = self._node.link.controllers.address
        registered = image.controller_at(active)
        host, _, port = (
            f"{registered.host}:{registered.client_port(certificates)}" if registered is not None else active
        ).rpartition(":")
        if registered is None and any(c.internal_port or c.certificate_port for c in image.controllers.values()):
            port = "0"
        return broker_pb2.MetadataResponse(
            cluster_id=image.cluster_id,
            controller=common_pb2.Node(node_id=0, host=host, port=int(port)),
            brokers=[
                common_pb2.Node(node_id=b.broker_id, host=b.host, port=b.client_port(certificates), rack=b.rack)
                for b in image.live_brokers()
            ],
            coordinators=[
                common_pb2.Node(node_id=c.coordinator_id, host=c.host, port=c.client_port(certificates))
                for c in image.live_coordinators()
            ],
            topics=topics,
            metadata_offset=image.last_offset,
        )

    def _partition_metadata(
        self, topic: str, partition: PartitionImage, fenced: set[int]
    ) -> broker_pb2.PartitionMetadata:
        """One partition as this broker's Metadata names it: no leader while it is offline, or
        while this broker is still taking it over or cannot vouch for leading it."""
        leader = self._replicas.named_leader(topic, partition)
        return broker_pb2.PartitionMetadata(
            partition=partition.partition,
            error=wire_error(ErrorCode.NONE if leader != NO_LEADER else ErrorCode.LEADER_NOT_AVAILABLE),
            leader_id=leader,
            leader_epoch=partition.leader_epoch,
            replicas=partition.replicas,
            isr=partition.isr,
            offline_replicas=[b for b in partition.replicas if b in fenced],
        )

    # -----------------------------------------------------------------------------------------
    # Produce

    async def Produce(  # noqa: N802
        self, request: broker_pb2.ProduceRequest, context: ServicerContext
    ) -> broker_pb2.ProduceResponse:
        call = request_context(context)
        limited = self._quota_of(call, PRODUCER_BYTE_RATE, [t.topic for t in request.topics])
        throttle_ms = await self._quotas.admit(PRODUCER_BYTE_RATE, limited, request.ByteSize())
        response = await self._start_produce(request, writer=_writer(call))
        response.throttle_time_ms = throttle_ms
        return response

    async def ProduceStream(  # noqa: N802
        self, requests: AsyncIterator[broker_pb2.ProduceRequest], context: ServicerContext
    ) -> AsyncIterator[broker_pb2.ProduceResponse]:
        """Each request is started as soon as it is read, so a partition's appends happen in
        stream order (``_start_produce``) while earlier ones wait for replication; the answers
        go back in request order. At most ``STREAM_UNANSWERED_BYTES`` of requests wait for their
        answers: beyond them the stream is not read (HTTP/2 flow control then holds the client
        back), so a client cannot pile up requests in a broker's memory."""
        answers: asyncio.Queue[tuple[int, int, Coroutine[None, None, broker_pb2.ProduceResponse]] | None] = (
            asyncio.Queue()
        )
        unanswered_bytes = 0
        room = asyncio.Event()

        async def read() -> None:
            nonlocal unanswered_bytes
            try:
                async for request in requests:
                    size = request.ByteSize()
                    while unanswered_bytes and unanswered_bytes + size > STREAM_UNANSWERED_BYTES:
                        room.clear()
                        await room.wait()
                    unanswered_bytes += size
                    limited = self._quota_of(call, PRODUCER_BYTE_RATE, [t.topic for t in request.topics])
                    throttle_ms = await self._quotas.admit(PRODUCER_BYTE_RATE, limited, size)
                    answers.put_nowait((throttle_ms, size, self._start_produce(request, stream=True, writer=writer)))
            finally:
                answers.put_nowait(None)

        call = request_context(context)
        writer = _writer(call)
        reader = asyncio.create_task(read())
        try:
            while (started := await answers.get()) is not None:
                throttle_ms, size, answer = started
                response = await answer
                response.throttle_time_ms = throttle_ms
                yield response
                unanswered_bytes -= size
                room.set()
        finally:
            reader.cancel()
            while not answers.empty():  # the client left: the appends go on, nobody hears of them
                if (unheard := answers.get_nowait()) is not None:
                    unheard[2].close()

    def _start_produce(
        self, request: broker_pb2.ProduceRequest, *, writer: Writer, stream: bool = False
    ) -> Coroutine[None, None, broker_pb2.ProduceResponse]:
        """Start every partition's append of ``request`` now; the returned awaitable gives the
        answer. Appends queue on their partition's (FIFO) append lock in the order requests are
        started: no ``await`` comes before it in ``ReplicaManager.append``. A ``stream`` request's
        answer time is recorded here (the interceptor times unary calls only)."""
        started_s = time.perf_counter()
        acks = request.acks or common_pb2.ACKS_ALL
        timeout_s = (request.timeout_ms or 30_000) / 1000
        loop = asyncio.get_running_loop()
        started = [
            (
                topic.topic,
                [
                    loop.create_task(self._replicas.append(topic.topic, p, acks, timeout_s, writer))
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]

        async def answer() -> broker_pb2.ProduceResponse:
            response = broker_pb2.ProduceResponse()
            for topic, partitions in started:
                answered = response.topics.add(topic=topic).partitions
                for result in await asyncio.gather(*partitions):
                    answered.append(result)
                    if result.error.code:
                        self._metrics.partition_error("Produce", result.error.code)
            if stream:
                self._metrics.service.observe_rpc("ProduceStream", time.perf_counter() - started_s)
            return response

        return answer()

    async def InitProducerId(  # noqa: N802
        self, request: broker_pb2.InitProducerIdRequest, context: ServicerContext
    ) -> broker_pb2.InitProducerIdResponse:
        if request.transactional_id:
            return broker_pb2.InitProducerIdResponse(
                error=wire_error(ErrorCode.UNSUPPORTED_VERSION, "transactions are not supported yet"), producer_id=-1
            )
        producer_id = await self._node.producer_ids.next_id()
        if producer_id is None:
            return broker_pb2.InitProducerIdResponse(
                error=wire_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the controller is unreachable; retry"),
                producer_id=-1,
            )
        return broker_pb2.InitProducerIdResponse(
            error=wire_error(ErrorCode.NONE), producer_id=producer_id, producer_epoch=0
        )

    # -----------------------------------------------------------------------------------------
    # Fetch

    async def Fetch(  # noqa: N802
        self, request: broker_pb2.FetchRequest, context: ServicerContext
    ) -> FetchedRecords:
        """One fetch (``_fetch``); the memory its records hold goes back once gRPC sent it.
        Answered as ``fetch_response_bytes`` writes it (``add_to_server``)."""
        served = await self._fetch(request, request_context(context))
        release = served.release  # (the callback must not keep the response alive)
        context.add_done_callback(lambda _: release())  # type: ignore[arg-type]
        return served.fetched

    async def FetchStream(  # noqa: N802
        self, request: broker_pb2.FetchRequest, context: ServicerContext
    ) -> AsyncIterator[FetchedRecords]:
        """Fetches read on, each from where the last answer ended, while answers come back full
        and the request's ``max_bytes`` (the consumer's room) is not spent (``ConsumerFetch.read_on``),
        at most ``FETCH_STREAM_ANSWERS``; the next is read while gRPC sends this one to the
        consumer, who decodes it meanwhile. A request that ``follow``s reads on after an answer
        that brought records though not full too (at most ``FOLLOW_AFTER_BYTES_AT_MOST`` of
        them), long-polling with the wait it first asked for, at most ``FOLLOWING_STREAM_ANSWERS``
        and while younger than ``FOLLOW_FOR_S`` (the consumer's deadline for the call is that
        and a request's time): a caught-up consumer gets each record as it is written without a
        call per answer. Ends after a throttle. An answer's
        fetch memory is given back once the next is read (until then gRPC and the interceptors
        still hold it; a following stream holds its last answer's while it long-polls).
        Each answer is timed as a request (``lanes_rpc_duration_seconds{method="FetchStream"}``)."""
        call = request_context(context)
        next_request: broker_pb2.FetchRequest | None = request
        release_sent = _nothing_held  # the answer gRPC took last: still referenced while the next is read
        opened_s = time.monotonic()
        try:
            for _ in range(FOLLOWING_STREAM_ANSWERS if request.follow else FETCH_STREAM_ANSWERS):
                if next_request is None:
                    return
                started_s = time.perf_counter()
                follows = request.follow and time.monotonic() - opened_s < FOLLOW_FOR_S
                served = await self._fetch(next_request, call, request.max_wait_ms if follows else None)
                self._metrics.service.observe_rpc("FetchStream", time.perf_counter() - started_s)
                release_sent()
                release_sent = served.release
                yield served.fetched
                next_request = served.read_on if not served.fetched.response.throttle_time_ms else None
        finally:
            release_sent()

    async def _fetch(
        self, request: broker_pb2.FetchRequest, call: RequestContext, follow_wait_ms: int | None = None
    ) -> _ServedFetch:
        """Sizes and wait are capped (``lanes.broker.fetch_limits``; a quota caps the size to what
        its window allows); a caller under a quota is muted while it owes, then what it may read
        is reserved (so its concurrent fetches wait their turn too) and corrected by what was sent.
        ``follow_wait_ms``: a stream that follows, its consumer's wait (``ConsumerFetch.read_on``)."""
        limited = self._quota_of(call, CONSUMER_BYTE_RATE, [topic.topic for topic in request.topics])
        cap_bytes = self._fetch_max_bytes if limited is None else min(self._fetch_max_bytes, window_bytes(limited[1]))
        limits = FetchLimits.clamp(request.max_bytes, request.min_bytes, request.max_wait_ms, cap_bytes=cap_bytes)
        fetch = ConsumerFetch(request, limits.max_bytes)
        if not fetch.keys:
            return _ServedFetch(
                FetchedRecords(fetch.response, []), _nothing_held, None
            )  # nothing to wait for (as Kafka)
        reserved = limits.max_bytes if limited is not None else 0
        await self._quotas.admit(CONSUMER_BYTE_RATE, limited, reserved)
        sent_bytes = 0
        try:
            answer = await self._node.consumer_fetches.fetch(
                fetch, limits, call.caller.principal if call.caller is not None else ""
            )
            fetched, sent = answer.fetched, answer.sent
            sent_bytes = sum(size for size, _ in sent.values())
        finally:
            if limited is not None:
                owed_ms = self._quotas.record(CONSUMER_BYTE_RATE, limited, sent_bytes - reserved)
        if limited is not None:
            fetched.response.throttle_time_ms = owed_ms
        for code in fetch.errors:
            self._metrics.partition_error("Fetch", code)
        for topic, (size, records) in sent.items():
            self._metrics.fetched(topic, size, records)
        return _ServedFetch(
            fetched, answer.release, fetch.read_on(request, limits.max_bytes, follow_wait_ms=follow_wait_ms)
        )

    # -----------------------------------------------------------------------------------------
    # Replication (leader side)

    async def ReplicaFetch(  # noqa: N802
        self, request: broker_pb2.ReplicaFetchRequest, context: ServicerContext
    ) -> broker_pb2.ReplicaFetchResponse:
        """Only from the broker the request names (``check_claim``); served within its fetch
        session (``lanes.broker.replica_fetch``)."""
        await check_claim(context, node_identity("broker", request.replica_id))
        ask = ReplicaFetchAsk.of(request, self._replica_fetch_response_max_bytes)
        return await self._node.replica_fetches.fetch(ask)

    async def OffsetForLeaderEpoch(  # noqa: N802
        self, request: broker_pb2.OffsetForLeaderEpochRequest, context: ServicerContext
    ) -> broker_pb2.OffsetForLeaderEpochResponse:
        return broker_pb2.OffsetForLeaderEpochResponse(
            topics=[
                broker_pb2.OffsetForLeaderEpochTopicResponse(
                    topic=topic.topic,
                    partitions=[
                        self._replicas.epoch_end_offset(
                            topic.topic, wanted.partition, wanted.current_leader_epoch, wanted.leader_epoch
                        )
                        for wanted in topic.partitions
                    ],
                )
                for topic in request.topics
            ]
        )

    async def DeleteRecords(  # noqa: N802
        self, request: broker_pb2.DeleteRecordsRequest, context: ServicerContext
    ) -> broker_pb2.DeleteRecordsResponse:
        topics = []
        for topic in request.topics:
            partitions = [
                await self._replicas.delete_records(topic.topic, wanted.partition, wanted.offset)
                for wanted in topic.partitions
            ]
            topics.append(broker_pb2.DeleteRecordsTopicResponse(topic=topic.topic, partitions=partitions))
        return broker_pb2.DeleteRecordsResponse(topics=topics)

    # -----------------------------------------------------------------------------------------
    # ListOffsets

    async def ListOffsets(  # noqa: N802
        self, request: broker_pb2.ListOffsetsRequest, context: ServicerContext
    ) -> broker_pb2.ListOffsetsResponse:
        """A lookup by timestamp or of a record's time reads the log: one per partition per request
        (Kafka allows each partition once); the earliest and latest offsets cost nothing to repeat."""
        topics = []
        by_time: set[tuple[str, int]] = set()
        for topic in request.topics:
            partitions = []
            for wanted in topic.partitions:
                key = (topic.topic, wanted.partition)
                reads_log = wanted.spec in (broker_pb2.OFFSET_SPEC_TIMESTAMP, broker_pb2.OFFSET_SPEC_RECORD_TIME)
                if reads_log and key in by_time:
                    result = broker_pb2.ListOffsetsPartitionResponse(
                        partition=wanted.partition,
                        offset=-1,
                        timestamp_ms=-1,
                        leader_epoch=-1,
                        error=wire_error(
                            ErrorCode.INVALID_REQUEST,
                            f"{topic.topic}-{wanted.partition} is looked up in its log more than once",
                        ),
                    )
                else:
                    result = await self._replicas.list_offset(topic.topic, wanted)
                if reads_log:
                    by_time.add(key)
                partitions.append(result)
            topics.append(broker_pb2.ListOffsetsTopicResponse(topic=topic.topic, partitions=partitions))
        return broker_pb2.ListOffsetsResponse(topics=topics)

    # -----------------------------------------------------------------------------------------
    # Scan

    async def Scan(  # noqa: N802
        self, request: broker_pb2.ScanRequest, context: ServicerContext
    ) -> AsyncIterator[broker_pb2.ScanResponse]:
        """Streams ``Scans.scan``'s answers; a caller under a consumer quota waits while it owes
        for what its scan read, between chunks."""
        call = request_context(context)
        limited = self._quota_of(call, CONSUMER_BYTE_RATE, [request.topic])
        principal = call.caller.principal if call.caller is not None else ""
        scanned_bytes = 0
        await self._quotas.admit(CONSUMER_BYTE_RATE, limited, 0)
        async for answer in self._node.scans.scan(request, principal):
            if answer.error.code:
                self._metrics.partition_error("Scan", answer.error.code)
            if limited is not None:
                self._quotas.record(CONSUMER_BYTE_RATE, limited, answer.progress.scanned_bytes - scanned_bytes)
                scanned_bytes = answer.progress.scanned_bytes
            yield answer
            await self._quotas.admit(CONSUMER_BYTE_RATE, limited, 0)  # the next chunk waits while it owes

    # -----------------------------------------------------------------------------------------
    # DescribeLogs

    async def DescribeLogs(  # noqa: N802
        self, request: broker_pb2.DescribeLogsRequest, context: ServicerContext
    ) -> broker_pb2.DescribeLogsResponse:
        wanted = set(request.topics)
        replicas = [
            broker_pb2.ReplicaLog(
                topic=replica.topic,
                partition=replica.partition,
                is_leader=replica.leader,
                log_start_offset=replica.log_start_offset,
                log_end_offset=replica.log_end_offset,
                high_watermark=replica.high_watermark,
                size_bytes=replica.size_bytes,
                segments=replica.segments,
            )
            for replica in self._node.replica_states()
            if not wanted or replica.topic in wanted
        ]
        return broker_pb2.DescribeLogsResponse(broker_id=self._node.broker_id, replicas=replicas)


class _Registration:
    """Takes what the generated ``add_BrokerServicer_to_server`` registers, for ``add_to_server``."""

    def __init__(self) -> None:
        self.service = ""
        self.handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}

    def add_generic_rpc_handlers(self, handlers: object) -> None:
        """(the same handlers as the registered ones below)"""

    def add_registered_method_handlers(
        self, service: str, handlers: dict[str, grpc.RpcMethodHandler[Any, Any]]
    ) -> None:
        self.service, self.handlers = service, handlers


def add_to_server(service: BrokerService, server: grpc.aio.Server) -> None:
    """Register ``service`` on ``server``: the generated handlers (the helper is untyped), but
    Fetch and FetchStream answered in ``fetch_response_bytes`` (their records spliced in, not
    copied through protobuf twice)."""
    registration = _Registration()
    broker_pb2_grpc.add_BrokerServicer_to_server(service, registration)  # type: ignore[no-untyped-call]
    methods = broker_pb2.DESCRIPTOR.services_by_name["Broker"].methods_by_name
    if registration.service != "lanes.v1.Broker" or set(registration.handlers) != set(methods):
        raise RuntimeError("the generated Broker registration changed: add_to_server must follow it")
    handlers = dict(registration.handlers)
    handlers["Fetch"] = grpc.unary_unary_rpc_method_handler(
        service.Fetch,
        request_deserializer=broker_pb2.FetchRequest.FromString,
        response_serializer=fetch_response_bytes,
    )
    handlers["FetchStream"] = grpc.unary_stream_rpc_method_handler(
        service.FetchStream,
        request_deserializer=broker_pb2.FetchRequest.FromString,
        response_serializer=fetch_response_bytes,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(registration.service, handlers),))
    server.add_registered_method_handlers(registration.service, handlers)
