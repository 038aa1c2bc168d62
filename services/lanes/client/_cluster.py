"""What a client knows of the cluster: brokers, partition leaders, partition counts, and one
channel per broker.

Learned from any broker's Metadata (brokers answer from their metadata image, so the controller is
never involved); refreshed by the producer and consumer when a leader moves or a broker fails.
Owned by the client's event loop.

Staleness (KIP-320's rule): a broker's image may lag, or a broker cut off from the controller may
still name itself leader. A partition's leader is replaced only by an answer with a leader epoch
at least as new as the one known. A broker that timed out or said it does not lead a partition
is a *suspect* for a while: refreshes ask every other broker first, so a client is not sent back
to a cut-off leader by that leader's own stale answer; and a broker that said it does not lead a
partition is not taken as its leader again at the same epoch from anyone (another broker's image
may have stopped too) until a newer epoch is heard, the broker itself names itself leader at that
epoch (its image caught up), or the while is over. A broker that has not heard of the epoch the
client knows (UNKNOWN_LEADER_EPOCH) is neither suspected nor forgotten: the client retries it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import grpc

from lanes.allocator import keep_freed_memory
from lanes.errors import ErrorCode, LanesError, error_for
from lanes.rpc.channels import ChannelCache, StubT
from lanes.rpc.credentials import ClientCredentials, client_credentials
from lanes.rpc.tls import ClientTls
from lanes.rpc.wire import security_refusal
from lanes.security.quota_entities import MAX_CLIENT_ID_CHARS, valid_client_id
from lanes.v1 import broker_pb2, broker_pb2_grpc, common_pb2

#: The longest pause a client takes for one throttle (a broker tells at most 10 s for byte and
#: request quotas; a wrong value must not stop a client for long).
MAX_THROTTLE_MS = 30_000
#: how long a broker that timed out or was not the leader is asked for metadata last
SUSPECT_S = 10.0
#: answers that say the broker asked is not (or no longer, or not yet) the partition's leader
NOT_THE_LEADER = frozenset(
    {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH}
)
#: of those, the ones that deny leading at the epoch the client knows (UNKNOWN_LEADER_EPOCH only
#: says the broker has not heard of that epoch yet)
DENIALS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


def checked_client_id(client_id: str) -> str:
    """``client_id`` when it may name a client (Kafka's ``client.id``: it travels with each call
    and names the client in client-id quotas); INVALID_CONFIG otherwise."""
    if not valid_client_id(client_id):
        raise LanesError(
            f"client_id {client_id[:60]!r} is not a client id: at most {MAX_CLIENT_ID_CHARS} printable ASCII "
            "characters",
            ErrorCode.INVALID_CONFIG,
        )
    return client_id


class ClusterView:
    """Brokers and partition leaders as last seen, and the channels to reach them."""

    def __init__(
        self,
        bootstrap: Sequence[str],
        request_timeout_s: float,
        tls: ClientTls = "process",
        credentials: ClientCredentials = "process",
        client_id: str | None = None,
    ) -> None:
        if not bootstrap:
            raise ValueError("bootstrap needs at least one host:port")
        if client_id is not None:
            checked_client_id(client_id)
        keep_freed_memory()  # megabyte fetch answers reused, not faulted in anew (decision 0046)
        self.bootstrap = list(bootstrap)
        self.brokers: dict[int, str] = {}
        self.coordinators: dict[int, str] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        #: the newest leader epoch seen per partition (kept when the leader is forgotten)
        self.leader_epochs: dict[tuple[str, int], int] = {}
        self._suspects: dict[str, float] = {}  # address -> monotonic time it stops being one
        self._throttled: dict[str, float] = {}  # address -> monotonic time its throttle ends
        #: partition -> (address that denied leading it, the epoch then, until when)
        self._denials: dict[tuple[str, int], tuple[str, int, float]] = {}
        self.topic_ids: dict[str, str] = {}  # epochs of a recreated topic start again
        self._retired_topic_ids: set[str] = set()  # ids of topics seen deleted and made again
        self.partition_counts: dict[str, int] = {}
        self._timeout_s = request_timeout_s
        #: the metadata refresh under way per set of topics: later askers share it (``refresh``)
        self._refreshes: dict[tuple[str, ...], asyncio.Future[dict[str, common_pb2.Error]]] = {}
        self._channels = ChannelCache(tls=tls, credentials=client_credentials(credentials), client_id=client_id)

    def stub(self, address: str) -> broker_pb2_grpc.BrokerStub:
        """A broker stub on the (cached) channel to ``address``."""
        return self.stub_of(address, broker_pb2_grpc.BrokerStub)

    def stub_of(self, address: str, stub_class: Callable[[grpc.aio.Channel], StubT]) -> StubT:
        """A ``stub_class`` on the (cached) channel to ``address``, made once per channel."""
        return self._channels.stub(address, stub_class)

    def channel(self, address: str) -> grpc.aio.Channel:
        """The (cached) channel to ``address``, for any service there."""
        return self._channels.get(address)

    def leader_address(self, topic: str, partition: int) -> str | None:
        """Where the partition's leader listens, if known."""
        return self.brokers.get(self.leaders.get((topic, partition), -1))

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's newest known leader epoch, -1 if none (for requests that carry it)."""
        return self.leader_epochs.get((topic, partition), -1)

    def throttle(self, address: str, throttle_time_ms: int) -> None:
        """The broker at ``address`` answered that this client owes ``throttle_time_ms`` under a
        quota: send it nothing more until then (Kafka's clients, KIP-219), so requests wait here
        rather than in the broker's mute, where their timeout runs."""
        if throttle_time_ms > 0:
            until = time.monotonic() + min(throttle_time_ms, MAX_THROTTLE_MS) / 1000
            self._throttled[address] = max(until, self._throttled.get(address, 0.0))

    def throttle_remaining_s(self, address: str) -> float:
        """How long requests to ``address`` still wait for a throttle (0: none)."""
        until = self._throttled.get(address)
        if until is None:
            return 0.0
        remaining = until - time.monotonic()
        if remaining <= 0:
            del self._throttled[address]
            return 0.0
        return remaining

    async def unthrottled(self, address: str) -> None:
        """Until the broker at ``address`` no longer throttles this client."""
        while (remaining := self.throttle_remaining_s(address)) > 0:
            await asyncio.sleep(remaining)

    def forget_leader(self, topic: str, partition: int, suspect: str | None = None, *, denied: bool = False) -> None:
        """The leader moved or failed: look it up again at the next refresh, asking the
        ``suspect`` address (the broker that failed us) last for a while. ``denied``: the suspect
        itself said it does not lead the partition; no answer naming it at the epoch known now
        (or older) is taken for a while (a broker whose image stopped would name it again)."""
        key = (topic, partition)
        self.leaders.pop(key, None)
        if suspect is not None:
            until = time.monotonic() + SUSPECT_S
            self._suspects[suspect] = until
            if denied:
                self._denials[key] = (suspect, self.leader_epochs.get(key, -1), until)

    def refused(self, topic: str, partition: int, address: str, code: ErrorCode) -> None:
        """The broker at ``address`` answered ``code`` for the partition instead of serving it.
        UNKNOWN_LEADER_EPOCH says only that it has not heard of the epoch the client knows yet:
        the leader stays, nothing is suspected, the request is retried after the usual pause.
        Anything else forgets the leader and suspects ``address`` (``forget_leader``); a denial
        of leading (``DENIALS``) is remembered as one."""
        if code is ErrorCode.UNKNOWN_LEADER_EPOCH:
            return
        self.forget_leader(topic, partition, suspect=address, denied=code in DENIALS)

    def _denied(self, key: tuple[str, int], leader_id: int, leader_epoch: int, source: str) -> bool:
        denial = self._denials.get(key)
        if denial is None:
            return False
        address, epoch, until = denial
        named = self.brokers.get(leader_id)
        if until <= time.monotonic() or leader_epoch > epoch or (named == address == source and leader_epoch == epoch):
            # over, or contradicted: a newer epoch, or the denying broker itself now names itself
            # leader at that epoch (its metadata caught up with the one the client had)
            del self._denials[key]
            self._suspects.pop(address, None)
            return False
        return named == address

    def _recreated(self, topic: str, topic_id: str) -> None:
        """``topic`` was deleted and made again (a new id): its epochs start again, and answers
        naming the old id are ignored from now on."""
        if self.topic_ids[topic]:
            self._retired_topic_ids.add(self.topic_ids[topic])
        self.topic_ids[topic] = topic_id
        for key in [key for key in self.leader_epochs if key[0] == topic]:
            del self.leader_epochs[key]

    def metadata_sources(self) -> list[str]:
        """Known brokers then bootstrap addresses, each once, suspects last."""
        now = time.monotonic()
        self._suspects = {a: until for a, until in self._suspects.items() if until > now}
        addresses = list(dict.fromkeys([*self.brokers.values(), *self.bootstrap]))
        return sorted(addresses, key=lambda address: address in self._suspects)

    async def refresh(self, topics: Sequence[str]) -> dict[str, common_pb2.Error]:
        """Ask known brokers (then the bootstrap ones), suspects last, for the topics' metadata;
        the first answer's per-topic errors are returned (a topic the caller may not see raises
        AuthorizationError). A partition whose answer names a leader
        that denied leading it (at no newer epoch) is asked of the next broker too. Raises a
        retriable BROKER_NOT_AVAILABLE error when none answers.

        A refresh of the same topics already under way is shared, not repeated (as Kafka's
        clients request one metadata update for everyone waiting): a producer retrying 1,000
        leaderless partitions otherwise sent 1,000 Metadata calls of the whole topic every retry
        pause, and a broker taking the partitions over answered them instead of taking over."""
        key = tuple(sorted(set(topics)))
        shared = self._refreshes.get(key)
        if shared is None:
            shared = self._refreshes[key] = asyncio.ensure_future(self._refresh(key))
            shared.add_done_callback(lambda done: self._forget_refresh(key, done))
        return await asyncio.shield(shared)

    def _forget_refresh(self, key: tuple[str, ...], done: asyncio.Future[dict[str, common_pb2.Error]]) -> None:
        if self._refreshes.get(key) is done:
            del self._refreshes[key]
        if not done.cancelled():
            done.exception()  # retrieved: an asker that left must not leave it unreported

    async def _refresh(self, topics: Sequence[str]) -> dict[str, common_pb2.Error]:
        problems = []
        errors: dict[str, common_pb2.Error] | None = None
        for address in self.metadata_sources():
            try:
                metadata = await self.stub(address).Metadata(
                    broker_pb2.MetadataRequest(topics=list(topics)), timeout=self._timeout_s
                )
            except grpc.aio.AioRpcError as exc:
                refused = security_refusal(exc)
                if refused is not None:
                    raise refused from None
                problems.append(f"{address}: {exc.code().name}")
                continue
            if errors is None:
                self.brokers = {b.node_id: f"{b.host}:{b.port}" for b in metadata.brokers}
                self.coordinators = {c.node_id: f"{c.host}:{c.port}" for c in metadata.coordinators}
                errors = {topic.name: topic.error for topic in metadata.topics}
                for error in errors.values():
                    if error.code == int(ErrorCode.TOPIC_AUTHORIZATION_FAILED):  # retrying cannot help
                        raise error_for(error.code, error.message)
            if not self._learn(metadata, address):
                break
        if errors is None:
            raise error_for(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker answered for metadata ({'; '.join(problems)})")
        return errors

    def _learn(self, metadata: broker_pb2.MetadataResponse, source: str) -> bool:
        """Take the leaders of one answer, from the broker at ``source`` (see the module
        docstring); whether a partition's answer named a leader that denied it, so that another
        broker should be asked."""
        unresolved = False
        for topic in metadata.topics:
            if topic.error.code != 0 or topic.topic_id in self._retired_topic_ids:  # ErrorCode.NONE
                continue  # (a lagging broker still describing a deleted topic: ignored)
            if self.topic_ids.setdefault(topic.name, topic.topic_id) != topic.topic_id:
                self._recreated(topic.name, topic.topic_id)
            self.partition_counts[topic.name] = len(topic.partitions)
            for partition in topic.partitions:
                key = (topic.name, partition.partition)
                if self._denied(key, partition.leader_id, partition.leader_epoch, source):
                    unresolved = True
                elif partition.leader_epoch >= self.leader_epochs.get(key, -1):
                    self.leaders[key] = partition.leader_id
                    self.leader_epochs[key] = partition.leader_epoch
        return unresolved

    async def close(self) -> None:
        """Close every channel."""
        await self._channels.close()
