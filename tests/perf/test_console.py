"""The console at scale (run by `make bench`; prints numbers, asserts nothing about time): one
secure broker as ``lanes up`` runs it, the console over HTTPS, a logged-in user.

- the topic list (``/topics``, ``/api/topics``) with 1,000 topics: server time per load (median);
- a search for one record among 1,000,000 (3 partitions, ~100-byte JSON values), through the
  console (filtered on the brokers, streamed): time to the first match, to the end, bytes the
  console received from the cluster's brokers (its matches) and bytes sent to the browser, against
  a client-side scan of the same records (a ``lanes.Consumer`` reading everything and filtering
  in Python, which is what every other Kafka UI does) and the bytes it fetched.
"""

from __future__ import annotations

import http.cookiejar
import json
import ssl
import statistics
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import lanes
from lanes.local.cluster import LocalCluster
from tests.integration.processes import clients_of, consecutive_free_ports, free_port

TOPICS = 1_000
RECORDS = 1_000_000
NEEDLE_AT = 777_777
LOADS = 5


def _opener(ca: str) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(
        urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca)),
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
    )


def _timed_get(opener: urllib.request.OpenerDirector, url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with opener.open(url, timeout=120) as answer:
        body = answer.read()
    return time.perf_counter() - start, len(body)


def _search(opener: urllib.request.OpenerDirector, url: str) -> tuple[float, float, int, int]:
    """(first match s, whole search s, matches, bytes sent to the browser)."""
    start = time.perf_counter()
    first = 0.0
    matches = 0
    sent = 0
    with opener.open(url, timeout=300) as answer:
        for line in answer:
            sent += len(line)
            message = json.loads(line)
            if "records" in message:
                matches += len(message["records"])
                first = first or time.perf_counter() - start
    return first, time.perf_counter() - start, matches, sent


def _client_side_scan(bootstrap: str) -> tuple[float, int, int]:
    """(seconds, matches, record bytes fetched): read everything, filter here."""
    partitions = [lanes.TopicPartition("search", p) for p in range(3)]
    start = time.perf_counter()
    matches = 0
    fetched = 0
    with lanes.Consumer(bootstrap, max_poll_records=10_000) as consumer:
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(partitions)
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            for record in consumer.poll(timeout_ms=1_000):
                fetched += len(record.value or b"") + len(record.key or b"")
                if b"needle" in (record.value or b""):
                    matches += 1
    return time.perf_counter() - start, matches, fetched


def test_the_console_with_1000_topics_and_a_search_over_a_million_records() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(
            Path(tmp),
            brokers=1,
            controllers=1,
            port_base=consecutive_free_ports(LocalCluster.ports_for(1)),
            console=True,
            console_port=free_port(),
        )
        described = cluster.start()
        try:
            with clients_of(cluster):
                bootstrap = str(described["bootstrap"])
                with lanes.Admin(bootstrap) as admin:
                    for i in range(TOPICS - 1):
                        admin.create_topic(f"topic-{i:04d}", partitions=1, replication_factor=1)
                    admin.create_topic("search", partitions=3, replication_factor=1)
                with lanes.Producer(bootstrap, linger_ms=20, batch_size=256 * 1024) as producer:
                    for i in range(RECORDS):
                        note = b"needle" if i == NEEDLE_AT else b"hay"
                        producer.send("search", b'{"n": %d, "sym": "S%02d", "note": "%s"}' % (i, i % 50, note))
                    producer.flush()
                with lanes.Admin(bootstrap) as admin:
                    stored = sum(r.size_bytes for r in admin.describe_logs(["search"]))
                console = str(described["console"]["url"]).rstrip("/")
                opener = _opener(described["tls"]["ca"])
                credentials = cluster.client_credentials
                assert credentials is not None
                login = urllib.parse.urlencode({"username": "admin", "password": credentials.password}).encode()
                opener.open(urllib.request.Request(console + "/login", data=login), timeout=60).read()

                pages = [_timed_get(opener, console + "/topics") for _ in range(LOADS)]
                api = [_timed_get(opener, console + "/api/topics") for _ in range(LOADS)]
                first, whole, matches, sent = _search(
                    opener, console + "/api/topics/search/records?filter=" + urllib.parse.quote("value~needle")
                )
                # a JSON test: no needle to skip batches by, every record decoded and parsed
                json_first, json_whole, json_matches, json_sent = _search(
                    opener, console + "/api/topics/search/records?filter=" + urllib.parse.quote(f"$.n={NEEDLE_AT}")
                )
                scan_s, scan_matches, fetched = _client_side_scan(bootstrap)
        finally:
            cluster.stop()
    assert matches == scan_matches == json_matches == 1
    lines = [
        f"console, one secure broker ({TOPICS:,} topics; search over {RECORDS:,} records, {stored / 1e6:.1f} MB):",
        f"  topic list page   median {statistics.median(p[0] for p in pages) * 1000:6.0f} ms "
        f"({pages[0][1] / 1e3:.0f} kB)",
        f"  /api/topics       median {statistics.median(a[0] for a in api) * 1000:6.0f} ms ({api[0][1] / 1e3:.0f} kB)",
        f"  search on the brokers: first match {first * 1000:.0f} ms, done {whole:.2f} s, "
        f"{sent / 1e3:.1f} kB to the browser (value~needle: batches without it skipped undecoded)",
        f"  search on the brokers, $.n={NEEDLE_AT} (every record parsed): first match {json_first * 1000:.0f} ms, "
        f"done {json_whole:.2f} s, {json_sent / 1e3:.1f} kB to the browser",
        f"  client-side scan (Consumer + filter): {scan_s:.2f} s, {fetched / 1e6:.1f} MB of records fetched "
        f"({whole / scan_s:.2f}x the time, {sent / max(1, fetched):.6f}x the bytes)",
    ]
    print("\n" + "\n".join(lines))
