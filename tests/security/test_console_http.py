"""The console's own HTTP endpoints against a real secure cluster: status codes and clear errors
for bad input (unknown topic, offset out of range, malformed filter, a huge JSON path, a search
without a sane limit), and what an attacker tries (a forged session, a cross-site POST, a POST
without its CSRF token, an oversized form, an open redirect): refused, nothing harmed."""

from __future__ import annotations

import http.cookiejar
import json
import ssl
import time
import urllib.error
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import lanes
from lanes.local.cluster import LocalCluster
from lanes.local.processes import start_service
from tests.integration.console_http import Browser
from tests.integration.processes import free_port, running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("console") / "lanes", 1, console=True, console_port=free_port()) as up:
        with lanes.Admin(str(up.describe()["bootstrap"])) as admin:
            admin.create_topic("orders", partitions=2, replication_factor=1)
        yield up


def browser_of(cluster: LocalCluster) -> Browser:
    described = cluster.describe()
    context = ssl.create_default_context(cafile=described["tls"]["ca"])
    return Browser(described["console"]["url"].rstrip("/"), context)


@pytest.fixture
def admin_browser(cluster: LocalCluster) -> Browser:
    browser = browser_of(cluster)
    credentials = cluster.client_credentials
    assert credentials is not None
    status, _, _ = browser.call("POST", "/login", {"username": "admin", "password": credentials.password})
    assert status == 200  # (redirected to the cluster page)
    return browser


def test_without_a_session_pages_send_to_the_login_and_the_api_answers_401(cluster: LocalCluster) -> None:
    browser = browser_of(cluster)
    status, _, body = browser.call("GET", "/topics?q=x")
    assert status == 200
    assert b'name="next" value="/topics?q=x"' in body, "the login page, keeping where the user was going"
    assert browser.json("/api/topics")[0] == 401
    browser.jar.set_cookie(_cookie("lanes_session", "forged-" + "A" * 40))
    assert browser.json("/api/topics")[0] == 401, "a forged session is no session"


def test_a_wrong_password_is_refused_and_the_next_page_is_only_a_local_one(cluster: LocalCluster) -> None:
    browser = browser_of(cluster)
    status, _, body = browser.call("POST", "/login", {"username": "admin", "password": "wrong"})
    assert status == 401
    assert b"did not accept" in body
    credentials = cluster.client_credentials
    assert credentials is not None
    status, _, _ = browser.call(
        "POST", "/login", {"username": "admin", "password": credentials.password, "next": "//evil.example/x"}
    )
    assert status == 200
    assert browser.json("/api/topics")[0] == 200


def test_bad_input_gets_a_clear_4xx(admin_browser: Browser) -> None:
    cases = {
        "/api/topics/no-such-topic": (404, "does not exist"),
        "/api/topics/no-such-topic/records": (404, "does not exist"),
        "/api/topics/orders/records?from=offset:999999": (400, "past the high-water mark"),
        "/api/topics/orders/records?filter=price%3E3": (400, "a condition tests"),
        "/api/topics/orders/records?filter=%24." + "a" * 300 + "%3D1": (400, "256"),
        "/api/topics/orders/records?filter=%24%5B*%5D%3D1": (400, "JSON path"),
        "/api/topics/orders/records?limit=0": (400, "limit"),
        "/api/topics/orders/records?limit=100000000": (400, "limit"),
        "/api/topics/orders/records?partition=9": (400, "partitions 0 to 1"),
        "/api/topics/orders/records?from=yesterday": (400, "earliest, latest"),
        "/api/topics/orders/records?from=time:not-a-time": (400, "not a time"),
        "/api/topics?sort=evil": (400, "sort by"),
        "/api/groups/no-such-group": (404, ""),
    }
    for path, (status, words) in cases.items():
        got, body = admin_browser.json(path)
        assert got == status, (path, body)
        assert words in body["error"], (path, body)


def test_state_changes_need_the_sessions_token_and_this_consoles_origin(
    admin_browser: Browser, cluster: LocalCluster
) -> None:
    csrf = admin_browser.csrf()
    attempts = [
        ({"name": "forged-1", "csrf": "wrong"}, {}),
        ({"name": "forged-2"}, {}),
        ({"name": "forged-3", "csrf": csrf}, {"Origin": "https://evil.example"}),
    ]
    for form, headers in attempts:
        status, _, body = admin_browser.call("POST", "/topics", form, headers)
        assert status == 403, body
        assert b"CSRF" in body
    status, _, _ = admin_browser.call("POST", "/topics", {"name": "made-here", "csrf": csrf, "partitions": "1"})
    assert status == 200
    with lanes.Admin(str(cluster.describe()["bootstrap"])) as admin:
        names = admin.list_topics()
    assert "made-here" in names
    assert not {"forged-1", "forged-2", "forged-3"} & set(names), "nothing done for a refused request"
    # refused unread: 413, or the connection closed under a client still sending the rest
    try:
        status = admin_browser.call("POST", "/topics", {"csrf": csrf, "name": "x" * (2 * 1024 * 1024)})[0]
    except urllib.error.URLError:
        status = 413
    assert status == 413
    assert admin_browser.json("/api/topics")[0] == 200, "the console serves on"


def test_every_page_is_sent_with_a_strict_policy(admin_browser: Browser) -> None:
    for path in ("/", "/topics", "/api/topics", "/groups"):
        status, headers, _ = admin_browser.call("GET", path)
        assert status == 200
        assert "default-src 'self'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["cache-control"] == "no-store"
    cookie = next(c for c in admin_browser.jar if c.name == "lanes_session")
    assert cookie.secure
    assert cookie.has_nonstandard_attr("HttpOnly")


def test_a_search_streams_matches_and_a_download_is_json_lines(admin_browser: Browser, cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    with lanes.Producer(bootstrap) as producer:
        for i in range(2_000):
            producer.send("orders", b'{"id": %d, "status": "%s"}' % (i, b"refunded" if i == 1234 else b"paid"))
    status, _, body = admin_browser.call("GET", "/api/topics/orders/records?filter=%24.status%3Drefunded")
    assert status == 200
    messages = [json.loads(line) for line in body.splitlines()]
    found = [r for m in messages if "records" in m for r in m["records"]]
    assert [json.loads(r["value"]["text"])["id"] for r in found] == [1234]
    assert messages[-1]["done"]["scanned"] == 2_000
    status, headers, body = admin_browser.call("GET", "/api/topics/orders/records?partition=0&limit=3&download=1")
    assert status == 200
    assert headers["content-disposition"] == 'attachment; filename="orders.jsonl"'
    lines = body.decode().splitlines()
    assert len(lines) == 3
    assert all("offset" in json.loads(line) for line in lines)


def _cookie(name: str, value: str) -> http.cookiejar.Cookie:
    return http.cookiejar.Cookie(
        0, name, value, None, False, "127.0.0.1", False, False, "/", True, False, None, False, None, None, {}
    )


def test_a_read_only_console_changes_nothing(cluster: LocalCluster, tmp_path: Path) -> None:
    described = cluster.describe()
    console = start_service(
        "lanes.console",
        ["--bootstrap", str(described["bootstrap"]), "--port", "0", "--read-only", "--tls-ca", described["tls"]["ca"]],
        tmp_path / "console.log",
    )
    try:
        browser = Browser(
            str(console.ready["url"]).rstrip("/"), ssl.create_default_context(cafile=described["tls"]["ca"])
        )
        credentials = cluster.client_credentials
        assert credentials is not None
        assert browser.call("POST", "/login", {"username": "admin", "password": credentials.password})[0] == 200
        status, _, body = browser.call("POST", "/topics", {"name": "read-only-made", "csrf": browser.csrf()})
        assert status == 403
        assert b"read-only" in body
        _, _, page = browser.call("GET", "/topics")
        assert b"Create a topic" not in page
    finally:
        console.terminate()


def test_a_topics_authorized_operations_are_what_the_caller_may_do(cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    with lanes.Admin(bootstrap) as admin:
        admin.set_user_password("reader", "reader-password-1")
        admin.create_acls(
            [
                lanes.AclBinding.of("reader", "read", topic="orders"),
                lanes.AclBinding.of("reader", "describe", topic="orders"),
            ]
        )
        everything = admin.describe_topic("orders", include_authorized_operations=True).authorized_operations
        assert admin.describe_topic("orders").authorized_operations is None, "only when asked for"
    assert everything == {
        "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"
    }, "a super user may do all"  # fmt: skip
    reader = lanes.UserPassword("reader", "reader-password-1")
    with lanes.Admin(bootstrap, credentials=reader) as admin:
        assert admin.describe_topic("orders", include_authorized_operations=True).authorized_operations == {
            "READ",
            "DESCRIBE",
        }


def test_a_time_range_keeps_only_the_records_inside_it(admin_browser: Browser, cluster: LocalCluster) -> None:
    bootstrap = str(cluster.describe()["bootstrap"])
    hour_ms = 3_600_000
    now_ms = int(time.time() * 1000) // hour_ms * hour_ms
    with lanes.Producer(bootstrap) as producer:
        for hours_ago in (3, 2, 1):
            producer.send("orders", b"%d hours ago" % hours_ago, partition=1, timestamp=now_ms - hours_ago * hour_ms)
    since = datetime.fromtimestamp((now_ms - 2 * hour_ms) / 1000, UTC).isoformat().replace("+00:00", "Z")
    status, _, body = admin_browser.call(
        "GET", f"/api/topics/orders/records?partition=1&since={since}&until={now_ms - hour_ms}"
    )
    assert status == 200
    found = [r for line in body.splitlines() if "records" in (m := json.loads(line)) for r in m["records"]]
    assert [r["value"]["text"] for r in found] == ["2 hours ago"], "since is inclusive, until exclusive"


def test_an_address_that_guesses_passwords_is_held_back(cluster: LocalCluster, tmp_path: Path) -> None:
    described = cluster.describe()
    console = start_service(
        "lanes.console",
        ["--bootstrap", str(described["bootstrap"]), "--port", "0", "--tls-ca", described["tls"]["ca"]],
        tmp_path / "console.log",
    )
    try:
        url = str(console.ready["url"]).rstrip("/")
        guesser = Browser(url, ssl.create_default_context(cafile=described["tls"]["ca"]))
        for attempt in range(10):
            assert guesser.call("POST", "/login", {"username": "admin", "password": f"guess-{attempt}"})[0] == 401
        credentials = cluster.client_credentials
        assert credentials is not None
        status, _, body = guesser.call("POST", "/login", {"username": "admin", "password": credentials.password})
        assert status == 429, "held back, even with the right password, until the minute has passed"
        assert b"too many failed logins" in body
    finally:
        console.terminate()
