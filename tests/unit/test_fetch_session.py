"""Fetch sessions (KIP-227): after a full first request, a follower names only partitions whose
position moved, forgotten partitions leave the session, and a lost request or answer (an epoch
that does not follow) or an unknown session ends it, so the follower starts over in full."""

from __future__ import annotations

import itertools

from lanes.broker.fetch_session import FULL_EPOCH, NO_SESSION, FetchPosition, FetchSessionBuilder, FetchSessionCache
from lanes.errors import ErrorCode
from lanes.topic_partition import TopicPartition

A, B, C = (TopicPartition("orders", i) for i in range(3))


def at(offset: int) -> FetchPosition:
    return FetchPosition("id", 1, offset, 1, 0, 1 << 20)


def test_a_session_names_only_what_moved_and_forgets_what_left() -> None:
    ids = itertools.count(7)
    cache = FetchSessionCache(lambda: next(ids))
    follower = FetchSessionBuilder()
    positions = {A: at(0), B: at(0), C: at(0)}

    named, forgotten = follower.request(positions)
    assert (follower.session_id, follower.epoch, set(named), forgotten) == (NO_SESSION, FULL_EPOCH, {A, B, C}, [])
    resolved = cache.resolve(2, follower.session_id, follower.epoch, named, forgotten)
    assert not isinstance(resolved, ErrorCode)
    session, full = resolved
    assert full
    follower.answered(session.session_id, positions)

    positions = {A: at(5), B: at(0)}  # A moved, C is no longer followed from this leader
    named, forgotten = follower.request(positions)
    assert (follower.session_id, follower.epoch, named, forgotten) == (7, 1, {A: at(5)}, [C])
    resolved = cache.resolve(2, follower.session_id, follower.epoch, named, forgotten)
    assert not isinstance(resolved, ErrorCode)
    session, full = resolved
    assert not full
    assert {key: entry.position for key, entry in session.partitions.items()} == {A: at(5), B: at(0)}
    follower.answered(session.session_id, positions)
    assert follower.request(positions) == ({}, []), "an idle follower names nothing"


def test_the_session_tells_offsets_once() -> None:
    cache = FetchSessionCache(lambda: 9)
    resolved = cache.resolve(2, NO_SESSION, FULL_EPOCH, {A: at(0)}, [])
    assert not isinstance(resolved, ErrorCode)
    session, _ = resolved
    assert session.must_answer(A, 10, 0)
    session.answered(A, 10, 0)
    assert not session.must_answer(A, 10, 0)
    assert session.must_answer(A, 11, 0), "a new high-water mark is told"
    assert session.must_answer(A, 10, 3), "a new log start is told"


def test_a_lost_exchange_or_a_forgotten_session_ends_it() -> None:
    ids = itertools.count(1)
    cache = FetchSessionCache(lambda: next(ids))
    assert cache.resolve(2, 5, 1, {}, []) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    resolved = cache.resolve(2, NO_SESSION, FULL_EPOCH, {A: at(0)}, [])
    assert not isinstance(resolved, ErrorCode)
    session_id = resolved[0].session_id
    assert not isinstance(cache.resolve(2, session_id, 1, {}, []), ErrorCode)
    # the answer to epoch 2 was lost: the follower's next request still says 2 after a retry of
    # a request the leader served, or skips one; either way the epochs no longer follow
    assert not isinstance(cache.resolve(2, session_id, 2, {}, []), ErrorCode)
    assert cache.resolve(2, session_id, 2, {}, []) is ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.resolve(2, session_id, 3, {}, []) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "the session is gone"
    follower = FetchSessionBuilder()
    follower.answered(session_id, {A: at(0)})
    follower.reset()
    assert follower.request({A: at(0)}) == ({A: at(0)}, []), "after an error the follower asks in full"
    assert len(cache) == 0


def test_a_new_full_request_replaces_the_followers_session() -> None:
    ids = itertools.count(1)
    cache = FetchSessionCache(lambda: next(ids))
    first = cache.resolve(2, NO_SESSION, FULL_EPOCH, {A: at(0)}, [])
    second = cache.resolve(2, NO_SESSION, FULL_EPOCH, {B: at(0)}, [])
    assert not isinstance(first, ErrorCode)
    assert not isinstance(second, ErrorCode)
    assert cache.resolve(2, first[0].session_id, 1, {}, []) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert len(cache) == 1, "one session per follower broker"
