"""The dashboard's routes: sign-in, tokens, CSRF, privacy, actions and what each page shows.

The real app (``/mcp`` plus the dashboard, as ``serve`` builds it) reached in-process through
Starlette's test client; the memory is real (LanceDB, Tantivy) with the hash embedder. Two
tests start the real commands (``serve --transport http`` and ``ui``) in a child process.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import httpx2
import pytest
from starlette.testclient import TestClient

from conftest import free_port, indexed_memory, server_env, start_server, write
from mcp_memory.config import Settings
from mcp_memory.dashboard.app import dashboard_app
from mcp_memory.dashboard.auth import DashboardAuth, Tokens
from mcp_memory.dashboard.render import parse_range, render_markdown
from mcp_memory.memory import Memory
from mcp_memory.service import MemoryService
from mcp_memory.transcripts import Message

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
    service: MemoryService
    root: Path

    @property
    def memory(self) -> Memory:
        return self.service.memory()

    def client(self, token: str | None = None, bearer: str | None = None) -> TestClient:
        """A browser-like client; ``token``: signed in through the token link first."""
        client = TestClient(self.app, base_url=BASE, follow_redirects=False)  # type: ignore[arg-type]
        if bearer:
            client.headers["Authorization"] = f"Bearer {bearer}"
        if token:
            response = client.get(f"/?token={token}")
            assert response.status_code == 303, response.text
        return client


def _workspace(root: Path) -> None:
    write(root, "MEMORY.md", f"# Memory\n\n- [preference] The user prefers pnpm over npm.\n- {PRIVATE_FACT}\n")
    write(root, DAILY, "# 2026-01-05\n\n- [decision] We deploy the API with blue-green releases on Fridays.\n"
                       "- [fact] The staging database runs Postgres 16.\n" + HOSTILE)


def _dash(settings: Settings, workspace: Path, tokens: Tokens, shared: bool = False) -> Dash:
    _workspace(workspace)
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    return Dash(dashboard_app(service, tokens, shared=shared), service, workspace)


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


def test_token_link_sets_an_http_only_strict_cookie_and_drops_the_token(dash: Dash):
    client = dash.client()
    response = client.get(f"/search?q=pnpm&mode=default&token={FULL}")
    assert response.status_code == 303
    assert response.headers["location"] == "/search?q=pnpm&mode=default"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower() and "Path=/" in cookie
    assert FULL not in cookie  # a session id, never the token
    page = client.get("/search?q=pnpm")
    assert page.status_code == 200 and "full access" in page.text and "MEMORY.md#L" in page.text
    assert client.get(f"/?token=wrong-{FULL}").status_code == 401
    assert "not valid" in dash.client().get("/?token=nope").text


def test_bearer_header_works_and_a_wrong_one_is_refused(dash: Dash):
    assert dash.client(bearer=READ_ONLY).get("/files").status_code == 200
    assert dash.client(bearer="not-a-token-at-all").get("/files").status_code == 401


def test_sign_out_forgets_the_session(dash: Dash):
    client = dash.client(FULL)
    csrf = _csrf(client.get("/").text)
    assert client.post("/signout", data={"csrf": csrf}).status_code == 303
    client.cookies.clear()
    assert client.get("/").status_code == 401


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


# ----- pages ------------------------------------------------------------------------------------
def test_search_shows_cited_hits_with_why_and_highlighted_lines(dash: Dash):
    page = dash.client(FULL).get("/search", params={"q": "blue-green deploy"})
    assert page.status_code == 200
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
    memory.graph_add("disk full on the build host", "pruned old docker images", "space freed", "success", ["ops"])
    memory.graph_add("flaky login test", "added a sleep", "still flaky", "failure", ["tests"])
    hit = memory.search("pnpm")[0]
    memory.reward(hit.id)
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
    assert dash.memory.utility_values()[memory_id] == pytest.approx(0.2)
    assert "rewarded" in client.get(rewarded.headers["location"]).text
    client.post("/penalize", data={"csrf": _csrf(page.text), "id": memory_id})
    assert dash.memory.utility_values()[memory_id] < 0.2


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
    memory.reward(hit.id)
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
def test_serve_http_prints_the_sign_in_link_and_serves_the_dashboard(tmp_path: Path):
    root = tmp_path / "ws"
    _workspace(root)
    server = start_server(root, tmp_path, "--transport", "http", "--token", FULL)
    try:
        deadline = time.monotonic() + 20
        while "dashboard at" not in server.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        link = f"{server.base}/?token={FULL}"
        assert f"dashboard at {link}" in server.output()
        with httpx2.Client(follow_redirects=True, timeout=30) as http:
            assert http.get(f"{server.base}/files").status_code == 401
            page = http.get(f"{server.base}/files?token={FULL}")
            assert page.status_code == 200 and DAILY in page.text and str(page.url) == f"{server.base}/files"
            # The MCP endpoint is still behind its bearer token.
            assert http.post(f"{server.base}/mcp", json={}).status_code == 401
    finally:
        server.stop()


def test_ui_command_starts_a_loopback_dashboard_with_a_fresh_token(tmp_path: Path):
    root = tmp_path / "ws"
    _workspace(root)
    port = free_port()
    log = tmp_path / "ui.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mcp_memory", "ui", "--workspace", str(root), "--embedder",
                                 "none", "--port", str(port), "--no-browser"],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=server_env())
    try:
        deadline = time.monotonic() + 30
        while "dashboard at" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
        found = re.search(rf"dashboard at (http://127\.0\.0\.1:{port}/\?token=([\w-]+))", log.read_text())
        assert found, log.read_text()
        with httpx2.Client(follow_redirects=True, timeout=30) as http:
            assert http.get(f"http://127.0.0.1:{port}/").status_code == 401
            page = http.get(found.group(1))
            assert page.status_code == 200 and "full access" in page.text
            assert http.get(f"http://127.0.0.1:{port}/files/{quote(DAILY)}").status_code == 200
    finally:
        proc.terminate()
        proc.wait(15)


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
