"""The HTTP server's guards: read-only tokens, a request size limit, Host and Origin checks.

Real ``serve --transport http`` subprocesses (keyword-only, for speed), reached over loopback.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from test_transports import INIT_BODY, assert_pnpm_hit, raw_post, running_server

FULL, READ_ONLY = "full-token-0123", "read-only-token-4567"
SHARED_TOKEN = "shared-token-89ab"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def two_token_server(tmp_path_factory: pytest.TempPathFactory):
    with running_server(tmp_path_factory, "tokens", "--transport", "http", "--token", FULL,
                        "--read-only-token", READ_ONLY, "--max-request-bytes", "65536") as server:
        yield server


async def _call(server, token: str, tool: str, args: dict):
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as client,
    ):
        return await client.call_tool(tool, args)


@pytest.mark.anyio
async def test_read_only_token_searches_but_cannot_edit(two_token_server):
    assert_pnpm_hit(await _call(two_token_server, READ_ONLY, "memory_search", {"query": "pnpm"}))
    ws = Path(two_token_server.log).parent / "ws"
    before = {p: p.read_bytes() for p in ws.rglob("*.md")}
    for tool, args in [("memory_store", {"text": "The user likes tea."}),
                       ("memory_forget", {"query": "pnpm", "confirm": True}),
                       ("memory_capture", {"messages": [{"role": "user", "content": "Remember that I like tea."}]}),
                       ("reward_memory_utility", {"memory_id": "m-000000000000"}),
                       ("penalize_memory_utility", {"memory_id": "m-000000000000"}),
                       ("memory_graph_add", {"cause": "disk full", "action": "pruned old images",
                                             "effect": "space freed", "outcome": "success"})]:
        result = await _call(two_token_server, READ_ONLY, tool, args)
        assert result.is_error, tool
        assert "read-only" in result.content[0].text
    assert {p: p.read_bytes() for p in ws.rglob("*.md")} == before  # nothing written
    assert not (ws / "memory" / "utility.jsonl").exists() and not (ws / "memory" / "experience.md").exists()

    stored = await _call(two_token_server, FULL, "memory_store", {"text": "The user likes oolong tea."})
    assert not stored.is_error and stored.structured_content["stored"]


def test_request_body_limit(two_token_server):
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "memory_search", "arguments": {"query": "x" * 100_000}}})
    status, _, _ = raw_post(two_token_server.port, headers={"Authorization": f"Bearer {FULL}"}, body=big)
    assert status == 413
    status, _, body = raw_post(two_token_server.port, headers={"Authorization": f"Bearer {FULL}"}, body=INIT_BODY)
    assert status == 200, body  # still serving


def test_beyond_loopback_checks_host_and_origin(tmp_path_factory: pytest.TempPathFactory):
    with running_server(tmp_path_factory, "wide", "--transport", "http", "--host", "0.0.0.0", "--token", FULL,
                        "--allowed-host", "127.0.0.1:*", "--allowed-origin", "https://app.example") as server:
        auth = {"Authorization": f"Bearer {FULL}"}
        status, _, body = raw_post(server.port, headers=auth)
        assert status == 200, body
        status, _, _ = raw_post(server.port, headers={**auth, "Host": "evil.example"})
        assert status in (403, 421)
        status, _, _ = raw_post(server.port, headers={**auth, "Origin": "https://evil.example"})
        assert status == 403
        status, _, body = raw_post(server.port, headers={**auth, "Origin": "https://app.example"})
        assert status == 200, body
        status, _, _ = raw_post(server.port)  # no token
        assert status == 401


def test_beyond_loopback_needs_a_token(tmp_path: Path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "mcp_memory", "serve", "--transport", "http", "--host", "0.0.0.0",
                           "--workspace", str(tmp_path / "ws"), "--embedder", "none"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "without a token" in proc.stderr


# ----- an empty token is no token ---------------------------------------------------------------------------
def _serve_exit(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    import subprocess
    import sys

    from conftest import free_port, port_open, server_env

    port = free_port()
    proc = subprocess.run([sys.executable, "-m", "mcp_memory", "serve", "--workspace", str(tmp_path / "ws"),
                           "--embedder", "none", "--port", str(port), *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                          env=server_env(**(env or {})), cwd=str(tmp_path))
    assert not port_open(port)
    return proc


@pytest.mark.parametrize("args", [
    ["--host", "0.0.0.0", "--shared-token", ""],          # what "$UNSET_VAR" gives
    ["--host", "0.0.0.0", "--token", ""],
    ["--host", "0.0.0.0", "--token", "   "],
    ["--host", "0.0.0.0", "--read-only-token", "\t"],
    ["--host", "0.0.0.0", "--token", FULL, "--shared-token", ""],  # one good token does not excuse an empty one
    ["--host", "127.0.0.1", "--token", ""],               # on loopback too: the flag asked for a token
    ["--host", "0.0.0.0", "--token", "tok en with spaces"],
    ["--host", "0.0.0.0", "--token", "jeton-été-0123456789"],
])
def test_empty_or_malformed_token_flags_are_refused(tmp_path: Path, args: list[str]):
    proc = _serve_exit(tmp_path, "--transport", "http", *args)
    assert proc.returncode == 2, proc.stderr
    assert "token" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("env", [
    {"MCP_MEMORY_TOKEN": ""},
    {"MCP_MEMORY_TOKEN": "   "},
    {"MCP_MEMORY_READ_ONLY_TOKEN": " , ,"},
    {"MCP_MEMORY_SHARED_TOKEN": ""},
    {"MCP_MEMORY_TOKEN": "", "MCP_MEMORY_SHARED_TOKEN": " ", "MCP_MEMORY_READ_ONLY_TOKEN": ","},
])
@pytest.mark.parametrize("host", ["0.0.0.0", "", "::"])
def test_empty_token_variables_are_unset_and_a_wide_listen_is_refused(tmp_path: Path, env: dict[str, str],
                                                                       host: str):
    proc = _serve_exit(tmp_path, "--transport", "sse", "--host", host, env=env)
    assert proc.returncode == 2, proc.stderr
    assert "without a token" in proc.stderr and "Traceback" not in proc.stderr


def test_a_blank_bearer_never_matches(two_token_server):
    for header in ("Bearer ", "Bearer    ", "Bearer", "bearer \t", ""):
        status, _, _ = raw_post(two_token_server.port, headers={"Authorization": header} if header else {})
        assert status == 401, header


def test_blank_tokens_given_to_the_library_install_no_open_door(workspace, settings):
    """create_server with only blank tokens has no token at all: nothing that looks like auth is installed."""
    import anyio

    from mcp_memory.runtime.service import MemoryService
    from mcp_memory.server import StaticTokenVerifier, create_server

    service = MemoryService(settings)
    server = create_server(settings, service, token="  ", read_only_tokens=["", " "], shared_tokens=["\t"])
    assert server.settings.auth is None and server._token_verifier is None
    with_one = create_server(settings, service, token="  ", shared_tokens=["", SHARED_TOKEN])
    assert with_one._token_verifier is not None
    assert anyio.run(with_one._token_verifier.verify_token, "") is None
    assert anyio.run(with_one._token_verifier.verify_token, SHARED_TOKEN).scopes == ["memory", "memory:write"]
    service.stop()

    verifier = StaticTokenVerifier({"": ["memory"], "  ": ["memory"], FULL: ["memory"]})
    assert anyio.run(verifier.verify_token, "") is None
    assert anyio.run(verifier.verify_token, "  ") is None
    assert anyio.run(verifier.verify_token, FULL) is not None


# ----- what the server prints and logs ----------------------------------------------------------------------
def _get(port: int, path: str) -> tuple[int, dict[str, str]]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def _log_after(server, marker: str) -> str:
    """The server's output once a request for ``marker`` has been logged (uvicorn logs after answering)."""
    import time

    deadline = time.monotonic() + 10
    while marker not in server.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.output()


def test_no_token_is_printed_or_logged(two_token_server):
    """Not in the sign-in instructions, not in the access log, even from a link a person pasted a token into."""
    for path in (f"/?token={FULL}", f"/files?q=x&token={READ_ONLY}", f"/search?token={FULL}&q=tea"):
        _get(two_token_server.port, path)
    output = _log_after(two_token_server, "GET /search?[query not logged]")
    assert FULL not in output and READ_ONLY not in output
    assert "q=tea" not in output  # nor what was searched
    assert "dashboard at " in output and "GET /files?[query not logged]" in output  # the log itself is there


def test_sse_server_logs_no_query_either(tmp_path_factory: pytest.TempPathFactory):
    with running_server(tmp_path_factory, "sse-log", "--transport", "sse", "--token", FULL) as server:
        _get(server.port, f"/?token={FULL}")
        output = _log_after(server, "GET /?[query not logged]")
        assert FULL not in output and "GET /?[query not logged]" in output


def test_the_frameworks_own_answers_carry_the_security_headers(two_token_server):
    answers = {"unknown path": _get(two_token_server.port, "/no-such-page"),
               "static file": _get(two_token_server.port, "/static/dashboard.css")}
    status, headers, _ = raw_post(two_token_server.port, path="/files")
    answers["POST to a page"] = (status, headers)
    assert [a[0] for a in answers.values()] == [404, 200, 405]
    for what, (_, headers) in answers.items():
        assert "default-src 'self'" in headers.get("content-security-policy", ""), what
        assert headers.get("x-frame-options") == "DENY" and headers.get("x-content-type-options") == "nosniff", what


def test_another_loopback_address_still_checks_host_and_origin():
    """127.x.y.z is loopback, but the SDK's own default names only 127.0.0.1, localhost and ::1."""
    from mcp_memory.processes.serve import ServeOptions, http_options

    security = http_options(ServeOptions(transport="http", host="127.45.6.7", port=8765))["transport_security"]
    assert security.enable_dns_rebinding_protection
    assert security.allowed_hosts == ["127.45.6.7:*"] and security.allowed_origins == ["http://127.45.6.7:*"]
    assert "transport_security" not in http_options(ServeOptions(transport="http", host="127.0.0.1", port=8765))


def test_a_session_answers_only_the_token_that_opened_it(two_token_server):
    """A session opened with one token is refused to another (as if it did not exist), so a
    read-only or shared caller cannot speak inside a full token's session: its server-to-client
    requests, notifications and episode would be the other caller's."""
    port = two_token_server.port
    status, headers, body = raw_post(port, headers={"Authorization": f"Bearer {FULL}"})
    assert status == 200, body
    session = headers["mcp-session-id"]
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "memory_search", "arguments": {"query": "pnpm"}}})
    status, _, _ = raw_post(port, headers={"Authorization": f"Bearer {FULL}", "mcp-session-id": session},
                            body=initialized)
    assert status in (200, 202)
    status, _, body = raw_post(port, headers={"Authorization": f"Bearer {READ_ONLY}", "mcp-session-id": session},
                               body=call)
    assert status == 404, body
    status, _, body = raw_post(port, headers={"Authorization": f"Bearer {FULL}", "mcp-session-id": session},
                               body=call)
    assert status == 200 and b"pnpm" in body
    # The read-only token opens its own session, which the full token cannot use either.
    status, headers, _ = raw_post(port, headers={"Authorization": f"Bearer {READ_ONLY}"})
    assert status == 200 and headers["mcp-session-id"] != session
    status, _, _ = raw_post(port, headers={"Authorization": f"Bearer {FULL}",
                                           "mcp-session-id": headers["mcp-session-id"]}, body=call)
    assert status == 404


def test_an_sse_session_answers_only_the_token_that_opened_it(tmp_path_factory: pytest.TempPathFactory):
    import http.client
    import re

    with running_server(tmp_path_factory, "sse-owner", "--transport", "sse", "--token", FULL,
                        "--read-only-token", READ_ONLY) as server:
        stream = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
        stream.request("GET", "/sse", headers={"Authorization": f"Bearer {FULL}", "Accept": "text/event-stream",
                                               "Host": f"127.0.0.1:{server.port}"})
        response = stream.getresponse()
        assert response.status == 200
        endpoint = ""
        while "session_id=" not in endpoint:
            endpoint += response.readline().decode()
        path = re.search(r"data: (\S+session_id=\w+)", endpoint).group(1)
        try:
            status, _, body = raw_post(server.port, path=path, headers={"Authorization": f"Bearer {READ_ONLY}"})
            assert status == 404, body  # as if the session did not exist
            status, _, _ = raw_post(server.port, path=path, headers={"Authorization": f"Bearer {FULL}"})
            assert status == 202  # the owner's message is taken
        finally:
            stream.close()
