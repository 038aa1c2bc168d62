"""The console in a real browser (Debian's Chromium driven by Playwright) against the ``lanes up``
cluster of the e2e tests: the seeds' first walkthrough done in the UI, a JSON value pretty-printed,
a search that finds one record among 100,000 on the brokers, an offset reset with its preview, and
a user who sees only the topics its ACLs let it describe. Each page's screenshot goes to
``LANES_SCREENSHOTS`` when set (docs/images/console holds the ones the docs show)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from lanes import AclBinding, Producer, TlsFiles, UserPassword
from lanes.errors import LanesError
from lanes.protocol.partitioner import partition_for_key
from tests.e2e.cli import Workdir

CHROMIUM = "/usr/bin/chromium"
#: what Chromium needs here (docs: ../shared/TESTING.md, "The browser")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TYPED = [("foo", "first message"), ("foo", "second message"), ("bar", "first message"), ("foo", "third message"),
         ("bar", "second message")]  # fmt: skip


@pytest.fixture(scope="module")
def console(lanes: Workdir) -> dict:
    cluster = json.loads((lanes.path / ".lanes" / "cluster.json").read_text())
    password = (lanes.path / cluster["user"]["password_file"]).read_text().strip()
    return {"url": cluster["console"]["url"].rstrip("/"), "password": password}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


def goto(page: Page, url: str) -> None:
    """``page.goto``, again when Chromium aborted it for a change of network: the network-fault
    tests make test runs beside these add and remove bridges and veths on the host, which Chromium
    takes for a new network, failing the navigation under way with net::ERR_NETWORK_CHANGED."""
    for attempt in range(3):
        try:
            page.goto(url)
            return
        except PlaywrightError as exc:
            if "ERR_NETWORK_CHANGED" not in str(exc) or attempt == 2:
                raise


def logged_in(browser: Browser, url: str, user: str, password: str) -> Page:
    """A page of a new context, logged in as ``user``; the login is made again when Chromium
    aborted its form's post for a change of network (``goto``), which leaves the page on
    ``chrome-error://``: a login is safe to repeat."""
    for attempt in range(3):
        page = browser.new_context(ignore_https_errors=True).new_page()  # (the local CA's certificate)
        goto(page, f"{url}/topics")
        expect(page).to_have_url(f"{url}/login?next=%2Ftopics")
        page.fill("input[name=username]", user)
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        with contextlib.suppress(PlaywrightError):  # (the expect below says what the page shows)
            page.wait_for_url(lambda now: now == f"{url}/topics" or now.startswith("chrome-error://"), timeout=10_000)
        if not page.url.startswith("chrome-error://") or attempt == 2:
            break
        page.context.close()
    expect(page).to_have_url(f"{url}/topics")
    return page


def shot(page: Page, name: str) -> None:
    directory = os.environ.get("LANES_SCREENSHOTS")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(directory) / f"{name}.png"), full_page=True)


@pytest.fixture
def walkthrough_leaves_nothing(lanes: Workdir) -> Iterator[None]:
    """The walkthrough's topic and group are deleted after it, whether it passed or not: the CLI
    walkthrough (tests/e2e/test_walkthrough_streams_intro.py) makes them again on the same cluster."""
    yield
    with lanes.admin() as admin:
        with contextlib.suppress(LanesError):
            admin.delete_topic("streams-intro")
        with contextlib.suppress(LanesError):
            admin.delete_group("walkthrough")


@pytest.mark.usefixtures("walkthrough_leaves_nothing")
def test_the_seeds_first_walkthrough_in_the_browser(lanes: Workdir, console: dict, browser: Browser) -> None:
    url = console["url"]
    page = logged_in(browser, url, "admin", console["password"])
    shot(page, "topics-empty")
    goto(page, url + "/")
    expect(page.locator("h1")).to_contain_text("healthy")
    expect(page.locator("#brokers tbody tr")).to_have_count(3)
    shot(page, "cluster")

    goto(page, url + "/topics")
    page.click("#create summary")
    page.fill("#create input[name=name]", "streams-intro")
    page.fill("#create input[name=partitions]", "3")
    page.fill("#create input[name=replication_factor]", "1")
    page.click("#create button[type=submit]")
    expect(page).to_have_url(f"{url}/topics/streams-intro?flash=created+streams-intro")
    for key, value in TYPED:
        page.click("#produce summary")  # (each answer is the topic's page again, the form folded)
        page.fill("#produce input[name=key]", key)
        page.fill("#produce textarea[name=value]", value)
        page.click("#produce button[type=submit]")
        expect(page.locator(".flash")).to_contain_text("written to partition")
    goto(page, url + "/topics/streams-intro")
    for button in ("#produce", "#configure", "#grow", "#delete"):
        expect(page.locator(button)).to_have_count(1)
    foo, bar = partition_for_key(b"foo", 3), partition_for_key(b"bar", 3)
    counts = {foo: 3, bar: 2} if foo != bar else {foo: 5}
    for partition in range(3):
        row = page.locator(f"#partitions tr[data-partition='{partition}']")
        records = counts.get(partition, 0)
        expect(row.locator("td.first")).to_have_text("0")
        expect(row.locator("td.last")).to_have_text(str(records - 1) if records else "—")
    shot(page, "topic")

    page.locator(f"#partitions tr[data-partition='{bar}'] a").click()
    expect(page.locator("#progress")).to_contain_text("Done")
    rows = page.locator("#records tbody tr")
    expected = [(k, v) for k, v in TYPED if partition_for_key(k.encode(), 3) == bar]
    expect(rows).to_have_count(len(expected))
    for index, (key, value) in enumerate(expected):
        expect(rows.nth(index).locator("td.key")).to_have_text(key)
        expect(rows.nth(index).locator("td.value pre")).to_have_text(value)
        expect(rows.nth(index).locator("td").nth(1)).to_have_text(str(index))
    shot(page, "messages")

    lanes.ok("consume", "streams-intro", "--group", "walkthrough", "--max-records", "1")
    goto(page, url + "/groups/walkthrough")
    expect(page.locator("h1 .state")).to_have_text("empty")
    page.click("#reset summary")
    page.fill("#reset input[name=to]", "earliest")
    page.fill("#reset input[name=topic]", "streams-intro")
    page.click("#reset button[value='0']")
    expect(page.locator("#preview tbody tr")).to_have_count(3)
    for index in range(3):
        expect(page.locator("#preview tbody tr").nth(index).locator("td").nth(3)).to_have_text("0")
    with lanes.admin() as admin:
        assert len(admin.describe_group("walkthrough").offsets) == 1, "a preview changes nothing"
    shot(page, "reset-preview")
    page.click("#reset button[value='1']")
    expect(page.locator(".flash")).to_contain_text("reset 3 partitions")
    expect(page.locator("#total-lag")).to_have_text("5")
    lanes.ok("consume", "streams-intro", "--group", "walkthrough")
    expect(page.locator("#total-lag")).to_have_text("0", timeout=15_000)  # the page samples every 5 s
    expect(page.locator("#lag-chart polyline")).to_have_count(1)
    shot(page, "group")
    page.context.close()


def test_json_values_are_pretty_printed_and_a_search_finds_one_record_among_100000(
    lanes: Workdir, console: dict, browser: Browser
) -> None:
    with lanes.admin() as admin:
        admin.create_topic("orders-100k", partitions=3, replication_factor=1)
    cluster = json.loads((lanes.path / ".lanes" / "cluster.json").read_text())
    tls = TlsFiles(lanes.path / cluster["tls"]["ca"])
    credentials = UserPassword("admin", console["password"])
    with Producer(cluster["bootstrap"], tls=tls, credentials=credentials, linger_ms=20) as producer:
        for i in range(100_000):
            value = {"order": i, "customer": {"name": f"c{i % 977}", "tier": "gold" if i % 10 == 0 else "basic"}}
            if i == 64_321:
                value["note"] = "the needle"
            producer.send("orders-100k", json.dumps(value).encode(), key=b"o%d" % i)
        producer.flush()
    url = console["url"]
    page = logged_in(browser, url, "admin", console["password"])
    goto(page, f"{url}/topics/orders-100k/messages?partition=0&limit=5")
    expect(page.locator("#records tbody tr")).to_have_count(5)
    first_value = page.locator("#records tbody tr").first.locator("td.value")
    expect(first_value.locator("details summary").first).to_have_text("{2}")
    expect(first_value).to_contain_text('"customer": {2}')
    first_value.locator("button", has_text="text").click()
    expect(first_value.locator("pre")).to_contain_text('{"order": ')
    shot(page, "messages-json")

    goto(page, f"{url}/topics/orders-100k/messages?filter=" + "%24.note~needle")
    expect(page.locator("#progress")).to_contain_text("Done", timeout=30_000)
    expect(page.locator("#progress")).to_contain_text("100,000 records scanned")
    rows = page.locator("#records tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("td.key")).to_have_text("o64321")
    first_match_ms = int(page.locator("#records").get_attribute("data-first-match-ms") or "0")
    print(f"\nsearch over 100,000 records: first match after {first_match_ms} ms in the browser")
    shot(page, "search")
    page.context.close()


def test_a_user_without_rights_does_not_see_a_topic(lanes: Workdir, console: dict, browser: Browser) -> None:
    with lanes.admin() as admin:
        admin.create_topic("visible-payments", partitions=1, replication_factor=1)
        admin.create_topic("hidden-salaries", partitions=1, replication_factor=1)
        admin.set_user_password("viewer", "viewer-password-1")
        admin.create_acls([AclBinding.of("viewer", "describe", topic="visible-", prefixed=True)])
    url = console["url"]
    page = logged_in(browser, url, "viewer", "viewer-password-1")
    expect(page.locator("#topics tbody tr[data-topic='visible-payments']")).to_have_count(1)
    expect(page.locator("#topics tbody tr[data-topic='hidden-salaries']")).to_have_count(0)
    goto(page, f"{url}/topics/hidden-salaries")
    expect(page.locator(".problem")).to_contain_text("may not")
    shot(page, "refused")
    goto(page, f"{url}/topics/visible-payments")
    expect(page.locator("#partitions tbody tr")).to_have_count(1)
    expect(page.locator(".hint").first).to_contain_text("not read its messages")
    for button in ("#produce", "#configure", "#grow", "#delete"):  # the buttons it may not use are not shown
        expect(page.locator(button)).to_have_count(0)
    shot(page, "topic-described-only")
    goto(page, f"{url}/topics/visible-payments/messages")
    expect(page.locator("#progress")).to_contain_text("READ")  # describing is not reading
    page.context.close()
