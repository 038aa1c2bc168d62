"""The rest of the command set end to end: topic lifecycle and configs, the cluster, produce from a
file with headers and progress, consume by time, JSON lines, formats and pretty JSON."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from tests.e2e.cli import Workdir, wait_for


def test_topic_lifecycle_and_configs(lanes: Workdir) -> None:
    created = lanes.json(
        "topics",
        "create",
        "lifecycle",
        "--partitions",
        "2",
        "--replication-factor",
        "3",
        "--config",
        "retention.ms=600000",
    )
    assert (created["partitions"], created["replication_factor"], created["created"]) == (2, 3, True)
    again = lanes.json("topics", "create", "lifecycle", "--if-not-exists")
    assert (again["created"], again["topic_id"]) == (False, created["topic_id"])
    listed = {t["name"]: t for t in lanes.json("topics", "list")}
    assert listed["lifecycle"]["partitions"] == 2
    assert "__consumer_offsets" not in listed
    assert "__consumer_offsets" in {t["name"] for t in lanes.json("topics", "list", "--internal")}

    altered = lanes.json(
        "topics",
        "alter",
        "lifecycle",
        "--partitions",
        "4",
        "--config",
        "cleanup.policy=compact",
        "--delete-config",
        "retention.ms",
    )
    assert altered["partitions"] == 4
    assert altered["changes"][0].startswith("partitions 2 -> 4")
    configs = {c["name"]: c for c in lanes.json("configs", "describe", "topic", "lifecycle")}
    assert (configs["cleanup.policy"]["value"], configs["cleanup.policy"]["source"]) == ("compact", "topic")
    assert configs["retention.ms"]["source"] == "default"
    assert configs["retention.ms"]["documentation"]
    rows = [line.split() for line in lanes.ok("configs", "describe", "topic", "lifecycle").splitlines()]
    assert ["cleanup.policy", "compact", "topic"] in rows

    assert lanes.ok("topics", "delete", "lifecycle").strip() == "deleted topic lifecycle"
    assert "lifecycle" not in {t["name"] for t in lanes.json("topics", "list")}
    assert lanes.run("topics", "describe", "lifecycle").returncode == 3


def test_cluster_describe(lanes: Workdir) -> None:
    cluster = lanes.json("cluster", "describe")
    assert [b["id"] for b in cluster["brokers"]] == [1, 2, 3]
    assert all(b["state"] == "live" for b in cluster["brokers"])
    assert [(c["id"], c["shards"]) for c in cluster["coordinators"]] == [(1, 50)]
    assert cluster["controller"] in json.loads((lanes.path / ".lanes" / "cluster.json").read_text())["controller"]
    voters = cluster["quorum"]["voters"]
    assert [v["id"] for v in voters] == [0, 1, 2], "lanes up runs a quorum of three controllers"
    assert sum(v["active"] for v in voters) == 1, (
        "voters are named by their internal listeners, the controller by its client one"
    )
    assert cluster["quorum"]["epoch"] >= 1
    assert cluster["quorum"]["observers"] == [], "no controller waits to be added"
    table = lanes.ok("cluster", "describe")
    assert "BROKER  ADDRESS" in table
    assert "CONTROLLER  ADDRESS" in table


def test_produce_a_file_with_headers_and_consume_it_many_ways(lanes: Workdir, tmp_path: Path) -> None:
    lanes.ok("topics", "create", "events", "--partitions", "3", "--replication-factor", "2")
    lines = [f'user-{n % 7}\t{{"n": {n}, "kind": "click"}}' for n in range(1000)]
    source = tmp_path / "events.tsv"
    source.write_text("\n".join(lines) + "\n\n")  # a trailing blank line is skipped
    done = lanes.run(
        "produce",
        "events",
        "--file",
        str(source),
        "--key-separator",
        "\t",
        "--header",
        "source=import",
        "--compression",
        "zstd",
        "--acks",
        "1",
        "--progress",
        "--output",
        "json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["records"] == 1000
    assert sum(p["records"] for p in summary["partitions"]) == 1000
    assert all(p["last_offset"] - p["first_offset"] + 1 == p["records"] for p in summary["partitions"])
    assert "produced 1000 records" in done.stderr
    lanes.ok("topics", "create", "quiet", "--partitions", "1", "--replication-factor", "1")
    quiet = lanes.run("produce", "quiet", input="one\ntwo\n")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "", "a closed producer prints nothing (issue #35: pending tasks, a generator)"
    # acks=1 answered once the leaders had the records; `consume` stops at the high-water marks,
    # which move when the followers (RF 2) have them too
    wait_for(
        lambda: (
            sum(p["high_watermark"] for p in lanes.json("topics", "describe", "events")["partition_details"]) == 1000
        ),
        "the followers to replicate the acks=1 records",
    )

    as_json = [json.loads(line) for line in lanes.ok("consume", "events", "--output", "json").splitlines()]
    assert len(as_json) == 1000
    assert {(r["key"], json.loads(r["value"])["n"]) for r in as_json} == {(f"user-{n % 7}", n) for n in range(1000)}
    assert all(r["headers"] == [{"key": "source", "value": "import"}] for r in as_json)
    by_partition: dict[int, list[int]] = {}
    for r in as_json:
        by_partition.setdefault(r["partition"], []).append(r["offset"])
    assert all(offsets == sorted(offsets) for offsets in by_partition.values())

    first = as_json[0]
    line = lanes.ok(
        "consume",
        "events",
        "--partition",
        str(first["partition"]),
        "--max-records",
        "1",
        "--format",
        "%t|%p|%o|%k|%h|%T|%K|%S",
    )
    value_length = len(first["value"].encode())
    assert line == (
        f"events|{first['partition']}|{first['offset']}|{first['key']}|source=import|{first['timestamp']}|"
        f"{len(first['key'])}|{value_length}\n"
    )
    pretty = lanes.ok("consume", "events", "--partition", str(first["partition"]), "--max-records", "1", "--pretty")
    assert pretty == json.dumps(json.loads(first["value"]), indent=2) + "\n"

    time.sleep(0.05)
    after = datetime.now(UTC).isoformat()
    assert lanes.ok("consume", "events", "--from", after) == ""
    lanes.ok("produce", "events", "--key-separator", "\t", input='late\t{"n": 1000}\n')
    assert lanes.ok("consume", "events", "--from", after, "--format", "%k %v") == 'late {"n": 1000}\n'
    assert lanes.ok("consume", "events", "--from", "latest") == ""
    partition, count = first["partition"], len(by_partition[first["partition"]])
    near_end = lanes.ok(
        "consume",
        "events",
        "--partition",
        str(partition),
        "--from",
        str(count - 2),
        "--max-records",
        "2",
        "--format",
        "%o",
    )
    assert near_end.split() == [str(count - 2), str(count - 1)]
    assert lanes.ok("consume", "events", "--from", "99999", "--format", "%o") == ""  # clamped to the end


def test_status_watch_summarizes_the_metrics_of_every_process(lanes: Workdir) -> None:
    lanes.ok("topics", "create", "watched", "--partitions", "2", "--replication-factor", "3")
    lines = [
        json.loads(line)
        for line in lanes.ok(
            "status", "--watch", "--interval", "0.5", "--updates", "2", "--output", "json"
        ).splitlines()
    ]
    assert len(lines) == 2
    first, second = lines
    assert first["records_in_per_s"] is None  # rates need two scrapes
    assert second["records_in_per_s"] is not None
    assert second["brokers_live"] == 3
    assert second["offline_partitions"] == 0
    assert second["unreachable"] == []
    text = lanes.ok("status", "--watch", "--interval", "0.2", "--updates", "2").splitlines()
    assert len(text) == 2
    assert "brokers 3/3" in text[1]
    assert "rec/s" in text[1]
    refused = lanes.run("status", "--watch", "--interval", "0")
    assert refused.returncode == 2
    assert "must be above 0 seconds" in refused.stderr


def test_bench_produces_and_consumes_with_kafkas_perf_test_flags(lanes: Workdir) -> None:
    """``lanes bench`` (issue #39): Kafka's perf tools' flags and summaries; keyed records land on
    their keys' partitions only; a Kafka property Lanes does not take is a usage error."""
    lanes.ok("topics", "create", "bench", "--partitions", "6")
    produced = lanes.json(
        "bench", "produce", "--topic", "bench", "--num-records", "3000", "--record-size", "100",
        "--keys", "2", "--throughput", "5000", "--producer-props", "acks=all", "linger.ms=2", "batch.size=16384",
    )  # fmt: skip
    assert produced["records"] == 3000
    assert produced["records_per_s"] <= 5000 * 1.2, "the throttle holds the rate"
    assert 0 < produced["p50_ms"] <= produced["p99_ms"] <= produced["max_latency_ms"]
    details = lanes.json("topics", "describe", "bench")["partition_details"]
    written = {p["partition"]: p["high_watermark"] for p in details if p["high_watermark"]}
    assert sum(written.values()) == 3000
    assert len(written) <= 2, f"two keys, at most two partitions: {written}"
    consumed = lanes.json("bench", "consume", "--topic", "bench", "--messages", "3000")
    assert consumed["records"] == 3000
    assert consumed["megabytes"] == 3000 * 100 / 2**20
    assert "data.consumed.in.MB, MB.sec" in lanes.ok("bench", "consume", "--topic", "bench", "--messages", "10")
    refused = lanes.run("bench", "produce", "--topic", "bench", "--num-records", "1", "--record-size", "1",
                        "--producer-props", "transactional.id=t")  # fmt: skip
    assert refused.returncode == 2
    assert "unknown producer property 'transactional.id'" in refused.stderr
