"""The dashboard in a real headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright).

A real ``serve --transport http`` (keyword-only) with a full, a read-only and a shared token;
each test is a fresh browser profile that signs in with the sign-in form, as a person would.
A real ``mcp-memory ui`` signs its browser in from its local sign-in page. Skipped, saying
why, only where no Chromium is installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from conftest import ServerProcess, start_server, write
from test_dashboard import _start_ui

CHROMIUM = os.environ.get("MCP_MEMORY_CHROMIUM", "/usr/bin/chromium")
if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
    pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium package)", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")

FULL, READ_ONLY, SHARED = "full-token-0123456789", "read-only-token-456789", "shared-token-89abcdef"
DAILY = "memory/2026-01-05.md"
PRIVATE_FACT = "The locker combination hint is purple giraffe."
BADGE_FILE = "memory/badges.md"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("browser")
    root = tmp / "ws"
    write(root, "MEMORY.md", f"# Memory\n\n- [preference] The user prefers pnpm over npm.\n- {PRIVATE_FACT}\n")
    write(root, DAILY, "# 2026-01-05\n\n"
                       "- [decision] We deploy the API with blue-green releases on Fridays.\n"
                       "- [fact] The staging database runs Postgres 16.\n"
                       "- [fact] The office plant is a ficus named Gerald.\n"
                       "- Tried <script>window.pwned = 1; alert(1)</script> in a note.\n"
                       '- An image <img src=x onerror="window.pwned = 2; alert(2)"> here.\n'
                       "- A [harmless looking link](javascript:window.pwned=3) too.\n")
    # Memory content is written from conversations: an image in it is a request the owner's browser makes.
    write(root, BADGE_FILE, f"# Badges\n\n- Build status ![badge](/?token={SHARED}) for the project.\n")
    process = start_server(root, tmp, "--transport", "http", "--token", FULL, "--read-only-token", READ_ONLY,
                           "--shared-token", SHARED)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        launched = p.chromium.launch(executable_path=shutil.which("chromium") or CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page_for(browser: Any, server: ServerProcess) -> Iterator[Any]:
    """``page_for(token)``: a fresh profile signed in through the token link; dialogs are recorded."""
    contexts = []

    def open_page(token: str) -> Any:
        context = browser.new_context()
        contexts.append(context)
        page = context.new_page()
        page.dialogs = []
        page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(f"{server.base}/")
        page.fill("input[name=token]", token)
        page.click("form[action='/signin'] button")
        page.wait_for_selector(".level")
        return page

    yield open_page
    for context in contexts:
        context.close()


def test_sign_in_with_the_token_form(page_for: Any, server: ServerProcess):
    page = page_for(FULL)
    assert page.url == f"{server.base}/"
    assert page.locator(".level").inner_text() == "full access"
    cookies = page.context.cookies()
    assert len(cookies) == 1 and cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
    assert cookies[0]["expires"] == -1  # a browser-session cookie
    assert FULL not in cookies[0]["value"]
    assert page.evaluate("document.cookie") == ""  # not readable by scripts
    stranger = page.context.browser.new_context().new_page()
    stranger.goto(f"{server.base}/files")
    assert "Sign in" in stranger.content() and DAILY not in stranger.content()
    stranger.context.close()


def test_search_and_open_a_hit(page_for: Any):
    page = page_for(FULL)
    page.fill("main input[name=q]", "blue-green deploy")
    page.keyboard.press("Enter")
    page.wait_for_selector("li.hit")
    first = page.locator("li.hit").first
    assert DAILY in first.locator("a.citation").inner_text()
    assert "deploy" in first.locator("mark").all_inner_texts()
    first.locator("a.citation").click()
    page.wait_for_url("**/files/**")
    anchor = page.url.rsplit("#", 1)[1]
    assert anchor.startswith("L")
    assert page.locator(f"[id='{anchor}']").count() == 1
    assert "blue-green" in " ".join(page.locator("article.md .hl").all_inner_texts())


def test_forget_with_confirmation(page_for: Any, server: ServerProcess):
    page = page_for(FULL)
    page.goto(f"{server.base}/search?q=ficus+Gerald")
    hit = page.locator("li.hit").first
    hit.get_by_text("forget…").click()
    page.wait_for_url("**/forget?**")
    assert "ficus named Gerald" in page.locator("pre.confirm").inner_text()
    daily = Path(server.log).parent / "ws" / DAILY
    assert "Gerald" in daily.read_text()  # asking removes nothing
    page.click("#confirm-forget")
    page.wait_for_selector(".note")
    assert "removed" in page.locator(".note").inner_text()
    assert "Gerald" not in daily.read_text()
    page.goto(f"{server.base}/search?q=ficus+Gerald")
    assert "Gerald" not in page.locator("main").inner_text().split("deep: a second search", 1)[1]


def test_read_only_token_sees_no_actions(page_for: Any, server: ServerProcess):
    page = page_for(READ_ONLY)
    assert page.locator(".level").inner_text() == "read-only"
    page.goto(f"{server.base}/search?q=pnpm")
    assert page.locator("li.hit").count() >= 1
    assert page.locator("button", has_text="reward").count() == 0
    assert page.get_by_text("forget…").count() == 0
    page.goto(f"{server.base}/files/{DAILY}?view=source")
    assert page.locator("td.row-actions").count() == 0


def test_shared_token_sees_no_private_file(page_for: Any, server: ServerProcess):
    page = page_for(SHARED)
    assert "private files hidden" in page.locator(".level").inner_text()
    page.goto(f"{server.base}/files")
    assert DAILY in page.locator("main").inner_text() and "MEMORY.md" not in page.content()
    page.goto(f"{server.base}/search?q=locker+combination+hint")
    assert "giraffe" not in page.content() and "MEMORY.md" not in page.content()
    page.goto(f"{server.base}/files/MEMORY.md")
    assert "giraffe" not in page.content() and "not a memory file shared" in page.content()


def test_stored_scripts_never_run(page_for: Any, server: ServerProcess):
    page = page_for(FULL)
    for url in (f"/files/{DAILY}", f"/files/{DAILY}?view=source", "/search?q=pwned+onerror+script",
                "/search?q=harmless+link"):
        page.goto(server.base + url)
        page.wait_for_load_state("load")
        assert page.evaluate("typeof window.pwned") == "undefined", url
        assert page.locator("main img").count() == 0, url
    page.goto(f"{server.base}/files/{DAILY}")
    assert "<script>window.pwned" in page.locator("article.md").inner_text()  # shown as text
    page.get_by_text("harmless looking link", exact=False).click()
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.dialogs == []


def test_an_image_in_memory_content_never_switches_the_session(page_for: Any, server: ServerProcess):
    page = page_for(FULL)
    before = page.context.cookies()
    with page.expect_response(lambda response: "token=" in response.url) as badge:
        page.goto(f"{server.base}/files/{BADGE_FILE}")
        page.wait_for_load_state("load")
    assert badge.value.status == 303 and "set-cookie" not in badge.value.all_headers()
    assert page.context.cookies() == before
    page.goto(f"{server.base}/")
    assert page.locator(".level").inner_text() == "full access"
    page.goto(f"{server.base}/files/MEMORY.md")
    assert "giraffe" in page.content()


class _OtherServer(BaseHTTPRequestHandler):
    """Another local web server: it records the cookies it is sent and tries to plant its own."""

    seen: ClassVar[list[str]] = []
    planted: ClassVar[str] = ""

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Cookie") or "")
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        if self.planted:
            self.send_header("Set-Cookie", self.planted)
        self.end_headers()
        self.wfile.write(b"<p>another local server</p>")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def other_server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _OtherServer)
    _OtherServer.seen = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_ui_signs_in_from_its_local_page_and_shares_its_cookie_with_no_other_server(
        browser: Any, tmp_path: Path, other_server: ThreadingHTTPServer):
    ui = _start_ui(tmp_path, "--no-browser")
    try:
        context = browser.new_context()
        page = context.new_page()
        page.goto(ui.page.as_uri())  # the page `ui` opens: it submits itself
        page.wait_for_selector(".level")
        assert page.url == f"{ui.base}/" and page.locator(".level").inner_text() == "full access"
        assert not ui.page.exists()
        port = ui.base.rsplit(":", 1)[1]
        (session,) = [c["value"] for c in context.cookies() if c["name"] == f"mcp_memory_{port}"]
        # Another web server on the loopback host the browser visits is sent no dashboard cookie,
        # and the cookie it sets under the dashboard's name does not reach the dashboard.
        _OtherServer.planted = f"mcp_memory_{port}=planted; Path=/"
        page.goto(f"http://127.0.0.1:{other_server.server_address[1]}/")
        assert "another local server" in page.content()
        assert _OtherServer.seen and not any(session in cookie for cookie in _OtherServer.seen)
        page.goto(f"{ui.base}/files")
        assert page.locator(".level").inner_text() == "full access"
        # The local sign-in page is gone; a second browser has no way in.
        stranger = browser.new_context().new_page()
        stranger.goto(f"{ui.base}/files")
        assert "Sign in" in stranger.content()
        stranger.context.close()
        context.close()
    finally:
        _OtherServer.planted = ""
        ui.stop()
