"""Client quotas' arithmetic (``lanes.security.quotas``), as Kafka's: rates over 11 one-second
windows (at least ten seconds), and a throttle that drains the excess at the quota's rate; which
quota a call falls under (``lanes.security.quota_entities``), as Kafka's precedence (KIP-55)."""

from __future__ import annotations

import pytest

from lanes.metadata.image import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE, MetadataImage
from lanes.security.quota_entities import DEFAULT, QuotaEntity, candidates
from lanes.security.quotas import MAX_THROTTLE_MS, MAX_WIRE_MS, SAMPLES, ClientQuotas, MutationBuckets, window_bytes
from lanes.v1 import metadata_pb2

A = QuotaEntity("a")
B = QuotaEntity("b")


def test_within_the_quota_nothing_is_throttled_and_without_one_nothing_is_recorded() -> None:
    quotas = ClientQuotas()
    assert quotas.record(A, PRODUCER_BYTE_RATE, 10 * 1000, 1000.0, now_s=0.0) == 0  # 10 kB over >= 10 s
    assert quotas.record(B, PRODUCER_BYTE_RATE, 10**9, None, now_s=0.0) == 0
    assert len(quotas) == 1


def test_the_excess_drains_at_the_quotas_rate() -> None:
    quotas = ClientQuotas()
    # 20 kB at once against 1 kB/s: the rate is 20 kB / 10 s = 2 kB/s; the 10 kB over take 10 s
    assert quotas.record(A, PRODUCER_BYTE_RATE, 20_000, 1000.0, now_s=0.0) == MAX_THROTTLE_MS
    quotas = ClientQuotas()
    assert quotas.record(A, PRODUCER_BYTE_RATE, 15_000, 1000.0, now_s=0.0) == 5_000
    assert quotas.owed_ms(A, PRODUCER_BYTE_RATE, 1000.0, now_s=0.0) == 5_000
    assert quotas.owed_ms(A, CONSUMER_BYTE_RATE, 1000.0, now_s=0.0) == 0, "keys are measured apart"
    assert quotas.owed_ms(QuotaEntity("other"), PRODUCER_BYTE_RATE, 1000.0, now_s=0.0) == 0, "users are measured apart"
    # after the window, what was recorded is forgotten
    assert quotas.owed_ms(A, PRODUCER_BYTE_RATE, 1000.0, now_s=SAMPLES + 1.0) == 0


def test_a_steady_rate_under_the_quota_is_never_throttled() -> None:
    quotas = ClientQuotas()
    throttles = [quotas.record(A, CONSUMER_BYTE_RATE, 900, 1000.0, now_s=t + 0.5) for t in range(60)]
    assert max(throttles) == 0
    over = [quotas.record(A, CONSUMER_BYTE_RATE, 2000, 1000.0, now_s=60.0 + t) for t in range(30)]
    assert over[-1] > 0, "twice the quota for long enough is throttled"


def test_idle_users_are_forgotten() -> None:
    quotas = ClientQuotas()
    for user in range(100):
        quotas.record(QuotaEntity(f"u{user}"), PRODUCER_BYTE_RATE, 1, 1000.0, now_s=0.0)
    quotas.record(QuotaEntity("late"), PRODUCER_BYTE_RATE, 1, 1000.0, now_s=3.0 * SAMPLES)
    assert len(quotas) == 1


def _image_with(quotas: list[tuple[QuotaEntity, str, float | None]]) -> MetadataImage:
    image = MetadataImage()
    for offset, (entity, key, rate) in enumerate(quotas):
        record = metadata_pb2.ClientQuotaRecord(entity=entity.to_proto(), key=key, value=rate)
        image.apply(offset, metadata_pb2.MetadataRecord(client_quota=record))
    return image


def test_a_users_own_quota_wins_over_the_default_and_each_default_user_is_measured_alone() -> None:
    image = _image_with(
        [(QuotaEntity(DEFAULT), PRODUCER_BYTE_RATE, 100.0), (QuotaEntity("alice"), PRODUCER_BYTE_RATE, 5.0)]
    )
    assert image.client_quota("alice", "app", PRODUCER_BYTE_RATE) == (QuotaEntity("alice"), 5.0)
    assert image.client_quota("bob", "app", PRODUCER_BYTE_RATE) == (QuotaEntity("bob"), 100.0)
    assert image.client_quota("bob", "app", CONSUMER_BYTE_RATE) is None
    rebuilt = MetadataImage.from_snapshot(image.to_records(), image.last_offset)
    assert rebuilt.client_quotas == image.client_quotas
    image.apply(
        2,
        metadata_pb2.MetadataRecord(
            client_quota=metadata_pb2.ClientQuotaRecord(entity=QuotaEntity("alice").to_proto(), key=PRODUCER_BYTE_RATE)
        ),
    )
    assert image.client_quota("alice", "app", PRODUCER_BYTE_RATE) == (QuotaEntity("alice"), 100.0)


def test_kafkas_precedence_of_user_and_client_id_quotas() -> None:
    """KIP-55's order, each entity removed in turn: the first with a quota for the key wins, and
    what is measured has the caller's names where the entity has defaults."""
    order = [  # KIP-55, as Kafka's documentation lists it
        QuotaEntity("alice", "app"),
        QuotaEntity("alice", DEFAULT),
        QuotaEntity("alice", None),
        QuotaEntity(DEFAULT, "app"),
        QuotaEntity(DEFAULT, DEFAULT),
        QuotaEntity(DEFAULT, None),
        QuotaEntity(None, "app"),
        QuotaEntity(None, DEFAULT),
    ]
    assert list(candidates("alice", "app")) == order
    image = _image_with([(entity, REQUEST_PERCENTAGE, float(rank + 1)) for rank, entity in enumerate(order)])
    measured = [
        QuotaEntity("alice", "app"),
        QuotaEntity("alice", "app"),
        QuotaEntity("alice"),
        QuotaEntity("alice", "app"),
        QuotaEntity("alice", "app"),
        QuotaEntity("alice"),
        QuotaEntity(None, "app"),
        QuotaEntity(None, "app"),
    ]
    for rank, entity in enumerate(order):
        assert image.client_quota("alice", "app", REQUEST_PERCENTAGE) == (measured[rank], float(rank + 1)), entity
        image.apply(
            100 + rank,
            metadata_pb2.MetadataRecord(
                client_quota=metadata_pb2.ClientQuotaRecord(entity=entity.to_proto(), key=REQUEST_PERCENTAGE)
            ),
        )
    assert image.client_quota("alice", "app", REQUEST_PERCENTAGE) is None
    assert not image.client_quotas


def test_client_id_quotas_apply_across_users_and_a_users_client_id_quota_to_that_user_only() -> None:
    image = _image_with(
        [
            (QuotaEntity(None, "batch"), PRODUCER_BYTE_RATE, 10.0),
            (QuotaEntity("alice", "batch"), PRODUCER_BYTE_RATE, 50.0),
        ]
    )
    assert image.client_quota("bob", "batch", PRODUCER_BYTE_RATE) == (QuotaEntity(None, "batch"), 10.0)
    assert image.client_quota("carol", "batch", PRODUCER_BYTE_RATE) == (QuotaEntity(None, "batch"), 10.0), (
        "one client id shared by several users is measured together"
    )
    assert image.client_quota("alice", "batch", PRODUCER_BYTE_RATE) == (QuotaEntity("alice", "batch"), 50.0)
    assert image.client_quota("alice", "web", PRODUCER_BYTE_RATE) is None
    assert image.client_quota("alice", "", PRODUCER_BYTE_RATE) is None


@pytest.mark.parametrize(
    ("entity", "problem"),
    [
        (QuotaEntity(), "a quota is for a user, a client id, or both"),
        (QuotaEntity("no spaces please"), "is not a user name"),
        (QuotaEntity(None, ""), "is not a client id"),
        (QuotaEntity(None, "x" * 256), "is not a client id"),
        (QuotaEntity(None, "tab\there"), "is not a client id"),
    ],
)
def test_entities_that_cannot_hold_a_quota_say_why(entity: QuotaEntity, problem: str) -> None:
    assert problem in (entity.problem() or "")


def test_entities_travel_as_records_and_unknown_shapes_are_ignored() -> None:
    for entity in (QuotaEntity("a"), QuotaEntity(DEFAULT, "c"), QuotaEntity(None, DEFAULT), QuotaEntity("a", DEFAULT)):
        assert QuotaEntity.from_proto(entity.to_proto()) == entity
    twice = [metadata_pb2.QuotaEntityPart(type="user", name="a"), metadata_pb2.QuotaEntityPart(type="user", name="b")]
    assert QuotaEntity.from_proto(twice) is None
    assert QuotaEntity.from_proto([metadata_pb2.QuotaEntityPart(type="ip", name="1.2.3.4")]) is None
    image = MetadataImage()
    image.apply(0, metadata_pb2.MetadataRecord(client_quota=metadata_pb2.ClientQuotaRecord(key="x", value=1.0)))
    assert not image.client_quotas, "a record naming no entity holds nothing"


def test_one_fetch_answer_carries_at_most_the_quotas_window() -> None:
    assert window_bytes(1024.0) == 10 * 1024
    assert window_bytes(0.01) == 1, "at least a byte: a fetch always may read something"


def test_mutation_buckets_allow_a_burst_and_tell_the_exact_wait() -> None:
    """KIP-599's token bucket: full at first (11 s of the quota), a change accepted while it is
    not negative may take it below zero, and the wait is what refills it to zero."""
    buckets = MutationBuckets()
    assert buckets.owed_ms(QuotaEntity("alice"), 2.0, 0.0) == 0
    assert buckets.record(QuotaEntity("alice"), 30, 2.0, 0.0) == 4_000  # 22 - 30 = -8 tokens, 2 per second
    assert buckets.owed_ms(QuotaEntity("alice"), 2.0, 3.0) == 1_000
    assert buckets.owed_ms(QuotaEntity("alice"), 2.0, 4.0) == 0
    assert buckets.owed_ms(QuotaEntity("bob"), 2.0, 0.0) == 0, "each user has its own bucket"
    assert buckets.record(QuotaEntity("alice"), 1, 2.0, 100.0) == 0, "refilled, up to the burst"
    assert buckets.record(QuotaEntity("alice"), 21, 2.0, 100.0) == 0, "21 + 1 = 22: the burst, not below zero"
    assert buckets.owed_ms(QuotaEntity("alice"), 2.0, 100.0) == 0
    assert buckets.record(QuotaEntity("alice"), 10**12, 1e-3, 200.0) == MAX_WIRE_MS, "what fits an int32"
    assert buckets.record(QuotaEntity("carol"), 30, 2.0, 300.0) == 4_000
    assert buckets.owed_ms(QuotaEntity("carol"), 8.0, 300.0) == 1_000, "a raised quota refills at its rate at once"
    assert buckets.owed_ms(QuotaEntity("carol"), 8.0, 300.5) == 500
    assert len(buckets) == 2
    buckets.record(QuotaEntity("bob"), 1, 2.0, 10**16)  # alice's and carol's buckets refilled (in a long while): pruned
    assert len(buckets) == 1


def test_an_entity_is_muted_for_the_time_it_was_told_not_until_the_measure_drops() -> None:
    """Within the first window the measure's span is fixed at ten seconds, so the debt does not
    shrink by waiting; the mute is what the recorded amount earned (Kafka's), and a client that
    pauses for the time it was told is then let in."""
    quotas = ClientQuotas()
    told = quotas.record(A, PRODUCER_BYTE_RATE, 10_500, 1000.0, now_s=0.0)  # 500 bytes over: 500 ms
    assert told == 500
    assert quotas.muted_ms(A, PRODUCER_BYTE_RATE, now_s=0.2) == 300
    assert quotas.owed_ms(A, PRODUCER_BYTE_RATE, 1000.0, now_s=0.5) == 500, "the measure has not dropped"
    assert quotas.muted_ms(A, PRODUCER_BYTE_RATE, now_s=0.5) == 0, "but the mute is over"
    assert quotas.record(A, PRODUCER_BYTE_RATE, 100, 1000.0, now_s=0.5) == 600, "the next amount is told again"
    assert quotas.muted_ms(B, PRODUCER_BYTE_RATE, now_s=0.5) == 0
