"""The dashboard's routes: sign-in, tokens, CSRF, privacy, actions and what each page shows.

The real app (``/mcp`` plus the dashboard, as ``serve`` builds it) reached in-process through
Starlette's test client; the memory is real (LanceDB, Tantivy) with the hash embedder. Some
tests start the real commands (``serve --transport http`` and ``ui``) in a child process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import httpx2
import pytest
from starlette.testclient import TestClient

from conftest import free_port, indexed_memory, server_env, start_server, write
from mcp_memory.config import Settings
from mcp_memory.core.transcripts import Message
from mcp_memory.dashboard.app import Dashboard, dashboard_server
from mcp_memory.dashboard.auth import DashboardAuth, Tokens
from mcp_memory.dashboard.render import parse_range, render_markdown
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService

FULL, READ_ONLY, SHARED = "full-token-0123456789", "read-only-token-456789", "shared-token-89abcdef"
BASE = "http://127.0.0.1:8765"
DAILY = "memory/2026-01-05.md"
PRIVATE_FACT = "The locker combination hint is purple giraffe."
PAGES = ["/", "/search?q=pnpm", "/files", f"/files/{DAILY}", "/timeline", "/recalls", "/experience", "/status"]
HOSTILE = (
    "- Tried <script>window.pwned = 1</script> in a note.\n"
    '- An image <img src=x onerror="window.pwned = 2"> here.\n'
    "- A [harmless looking link](javascript:window.pwned=3) too.\n"
)


@dataclass
class Dash:
    app: object
    dashboard: Dashboard
    service: MemoryService
    root: Path

    @property
    def memory(self) -> Memory:
        return self.service.memory()

    def client(self, token: str | None = None, bearer: str | None = None) -> TestClient:
        """A browser-like client; ``token``: signed in through the sign-in form first."""
        client = TestClient(self.app, base_url=BASE, follow_redirects=False)  # type: ignore[arg-type]
        if bearer:
            client.headers["Authorization"] = f"Bearer {bearer}"
        if token:
            response = sign_in(client, token)
            assert response.status_code == 303 and "set-cookie" in response.headers, response.text
        return client


def sign_in(client: TestClient, token: str, next_page: str = "/") -> httpx2.Response:
    """What the sign-in form posts."""
    return client.post("/signin", data={"token": token, "next": next_page})


def _workspace(root: Path) -> None:
    write(root, "MEMORY.md", f"# Memory\n\n- [preference] The user prefers pnpm over npm.\n- {PRIVATE_FACT}\n")
    write(root, DAILY, "# 2026-01-05\n\n- [decision] We deploy the API with blue-green releases on Fridays.\n"
                       "- [fact] The staging database runs Postgres 16.\n" + HOSTILE)


def _dash(settings: Settings, workspace: Path, tokens: Tokens, shared: bool = False, host: str = "127.0.0.1") -> Dash:
    _workspace(workspace)
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    app, dashboard = dashboard_server(service, tokens, shared=shared, host=host)
    return Dash(app, dashboard, service, workspace)


@pytest.fixture
def dash(settings: Settings, workspace: Path) -> Iterator[Dash]:
    d = _dash(settings, workspace, Tokens([FULL], [READ_ONLY], [SHARED]))
    yield d
    d.service.close()


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "no CSRF token on the page"
    return found.group(1)


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))


def _assert_inert(html: str) -> None:
    """No element of the page runs anything but the dashboard's own script file."""
    parser = _Elements()
    parser.feed(html)
    for tag, attrs in parser.elements:
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        for name in ("href", "src", "action"):
            assert not (attrs.get(name) or "").strip().lower().startswith(("javascript:", "data:")), (tag, attrs)
        if tag == "script":
            assert attrs.get("src") == "/static/dashboard.js", attrs
        assert tag not in ("iframe", "object", "embed"), tag
    assert sum(tag == "img" for tag, _ in parser.elements) == 0


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


# ----- sign-in ----------------------------------------------------------------------------------
def test_every_page_asks_for_a_token_first(dash: Dash):
    client = dash.client()
    for page in PAGES:
        response = client.get(page)
        assert response.status_code == 401, page
        assert "Sign in" in response.text and "pnpm" not in _text(response.text)
    assert client.post("/forget", data={"path": DAILY, "line": "3"}).status_code == 401


def test_sign_in_form_posts_the_token_for_an_http_only_strict_browser_session_cookie(dash: Dash):
    client = dash.client()
    form = client.get("/search?q=pnpm&mode=default")
    assert form.status_code == 401
    assert 'action="/signin" method="post"' in form.text
    assert 'name="next" value="/search?q=pnpm&amp;mode=default"' in form.text
    response = sign_in(client, FULL, "/search?q=pnpm&mode=default")
    assert response.status_code == 303 and response.headers["location"] == "/search?q=pnpm&mode=default"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower() and "Path=/" in cookie
    # A browser-session cookie: no lifetime of its own (the server ends the session after hours).
    assert "max-age" not in cookie.lower() and "expires" not in cookie.lower()
    assert FULL not in cookie  # a session id, never the token
    page = client.get("/search?q=pnpm")
    assert page.status_code == 200 and "full access" in page.text and "MEMORY.md#L" in page.text
    wrong = sign_in(dash.client(), f"wrong-{FULL}")
    assert wrong.status_code == 401 and "not valid" in wrong.text and "set-cookie" not in wrong.headers


def test_bearer_header_works_and_a_wrong_one_is_refused(dash: Dash):
    assert dash.client(bearer=READ_ONLY).get("/files").status_code == 200
    assert dash.client(bearer="not-a-token-at-all").get("/files").status_code == 401


def test_sign_out_forgets_the_session(dash: Dash):
    client = dash.client(FULL)
    csrf = _csrf(client.get("/").text)
    assert client.post("/signout", data={"csrf": csrf}).status_code == 303
    client.cookies.clear()
    assert client.get("/").status_code == 401


def test_sign_out_ends_the_session_on_the_server_even_without_the_csrf_token(dash: Dash):
    client = dash.client(FULL)
    cookie = client.cookies.get("mcp_memory_8765")
    assert cookie and client.get("/").status_code == 200
    assert client.post("/signout", data={}).status_code == 303  # no CSRF token: signing out is harmless
    assert client.get("/").status_code == 401
    # The cookie a copy was taken of is dead too, not only deleted from this browser.
    replay = dash.client()
    replay.cookies.set("mcp_memory_8765", cookie)
    assert replay.get("/").status_code == 401


def test_a_token_in_a_link_never_signs_in_nor_switches_a_session(dash: Dash):
    # Not signed in: a link with a token shows the sign-in form, and sets nothing.
    stranger = dash.client()
    page = stranger.get(f"/files?token={FULL}")
    assert page.status_code == 401 and "does not sign in" in page.text
    assert "set-cookie" not in page.headers and FULL not in page.text
    assert stranger.get("/files").status_code == 401
    # Signed in: a link (or an image in memory content) with another token changes nothing.
    owner = dash.client(FULL)
    followed = owner.get(f"/?token={SHARED}")
    assert followed.status_code == 303 and followed.headers["location"] == "/"
    assert "set-cookie" not in followed.headers
    assert "full access" in owner.get("/").text
    # Nor does a sign-in form posted to a browser already signed in.
    posted = sign_in(owner, SHARED, "/files")
    assert posted.status_code == 303 and "set-cookie" not in posted.headers
    after = owner.get(posted.headers["location"])
    assert "already signed in (full access)" in after.text and "full access" in after.text
    # A bearer header still works, and a sign-in form still needs a real token.
    assert dash.client(bearer=SHARED).get("/files").status_code == 200


def test_a_sign_in_cookie_counts_only_for_the_host_it_was_set_by_and_for_hours(dash: Dash):
    client = dash.client(FULL)
    assert client.get("/").status_code == 200
    # The same server reached under another name: the cookie is not its own there.
    assert client.get("/", headers={"Host": "localhost:8765"}).status_code == 401
    # A cookie of the same name that is not ours, sent along, does not hide ours.
    ours = client.cookies.get("mcp_memory_8765")
    stray = dash.client()
    stray.headers["Cookie"] = f"mcp_memory_8765={ours}; mcp_memory_8765=planted-by-another-server"
    assert stray.get("/").status_code == 200
    # Hours, not days: the server ends the session whatever the browser keeps.
    auth = dash.dashboard.auth
    real = auth.clock
    auth.clock = lambda: real() + 13 * 3600
    try:
        assert client.get("/").status_code == 401
    finally:
        auth.clock = real


def test_a_one_time_code_signs_in_once_and_only_for_two_minutes(dash: Dash):
    auth = dash.dashboard.auth
    used = []
    code = auth.issue_code("full", on_used=lambda: used.append(True))
    client = dash.client()
    signed = client.post("/signin", data={"code": code, "next": "/files"}, headers={"Origin": "null"})
    assert signed.status_code == 200 and "Signed in with full access" in signed.text and used == [True]
    # Posted from a local page: a page that moves on by itself (a redirect would lose the Strict cookie).
    assert '<meta http-equiv="refresh" content="0; url=/files">' in signed.text
    assert client.get("/files").status_code == 200
    again = dash.client().post("/signin", data={"code": code}, headers={"Origin": "null"})
    assert again.status_code == 401 and "expired or was already used" in again.text
    late = auth.issue_code("full")
    real = auth.clock
    auth.clock = lambda: real() + 121
    try:
        expired = dash.client().post("/signin", data={"code": late}, headers={"Origin": "null"})
    finally:
        auth.clock = real
    assert expired.status_code == 401
    # A token is never accepted from a page of another origin, the local sign-in page included.
    assert dash.client().post("/signin", data={"token": FULL}, headers={"Origin": "null"}).status_code == 403


def test_many_sign_ins_with_a_shared_token_never_sign_the_owner_out(dash: Dash):
    owner = dash.client(FULL)
    other = dash.client()
    for _ in range(1001):
        other.cookies.clear()
        assert sign_in(other, SHARED).status_code == 303
    assert owner.get("/").status_code == 200 and "full access" in owner.get("/").text
    assert "shared" in other.get("/").text  # the latest shared sign-in still works


def test_pages_forbid_inline_scripts_framing_and_other_origins(dash: Dash):
    client = dash.client(FULL)
    for page in PAGES:
        response = client.get(page)
        assert response.status_code == 200, (page, response.text)
        csp = response.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert response.headers["referrer-policy"] == "same-origin"
        assert "<script>" not in response.text
        # Every script the page loads is the dashboard's own file.
        assert re.findall(r"<script[^>]*>", response.text) == ['<script src="/static/dashboard.js" defer>']
        _assert_inert(response.text)
    static = client.get("/static/dashboard.css")
    assert static.status_code == 200 and "text/css" in static.headers["content-type"]
    assert client.get("/static/..%2F__init__.py").status_code == 404


def test_host_and_origin_are_checked_as_on_mcp(dash: Dash):
    client = dash.client(FULL)
    assert client.get("/", headers={"Host": "evil.example:8765"}).status_code == 421
    csrf = _csrf(client.get("/").text)
    response = client.post("/reward", data={"csrf": csrf, "id": "m-000000000000"},
                           headers={"Origin": "http://evil.example"})
    assert response.status_code == 403
    # The dashboard's own pages post with their own origin.
    ok = client.post("/penalize", data={"csrf": csrf, "id": "m-000000000000"}, headers={"Origin": BASE})
    assert ok.status_code == 400 and "no memory has the id" in ok.text


def test_every_response_carries_the_security_headers(dash: Dash):
    """The framework's own answers too: an unknown path, a wrong method, /mcp, a static file."""
    client = dash.client(FULL)
    responses = {
        "unknown path": client.get("/no-such-page"),
        "wrong method": client.delete("/"),
        "GET of a form target": client.get("/signin"),
        "POST of a page": client.post("/files", data={}),
        "static file": client.get("/static/dashboard.js"),
        "missing static file": client.get("/static/nope.css"),
        "/mcp without a token": dash.client().post("/mcp", json={}),
        "a page": client.get("/"),
    }
    assert responses["unknown path"].status_code == 404 and responses["wrong method"].status_code == 405
    for what, response in responses.items():
        headers = response.headers
        assert "frame-ancestors 'none'" in headers.get("content-security-policy", ""), what
        assert headers.get("x-content-type-options") == "nosniff", what
        assert headers.get("x-frame-options") == "DENY", what
        assert headers.get("referrer-policy") == "same-origin", what
        assert headers.get("cache-control") in ("no-store", "no-cache"), what


def test_return_targets_are_paths_of_this_site_only(dash: Dash):
    client = dash.client(FULL)
    own = f"/files/{DAILY}"
    hostile = ["javascript:alert(document.domain)", "https://evil.example/", "//evil.example/x", "/\\evil.example",
               "/\t/evil.example", " https://evil.example", "data:text/html,<b>x</b>"]
    for target in hostile:
        form = client.get("/forget", params={"path": DAILY, "line": 4, "next": target})
        assert form.status_code == 200
        cancel = re.search(r'<a class="button" href="([^"]*)">Cancel</a>', form.text)
        assert cancel and cancel.group(1) == own, (target, cancel and cancel.group(1))
        assert f'name="next" value="{own}"' in form.text, target
        assert "evil" not in form.text and "javascript:" not in form.text, target
        csrf = _csrf(form.text)
        rewarded = client.post("/penalize", data={"csrf": csrf, "id": "m-000000000000", "next": target})
        assert rewarded.status_code == 400  # no such memory: an error page, no redirect anywhere
        signed = dash.client().post("/signin", data={"token": READ_ONLY, "next": target})
        assert signed.status_code == 303 and signed.headers["location"] == "/", target
        code = dash.dashboard.auth.issue_code("read-only")
        local = dash.client().post("/signin", data={"code": code, "next": target}, headers={"Origin": "null"})
        assert 'content="0; url=/"' in local.text and "evil" not in local.text, target
    # A local path is kept, with its query.
    kept = client.get("/forget", params={"path": DAILY, "line": 4, "next": "/search?q=Postgres"})
    assert '<a class="button" href="/search?q=Postgres">Cancel</a>' in kept.text
    memory_id = dash.memory.search("pnpm")[0].id
    moved = client.post("/reward", data={"csrf": _csrf(kept.text), "id": memory_id, "next": "//evil.example"})
    assert moved.status_code == 303 and moved.headers["location"].startswith("/?note=")


def test_a_huge_highlight_range_costs_no_more_than_a_small_one(dash: Dash):
    client = dash.client(FULL)

    def cpu_ms(url: str) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            page = client.get(url)
            best = min(best, (time.process_time() - start) * 1000)
            assert page.status_code == 200 and 'class="hl"' in page.text, url
        return best

    small = cpu_ms(f"/files/{DAILY}?hl=3-4")
    for view in ("", "&view=source"):
        huge = cpu_ms(f"/files/{DAILY}?hl=1-9999999{view}")
        assert huge < small + 60, (view, huge, small)  # unclamped: 300 ms and more


def test_every_refusal_of_a_path_reads_the_same(dash: Dash, tmp_path: Path):
    """Missing, outside the workspace, not a memory file, private: one answer, for every caller."""
    elsewhere = tmp_path / "elsewhere" / "notes.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text("# somebody else's notes\n")
    asked = [str(elsewhere), str(elsewhere.with_name("missing.md")), "memory/nope.md", "../elsewhere/notes.md",
             "memory/../../elsewhere/notes.md", "/etc/hostname.md"]

    def answer(response: httpx2.Response, path: str) -> tuple[int, str]:
        message = re.search(r'<p class="error">(.*?)</p>', response.text, re.S)
        assert message, response.text
        quoted = message.group(1)  # the path as asked, quoted (cut short when long), then the reason
        assert quoted.startswith("&#39;" + path[:20].replace("'", "&#39;")), (quoted, path)
        return response.status_code, re.sub(r"^&#39;.*&#39; ", "PATH ", quoted)

    for token in (FULL, READ_ONLY, SHARED):
        client = dash.client(token)
        # Dots encoded: the client would resolve "../" itself, the server decodes them.
        answers = {path: answer(client.get(f"/files/{quote(path).replace('.', '%2E')}"), path) for path in asked}
        if token == SHARED:
            answers["MEMORY.md"] = answer(client.get("/files/MEMORY.md"), "MEMORY.md")
        assert set(answers.values()) == {(404, "PATH is not a memory file shared with this client")}, (token, answers)
        if token == FULL:
            forms = {answer(client.get("/forget", params={"path": path, "line": 1}), path) for path in asked}
            assert forms == {(404, "PATH is not a memory file shared with this client")}, forms


def test_on_any_loopback_address_host_and_origin_are_checked(settings: Settings, workspace: Path):
    """127.x.y.z is loopback too: a name rebound to it by another site is refused, open dashboard or not."""
    d = _dash(settings, workspace, Tokens([], [], []), host="127.5.6.7")
    try:
        client = TestClient(d.app, base_url="http://127.5.6.7:8765", follow_redirects=False)  # type: ignore[arg-type]
        assert d.memory is not None  # opened
        assert client.get("/files").status_code == 200
        assert client.get("/files", headers={"Host": "rebound.evil.example:8765"}).status_code == 421
        page = client.get("/search", params={"q": "pnpm"})
        memory_id = re.search(r'name="id" value="(m-[0-9a-f]+)"', page.text).group(1)  # type: ignore[union-attr]
        form = {"id": memory_id, "csrf": _csrf(page.text)}
        assert client.post("/reward", data=form, headers={"Origin": "http://evil.example"}).status_code == 403
        assert client.post("/reward", data=form, headers={"Origin": "http://127.5.6.7:8765"}).status_code == 303
    finally:
        d.service.close()


# ----- pages ------------------------------------------------------------------------------------
def test_search_shows_cited_hits_with_why_and_highlighted_lines(dash: Dash):
    page = dash.client(FULL).get("/search", params={"q": "blue-green deploy"})
    assert page.status_code == 200, page.text
    assert f"{DAILY}#L" in page.text
    assert "<mark>deploy</mark>" in page.text and 'class="matched"' in page.text
    assert "why: keywords" in page.text and "vector" in page.text
    assert f'href="/files/{DAILY}?hl=' in page.text
    for mode in ("precise", "deep"):
        assert dash.client(FULL).get("/search", params={"q": "Postgres staging", "mode": mode}).status_code == 200
    bad = dash.client(FULL).get("/search", params={"q": "x", "mode": "loud"})
    assert bad.status_code == 400 and "mode must be one of" in bad.text


def test_file_page_renders_markdown_with_line_anchors_and_no_live_markup(dash: Dash):
    page = dash.client(FULL).get(f"/files/{DAILY}", params={"hl": "3-3"})
    assert page.status_code == 200
    html = page.text
    assert 'id="L3"' in html and 'href="#L3"' in html and 'class="hl"' in html
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in html  # shown as text
    _assert_inert(html)
    source = dash.client(FULL).get(f"/files/{DAILY}", params={"view": "source"})
    assert '<tr id="L4"' in source.text and "edit</a>" in source.text
    missing = dash.client(FULL).get("/files/memory/nope.md")
    assert missing.status_code == 404


def test_render_markdown_gives_every_line_an_anchor():
    html = render_markdown("# T\n\n- a\n- b\n  more\n\n```\ncode\n```\n", parse_range("4-5"))
    for line in range(1, 10):
        assert f'id="L{line}"' in html, line
    assert '<li class="hl">' in html
    assert parse_range("L12-L14") == (12, 14) and parse_range("x") is None and parse_range("5-2") is None


def test_files_page_lists_sizes_and_dates(dash: Dash):
    page = dash.client(FULL).get("/files")
    assert "MEMORY.md" in page.text and DAILY in page.text and "2026-01-05" in page.text


def test_timeline_shows_stores_and_captures_with_extractor_and_skip_reasons(dash: Dash):
    memory = dash.memory
    memory.store("The user's cat is called Miso.")
    memory.store("The user's cat is called Miso.")  # a duplicate: skipped, and why
    memory.capture([Message("user", "Remember that I always run the tests with pytest -q before a commit."),
                    Message("assistant", "ok")], session_key="sess-42")
    page = dash.client(FULL).get("/timeline")
    text = _text(page.text)
    assert "session sess-42" in text and "extractor rules" in text
    assert "Miso" in text and "already in memory at" in text


def test_recall_log_shows_the_prompt_and_the_memories_injected(dash: Dash):
    dash.memory.recall_hits("How do we deploy the API on Fridays?", session_key="sess-7")
    page = dash.client(FULL).get("/recalls")
    text = _text(page.text)
    assert "session sess-7" in text and "How do we deploy the API on Fridays?" in text
    assert f"{DAILY}#L" in text


def test_experience_draws_chains_filters_them_and_lists_utility(dash: Dash):
    memory = dash.memory
    memory.experience.add("disk full on the build host", "pruned old docker images", "space freed", "success", ["ops"])
    memory.experience.add("flaky login test", "added a sleep", "still flaky", "failure", ["tests"])
    hit = memory.search("pnpm")[0]
    memory.feedback.reward(hit.id)
    page = dash.client(FULL).get("/experience")
    assert page.status_code == 200
    assert "<svg" in page.text and "pruned old docker images" in page.text and "#c62828" in page.text
    assert hit.id in page.text and "+0.20" in page.text  # most rewarded
    failures = dash.client(FULL).get("/experience", params={"outcome": "failure"})
    svg = failures.text.split("<svg", 1)[1].split("</svg>", 1)[0]
    assert "added a sleep" in svg and "pruned old docker images" not in svg
    tagged = dash.client(FULL).get("/experience", params={"tag": "ops"})
    assert "pruned old docker images" in tagged.text.split("<svg", 1)[1].split("</svg>", 1)[0]


def test_status_page_shows_status_and_doctor(dash: Dash):
    page = dash.client(FULL).get("/status")
    assert "The index matches the files." in page.text and "test-hash" in page.text


# ----- actions ----------------------------------------------------------------------------------
def test_forget_asks_for_confirmation_then_removes_the_line(dash: Dash):
    client = dash.client(FULL)
    line = 4  # "- [fact] The staging database runs Postgres 16."
    confirm = client.get("/forget", params={"path": DAILY, "line": line})
    assert confirm.status_code == 200 and "Forget this line?" in confirm.text
    assert "Postgres 16" in confirm.text
    assert "Postgres 16" in (dash.root / DAILY).read_text()  # nothing removed by asking
    form = {"csrf": _csrf(confirm.text), "path": DAILY, "line": str(line),
            "expected": "- [fact] The staging database runs Postgres 16.", "next": "/search?q=Postgres"}
    stale = client.post("/forget", data={**form, "expected": "- something else"})
    assert stale.status_code == 409 and "changed since" in stale.text
    done = client.post("/forget", data=form)
    assert done.status_code == 303 and done.headers["location"].startswith("/search?q=Postgres&note=")
    assert "Postgres 16" not in (dash.root / DAILY).read_text()
    after = client.get(done.headers["location"])
    assert f"removed {DAILY}#L4" in after.text and "Postgres 16" not in _text(after.text.split("</form>", 2)[-1])


def test_actions_need_the_csrf_token(dash: Dash):
    client = dash.client(FULL)
    before = (dash.root / DAILY).read_bytes()
    form = {"path": DAILY, "line": "4", "expected": "- [fact] The staging database runs Postgres 16."}
    assert client.post("/forget", data=form).status_code == 403
    assert client.post("/forget", data={**form, "csrf": "0" * 40}).status_code == 403
    # A CSRF token is bound to its sign-in: another session's token does not work here.
    other = _csrf(dash.client(FULL).get("/").text)
    assert client.post("/forget", data={**form, "csrf": other}).status_code == 403
    assert (dash.root / DAILY).read_bytes() == before


def test_reward_and_penalize_change_utility(dash: Dash):
    client = dash.client(FULL)
    page = client.get("/search", params={"q": "pnpm"})
    memory_id = re.search(r'name="id" value="(m-[0-9a-f]+)"', page.text).group(1)  # type: ignore[union-attr]
    rewarded = client.post("/reward", data={"csrf": _csrf(page.text), "id": memory_id, "next": "/experience"})
    assert rewarded.status_code == 303
    assert dash.memory.utility.values()[memory_id] == pytest.approx(0.2)
    assert "rewarded" in client.get(rewarded.headers["location"]).text
    client.post("/penalize", data={"csrf": _csrf(page.text), "id": memory_id})
    assert dash.memory.utility.values()[memory_id] < 0.2


def test_edit_a_line_is_written_and_found_at_once(dash: Dash):
    client = dash.client(FULL)
    form_page = client.get("/edit", params={"path": DAILY, "line": 3})
    assert form_page.status_code == 200 and "blue-green" in form_page.text
    form = {"csrf": _csrf(form_page.text), "path": DAILY, "line": "3",
            "expected": "- [decision] We deploy the API with blue-green releases on Fridays."}
    canary = "- [decision] We deploy the API with canary releases on Tuesdays."
    done = client.post("/edit", data={**form, "text": canary})
    assert done.status_code == 303
    lines = (dash.root / DAILY).read_text().split("\n")
    assert lines[2] == canary
    assert lines[3] == "- [fact] The staging database runs Postgres 16."  # the rest untouched
    assert any(h.path == DAILY for h in dash.memory.search("canary releases Tuesdays"))
    secret = client.post("/edit", data={**form, "expected": lines[2],
                                        "text": "- key sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789ABCD"})
    assert secret.status_code == 400 and "secret" in secret.text
    stale = client.post("/edit", data={**form, "text": "- whatever"})  # expects the old text
    assert stale.status_code == 400 and "changed since" in stale.text


def test_read_only_token_sees_no_actions_and_cannot_post(dash: Dash):
    client = dash.client(READ_ONLY)
    page = client.get("/search", params={"q": "pnpm"})
    assert "read-only" in page.text
    assert 'action="/reward"' not in page.text and "forget…" not in page.text
    assert "edit</a>" not in client.get(f"/files/{DAILY}", params={"view": "source"}).text
    assert client.get("/forget", params={"path": DAILY, "line": 4}).status_code == 403
    before = (dash.root / DAILY).read_bytes()
    csrf = _csrf(client.get("/").text)  # its sign-out form still carries one
    form = {"csrf": csrf, "path": DAILY, "line": "4", "expected": "- [fact] The staging database runs Postgres 16."}
    assert client.post("/forget", data=form).status_code == 403
    assert client.post("/edit", data={**form, "text": "- changed"}).status_code == 403
    assert client.post("/reward", data={"csrf": csrf, "id": "m-000000000000"}).status_code == 403
    assert (dash.root / DAILY).read_bytes() == before


def test_shared_token_never_sees_a_private_file(dash: Dash):
    memory = dash.memory
    memory.recall_hits("locker combination hint", session_key="owner-session")
    memory.store("The locker is in the basement.", evergreen=True)  # into MEMORY.md, private
    hit = memory.search("purple giraffe")[0]
    memory.feedback.reward(hit.id)
    client = dash.client(SHARED)
    for page in [*PAGES, "/search?q=locker+combination+hint", "/search?q=locker&mode=deep", "/experience"]:
        response = client.get(page)
        assert response.status_code == 200, page
        assert "giraffe" not in response.text and "basement" not in response.text, page
        assert "MEMORY.md" not in response.text, page
    assert "shared" in client.get("/").text
    private = client.get("/files/MEMORY.md")
    assert private.status_code == 404 and "not a memory file shared with this client" in private.text
    assert client.get("/files/./MEMORY.md").status_code == 404
    # The owner sees all of it.
    owner = dash.client(FULL)
    assert "giraffe" in owner.get("/search", params={"q": "locker combination hint"}).text
    assert "locker combination hint" in owner.get("/recalls").text


def test_shared_server_hides_private_files_from_the_full_token(settings: Settings, workspace: Path):
    d = _dash(settings, workspace, Tokens([FULL], [], []), shared=True)
    try:
        client = d.client(FULL)
        assert "giraffe" not in client.get("/search", params={"q": "locker combination hint"}).text
        assert client.get("/files/MEMORY.md").status_code == 404
    finally:
        d.service.close()


def test_without_tokens_loopback_has_full_access_and_csrf_still_applies(settings: Settings, workspace: Path):
    d = _dash(settings, workspace, Tokens([], [], []))
    try:
        client = d.client()
        page = client.get("/search", params={"q": "pnpm"})
        assert page.status_code == 200 and "full access" in page.text and 'action="/reward"' in page.text
        memory_id = re.search(r'name="id" value="(m-[0-9a-f]+)"', page.text).group(1)  # type: ignore[union-attr]
        assert client.post("/reward", data={"id": memory_id}).status_code == 403
        assert client.post("/reward", data={"id": memory_id, "csrf": _csrf(page.text)}).status_code == 303
    finally:
        d.service.close()


# ----- the commands -------------------------------------------------------------------------------
def test_serve_http_prints_where_the_dashboard_is_and_serves_it(tmp_path: Path):
    root = tmp_path / "ws"
    _workspace(root)
    server = start_server(root, tmp_path, "--transport", "http", "--token", FULL)
    try:
        deadline = time.monotonic() + 20
        while "dashboard at" not in server.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert f"dashboard at {server.base}/ (sign in there with the token given to --token" in server.output()
        with httpx2.Client(follow_redirects=False, timeout=30) as http:
            assert http.get(f"{server.base}/files").status_code == 401
            signed = http.post(f"{server.base}/signin", data={"token": FULL, "next": "/files"})
            assert signed.status_code == 303 and signed.headers["location"] == "/files"
            page = _when_open(http, f"{server.base}/files")
            assert page.status_code == 200 and DAILY in page.text
            # The MCP endpoint is still behind its bearer token.
            assert http.post(f"{server.base}/mcp", json={}).status_code == 401
        assert FULL not in server.output()
    finally:
        server.stop()


def _when_open(http: httpx2.Client, url: str) -> httpx2.Response:
    """``url`` once the server's memory has opened (before, pages say so, with 503)."""
    deadline = time.monotonic() + 60
    while True:
        response = http.get(url)
        if response.status_code != 503 or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


@dataclass
class UiProcess:
    proc: subprocess.Popen[bytes]
    log: Path
    base: str
    page: Path  # the local sign-in page

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(15)


def _start_ui(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> UiProcess:
    """``mcp-memory ui`` in a child process, once it has said where it listens and where its sign-in page is."""
    root = tmp_path / "ws"
    _workspace(root)
    log = tmp_path / "ui.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mcp_memory", "ui", "--workspace", str(root), "--embedder",
                                 "none", "--port", str(free_port()), *args],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=server_env(**(env or {})))
    try:
        return _wait_for_ui(proc, log)
    except BaseException:
        proc.terminate()
        proc.wait(15)
        raise


def _wait_for_ui(proc: subprocess.Popen[bytes], log: Path) -> UiProcess:
    deadline = time.monotonic() + 30
    while "dashboard at" not in log.read_text() and time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        time.sleep(0.05)
    found = re.search(r"dashboard at (http://127\.[\d.]+:\d+)/ ; sign-in page (file://\S+)", log.read_text())
    assert found, log.read_text()
    ui = UiProcess(proc, log, found.group(1), Path(unquote(urlsplit(found.group(2)).path)))
    while time.monotonic() < deadline + 30:
        try:
            httpx2.get(f"{ui.base}/static/dashboard.css", timeout=5)
            return ui
        except httpx2.TransportError:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
    raise AssertionError(f"ui did not answer: {log.read_text()}")


class _Form(HTMLParser):
    """The action and the fields of the first form of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form" and not self.action:
            self.action = found.get("action") or ""
        if tag == "input" and found.get("name"):
            self.fields[found["name"] or ""] = found.get("value") or ""


def _post_form_as_a_local_page(http: httpx2.Client, page_html: str) -> httpx2.Response:
    """Submit the sign-in page's form as a browser does from a file: with "Origin: null"."""
    form = _Form()
    form.feed(page_html)
    return http.post(form.action, data=form.fields, headers={"Origin": "null"})


def test_ui_listens_on_a_loopback_address_of_its_own_and_signs_in_from_a_local_page(tmp_path: Path):
    ui = _start_ui(tmp_path, "--no-browser")
    try:
        host = urlsplit(ui.base).hostname or ""
        # Cookies ignore ports, not hosts: a random 127.x.y.z shares its cookies with no other server.
        assert host.startswith("127.") and host != "127.0.0.1", ui.base
        assert oct(ui.page.stat().st_mode & 0o777) == oct(0o600)
        assert oct(ui.page.parent.stat().st_mode & 0o777) == oct(0o700)
        page_html = ui.page.read_text()
        assert "token" not in page_html.lower() and "token" not in ui.log.read_text().lower()
        with httpx2.Client(follow_redirects=False, timeout=30) as http:
            assert http.get(f"{ui.base}/").status_code == 401
            signed = _post_form_as_a_local_page(http, page_html)
            assert signed.status_code == 200 and "full access" in signed.text
            page = _when_open(http, f"{ui.base}/files/{quote(DAILY)}")
            assert page.status_code == 200 and "full access" in page.text
            # Only that host answers: the same port on 127.0.0.1 is another address, and Host is checked.
            assert http.get(f"{ui.base}/", headers={"Host": "127.0.0.1"}).status_code == 421
        # The code worked once, and its page is gone.
        assert not ui.page.exists() and not ui.page.parent.exists()
        with httpx2.Client(follow_redirects=False, timeout=30) as other:
            again = _post_form_as_a_local_page(other, page_html)
            assert again.status_code == 401 and "expired or was already used" in again.text
    finally:
        ui.stop()


def test_ui_gives_the_browser_a_private_file_never_a_token_url(tmp_path: Path):
    """What ``ui`` puts on the browser's command line (readable by every local user) holds no secret."""
    record = tmp_path / "browser.json"
    browser = tmp_path / "browser"
    browser.write_text(f"#!{sys.executable}\n"
                       "import json, os, sys, urllib.parse\n"
                       "page = urllib.parse.unquote(urllib.parse.urlsplit(sys.argv[1]).path)\n"
                       "seen = {'argv': sys.argv[1:], 'mode': os.stat(page).st_mode & 0o777,\n"
                       "        'folder': os.stat(os.path.dirname(page)).st_mode & 0o777, 'html': open(page).read()}\n"
                       f"open({str(record)!r}, 'w').write(json.dumps(seen))\n")
    browser.chmod(0o700)
    ui = _start_ui(tmp_path, env={"BROWSER": str(browser)})
    try:
        deadline = time.monotonic() + 20
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        seen = json.loads(record.read_text())
        assert seen["argv"] == [ui.page.as_uri()]  # a local file: no token, no code, no server URL
        assert seen["mode"] == 0o600 and seen["folder"] == 0o700
        with httpx2.Client(follow_redirects=False, timeout=30) as http:
            assert _post_form_as_a_local_page(http, seen["html"]).status_code == 200
            assert _when_open(http, f"{ui.base}/status").status_code == 200
        assert not ui.page.exists()
    finally:
        ui.stop()


def test_ui_removes_an_unused_sign_in_page_at_exit(tmp_path: Path):
    ui = _start_ui(tmp_path, "--no-browser")
    assert ui.page.exists()
    ui.stop()
    assert not ui.page.exists() and not ui.page.parent.exists()


def test_a_token_of_a_kind_the_dashboard_does_not_grant_still_closes_it():
    @dataclass(frozen=True)
    class OtherKind:
        full: list[str]
        read_only: list[str]
        shared: list[str]

        @property
        def all(self) -> list[str]:
            return ["a-token-of-another-kind-0123"]

    auth = DashboardAuth(OtherKind([], [], []), shared_server=False, security=None)
    assert not auth.open
    assert auth.level_of("a-token-of-another-kind-0123") is None
