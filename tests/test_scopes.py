"""Scopes: memories of a project or agent in ``memory/scopes/<name>/``, searched with the global memory.

Driven as users drive them: the MCP client SDK against an in-memory server, a stdio client
through the front and the shared warm process, HTTP clients holding scoped tokens against a
real ``serve`` subprocess, and the Claude Code hooks as fresh processes given a ``cwd``.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from conftest import close_server, make_server, server_env, start_server, write
from mcp_memory.config import ConfigError, Settings, load_settings
from mcp_memory.core.scopes import ScopeFilter, scope_from_cwd, scope_of
from mcp_memory.memory import Memory
from test_hooks import claude_transcript, hook_command, hook_env, index_keywords, write_jsonl


def today() -> str:
    """Today's date, read when a test runs: a run that passes midnight writes to the new day."""
    return dt.date.today().isoformat()


GLOBAL_DEPLOY = "Every deploy needs a changelog entry."
WEB_DEPLOY = "The web app deploys to Netlify every Friday."
API_DEPLOY = "The api service deploys to Fly.io on Mondays."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def scoped_ws(workspace: Path) -> Path:
    write(workspace, "memory/2026-01-05.md", f"# 2026-01-05\n\n- {GLOBAL_DEPLOY}\n")
    return workspace


@asynccontextmanager
async def connected(settings: Settings, scope: str | None = None) -> AsyncIterator[Client]:
    """An MCP client on an in-memory server whose default scope is ``scope``."""
    from mcp_memory.server import create_server

    _, service = make_server(settings)
    try:
        async with Client(create_server(settings, service, scope=scope)) as client:
            yield client
    finally:
        close_server(service)


def data(call: Any) -> dict[str, Any]:
    assert not call.is_error, call.content[0].text
    result: dict[str, Any] = call.structured_content or json.loads(call.content[0].text)
    return result


def error(call: Any) -> str:
    assert call.is_error, call
    text: str = call.content[0].text
    return text


async def paths_found(client: Client, query: str, **args: Any) -> set[str]:
    found = data(await client.call_tool("memory_search", {"query": query, "max_results": 20, **args}))
    return {hit["path"] for hit in found["results"]}


def todays_web_file() -> str:
    return f"memory/scopes/web/{today()}.md"


def todays_api_file() -> str:
    return f"memory/scopes/api/{today()}.md"


GLOBAL_FILE = "memory/2026-01-05.md"


# ----- stores go to their scope; searches separate and combine ---------------------------------------
@pytest.mark.anyio
async def test_stores_land_in_their_scope_and_searches_cover_it_plus_global(scoped_ws: Path,
                                                                            settings: Settings) -> None:
    async with connected(settings) as client:
        web = data(await client.call_tool("memory_store", {"text": WEB_DEPLOY, "scope": "web"}))
        api = data(await client.call_tool("memory_store", {"text": API_DEPLOY, "scope": "api"}))
        assert (web["path"], api["path"]) == (todays_web_file(), todays_api_file())
        assert (scoped_ws / todays_web_file()).read_text(encoding="utf-8") == f"# {today()}\n\n- {WEB_DEPLOY}\n"
        assert API_DEPLOY in (scoped_ws / todays_api_file()).read_text(encoding="utf-8")

        assert await paths_found(client, "deploy", scope="web") == {GLOBAL_FILE, todays_web_file()}
        assert await paths_found(client, "deploy", scope="api") == {GLOBAL_FILE, todays_api_file()}
        both = {GLOBAL_FILE, todays_web_file(), todays_api_file()}
        assert await paths_found(client, "deploy", scope="web,api") == both
        assert await paths_found(client, "deploy", scope="*") == both
        assert await paths_found(client, "deploy", scope="global") == {GLOBAL_FILE}
        assert await paths_found(client, "deploy") == {GLOBAL_FILE}  # no default scope: the global memory

        for tool in ("precision_memory_search", "deep_memory_search"):
            found = data(await client.call_tool(tool, {"query": "deploy Netlify Fly.io", "scope": "web"}))
            paths = {hit["path"] for hit in found["results"]}
            assert todays_web_file() in paths and todays_api_file() not in paths, (tool, paths)

        recalled = data(await client.call_tool("memory_recall", {"prompt": "How does the web app deploy to Netlify?",
                                                                 "scope": "web"}))["context"]
        assert "Netlify" in recalled and "Fly.io" not in recalled
        prompt = await client.get_prompt("recall", {"message": "How does the api service deploy to Fly.io?",
                                                    "scope": "api"})
        text = prompt.messages[0].content.text
        assert "Fly.io on Mondays" in text and "Netlify" not in text


@pytest.mark.anyio
async def test_a_connections_default_scope_applies_until_a_call_names_another(scoped_ws: Path,
                                                                             settings: Settings) -> None:
    async with connected(settings, scope="web") as client:
        stored = data(await client.call_tool("memory_store", {"text": WEB_DEPLOY}))
        assert stored["path"] == todays_web_file()
        other = data(await client.call_tool("memory_store", {"text": API_DEPLOY, "scope": "api"}))
        assert other["path"] == todays_api_file()
        assert await paths_found(client, "deploy") == {GLOBAL_FILE, todays_web_file()}
        assert await paths_found(client, "deploy", scope="api") == {GLOBAL_FILE, todays_api_file()}
        everywhere = data(await client.call_tool("memory_store", {"text": "The user writes in British English.",
                                                                  "scope": "global"}))
        assert everywhere["path"] == f"memory/{today()}.md"

        evergreen = data(await client.call_tool("memory_store", {"text": "The web app is written in Svelte.",
                                                                 "evergreen": True}))
        assert evergreen["path"] == "memory/scopes/web/MEMORY.md"

        captured = data(await client.call_tool("memory_capture", {
            "messages": [{"role": "user", "content": "We decided to host the web app's images on Cloudinary."}]}))
        assert [line["citation"].split("#")[0] for line in captured["captured"]] == [todays_web_file()]


@pytest.mark.anyio
async def test_duplicates_are_judged_where_the_memory_would_be_seen(scoped_ws: Path, settings: Settings) -> None:
    async with connected(settings) as client:
        first = data(await client.call_tool("memory_store", {"text": WEB_DEPLOY, "scope": "web"}))
        # The same words in another scope are not "already in memory" there: api cannot see web.
        again = data(await client.call_tool("memory_store", {"text": WEB_DEPLOY, "scope": "api"}))
        assert first["stored"] and again["stored"] and again["path"] == todays_api_file()
        # What the global memory holds is seen from every scope.
        repeated = data(await client.call_tool("memory_store", {"text": GLOBAL_DEPLOY, "scope": "web"}))
        assert not repeated["stored"] and repeated["path"] == GLOBAL_FILE


def test_the_sleep_cycle_never_retires_a_memory_for_one_seen_elsewhere(workspace: Path, settings: Settings) -> None:
    line = "- The staging database is called heron-db."
    write(workspace, "memory/scopes/web/2026-01-02.md", f"# 2026-01-02\n\n{line}\n")
    write(workspace, "memory/scopes/api/2026-01-03.md", f"# 2026-01-03\n\n{line}\n")
    write(workspace, "memory/2026-01-04.md", f"# 2026-01-04\n\n{line}\n")
    with Memory(settings, embedder=None) as memory:
        memory.index()
        report = memory.sleep.run(dry_run=True)
    # Only the scoped copies repeat a memory seen wherever they are (the global one); the
    # global copy, though stated last, is never retired in favour of a scope's.
    assert sorted((r.item.path, r.by.path) for r in report.retired) == [
        ("memory/scopes/api/2026-01-03.md", "memory/2026-01-04.md"),
        ("memory/scopes/web/2026-01-02.md", "memory/2026-01-04.md"),
    ]


# ----- names and defaults ------------------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("bad", ["../etc", "Web App", "a/b", "x" * 65, "", "web,", "*"])
async def test_invalid_scope_names_are_refused_and_nothing_is_written(scoped_ws: Path, settings: Settings,
                                                                      bad: str) -> None:
    before = sorted(p.relative_to(scoped_ws) for p in scoped_ws.rglob("*.md"))
    async with connected(settings) as client:
        if bad:  # "" is no scope at all: the default (the global memory)
            message = error(await client.call_tool("memory_store", {"text": WEB_DEPLOY, "scope": bad}))
            assert "scope" in message and "Traceback" not in message
    if bad:
        assert sorted(p.relative_to(scoped_ws) for p in scoped_ws.rglob("*.md")) == before
        assert not (scoped_ws / "memory" / "scopes").exists()


@pytest.mark.anyio
async def test_a_search_naming_a_bad_scope_gets_a_clear_error(scoped_ws: Path, settings: Settings) -> None:
    async with connected(settings) as client:
        for tool in ("memory_search", "precision_memory_search", "deep_memory_search"):
            assert "not a scope name" in error(await client.call_tool(tool, {"query": "deploy", "scope": "../x"}))
        assert "not a scope name" in error(await client.call_tool("memory_recall",
                                                                  {"prompt": "deploy please", "scope": "Bad!"}))


def test_the_default_scope_comes_from_the_settings(workspace: Path) -> None:
    assert load_settings(workspace, environ={"MCP_MEMORY_SCOPE": "web"}).scopes.default == "web"
    assert load_settings(workspace, environ={"MCP_MEMORY_SCOPES_DEFAULT": "api"}).scopes.default == "api"
    write(workspace, "mcp-memory.toml", '[scopes]\ndefault = "docs"\nfrom_cwd = true\n')
    settings = load_settings(workspace, environ={})
    assert (settings.scopes.default, settings.scopes.from_cwd) == ("docs", True)
    with pytest.raises(ConfigError, match=r"scopes\.default"):
        load_settings(workspace, environ={"MCP_MEMORY_SCOPE": "../../etc"})


def test_the_command_line_searches_and_refuses_as_the_tools_do(scoped_ws: Path) -> None:
    write(scoped_ws, "memory/scopes/web/2026-01-06.md", f"# 2026-01-06\n\n- {WEB_DEPLOY}\n")
    write(scoped_ws, "memory/scopes/api/2026-01-06.md", f"# 2026-01-06\n\n- {API_DEPLOY}\n")

    def search(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcp_memory", "search", "deploy", "--json", "-w", str(scoped_ws),
                               "--embedder", "none", *args], capture_output=True, text=True, timeout=120,
                              env=server_env(**env))

    def paths(proc: subprocess.CompletedProcess[str]) -> set[str]:
        assert proc.returncode == 0, proc.stderr
        return {hit["path"] for hit in json.loads(proc.stdout)}

    assert paths(search("--scope", "web")) == {GLOBAL_FILE, "memory/scopes/web/2026-01-06.md"}
    assert paths(search(MCP_MEMORY_SCOPE="api")) == {GLOBAL_FILE, "memory/scopes/api/2026-01-06.md"}
    assert len(paths(search("--scope", "*"))) == 3
    bad = search("--scope", "../etc")
    assert bad.returncode == 2 and "not a scope name" in bad.stderr and "Traceback" not in bad.stderr


def test_paths_and_working_directories_name_scopes(tmp_path: Path) -> None:
    assert scope_of("memory/scopes/web/2026-01-05.md") == "web"
    assert scope_of("memory/scopes/Web/notes/deploy.md") == "web"
    assert scope_of("memory/scopes/README.md") is None and scope_of("MEMORY.md") is None
    assert ScopeFilter(frozenset({"web"})).covers("memory/2026-01-05.md")
    assert not ScopeFilter(frozenset({"web"})).covers("memory/scopes/api/2026-01-05.md")
    assert not ScopeFilter(frozenset({"web"})).covers("memory/scopes/My Notes/x.md")

    repo = tmp_path / "My Shop.v2"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "cart").mkdir(parents=True)
    assert scope_from_cwd(repo / "src" / "cart") == "my-shop-v2"  # the repository's name, not the folder's
    plain = tmp_path / "scratch_pad"
    plain.mkdir()
    assert scope_from_cwd(plain) == "scratch_pad"
    assert scope_from_cwd(Path.home()) is None and scope_from_cwd("relative/dir") is None


# ----- stdio through the front and the shared warm process ------------------------------------------
@pytest.mark.anyio
@pytest.mark.skipif(sys.platform == "win32", reason="the warm process tests run on POSIX")
async def test_stdio_clients_of_different_scopes_share_one_warm_process(scoped_ws: Path) -> None:
    from test_warm import params, until, warm_infos

    async with (Client(params(scoped_ws, MCP_MEMORY_SCOPE="web")) as web,
                Client(params(scoped_ws, "--scope", "api")) as api):
        assert data(await web.call_tool("memory_store", {"text": WEB_DEPLOY}))["path"] == todays_web_file()
        assert data(await api.call_tool("memory_store", {"text": API_DEPLOY}))["path"] == todays_api_file()
        assert await paths_found(web, "deploy") == {GLOBAL_FILE, todays_web_file()}
        assert await paths_found(api, "deploy") == {GLOBAL_FILE, todays_api_file()}
        assert len(await until(lambda: warm_infos(scoped_ws))) == 1  # one process for both scopes


# ----- scoped tokens on a team server ------------------------------------------------------------
FULL = "full-token-scopes-0123"
WEB_TOKEN = "web-token-scopes-4567"
API_TOKEN = "api-token-scopes-89ab"


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("team")
    ws = root / "ws"
    write(ws, "memory/2026-01-05.md", f"# 2026-01-05\n\n- {GLOBAL_DEPLOY}\n")
    write(ws, "memory/scopes/web/2026-01-06.md", f"# 2026-01-06\n\n- {WEB_DEPLOY}\n")
    write(ws, "memory/scopes/api/2026-01-06.md", f"# 2026-01-06\n\n- {API_DEPLOY}\n")
    write(ws, "memory/episodes/2026-01-06-abc.md", "# Episode\n\n- stored: The api deploy key rotates weekly.\n")
    server = start_server(ws, root, "--transport", "http", "--token", FULL,
                          env={"MCP_MEMORY_SCOPED_TOKEN": f"web={WEB_TOKEN},api={API_TOKEN}"})
    try:
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def http_client(server: Any, token: str) -> AsyncIterator[Client]:
    from mcp.client.streamable_http import streamable_http_client

    async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
                Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as client):
        yield client


@pytest.mark.anyio
async def test_a_scoped_token_sees_its_scope_and_global_and_writes_only_its_scope(team_server: Any) -> None:
    ws = Path(team_server.log).parent / "ws"
    web_file, api_file = "memory/scopes/web/2026-01-06.md", "memory/scopes/api/2026-01-06.md"
    async with http_client(team_server, WEB_TOKEN) as web:
        assert await paths_found(web, "deploy") == {GLOBAL_FILE, web_file}
        assert await paths_found(web, "deploy", scope="*") == {GLOBAL_FILE, web_file}
        assert await paths_found(web, "deploy key rotates weekly", scope="*") <= {GLOBAL_FILE, web_file}
        assert "limited to scope 'web'" in error(await web.call_tool("memory_search",
                                                                     {"query": "deploy", "scope": "api"}))
        assert "Fly.io" not in data(await web.call_tool("memory_recall", {"prompt": "How does the api service "
                                                                                    "deploy to Fly.io?"}))["context"]
        for path in (api_file, "memory/episodes/2026-01-06-abc.md"):
            assert "not a memory file shared" in error(await web.call_tool("memory_get", {"path": path}))
        listed = {f["path"] for f in json.loads((await web.read_resource("memory://files")).contents[0].text)}
        assert web_file in listed and GLOBAL_FILE in listed
        assert not any(p.startswith(("memory/scopes/api/", "memory/episodes/")) for p in listed)

        stored = data(await web.call_tool("memory_store", {"text": "The web app's CDN is Fastly."}))
        assert stored["path"] == todays_web_file()
        for scope in ("api", "global"):
            message = error(await web.call_tool("memory_store", {"text": "The web token writes here.", "scope": scope}))
            assert "writes into that scope only" in message
        before = {p: p.read_bytes() for p in ws.rglob("*.md")}
        for tool, args in [("memory_forget", {"path": api_file, "line": 3, "confirm": True}),
                           ("memory_forget", {"path": GLOBAL_FILE, "line": 3, "confirm": True}),
                           ("memory_forget", {"query": API_DEPLOY, "confirm": True, "scope": "api"}),
                           ("memory_capture", {"messages": [{"role": "user", "content": "I like tea a lot."}],
                                               "scope": "api"}),
                           ("memory_episodes", {}),
                           ("memory_graph_add", {"cause": "slow build", "action": "cached deps", "effect": "fast",
                                                 "outcome": "success"})]:
            assert (await web.call_tool(tool, args)).is_error, tool
        assert {p: p.read_bytes() for p in ws.rglob("*.md")} == before

    async with http_client(team_server, API_TOKEN) as api:
        assert await paths_found(api, "deploy") == {GLOBAL_FILE, api_file}
        assert "Fastly" not in json.dumps(data(await api.call_tool("memory_search", {"query": "CDN Fastly"})))

    async with http_client(team_server, FULL) as full:
        assert await paths_found(full, "deploy CDN", scope="*") == {GLOBAL_FILE, web_file, api_file, todays_web_file(),
                                                                     "memory/episodes/2026-01-06-abc.md"}


def test_a_scoped_token_needs_a_valid_name(tmp_path: Path) -> None:
    from test_http_security import _serve_exit

    for bad in ("web", "Bad Name=token-0123456789abcdef", "web="):
        proc = _serve_exit(tmp_path, "--transport", "http", "--scoped-token", bad)
        assert proc.returncode == 2, proc.stdout
        assert "--scoped-token" in proc.stderr and "Traceback" not in proc.stderr


# ----- hooks take the scope from the client's working directory ---------------------------------------
def run_scoped_hook(workspace: Path, event: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    env = {**hook_env(), "MCP_MEMORY_SCOPES_FROM_CWD": "true"}
    return subprocess.run(hook_command(workspace, event), input=json.dumps(payload).encode(), capture_output=True,
                          timeout=120, env=env, cwd=str(workspace.parent))


def test_hooks_recall_and_capture_in_the_scope_of_the_working_directory(workspace: Path, tmp_path: Path) -> None:
    write(workspace, "memory/2026-01-02.md", "# 2026-01-02\n\n- Checkout pages must log every payment error.\n")
    write(workspace, "memory/scopes/shop/2026-01-05.md",
          "# 2026-01-05\n\n- The shop checkout verifies Stripe webhooks with the signing secret.\n")
    write(workspace, "memory/scopes/blog/2026-01-05.md",
          "# 2026-01-05\n\n- The blog checkout verifies Stripe webhooks through a proxy.\n")
    index_keywords(workspace)
    shop = tmp_path / "projects" / "Shop"
    (shop / ".git").mkdir(parents=True)
    (shop / "src").mkdir()
    blog = tmp_path / "projects" / "blog"
    blog.mkdir()
    prompt = "How does the checkout verify Stripe webhooks?"

    def recalled(cwd: Path) -> str:
        proc = run_scoped_hook(workspace, "prompt", {"session_id": f"s-{cwd.name}", "prompt": prompt,
                                                     "cwd": str(cwd), "hook_event_name": "UserPromptSubmit"})
        assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
        context: str = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        return context

    in_shop = recalled(shop / "src")
    assert "signing secret" in in_shop and "through a proxy" not in in_shop
    in_blog = recalled(blog)
    assert "through a proxy" in in_blog and "signing secret" not in in_blog

    transcript = write_jsonl(tmp_path / "session.jsonl", claude_transcript())
    stop = run_scoped_hook(workspace, "stop", {"session_id": "s-shop", "transcript_path": str(transcript),
                                               "cwd": str(shop / "src"), "hook_event_name": "Stop"})
    assert stop.returncode == 0 and stop.stdout == b""
    captured = (workspace / "memory" / "scopes" / "shop" / f"{today()}.md").read_text(encoding="utf-8")
    assert "dog is called Biscuit" in captured
    assert not (workspace / "memory" / f"{today()}.md").exists()
