"""Churn checker: for 30 seconds (``LANES_CHURN_SECONDS``; long runs take more), members of one
group join, close, crash (SIGKILL) and pause (SIGSTOP/SIGCONT) at random while a producer writes.
Afterwards an observer checks, from every member's own timestamped events:

- exclusive ownership: per partition, the intervals during which members owned it (from the
  assigned callback to the revoked/lost callback, or to the SIGKILL; a paused member that comes
  back to find its partitions lost owned them at least until its pause began, and one that lost
  them without a pause of the test's, starved of CPU for a session on a loaded machine, at least
  until the poll that last gave it a record of them began) never overlap;
- every record a member processed outside such an interval (here ending at the latest a lost
  member could still vouch for its partitions: a session timeout after its pause began) is a
  zombie's, and no commit of its succeeded afterwards (commit-failed, or lost before any commit);
- at least once: every produced record was processed; with commit-after-process and an idempotent
  sink (records deduplicated by partition and offset), exactly once.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import lanes
from tests.integration.processes import running_cluster
from tests.integration.test_consumer_groups import Member, wait_until

DURATION_S = float(os.environ.get("LANES_CHURN_SECONDS", "30"))
PARTITIONS = 6
SESSION_TIMEOUT_S = 2.0


@dataclass
class Life:
    """What the test did to one member process, with wall-clock times."""

    member: Member
    name: str
    killed_at: float | None = None
    pauses: list[tuple[float, float]] = field(default_factory=list)


def ownership_intervals(life: Life, latest: bool = False) -> dict[int, list[tuple[float, float]]]:
    """Per partition, [start, end) of each time this member owned it.

    A member whose partitions were lost after a freeze owned them at least until the freeze began
    and at most until a session timeout after that (the last heartbeat that got through was sent
    before the freeze; the member may hand out records until that heartbeat is a session old).
    A member that lost them without a pause of the test's was frozen all the same (starved of CPU
    by a loaded machine for a session): it owned them at least until the poll that last gave it a
    record of them began (that poll found the member still vouching for them; the record's own
    time may come later, after the starvation). ``latest`` picks the upper bound (for judging
    zombie work), else the lower one (for overlaps).
    """
    intervals: dict[int, list[tuple[float, float]]] = {}
    started: dict[int, float] = {}
    last_record: dict[int, float] = {}
    for event in list(life.member.events):
        kind, at = event["event"], float(event["t"])  # type: ignore[arg-type]
        if kind == "record":
            last_record[event["partition"]] = float(event["polled"])  # type: ignore[arg-type, index]
        elif kind == "assigned":
            for p in event["partitions"]:  # type: ignore[attr-defined]
                started[p] = at
        elif kind in ("revoked", "lost"):
            for p in event["partitions"]:  # type: ignore[attr-defined]
                begin = started.pop(p, None)
                if begin is None:
                    continue
                end = at
                if kind == "lost":  # it stopped owning when it last froze (the freeze that lapsed its session)
                    paused = [pause_start for pause_start, _ in life.pauses if begin <= pause_start <= at]
                    if paused:
                        end = min(at, max(paused) + SESSION_TIMEOUT_S) if latest else max(paused)
                    elif not latest:  # frozen by the machine, not the test: since when, only its polls say
                        end = max(begin, last_record.get(p, begin))
                intervals.setdefault(p, []).append((begin, end))
    for p, begin in started.items():
        end = life.killed_at if life.killed_at is not None else float("inf")
        intervals.setdefault(p, []).append((begin, end))
    return intervals


@pytest.mark.timeout(DURATION_S + 240)
def test_random_joins_leaves_crashes_and_pauses_keep_ownership_exclusive_and_lose_nothing(tmp_path: Path) -> None:
    seed = int(os.environ.get("LANES_CHURN_SEED", str(random.randrange(1 << 30))))
    print(f"\nchurn seed {seed} (LANES_CHURN_SEED to replay the same schedule)")
    rng = random.Random(seed)
    settings = {
        "group_session_timeout_ms": int(SESSION_TIMEOUT_S * 1000),
        "group_heartbeat_interval_ms": 200,
        "offsets_topic_partitions": 6,
    }
    with running_cluster(tmp_path, 3, **settings) as cluster:
        bootstrap = cluster.describe()["bootstrap"]
        lanes.Admin(bootstrap).create_topic("churn", partitions=PARTITIONS, replication_factor=3)
        produced: set[tuple[int, int]] = set()
        stop_producing = threading.Event()

        def produce() -> None:
            with lanes.Producer(bootstrap, linger_ms=5) as producer:
                index = 0
                while not stop_producing.is_set():
                    futures = [producer.send("churn", key=f"k{index + i}".encode(), value=b"x") for i in range(20)]
                    index += 20
                    producer.flush()
                    produced.update((f.result().partition, f.result().offset) for f in futures)
                    time.sleep(0.05)

        producer_thread = threading.Thread(target=produce)
        producer_thread.start()
        lives: list[Life] = []
        counter = 0

        def start_member() -> None:
            nonlocal counter
            counter += 1
            lives.append(Life(Member(bootstrap, "churners", "churn", "--max-poll-records", "10"), f"m{counter}"))

        def running() -> list[Life]:
            return [life for life in lives if life.member.process.poll() is None and life.killed_at is None]

        for _ in range(3):
            start_member()
        actions = {"join": 0, "close": 0, "crash": 0, "pause": 0}
        deadline = time.monotonic() + DURATION_S
        try:
            while time.monotonic() < deadline:
                time.sleep(rng.uniform(0.5, 2.0))
                alive = running()
                action = rng.choice(["join", "close", "crash", "pause"]) if len(alive) > 1 else "join"
                if action == "join" and len(alive) < 5:
                    start_member()
                elif action == "close":
                    rng.choice(alive).member.process.send_signal(signal.SIGTERM)
                elif action == "crash":
                    victim = rng.choice(alive)
                    victim.killed_at = time.time()
                    victim.member.process.send_signal(signal.SIGKILL)
                elif action == "pause":
                    victim = rng.choice(alive)
                    began = time.time()
                    victim.member.process.send_signal(signal.SIGSTOP)
                    time.sleep(rng.uniform(0.3, 4.0))
                    victim.pauses.append((began, time.time()))
                    victim.member.process.send_signal(signal.SIGCONT)
                actions[action] += 1
            while len(running()) < 2:
                start_member()
            stop_producing.set()
            producer_thread.join()
            processed = lambda: {r for life in lives for r in life.member.records()}  # noqa: E731
            wait_until(lambda: processed() >= produced, 90, "every produced record to be processed")
            print(f"actions {actions}; {len(lives)} members; {len(produced)} records produced")
        finally:
            stop_producing.set()
            producer_thread.join()
            for life in lives:
                life.member.stop()

        # Exclusive ownership among members.
        by_partition: dict[int, list[tuple[float, float, str]]] = {}
        for life in lives:
            for p, spans in ownership_intervals(life).items():
                by_partition.setdefault(p, []).extend((begin, end, life.name) for begin, end in spans)
        for p, spans in by_partition.items():
            spans.sort()
            for (_b1, e1, m1), (b2, _e2, m2) in itertools.pairwise(spans):
                assert e1 <= b2, f"partition {p}: {m1} owned it until {e1:.3f}, {m2} from {b2:.3f}"

        # Zombie processing is never committed.
        zombies = 0
        for life in lives:
            intervals = ownership_intervals(life, latest=True)
            events = list(life.member.events)
            for index, event in enumerate(events):
                if event["event"] != "record":
                    continue
                at, p = float(event["t"]), int(event["partition"])  # type: ignore[arg-type, call-overload]
                if any(b <= at <= e for b, e in intervals.get(p, [])):
                    continue
                zombies += 1
                after = [
                    e["event"] for e in events[index + 1 :] if e["event"] in ("committed", "commit-failed", "lost")
                ]
                context = [
                    (e["event"], e.get("partitions", e.get("partition")), round(float(e["t"]) % 1000, 3))
                    for e in events[max(0, index - 8) : index + 4]
                ]  # type: ignore[arg-type]
                assert not after or after[0] != "committed", (
                    f"{life.name} committed zombie work on partition {p} at {at % 1000:.3f}; pauses "
                    f"{[(round(b % 1000, 3), round(e % 1000, 3)) for b, e in life.pauses]}; events {context}"
                )
        lost = sum(1 for life in lives for e in list(life.member.events) if e["event"] == "lost")
        print(f"{lost} losses of partitions; {zombies} records processed by zombies, none committed")

        # At least once, and exactly once after deduplication.
        processed_all = [r for life in lives for r in life.member.records()]
        assert set(processed_all) >= produced, "a produced record was never processed"
        duplicates = len(processed_all) - len(set(processed_all))
        print(f"{len(processed_all)} processed, {duplicates} redeliveries removed by the idempotent sink")
