"""A cookie-keeping HTTPS client of the console for tests: what a browser sends, no more."""

from __future__ import annotations

import http.cookiejar
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any


@dataclass
class Browser:
    """A cookie-keeping HTTPS client of the console (what a browser sends, no more)."""

    url: str
    context: ssl.SSLContext

    def __post_init__(self) -> None:
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=self.context), urllib.request.HTTPCookieProcessor(self.jar)
        )

    def call(
        self, method: str, path: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        try:
            with self.opener.open(request, timeout=30) as answer:
                return answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as refused:
            return refused.code, dict(refused.headers), refused.read()

    def json(self, path: str) -> tuple[int, Any]:
        status, _, body = self.call("GET", path)
        return status, json.loads(body)

    def csrf(self) -> str:
        _, _, body = self.call("GET", "/topics")
        marker = b'data-csrf="'
        start = body.index(marker) + len(marker)
        return body[start : body.index(b'"', start)].decode()


def login(url: str, ca: str, user: str, password: str) -> Browser:
    """A ``Browser`` of the console at ``url`` logged in as ``user``."""
    browser = Browser(url.rstrip("/"), ssl.create_default_context(cafile=ca))
    status, _, body = browser.call("POST", "/login", {"username": user, "password": password})
    assert status == 200, body[:300]
    return browser
