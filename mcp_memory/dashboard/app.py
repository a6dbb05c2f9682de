"""The dashboard's routes on the Starlette app the SDK runs for HTTP and SSE.

``register_dashboard`` adds them to an ``MCPServer`` as custom routes (the SDK serves them
beside ``/mcp``, without authentication: ``auth.py`` checks the tokens). Each request is
checked (Host, Origin, sign-in; for an action also the full token and the CSRF token), then
its view runs in a worker thread (the memory is synchronous) and its page is rendered from
a Jinja2 template with autoescaping. Every response forbids inline scripts, framing and
anything not served by the dashboard itself (``serving.py`` adds the same headers to the
responses the framework itself sends: unknown paths, wrong methods).

Signing in is a POST to ``/signin`` (a pasted token, or the one-time code of the sign-in
page ``mcp-memory ui`` opens); a ``?token=`` in a link never signs a browser in, and a
browser already signed in is never switched to another sign-in.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from mcp.server.transport_security import TransportSecuritySettings
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from mcp_memory import __version__
from mcp_memory.core.tokens import usable
from mcp_memory.dashboard import views
from mcp_memory.dashboard.auth import Access, DashboardAuth, TokenSet, cookie_name
from mcp_memory.dashboard.links import local_path
from mcp_memory.dashboard.serving import HEADERS, secure_headers
from mcp_memory.dashboard.views import Page, PageError, View
from mcp_memory.runtime.service import MemoryService

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from mcp_memory.memory import Memory

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
OPEN_WAIT = 5.0  # seconds a page waits for the memory to open before saying it is still opening
MAX_FORM_BYTES = 64 * 1024
MAX_NOTES = 200
NAV = [("/", "Overview"), ("/search", "Search"), ("/files", "Files"), ("/timeline", "Timeline"),
       ("/recalls", "Recalls"), ("/experience", "Experience"), ("/status", "Status")]
LEVEL_NAMES = {"full": "full access", "read-only": "read-only", "shared": "shared: private files hidden"}

ViewFn = Callable[[View], Page]
ActionFn = Callable[[View], tuple[str, str]]


class Dashboard:
    """The pages and actions of one server, answering from ``service``'s memory."""

    def __init__(self, service: MemoryService, auth: DashboardAuth):
        self.service = service
        self.auth = auth
        self.templates = Environment(loader=FileSystemLoader(HERE / "templates"),
                                     autoescape=select_autoescape(default=True, default_for_string=True))
        self.static = {p.name: p for p in (HERE / "static").iterdir() if p.is_file()}
        self._notes: OrderedDict[str, str] = OrderedDict()  # one-time messages shown after an action
        self._notes_lock = threading.Lock()

    def routes(self) -> list[Route]:
        page = self._page
        action = self._action
        return [
            Route("/", page(views.overview), methods=["GET"]),
            Route("/search", page(views.search), methods=["GET"]),
            Route("/files", page(views.files), methods=["GET"]),
            Route("/files/{path:path}", self._file, methods=["GET"]),
            Route("/timeline", page(views.timeline), methods=["GET"]),
            Route("/recalls", page(views.recalls), methods=["GET"]),
            Route("/experience", page(views.experience), methods=["GET"]),
            Route("/status", page(views.status), methods=["GET"]),
            Route("/forget", page(views.forget_form, edit=True), methods=["GET"]),
            Route("/forget", action(views.forget_line), methods=["POST"]),
            Route("/edit", page(views.edit_form, edit=True), methods=["GET"]),
            Route("/edit", action(views.edit_line), methods=["POST"]),
            Route("/reward", action(lambda v: views.change_utility(v, reward=True)), methods=["POST"]),
            Route("/penalize", action(lambda v: views.change_utility(v, reward=False)), methods=["POST"]),
            Route("/signin", self._sign_in, methods=["POST"]),
            Route("/signout", self._sign_out, methods=["POST"]),
            Route("/static/{name}", self._static, methods=["GET"]),
        ]

    # ----- requests ---------------------------------------------------------------------------
    def _page(self, view: ViewFn, edit: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await self._serve_page(request, view, edit)

        return endpoint

    async def _file(self, request: Request) -> Response:
        path = request.path_params["path"]
        return await self._serve_page(request, lambda v: views.file(v, path))

    async def _serve_page(self, request: Request, view: ViewFn, edit: bool = False) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        access = self.auth.authenticate(request)
        if "token" in request.query_params:
            return self._token_in_link(request, access)
        if access is None:
            return self._sign_in_page(request, 401)
        if edit and not access.can_edit:
            return self._render_simple(request, access, "error.html", "Not allowed",
                                       {"message": "this token may look, not change memory"}, 403)
        params = dict(request.query_params)
        note = self._pop_note(params.pop("note", ""))
        return await self._run(request, access, lambda memory: view(View(memory, access, params)), note)

    def _action(self, action: ActionFn) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            refused = self._refused(request)
            if refused is not None:
                return refused
            access = self.auth.authenticate(request)
            if access is None:
                return self._sign_in_page(request, 401, target="/")  # an action's URL is no page to return to
            form = await _form(request)
            if form is None:
                return self._render_simple(request, access, "error.html", "Bad request",
                                           {"message": "the form is too large or not a form"}, 400)
            if not self.auth.csrf_ok(access, form.get("csrf", "")):
                return self._render_simple(request, access, "error.html", "Not allowed",
                                           {"message": "the form's CSRF token is missing or stale: reload the page"},
                                           403)
            if not access.can_edit:
                return self._render_simple(request, access, "error.html", "Not allowed",
                                           {"message": "this token may look, not change memory"}, 403)
            form.pop("csrf", None)

            def act(memory: Memory) -> Page | Response:
                note, target = action(View(memory, access, form))
                return RedirectResponse(self._with_note(local_path(target), note), status_code=303)

            return await self._run(request, access, act, "")

        return endpoint

    async def _run(self, request: Request, access: Access, work: Callable[[Memory], Page | Response],
                   note: str) -> Response:
        """Open the memory, run ``work`` and render its page, in a worker thread."""

        def run() -> Response:
            try:
                memory = self.service.memory(OPEN_WAIT)
            except TimeoutError:
                return self._render(request, access, Page("opening.html", "Opening", {}, 503), "")
            except RuntimeError as exc:
                return self._render(request, access, Page("error.html", "Error", {"message": str(exc)}, 500), "")
            try:
                result = work(memory)
            except PageError as exc:
                result = Page("error.html", "Error", {"message": str(exc)}, exc.status)
            except Exception as exc:  # a page, never a traceback: the details go to the server's log
                log.exception("dashboard page %s failed", request.url.path)
                result = Page("error.html", "Error", {"message": f"the page failed: {type(exc).__name__}"}, 500)
            if isinstance(result, Response):
                return _secured(result)
            return self._render(request, access, result, note)

        return await run_in_threadpool(run)

    def _refused(self, request: Request, allow_null_origin: bool = False) -> Response | None:
        problem = self.auth.origin_problem(request, allow_null_origin)
        if problem is None:
            return None
        return _secured(PlainTextResponse(problem[1], status_code=problem[0]))

    # ----- sign-in ----------------------------------------------------------------------------
    def _token_in_link(self, request: Request, access: Access | None) -> Response:
        """A GET with ``?token=``: never a sign-in (a link or an image could carry it), no cookie set.

        A browser already signed in goes on to the page without the token; another sees the
        sign-in form, which posts the token instead.
        """
        if access is None:
            return self._sign_in_page(request, 401, problem="link")
        rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        return _secured(RedirectResponse(request.url.path + (f"?{urlencode(rest)}" if rest else ""), status_code=303))

    async def _sign_in(self, request: Request) -> Response:
        """POST /signin: a token or a one-time code for a session cookie; never replaces a sign-in."""
        form = await _form(request)
        if form is None:
            return self._sign_in_page(request, 400, problem="form", target="/")
        code, token = form.get("code", ""), form.get("token", "")
        # A one-time code comes from the local sign-in page of `ui`, posted with "Origin: null".
        refused = self._refused(request, allow_null_origin=bool(code) and not token)
        if refused is not None:
            return refused
        target = local_path(form.get("next"))
        current = self.auth.authenticate(request)
        if current is not None and current.by_cookie:
            note = f"already signed in ({LEVEL_NAMES[current.level]}): sign out first to use another token"
            return _secured(RedirectResponse(self._with_note(target, note), status_code=303))
        session = self.auth.redeem(code) if code else self.auth.sign_in(token)
        if session is None:
            return self._sign_in_page(request, 401, problem="code" if code else "token", target=target)
        if request.headers.get("origin") == "null":
            # Posted from the local sign-in page: a page that moves on by itself, not a redirect,
            # since a browser sends no SameSite=Strict cookie along a redirect that a page of
            # another origin started, but does on a navigation this page starts.
            response = self._render_simple(request, self.auth.access_of(session), "signedin.html", "Signed in",
                                           {"target": target}, 200)
        else:
            response = _secured(RedirectResponse(target, status_code=303))
        response.set_cookie(cookie_name(request), self.auth.cookie_value(session, request), httponly=True,
                            samesite="strict", path="/", secure=request.url.scheme == "https")
        return response

    def _sign_in_page(self, request: Request, status: int, problem: str = "", target: str | None = None) -> Response:
        """The sign-in form (``problem``: what went wrong before), which returns to ``target`` or this page."""
        return self._render_simple(request, None, "signin.html", "Sign in",
                                   {"problem": problem, "next": local_path(target or _here(request))}, status)

    async def _sign_out(self, request: Request) -> Response:
        """End the session the cookie names (no CSRF token needed: signing out is harmless) and drop the cookie."""
        refused = self._refused(request)
        if refused is not None:
            return refused
        session = self.auth.session_of(request)
        if session is not None:
            self.auth.sign_out(session)
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(cookie_name(request), path="/")
        return _secured(response)

    # ----- rendering --------------------------------------------------------------------------
    def _render(self, request: Request, access: Access | None, page: Page, note: str) -> Response:
        context = {
            **page.context, "title": page.title, "note": note, "access": access, "nav": NAV,
            "path_now": request.url.path, "here": _here(request), "version": __version__,
            "csrf": self.auth.csrf_token(access) if access is not None else "",
            "level_name": LEVEL_NAMES[access.level] if access is not None else "",
            # A cookie sign-in can sign out; an open dashboard or a bearer header has nothing to forget.
            "signed_in": access is not None and access.by_cookie,
        }
        html = self.templates.get_template(page.template).render(context)
        return _secured(HTMLResponse(html, status_code=page.status))

    def _render_simple(self, request: Request, access: Access | None, template: str, title: str,
                       context: dict[str, Any], status: int) -> Response:
        return self._render(request, access, Page(template, title, context, status), "")

    async def _static(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        found = self.static.get(request.path_params["name"])
        if found is None:
            return _secured(PlainTextResponse("not found", status_code=404))
        response = FileResponse(found)
        _secured(response)
        response.headers["Cache-Control"] = "no-cache"
        return response

    # ----- one-time notes -----------------------------------------------------------------------
    def _with_note(self, target: str, note: str) -> str:
        key = secrets.token_urlsafe(12)
        with self._notes_lock:
            self._notes[key] = note
            while len(self._notes) > MAX_NOTES:
                self._notes.popitem(last=False)
        path, _, fragment = target.partition("#")
        joined = f"{path}{'&' if '?' in path else '?'}note={key}"
        return joined + (f"#{fragment}" if fragment else "")

    def _pop_note(self, key: str) -> str:
        with self._notes_lock:
            return self._notes.pop(key, "") if key else ""


def register_dashboard(server: MCPServer, service: MemoryService, tokens: TokenSet, shared: bool,
                       security: TransportSecuritySettings | None = None, host: str = "127.0.0.1") -> Dashboard:
    """Serve the dashboard at ``/`` of ``server``'s HTTP app, behind the same tokens as ``/mcp``.

    Run the app the SDK then builds through ``serving.run_http`` (or wrap it in
    ``serving.secure_headers``): the framework's own responses get the security headers there.
    """
    dashboard = Dashboard(service, DashboardAuth(tokens, shared, security, host))
    for route in dashboard.routes():
        server.custom_route(route.path, sorted(route.methods or ["GET"]))(route.endpoint)
    return dashboard


def dashboard_server(service: MemoryService, tokens: TokenSet, shared: bool = False, host: str = "127.0.0.1",
                     security: TransportSecuritySettings | None = None) -> tuple[ASGIApp, Dashboard]:
    """The whole HTTP app of a server for ``service`` (``/mcp`` and the dashboard, every response
    with the security headers) and its dashboard (``ui`` issues sign-in codes through it)."""
    from mcp_memory.server import create_server

    full = usable(tokens.full)
    server = create_server(service.settings, service, token=full[0] if full else None,
                           read_only_tokens=tokens.read_only, shared_tokens=tokens.shared, shared=shared)
    dashboard = register_dashboard(server, service, tokens, shared, security, host)
    return secure_headers(server.streamable_http_app(host=host, transport_security=security)), dashboard


def dashboard_app(service: MemoryService, tokens: TokenSet, shared: bool = False, host: str = "127.0.0.1",
                  security: TransportSecuritySettings | None = None) -> ASGIApp:
    """The whole HTTP app of a server for ``service``: ``/mcp`` and the dashboard (for tests and benches)."""
    return dashboard_server(service, tokens, shared, host, security)[0]


# ----- helpers ----------------------------------------------------------------------------------
def _secured(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers[name] = value
    return response


async def _form(request: Request) -> dict[str, str] | None:
    """An urlencoded form's fields (the last value of each), or None when too large or not a form."""
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    try:
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        return None


def _here(request: Request) -> str:
    """The current page's path and query, without a one-time note nor a token: where an action returns to."""
    rest = [(k, v) for k, v in request.query_params.multi_items() if k not in ("note", "token")]
    return local_path(quote(request.url.path) + (f"?{urlencode(rest)}" if rest else ""))
