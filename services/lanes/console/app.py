"""The console's web application (Starlette): pages rendered on the server, a few JSON and
streaming endpoints, and the rules every request goes through.

Every request but the login page, ``/healthz`` and ``/static`` needs a session (``Sessions``);
without one a page redirects to the login, an ``/api`` call gets 401. Every POST carries the
session's CSRF token (form field ``csrf`` or header ``X-CSRF-Token``) and, when the browser sends
one, an ``Origin`` of this console: else 403 and nothing is done. ``read_only`` refuses every
POST but login and logout. Pages are sent with a strict Content-Security-Policy (scripts and
styles from this console only), no framing, no caching and no referrer. Nothing secret is put
in a URL or a log line: passwords and tokens come in POST bodies and stay in the session's
clients.

Logins: after ``MAX_FAILED_LOGINS`` failures from one browser address within a minute, that
address's logins are refused (429) until the minute has passed (the cluster sees every console
login come from the console's own address, so it cannot tell guessers apart).

With ``login=False`` (a cluster without authentication) a browser gets a session at its first
visit, acting as the console's own (anonymous) clients.

Owned by the console's event loop (uvicorn's).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import lanes
from lanes.console import views
from lanes.console.clients import Credentials, UserClients
from lanes.console.kubernetes import KubernetesResources
from lanes.console.sessions import Session, Sessions
from lanes.errors import AuthenticationError, LanesError

_log = logging.getLogger(__name__)
HERE = Path(__file__).parent
COOKIE = "lanes_session"
#: the most bytes a form (login, produce, configs) may have
MAX_FORM_BYTES = 1024 * 1024
#: failed logins from one address within FAILED_LOGIN_WINDOW_S before its logins are refused
#: (429) until the window has passed: every login through the console reaches the cluster from
#: the console's one address, so the console holds guessers back per browser address itself
MAX_FAILED_LOGINS = 10
FAILED_LOGIN_WINDOW_S = 60.0
#: addresses whose failures are remembered (the oldest are forgotten beyond)
FAILED_LOGIN_ADDRESSES = 10_000
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # (no-referrer would make browsers send "Origin: null" on POSTs)
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class ConsoleSettings:
    """How the console reaches its cluster and serves its users."""

    bootstrap: str
    #: whether users log in (a cluster with authentication); False: one anonymous identity
    login: bool = True
    read_only: bool = False
    #: the cookie only travels over HTTPS (the console is served over TLS)
    secure_cookies: bool = True
    session_idle_s: float = 30 * 60
    #: the cluster's CA (and a client certificate where the cluster requires one); None: plaintext
    tls: lanes.TlsFiles | None = None
    #: namespaces whose Topic and ConsumerGroup resources the /kubernetes page shows (none: no page)
    kubernetes_namespaces: tuple[str, ...] = ()
    #: the kubeconfig to read them with (None: in-cluster, else the default kubeconfig)
    kubeconfig: str | None = None


class Console:
    """The application and its state: sessions, each with its user's clients."""

    def __init__(self, settings: ConsoleSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.sessions = Sessions(clock, idle_s=settings.session_idle_s)
        self._anonymous: UserClients | None = None
        self._clock = clock
        #: browser address -> times of its recent failed logins (oldest address first)
        self._failed_logins: dict[str, list[float]] = {}
        self.resources: KubernetesResources | None = None
        if settings.kubernetes_namespaces:
            self.resources = KubernetesResources(settings.kubernetes_namespaces, settings.kubeconfig)
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.StrictUndefined
        )
        self.templates.filters["size"] = _size
        self.templates.filters["when"] = _when
        self.templates.globals["urlencode"] = urlencode
        self.templates.globals["quote"] = lambda text: quote(str(text), safe="")
        self.app = Starlette(routes=self._routes(), lifespan=self._lifespan)

    # -----------------------------------------------------------------------------------------
    # plumbing

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(self._sweep())
        try:
            yield
        finally:
            sweeper.cancel()
            self.sessions.end_all()
            for session in self.sessions.take_ended():
                await _close(session)
            if self._anonymous is not None:
                await self._anonymous.close()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(30)
            self.sessions.expire()
            for session in self.sessions.take_ended():
                await _close(session)

    def _routes(self) -> list[Route | Mount]:
        page, action, api = self._page, self._action, self._api
        return [
            Route("/healthz", lambda request: PlainTextResponse("ok")),
            Route("/login", self._login_page, methods=["GET"]),
            Route("/login", self._login, methods=["POST"]),
            Route("/logout", self._logout, methods=["POST"]),
            Route("/", page(self._cluster_page)),
            Route("/topics", page(self._topics_page)),
            Route("/topics", action(self._create_topic), methods=["POST"]),
            Route("/topics/{name}", page(self._topic_page)),
            Route("/topics/{name}/messages", page(self._messages_page)),
            Route("/topics/{name}/partitions", action(self._grow), methods=["POST"]),
            Route("/topics/{name}/configs", action(self._configs), methods=["POST"]),
            Route("/topics/{name}/delete", action(self._delete_topic), methods=["POST"]),
            Route("/topics/{name}/produce", action(self._produce), methods=["POST"]),
            Route("/groups", page(self._groups_page)),
            Route("/groups/{group}", page(self._group_page)),
            Route("/groups/{group}/reset", action(self._reset), methods=["POST"]),
            Route("/groups/{group}/delete", action(self._delete_group), methods=["POST"]),
            Route("/kubernetes", page(self._kubernetes_page)),
            Route("/api/kubernetes", api(self._kubernetes_json)),
            Route("/api/cluster", api(lambda r, s: views.cluster(s.held))),
            Route("/api/topics", api(self._topics_json)),
            Route("/api/topics/{name}", api(lambda r, s: views.topic(s.held, r.path_params["name"]))),
            Route("/api/topics/{name}/records", self._records),
            Route("/api/groups", api(lambda r, s: views.groups(s.held))),
            Route("/api/groups/{group}", api(lambda r, s: views.group(s.held, r.path_params["group"]))),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]

    def _session(self, request: Request) -> Session | None:
        return self.sessions.get(request.cookies.get(COOKIE))

    async def _anonymous_session(self, response: Response) -> Session:
        """A session for a cluster without logins (``login=False``), set on ``response``."""
        if self._anonymous is None:
            self._anonymous = UserClients(self.settings.bootstrap, None, self.settings.tls)
        token, session = self.sessions.create("anonymous", self._anonymous)
        self._set_cookie(response, token)
        return session

    def _set_cookie(self, response: Response, token: str) -> None:
        response.set_cookie(
            COOKIE,
            token,
            httponly=True,
            samesite="strict",
            secure=self.settings.secure_cookies,
            path="/",
            max_age=int(self.sessions.max_age_s),
        )

    def render(
        self, request: Request, session: Session | None, template: str, status: int = 200, **values: Any
    ) -> Response:
        """A page, with the layout's values (who is logged in, the CSRF token, read-only)."""
        body = self.templates.get_template(template).render(
            request_path=request.url.path,
            query=dict(request.query_params),
            principal=session.principal if session else None,
            csrf=session.csrf if session else "",
            read_only=self.settings.read_only,
            login=self.settings.login,
            kubernetes=self.resources is not None,
            flash=request.query_params.get("flash", ""),
            problem=request.query_params.get("problem", ""),
            **values,
        )
        return _secured(Response(body, status_code=status, media_type="text/html; charset=utf-8"))

    def _page(
        self, handler: Callable[[Request, Session], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def serve(request: Request) -> Response:
            session = self._session(request)
            fresh: Response | None = None
            if session is None:
                if self.settings.login:
                    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                    return RedirectResponse(f"/login?{urlencode({'next': target})}", status_code=303)
                fresh = Response()
                session = await self._anonymous_session(fresh)
            try:
                response = await handler(request, session)
            except LanesError as exc:
                response = self.render(request, session, "error.html", views.http_status(exc), message=str(exc.message))
            except views.InputError as exc:
                response = self.render(request, session, "error.html", 400, message=str(exc))
            if fresh is not None:
                response.headers.append("set-cookie", fresh.headers["set-cookie"])
            return response

        return serve

    def _api(self, handler: Callable[[Request, Session], Awaitable[Any]]) -> Callable[[Request], Awaitable[Response]]:
        async def serve(request: Request) -> Response:
            session = self._session(request)
            if session is None:
                return _problem(401, "log in first (POST /login)")
            try:
                return _secured(JSONResponse(_plain(await handler(request, session))))
            except LanesError as exc:
                return _problem(views.http_status(exc), exc.message, exc.code.name)
            except views.InputError as exc:
                return _problem(400, str(exc))

        return serve

    def _action(
        self, handler: Callable[[Request, Session, dict[str, str]], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """A state-changing POST: session, same origin, CSRF token, not read-only; then the handler
        with the form. A refusal by the cluster comes back to the page it was sent from."""

        async def serve(request: Request) -> Response:
            session = self._session(request)
            if session is None:
                return _problem(401, "log in first")
            form = await _form(request)
            if form is None:
                return _problem(413, f"a form is at most {MAX_FORM_BYTES} bytes")
            if not _same_origin(request) or not session.csrf_ok(
                form.get("csrf") or request.headers.get("x-csrf-token")
            ):
                return _problem(403, "refused: the request did not come from this console's own page (CSRF)")
            if self.settings.read_only:
                return _problem(403, "this console is read-only")
            back = form.get("back") or "/"
            if not back.startswith("/") or back.startswith("//"):
                back = "/"
            try:
                return await handler(request, session, form)
            except LanesError as exc:
                if _wants_json(request):
                    return _problem(views.http_status(exc), exc.message, exc.code.name)
                return _back(back, problem=exc.message)
            except views.InputError as exc:
                if _wants_json(request):
                    return _problem(400, str(exc))
                return _back(back, problem=str(exc))

        return serve

    # -----------------------------------------------------------------------------------------
    # login

    async def _login_page(self, request: Request) -> Response:
        if not self.settings.login:
            return RedirectResponse("/", status_code=303)
        return self.render(request, None, "login.html", next=_local(request.query_params.get("next", "/")))

    async def _login(self, request: Request) -> Response:
        """Log in with a SCRAM user's password or an OAuth token: the cluster must accept it."""
        if not self.settings.login:
            return RedirectResponse("/", status_code=303)
        form = await _form(request)
        if form is None or not _same_origin(request):
            return _problem(403, "refused: a login comes from this console's own page")
        address = request.client.host if request.client is not None else ""
        if self._recent_failures(address) >= MAX_FAILED_LOGINS:
            return _problem(429, f"too many failed logins from {address}: wait a minute")
        username, password, token = form.get("username", ""), form.get("password", ""), form.get("token", "")
        credentials: Credentials
        try:
            credentials = lanes.BearerToken(token) if token else lanes.UserPassword(username, password)
        except ValueError as exc:
            return self.render(request, None, "login.html", 400, next=_local(form.get("next", "/")), failed=str(exc))
        clients = UserClients(self.settings.bootstrap, credentials, self.settings.tls)
        try:
            await clients.admin.list_topics()  # (any authenticated caller may: it proves the login)
        except (AuthenticationError, LanesError, ValueError) as exc:
            await clients.close()
            self._failed_login(address)
            failed = (
                "the cluster did not accept these credentials" if isinstance(exc, AuthenticationError) else str(exc)
            )
            return self.render(request, None, "login.html", 401, next=_local(form.get("next", "/")), failed=failed)
        principal = username if not token else "token"
        old = self.sessions.get(request.cookies.get(COOKIE))
        if old is not None:
            self.sessions.end(request.cookies.get(COOKIE))
        session_token, _ = self.sessions.create(principal, clients)
        for ended in self.sessions.take_ended():
            await _close(ended)
        _log.info("console login of %s", principal)
        response = RedirectResponse(_local(form.get("next", "/")), status_code=303)
        self._set_cookie(response, session_token)
        return response

    def _recent_failures(self, address: str) -> int:
        now = self._clock()
        recent = [t for t in self._failed_logins.get(address, []) if now - t < FAILED_LOGIN_WINDOW_S]
        if recent:
            self._failed_logins[address] = recent
        else:
            self._failed_logins.pop(address, None)
        return len(recent)

    def _failed_login(self, address: str) -> None:
        self._failed_logins.setdefault(address, []).append(self._clock())
        while len(self._failed_logins) > FAILED_LOGIN_ADDRESSES:
            del self._failed_logins[next(iter(self._failed_logins))]

    async def _logout(self, request: Request) -> Response:
        session = self._session(request)
        form = await _form(request) or {}
        if session is not None and session.csrf_ok(form.get("csrf")):
            self.sessions.end(request.cookies.get(COOKIE))
            for ended in self.sessions.take_ended():
                await _close(ended)
        response = RedirectResponse("/login" if self.settings.login else "/", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # -----------------------------------------------------------------------------------------
    # pages

    async def _cluster_page(self, request: Request, session: Session) -> Response:
        return self.render(request, session, "cluster.html", cluster=await views.cluster(session.held))

    async def _topics_json(self, request: Request, session: Session) -> Any:
        rows = await views.topics(session.held, _samples(session))
        return views.filtered(rows, request.query_params.get("q", ""), request.query_params.get("sort", "name"))

    async def _topics_page(self, request: Request, session: Session) -> Response:
        rows = await self._topics_json(request, session)
        return self.render(request, session, "topics.html", topics=rows, sorts=list(views.SORTS))

    async def _topic_page(self, request: Request, session: Session) -> Response:
        name = request.path_params["name"]
        return self.render(request, session, "topic.html", topic=await views.topic(session.held, name))

    async def _messages_page(self, request: Request, session: Session) -> Response:
        name = request.path_params["name"]
        count = await session.held.scanner.partitions(name)
        views.parse_browse(request.query_params, count)  # (a bad link says so at once)
        return self.render(
            request,
            session,
            "messages.html",
            name=name,
            partitions=count,
            filters=request.query_params.getlist("filter"),
        )

    async def _groups_page(self, request: Request, session: Session) -> Response:
        return self.render(request, session, "groups.html", groups=await views.groups(session.held))

    async def _group_page(self, request: Request, session: Session) -> Response:
        described = await views.group(session.held, request.path_params["group"])
        return self.render(request, session, "group.html", group=described, preview=None)

    async def _kubernetes_json(self, request: Request, session: Session) -> Any:
        if self.resources is None:
            raise views.InputError("this console does not watch Kubernetes resources (--kubernetes-namespaces)")
        clients: UserClients = session.held
        topics, groups = await asyncio.gather(clients.admin.list_topics(), clients.admin.list_groups())
        return await self.resources.visible(set(topics), {g.group_id for g in groups})

    async def _kubernetes_page(self, request: Request, session: Session) -> Response:
        resources = await self._kubernetes_json(request, session)
        namespaces = self.resources.namespaces if self.resources is not None else []
        return self.render(request, session, "kubernetes.html", resources=resources, namespaces=namespaces)

    # -----------------------------------------------------------------------------------------
    # records: browse, search, download

    async def _records(self, request: Request) -> Response:
        session = self._session(request)
        if session is None:
            return _problem(401, "log in first")
        name = request.path_params["name"]
        try:
            count = await session.held.scanner.partitions(name)
            browse = views.parse_browse(request.query_params, count)
            stream = views.records(session.held, name, browse)
            first = await anext(stream)  # (a malformed filter or an unknown start fails here, as a 4xx)
        except LanesError as exc:
            return _problem(views.http_status(exc), exc.message, exc.code.name)
        except views.InputError as exc:
            return _problem(400, str(exc))
        download = request.query_params.get("download") == "1"

        async def lines() -> AsyncIterator[bytes]:
            try:
                pending: dict[str, Any] | None = first
                while pending is not None:
                    if not download:
                        yield (json.dumps(pending) + "\n").encode()
                    elif "records" in pending:
                        yield "".join(json.dumps(r) + "\n" for r in pending["records"]).encode()
                    pending = await anext(stream, None)
            except LanesError as exc:
                if not download:
                    yield (json.dumps({"error": exc.message, "code": exc.code.name}) + "\n").encode()
            finally:
                await stream.aclose()  # type: ignore[attr-defined]

        headers = dict(SECURITY_HEADERS)
        if download:
            headers["Content-Disposition"] = f'attachment; filename="{quote(name, safe="")}.jsonl"'
        return StreamingResponse(lines(), media_type="application/x-ndjson", headers=headers)

    # -----------------------------------------------------------------------------------------
    # actions

    async def _create_topic(self, request: Request, session: Session, form: dict[str, str]) -> Response:
        name = form.get("name", "").strip()
        partitions = _number(form.get("partitions") or "-1", "partitions", minimum=-1)
        factor = _number(form.get("replication_factor") or "-1", "replication factor", minimum=-1)
        await session.held.admin.create_topic(name, partitions, factor)
        return _back(f"/topics/{quote(name, safe='')}", flash=f"created {name}")

    async def _grow(self, request: Request, session: Session, form: dict[str, str]) -> Response:
        name = request.path_params["name"]
        total = _number(form.get("total", ""), "the new partition count", minimum=1)
        await session.held.admin.create_partitions(name, total)
        return _back(f"/topics/{quote(name, safe='')}", flash=f"{name} has {total} partitions")

    async def _configs(self, request: Request, session: Session, form: dict[str, str]) -> Response:
        name = request.path_params["name"]
        key, value = form.get("config", "").strip(), form.get("value", "")
        if not key:
            raise views.InputError("name the config to change")
        if form.get("reset") == "1":
            await session.held.admin.alter_configs(name, delete=[key])
        else:
            await session.held.admin.alter_configs(name, set={key: value})
        return _back(f"/topics/{quote(name, safe='')}", flash=f"{key} changed")

    async def _delete_topic(self, request: Request, session: Session, form: dict[str, str]) -> Response:
        name = request.path_params["name"]
        if form.get("confirm") != name:
            raise views.InputError(f"type the topic's name ({name}) to delete it")
        await session.held.admin.delete_topic(name)
        return _back("/topics", flash=f"deleted {name}")

    async def _produce(self, request: Request, session: Session, form: dict[str, str]) -> Response:
        name = request.path_params["name"]
        headers = []
        for line in form.get("headers", "").splitlines():
            if line.strip():
                header, sep, value = line.partition(":")
                if not sep:
                    raise views.InputError(f"a header is NAME: VALUE, one per line ({line[:40]!r})")
                headers.append((header.strip(), value.strip().encode()))
        partition_text = form.get("partition", "").strip()
        partition = _number(partition_text, "partition", minimum=0) if partition_text else None
        key = form.get("key", "")
        future = await session.held.producer.send(
            name, form.get("value", "").encode(), key.encode() if key else None, partition=partition, headers=headers
        )
        written = await future
        flash = f"written to partition {written.partition} at offset {written.offset}"
        if _wants_json(request):
            return _secured(JSONResponse({"partition": written.partition, "offset": written.offset}))
        return _back(form.get("back") or f"/topics/{quote(name, safe='')}", flash=flash)

    async def _reset(self, request: Request, session: Session, form: dict[str, str]) -> Response:
        group_id = request.path_params["group"]
        to = form.get("to", "")
        topic_name = form.get("topic", "").strip()
        partitions: list[lanes.TopicPartition] = []
        if topic_name:
            info = await session.held.admin.describe_topic(topic_name)
            partitions = [lanes.TopicPartition(topic_name, p.partition) for p in info.partitions]
        if to.startswith("time:"):
            to = f"timestamp:{views.parse_time_ms(to[5:])}"
        dry_run = form.get("apply") != "1"
        preview = await session.held.admin.reset_offsets(group_id, to, partitions=partitions, dry_run=dry_run)
        if _wants_json(request):
            return _secured(JSONResponse({"dry_run": dry_run, "offsets": [asdict(p) for p in preview]}))
        if not dry_run:
            return _back(f"/groups/{quote(group_id, safe='')}", flash=f"reset {len(preview)} partitions to {to}")
        described = await views.group(session.held, group_id)
        return self.render(
            request, session, "group.html", group=described, preview=preview, reset_to=to, reset_topic=topic_name
        )

    async def _delete_group(self, request: Request, session: Session, form: dict[str, str]) -> Response:
        group_id = request.path_params["group"]
        if form.get("confirm") != group_id:
            raise views.InputError(f"type the group's id ({group_id}) to delete it")
        await session.held.admin.delete_group(group_id)
        return _back("/groups", flash=f"deleted {group_id}")


# ---------------------------------------------------------------------------------------------
# helpers


async def _close(session: Session) -> None:
    if isinstance(session.held, UserClients) and session.principal != "anonymous":
        with contextlib.suppress(Exception):
            await session.held.close()


def _samples(session: Session) -> views.Samples:
    if session.samples is None:
        session.samples = views.Samples()
    samples: views.Samples = session.samples
    return samples


def _secured(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _problem(status: int, message: str, code: str = "") -> Response:
    body: dict[str, Any] = {"error": message}
    if code:
        body["code"] = code
    return _secured(JSONResponse(body, status_code=status))


def _back(path: str, **message: str) -> Response:
    separator = "&" if "?" in path else "?"
    return RedirectResponse(f"{path}{separator}{urlencode(message)}", status_code=303)


def _local(target: str) -> str:
    """``target`` if it is a path of this console, else ``/`` (no open redirect)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def _same_origin(request: Request) -> bool:
    """No ``Origin`` (a same-origin GET-made form in old browsers, or a non-browser client with
    its token), or this console's own."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


async def _form(request: Request) -> dict[str, str] | None:
    """The form's fields (the first of each), or None when the body is too large."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_FORM_BYTES):
        return None
    try:
        async with request.form(max_files=0, max_fields=64, max_part_size=MAX_FORM_BYTES) as form:
            return {k: v for k, v in form.items() if isinstance(v, str)}
    except Exception:  # malformed bodies: an empty form, refused by the checks after
        return {}


def _number(text: str, what: str, *, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise views.InputError(f"{what} is a whole number") from None
    if value < minimum:
        raise views.InputError(f"{what} is at least {minimum}")
    return value


def _plain(value: Any) -> Any:
    """Dataclasses and tuples as JSON values."""
    if hasattr(value, "__dataclass_fields__"):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    return value


def _size(value: int | None) -> str:
    if value is None:
        return "—"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
