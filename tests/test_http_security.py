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


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def two_token_server(tmp_path_factory: pytest.TempPathFactory):
    with running_server(tmp_path_factory, "tokens", "--transport", "http", "--token", FULL,
                        "--read-only-token", READ_ONLY, "--max-request-bytes", "65536") as server:
        yield server


async def _call(server, token: str, tool: str, args: dict):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as client:
            return await client.call_tool(tool, args)


@pytest.mark.anyio
async def test_read_only_token_searches_but_cannot_edit(two_token_server):
    assert_pnpm_hit(await _call(two_token_server, READ_ONLY, "memory_search", {"query": "pnpm"}))
    ws = Path(two_token_server.log).parent / "ws"
    before = {p: p.read_bytes() for p in ws.rglob("*.md")}
    for tool, args in [("memory_store", {"text": "The user likes tea."}),
                       ("memory_forget", {"query": "pnpm", "confirm": True}),
                       ("memory_capture", {"messages": [{"role": "user", "content": "Remember that I like tea."}]})]:
        result = await _call(two_token_server, READ_ONLY, tool, args)
        assert result.is_error, tool
        assert "read-only" in result.content[0].text
    assert {p: p.read_bytes() for p in ws.rglob("*.md")} == before  # nothing written

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
