"""Client quotas' arithmetic (``lanes.security.quotas``), as Kafka's: rates over 11 one-second
windows (at least ten seconds), and a throttle that drains the excess at the quota's rate."""

from __future__ import annotations

from lanes.metadata.image import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, MetadataImage
from lanes.security.quotas import MAX_THROTTLE_MS, MAX_WIRE_MS, SAMPLES, ClientQuotas, MutationBuckets, window_bytes
from lanes.v1 import metadata_pb2


def test_within_the_quota_nothing_is_throttled_and_without_one_nothing_is_recorded() -> None:
    quotas = ClientQuotas()
    assert quotas.record("User:a", PRODUCER_BYTE_RATE, 10 * 1000, 1000.0, now_s=0.0) == 0  # 10 kB over >= 10 s
    assert quotas.record("User:b", PRODUCER_BYTE_RATE, 10**9, None, now_s=0.0) == 0
    assert len(quotas) == 1


def test_the_excess_drains_at_the_quotas_rate() -> None:
    quotas = ClientQuotas()
    # 20 kB at once against 1 kB/s: the rate is 20 kB / 10 s = 2 kB/s; the 10 kB over take 10 s
    assert quotas.record("User:a", PRODUCER_BYTE_RATE, 20_000, 1000.0, now_s=0.0) == MAX_THROTTLE_MS
    quotas = ClientQuotas()
    assert quotas.record("User:a", PRODUCER_BYTE_RATE, 15_000, 1000.0, now_s=0.0) == 5_000
    assert quotas.owed_ms("User:a", PRODUCER_BYTE_RATE, 1000.0, now_s=0.0) == 5_000
    assert quotas.owed_ms("User:a", CONSUMER_BYTE_RATE, 1000.0, now_s=0.0) == 0, "keys are measured apart"
    assert quotas.owed_ms("User:other", PRODUCER_BYTE_RATE, 1000.0, now_s=0.0) == 0, "users are measured apart"
    # after the window, what was recorded is forgotten
    assert quotas.owed_ms("User:a", PRODUCER_BYTE_RATE, 1000.0, now_s=SAMPLES + 1.0) == 0


def test_a_steady_rate_under_the_quota_is_never_throttled() -> None:
    quotas = ClientQuotas()
    throttles = [quotas.record("User:a", CONSUMER_BYTE_RATE, 900, 1000.0, now_s=t + 0.5) for t in range(60)]
    assert max(throttles) == 0
    over = [quotas.record("User:a", CONSUMER_BYTE_RATE, 2000, 1000.0, now_s=60.0 + t) for t in range(30)]
    assert over[-1] > 0, "twice the quota for long enough is throttled"


def test_idle_users_are_forgotten() -> None:
    quotas = ClientQuotas()
    for user in range(100):
        quotas.record(f"User:{user}", PRODUCER_BYTE_RATE, 1, 1000.0, now_s=0.0)
    quotas.record("User:late", PRODUCER_BYTE_RATE, 1, 1000.0, now_s=3.0 * SAMPLES)
    assert len(quotas) == 1


def test_a_users_own_quota_wins_over_the_default() -> None:
    image = MetadataImage()
    for offset, record in enumerate(
        [
            metadata_pb2.ClientQuotaRecord(key=PRODUCER_BYTE_RATE, value=100.0),
            metadata_pb2.ClientQuotaRecord(user="alice", key=PRODUCER_BYTE_RATE, value=5.0),
        ]
    ):
        image.apply(offset, metadata_pb2.MetadataRecord(client_quota=record))
    assert image.client_quota("alice", PRODUCER_BYTE_RATE) == 5.0
    assert image.client_quota("bob", PRODUCER_BYTE_RATE) == 100.0
    assert image.client_quota("bob", CONSUMER_BYTE_RATE) is None
    rebuilt = MetadataImage.from_snapshot(image.to_records(), image.last_offset)
    assert rebuilt.client_quotas == image.client_quotas
    image.apply(
        2,
        metadata_pb2.MetadataRecord(client_quota=metadata_pb2.ClientQuotaRecord(user="alice", key=PRODUCER_BYTE_RATE)),
    )
    assert image.client_quota("alice", PRODUCER_BYTE_RATE) == 100.0


def test_one_fetch_answer_carries_at_most_the_quotas_window() -> None:
    assert window_bytes(1024.0) == 10 * 1024
    assert window_bytes(0.01) == 1, "at least a byte: a fetch always may read something"


def test_mutation_buckets_allow_a_burst_and_tell_the_exact_wait() -> None:
    """KIP-599's token bucket: full at first (11 s of the quota), a change accepted while it is
    not negative may take it below zero, and the wait is what refills it to zero."""
    buckets = MutationBuckets()
    assert buckets.owed_ms("alice", 2.0, 0.0) == 0
    assert buckets.record("alice", 30, 2.0, 0.0) == 4_000  # 22 - 30 = -8 tokens, 2 per second
    assert buckets.owed_ms("alice", 2.0, 3.0) == 1_000
    assert buckets.owed_ms("alice", 2.0, 4.0) == 0
    assert buckets.owed_ms("bob", 2.0, 0.0) == 0, "each user has its own bucket"
    assert buckets.record("alice", 1, 2.0, 100.0) == 0, "refilled, up to the burst"
    assert buckets.record("alice", 21, 2.0, 100.0) == 0, "21 + 1 = 22: the burst, not below zero"
    assert buckets.owed_ms("alice", 2.0, 100.0) == 0
    assert buckets.record("alice", 10**12, 1e-3, 200.0) == MAX_WIRE_MS, "what fits an int32"
    assert buckets.record("carol", 30, 2.0, 300.0) == 4_000
    assert buckets.owed_ms("carol", 8.0, 300.0) == 1_000, "a raised quota refills at its rate at once"
    assert buckets.owed_ms("carol", 8.0, 300.5) == 500
    assert len(buckets) == 2
    buckets.record("bob", 1, 2.0, 10**16)  # alice's and carol's buckets refilled (in a long while): pruned
    assert len(buckets) == 1
