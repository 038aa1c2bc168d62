"""The partition log against a simple in-memory model, over random operation sequences:
appends, reads, rolls, truncations, retention, DeleteRecords, clean reopens and crashes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from lanes.clock import ManualClock
from lanes.errors import OffsetOutOfRangeError
from lanes.protocol.records import Record, decode_batches
from lanes.storage.files import FileCache
from lanes.storage.log import PartitionLog
from tests.unit.log_helpers import assert_indexes_agree_with_a_full_scan, config, producer_batch, read_all

values = st.lists(st.binary(min_size=0, max_size=120), min_size=1, max_size=6)


class LogMachine(RuleBasedStateMachine):
    """Model: the list of records the log must hold, its log start offset and end offset."""

    @initialize(segment_bytes=st.sampled_from([300, 700, 5000]), interval=st.sampled_from([0, 64, 4096]))
    def open(self, segment_bytes: int, interval: int) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="lanes-log-model-"))
        self.clock = ManualClock()
        self.files = FileCache(max_open_files=4)  # small: eviction is part of every run
        self.config = config(segment_bytes=segment_bytes, index_interval_bytes=interval, retention_ms=60_000)
        self.log = PartitionLog.open(self.directory, self.config, clock=self.clock, files=self.files)
        self.records: list[Record] = []
        self.log_start = 0
        self.log_end = 0
        self.epoch = 0

    def teardown(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    @rule(batch_values=values, advance_ms=st.integers(0, 30_000))
    def append(self, batch_values: list[bytes], advance_ms: int) -> None:
        self.clock.advance(advance_ms)
        now = self.clock.now_ms()
        info = self.log.append_as_leader(producer_batch(batch_values, now), leader_epoch=self.epoch)
        assert info.first_offset == self.log_end
        for index, value in enumerate(batch_values):
            self.records.append(Record(self.log_end + index, now, None, value))
        self.log_end += len(batch_values)
        assert info.last_offset == self.log_end - 1
        assert self.log.update_high_watermark(self.log_end) == self.log_end  # a single replica

    @rule(data=st.data(), max_bytes=st.integers(1, 2000))
    def read(self, data: st.DataObject, max_bytes: int) -> None:
        offset = data.draw(st.integers(self.log_start, self.log_end), label="offset")
        result = self.log.read(offset, max_bytes)
        batches = decode_batches(result.records)
        if offset == self.log_end:
            assert batches == []
            return
        assert batches, "min_one_batch: a read below the log end returns at least one batch"
        assert len(batches) == 1 or len(result.records) <= max_bytes
        got = [r for b in batches for r in b.records]
        assert got[0].offset <= offset <= got[-1].offset
        # The first batch may start before `offset`, even below the log start: readers skip those.
        got = [r for r in got if r.offset >= self.log_start]
        expected = [r for r in self.records if got[0].offset <= r.offset <= got[-1].offset]
        assert got == expected
        assert result.next_offset == got[-1].offset + 1

    @rule(data=st.data())
    def read_below_start_or_beyond_end_is_refused(self, data: st.DataObject) -> None:
        offset = data.draw(st.sampled_from([self.log_start - 1, self.log_end + 1]))
        try:
            self.log.read(offset, 100)
        except OffsetOutOfRangeError:
            return
        raise AssertionError(f"reading offset {offset} outside {self.log_start}..{self.log_end} succeeded")

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @precondition(lambda self: self.log_end > self.log_start)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(self.log_start + 1, self.log_end), label="target")
        new_end = self.log.truncate_to(target)
        # Truncation removes whole batches: the batch holding `target` goes if target is inside it.
        assert new_end <= target
        self.records = [r for r in self.records if r.offset < new_end]
        assert self.records == [] or self.records[-1].offset == new_end - 1 or new_end == self.log_start
        self.log_end = new_end
        self.epoch += 1

    @precondition(lambda self: self.log_end > self.log_start)
    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(self.log_start, self.log_end), label="delete before")
        assert self.log.delete_records_before(target) == target
        self.log_start = target
        self.records = [r for r in self.records if r.offset >= target]

    @rule(advance_ms=st.integers(0, 90_000))
    def retention(self, advance_ms: int) -> None:
        self.clock.advance(advance_ms)
        before = [s.base_offset for s in self.log.segments()]
        self.log.apply_retention()
        after = self.log.segments()
        horizon = self.clock.now_ms() - 60_000
        assert after[-1].base_offset == before[-1], "the active segment is never deleted"
        if len(after) > 1:
            assert after[0].max_timestamp >= horizon, "deletion stops at the first unexpired segment"
        self.log_start = max(self.log_start, self.log.log_start_offset)
        self.records = [r for r in self.records if r.offset >= self.log_start]

    @rule()
    def reopen_cleanly(self) -> None:
        self.log.close()
        self.log = PartitionLog.open(self.directory, self.config, clock=self.clock, files=self.files)
        assert self.log.recovered_bytes_cut == 0

    @rule()
    def crash_and_reopen(self) -> None:
        """The process dies (the page cache survives): nothing acknowledged is lost."""
        for segment in self.log.segments():
            segment.release_files()
        self.log = PartitionLog.open(self.directory, self.config, clock=self.clock, files=self.files)
        assert self.log.recovered_bytes_cut == 0
        # The high-water mark is as fresh as its last checkpoint; replication re-establishes it.
        assert self.log.high_watermark <= self.log_end
        self.log.update_high_watermark(self.log_end)

    @invariant()
    def bounds_and_contents_match_the_model(self) -> None:
        if not hasattr(self, "log"):
            return
        assert self.log.log_end_offset == self.log_end
        assert self.log.log_start_offset == self.log_start
        assert read_all(self.log) == self.records

    @invariant()
    def indexes_agree_with_a_full_scan(self) -> None:
        if hasattr(self, "log"):
            assert_indexes_agree_with_a_full_scan(self.log)


LogMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
TestLogModel = LogMachine.TestCase
