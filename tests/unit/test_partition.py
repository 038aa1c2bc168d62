"""A ``Partition`` owns a replica's log, role, high-water mark and producer state: writes of an
ended role are refused, a follower keeps producer state as it appends (a new leader recognises a
retry at once), and producer state survives restarts and truncations through snapshot files
(Kafka's ``.snapshot``) without replaying the whole log."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanes.broker.partition import FetchedPartition, IsrProposal, Leading, Partition
from lanes.broker.producer_snapshots import SNAPSHOT_SUFFIX, ProducerSnapshots
from lanes.clock import ManualClock
from lanes.errors import ErrorCode, LanesError
from lanes.protocol.records import BatchHeader, Record, encode_batch, validate_batches
from lanes.storage.log import LogConfig, PartitionLog
from lanes.topic_partition import TopicPartition

KEY = TopicPartition("orders", 0)
CLOCK = ManualClock()
SMALL_SEGMENTS = LogConfig.from_topic_configs({"segment.bytes": "1024"})


def open_partition(directory: Path, config: LogConfig = SMALL_SEGMENTS) -> Partition:
    return Partition(KEY, "topic-id", PartitionLog.open(directory, config, clock=CLOCK))


def lead(partition: Partition, epoch: int, *, isr: list[int] | None = None) -> None:
    partition.make_leader(
        leader_epoch=epoch,
        partition_epoch=epoch,
        replicas=[1, 2],
        isr=isr or [1],
        min_insync_replicas=1,
        leader_id=1,
        now_ms=0,
        replica_lag_time_max_ms=10_000,
    )


def batch(producer_id: int, sequence: int, records: int = 4, epoch: int = 0) -> tuple[bytes, list[BatchHeader]]:
    data = encode_batch(
        [Record(i, CLOCK.now_ms(), b"k", b"v" * 40) for i in range(records)],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
    )
    return data, validate_batches(data, producer_batch=True)


def produce(partition: Partition, producer_id: int, sequence: int, epoch: int = 1) -> object:
    data, headers = batch(producer_id, sequence)
    return partition.append_as_leader(data, headers, leader_epoch=epoch, acks_all=False)


def fill(partition: Partition, end: int = 80, producer_id: int = 7) -> None:
    """Batches of 4 records from one producer up to sequence ``end``: several segments."""
    for sequence in range(0, end, 4):
        produce(partition, producer_id, sequence)


def filled_and_closed(directory: Path) -> Path:
    """A partition led at epoch 1, ``fill``ed (snapshots at its rolls), closed: its directory."""
    partition = open_partition(directory)
    lead(partition, 1)
    fill(partition)
    partition.close()
    partition.log.close()
    return directory


def snapshots(directory: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in directory.glob(f"*{SNAPSHOT_SUFFIX}"))


def test_writes_of_an_ended_leadership_are_refused(tmp_path: Path) -> None:
    partition = open_partition(tmp_path / "orders-0")
    lead(partition, 1)
    produce(partition, 7, 0)
    lead(partition, 2)
    with pytest.raises(LanesError) as refused:
        produce(partition, 7, 4, epoch=1)
    assert refused.value.code is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert partition.acks_all_outcome(1, 1) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    partition.make_follower(leader_id=2, leader_epoch=3)
    with pytest.raises(LanesError):
        produce(partition, 7, 4, epoch=2)
    assert partition.log.log_end_offset == 4


def test_acks_all_below_min_insync_replicas_appends_nothing(tmp_path: Path) -> None:
    partition = open_partition(tmp_path / "orders-0")
    partition.make_leader(
        leader_epoch=1,
        partition_epoch=1,
        replicas=[1, 2],
        isr=[1],
        min_insync_replicas=2,
        leader_id=1,
        now_ms=0,
        replica_lag_time_max_ms=10_000,
    )
    data, headers = batch(7, 0)
    with pytest.raises(LanesError) as refused:
        partition.append_as_leader(data, headers, leader_epoch=1, acks_all=True)
    assert refused.value.code is ErrorCode.NOT_ENOUGH_REPLICAS
    assert partition.log.log_end_offset == 0


def test_a_follower_keeps_producer_state_so_a_new_leader_recognises_a_retry(tmp_path: Path) -> None:
    leader = open_partition(tmp_path / "leader")
    lead(leader, 1)
    fill(leader, 40)
    follower = open_partition(tmp_path / "follower")
    follower.make_follower(leader_id=1, leader_epoch=1)
    while (end := follower.log.log_end_offset) < 40:  # one segment per read, as a fetch gets
        records = leader.log.read(end, 1 << 20).records
        fetched = FetchedPartition(ErrorCode.NONE, high_watermark=40, log_start_offset=0, records=records)
        assert follower.apply_fetched(1, end, fetched)
    assert follower.log.log_end_offset == 40
    lead(follower, 2)
    retry = produce(follower, 7, 36, epoch=2)
    assert getattr(retry, "duplicate_of", None) is not None, "the retry of the last batch is a duplicate"
    assert produce(follower, 7, 40, epoch=2).first_offset == 40  # type: ignore[attr-defined]


def test_producer_state_comes_back_from_snapshots_after_a_restart(tmp_path: Path) -> None:
    directory = tmp_path / "orders-0"
    partition = open_partition(directory)
    lead(partition, 1)
    fill(partition)
    assert snapshots(directory), "a snapshot at each segment roll"
    assert all(offset in {s.base_offset for s in partition.log.segments()} for offset in snapshots(directory))
    partition.close()
    assert snapshots(directory)[-1] == 80, "and one at the log end on a clean close"
    partition.log.close()
    reopened = open_partition(directory)
    lead(reopened, 2)
    assert getattr(produce(reopened, 7, 76, epoch=2), "duplicate_of", None) is not None
    assert getattr(produce(reopened, 7, 72, epoch=2), "duplicate_of", None) is not None


def test_producers_outlive_their_deleted_batches_through_a_restart(tmp_path: Path) -> None:
    """Only a snapshot can know producer 8 after a restart: its batches are gone from the log."""
    directory = tmp_path / "orders-0"
    partition = open_partition(directory)
    lead(partition, 1)
    produce(partition, 8, 0)
    fill(partition)
    partition.log.update_high_watermark(partition.log.log_end_offset)
    partition.log.delete_records_before(70)
    assert partition.log.segments()[0].base_offset > 0, "producer 8's batch is deleted"
    partition.close()
    partition.log.close()
    reopened = open_partition(directory)
    lead(reopened, 2)
    assert produce(reopened, 8, 4, epoch=2).first_offset == 84  # type: ignore[attr-defined]


def test_a_torn_snapshot_falls_back_to_an_older_one(tmp_path: Path) -> None:
    directory = filled_and_closed(tmp_path / "orders-0")
    newest = directory / f"{snapshots(directory)[-1]:020d}{SNAPSHOT_SUFFIX}"
    newest.write_bytes(newest.read_bytes()[:-3])
    reopened = open_partition(directory)
    assert not newest.exists(), "the torn snapshot is deleted"
    lead(reopened, 2)
    assert getattr(produce(reopened, 7, 76, epoch=2), "duplicate_of", None) is not None


def test_a_snapshot_listed_at_the_logs_open_and_gone_since_is_skipped(tmp_path: Path) -> None:
    """The partition takes the log's own directory listing (one listing per open); a snapshot
    in it that is gone when the partition loads (deleted by an earlier, failed attempt) is
    skipped for an older one, not a failure at every retry. The listing is taken once: a later
    partition over the same open log lists the directory itself."""
    directory = filled_and_closed(tmp_path / "orders-0")
    log = PartitionLog.open(directory, SMALL_SEGMENTS, clock=CLOCK)
    assert log.names_at_open is not None
    (directory / f"{snapshots(directory)[-1]:020d}{SNAPSHOT_SUFFIX}").unlink()
    reopened = Partition(KEY, "topic-id", log)
    assert log.names_at_open is None, "taken"
    lead(reopened, 2)
    assert getattr(produce(reopened, 7, 76, epoch=2), "duplicate_of", None) is not None


def test_a_truncated_follower_reloads_producer_state_below_the_cut(tmp_path: Path) -> None:
    directory = tmp_path / "orders-0"
    partition = open_partition(directory)
    lead(partition, 1)
    fill(partition)
    partition.make_follower(leader_id=2, leader_epoch=2)
    # the new leader's epoch 1 ended at offset 60: everything from there goes
    partition.apply_fetched(2, 80, FetchedPartition(ErrorCode.NONE, 0, 0, diverging=(1, 60)))
    assert partition.log.log_end_offset == 60
    assert all(offset <= 60 for offset in snapshots(directory)), "snapshots beyond the cut are gone"
    lead(partition, 3)
    assert getattr(produce(partition, 7, 56, epoch=3), "duplicate_of", None) is not None
    assert produce(partition, 7, 60, epoch=3).first_offset == 60  # type: ignore[attr-defined]


def test_idle_producers_expire_and_old_snapshots_go_with_retention(tmp_path: Path) -> None:
    directory = tmp_path / "orders-0"
    partition = open_partition(directory)
    lead(partition, 1)
    fill(partition)
    produce(partition, 8, 0)
    assert partition.producer_count == 2
    assert partition.maintain(CLOCK.now_ms() + 1_000, producer_id_expiration_ms=60_000) == 0
    assert partition.maintain(CLOCK.now_ms() + 61_000, producer_id_expiration_ms=60_000) == 2
    assert partition.producer_count == 0
    partition.log.update_high_watermark(partition.log.log_end_offset)
    partition.log.delete_records_before(70)
    partition.maintain(CLOCK.now_ms(), producer_id_expiration_ms=60_000)
    kept = snapshots(directory)
    assert [offset for offset in kept if offset <= 70] == [max(o for o in kept if o <= 70)]


def test_a_failed_snapshot_write_never_leaves_the_table_behind_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    partition = open_partition(tmp_path / "orders-0")
    lead(partition, 1)
    monkeypatch.setattr(ProducerSnapshots, "write", disk_full)
    fill(partition)  # rolls segments: each roll's snapshot write fails
    assert partition.log.segment_count > 1
    assert getattr(produce(partition, 7, 76), "duplicate_of", None) is not None, "the retry is still recognised"


def test_a_failed_reload_after_a_truncation_forgets_rather_than_remembers_cut_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(*args: object) -> None:
        raise OSError(5, "Input/output error")

    partition = open_partition(tmp_path / "orders-0")
    lead(partition, 1)
    fill(partition)
    partition.make_follower(leader_id=2, leader_epoch=2)
    monkeypatch.setattr(ProducerSnapshots, "load", unreadable)
    with pytest.raises(OSError, match="Input/output error"):
        partition.apply_fetched(2, 80, FetchedPartition(ErrorCode.NONE, 0, 0, diverging=(1, 60)))
    assert partition.log.log_end_offset == 60
    assert partition.producer_count == 0, "a retry of a cut batch is never answered as written"


def test_delete_records_is_refused_on_a_compacted_only_partition(tmp_path: Path) -> None:
    """Issue #23: anyone could DeleteRecords on a compacted topic (``__consumer_offsets`` too),
    losing keys' latest values; Kafka refuses unless cleanup.policy includes delete."""
    compacted = open_partition(tmp_path / "orders-0", LogConfig.from_topic_configs({"cleanup.policy": "compact"}))
    lead(compacted, 1)
    with pytest.raises(LanesError, match=r"needs cleanup\.policy to include delete") as refused:
        compacted.delete_records_before(1, 0)
    assert refused.value.code is ErrorCode.POLICY_VIOLATION
    both = open_partition(tmp_path / "orders-1", LogConfig.from_topic_configs({"cleanup.policy": "compact,delete"}))
    lead(both, 1)
    assert both.delete_records_before(1, 0) == 0


def test_a_late_alter_partition_answer_never_puts_an_older_isr_back(tmp_path: Path) -> None:
    """The metadata brought partition epoch 6 (broker 3 fenced out of the ISR) before the answer
    accepting epoch 5 (broker 3 added) arrived: the answer is history."""
    partition = open_partition(tmp_path)
    partition.make_leader(
        leader_epoch=1, partition_epoch=4, replicas=[1, 2, 3], isr=[1, 2], min_insync_replicas=1,
        leader_id=1, now_ms=0, replica_lag_time_max_ms=10_000,
    )  # fmt: skip
    proposal = IsrProposal(1, 4, [1, 2, 3], [-1, 7, 7])
    partition.make_leader(
        leader_epoch=1, partition_epoch=6, replicas=[1, 2, 3], isr=[1, 2], min_insync_replicas=1,
        leader_id=1, now_ms=0, replica_lag_time_max_ms=10_000,
    )  # fmt: skip
    partition.on_isr_answer(proposal, ErrorCode.NONE, [1, 2, 3], 5)
    role = partition.role
    assert isinstance(role, Leading)
    assert (role.partition_epoch, role.replica.isr) == (6, [1, 2])
