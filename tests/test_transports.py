"""The MCP server over every transport, as a client sees it: stdio, Streamable HTTP and SSE.

Each server runs as a real subprocess (``python -m mcp_memory serve ...``) on a workspace in a
temp dir. Servers use ``--embedder none`` (keyword search only: fast and deterministic), except
one stdio test that uses the default embedder. HTTP/SSE servers listen on a free loopback port
and are shared per module; every subprocess is killed in a fixture finalizer.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from conftest import ServerProcess, free_port, port_open, server_env, start_server

PNPM_NOTE = "The user prefers pnpm over npm and yarn."
RECALL_MESSAGE = "Which package manager should I use, pnpm or npm?"
TOOLS = {"memory_search", "memory_get", "memory_store", "memory_forget", "memory_recall", "memory_status",
         "memory_capture", "precision_memory_search", "deep_memory_search"}
TOKEN = "s3cret"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ----- helpers -------------------------------------------------------------------------------------
def make_workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text(f"# Preferences\n\n{PNPM_NOTE}\n", encoding="utf-8")
    (root / "memory" / "2026-11-20.md").write_text(
        "# 2026-11-20\n\nDeployed the zebracorn service to staging.\n", encoding="utf-8")
    (root / "memory" / "projects").mkdir()
    (root / "memory" / "projects" / "database.md").write_text(
        "# Database\n\nWe chose PostgreSQL as the main database.\n", encoding="utf-8")
    return root


@contextlib.contextmanager
def running_server(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str,
                   env: dict[str, str] | None = None) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp(name)
    server = start_server(make_workspace(root / "ws"), root, *args, env=env)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory, "http", "--transport", "http") as server:
        yield server


@pytest.fixture(scope="module")
def sse_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory, "sse", "--transport", "sse") as server:
        yield server


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory, "token", "--transport", "http", "--token", TOKEN) as server:
        yield server


def stdio_params(workspace: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_memory", "serve", "--workspace",
                                                               str(workspace), *extra], cwd=str(workspace.parent),
                                 env=server_env())


def assert_pnpm_hit(result) -> None:
    assert not result.is_error, result.content
    hits = result.structured_content["results"]
    top = hits[0]
    assert top["path"] == "MEMORY.md"
    assert "pnpm" in top["snippet"]
    assert top["citation"] == f"MEMORY.md#L{top['start_line']}-L{top['end_line']}"
    assert top["start_line"] <= 3 <= top["end_line"]  # the note is line 3


def assert_files_listing(result) -> None:
    (content,) = result.contents
    assert content.uri == "memory://files"
    files = {f["path"] for f in json.loads(content.text)}
    # An earlier connection to the same server that did work has left its episode.
    notes = {path for path in files if not path.startswith("memory/episodes/")}
    assert notes == {"MEMORY.md", "memory/2026-11-20.md", "memory/projects/database.md"}


async def roundtrip(client: Client, *, prompt: bool = True) -> None:
    tools = {t.name for t in (await client.list_tools()).tools}
    assert tools >= TOOLS
    assert_pnpm_hit(await client.call_tool("memory_search", {"query": "pnpm"}))
    if prompt:
        got = await client.get_prompt("recall", {"message": RECALL_MESSAGE})
        (message,) = got.messages
        assert message.role == "user"
        text = message.content.text
        assert "<relevant-memories>" in text and 'source="MEMORY.md#L' in text and "pnpm over npm" in text
        assert text.rstrip().endswith(RECALL_MESSAGE)
    assert_files_listing(await client.read_resource("memory://files"))


EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}


# ----- stdio -----------------------------------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_roundtrip(tmp_path: Path, mode: str) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with Client(stdio_params(ws, "--embedder", "none"), mode=mode) as client:
        assert client.protocol_version == EXPECTED_VERSION[mode]
        await roundtrip(client)


@pytest.mark.anyio
@pytest.mark.integration
async def test_stdio_roundtrip_default_embedder(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with Client(stdio_params(ws), mode="auto") as client:
        await roundtrip(client)
        status = await client.call_tool("memory_status", {})
        assert not status.is_error
        assert status.structured_content["embedder"]["provider"] == "local"


@pytest.mark.anyio
async def test_stdio_keeps_serving_after_bad_calls(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with Client(stdio_params(ws, "--embedder", "none"), mode="legacy") as client:
        bad = [
            ("no_such_tool", {}, "Unknown tool"),
            ("memory_search", {"query": 42}, "validation error"),
            ("memory_search", {"query": "pnpm", "max_results": "lots"}, "validation error"),
            ("memory_search", {}, "validation error"),
            ("memory_get", {"path": "../x.md"}, ".."),
            ("memory_get", {"path": "/etc/passwd"}, ""),
            ("memory_get", {"path": "memory/does-not-exist.md"}, ""),
        ]
        for name, args, needle in bad:
            result = await client.call_tool(name, args)
            assert result.is_error, (name, args, result)
            assert needle in result.content[0].text, (name, args, result.content[0].text)
            assert_pnpm_hit(await client.call_tool("memory_search", {"query": "pnpm"}))


class RawStdio:
    """A server on raw pipes, serving in its own process: every stdout line is collected by a
    reader thread (tests/test_warm.py has the same through the front of a warm process)."""

    def __init__(self, workspace: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_memory", "serve", "--workspace", str(workspace), "--embedder", "none", "-vv"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=server_env(MCP_MEMORY_WARM_ENABLED="false"),
            cwd=str(workspace.parent),
        )
        self.lines: list[bytes] = []
        self.stderr = b""
        self._q: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.append(line)
            self._q.put(line)
        self._q.put(None)

    def _read_err(self) -> None:
        self.stderr = self.proc.stderr.read()  # type: ignore[union-attr]

    def send(self, message: dict | str) -> None:
        data = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(data.encode() + b"\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def response(self, request_id: int, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            line = self._q.get(timeout=max(0.01, deadline - time.monotonic()))
            assert line is not None, f"stdout closed before response {request_id}; stderr: {self.stderr!r}"
            message = json.loads(line)
            if message.get("id") == request_id:
                return message

    def close(self) -> int:
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            return -9
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def test_stdio_discipline_raw_pipes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    server = RawStdio(ws)
    try:
        server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "raw-test", "version": "0.0.1"}}})
        init = server.response(1)
        assert init["result"]["protocolVersion"] == "2025-11-25"
        assert init["result"]["serverInfo"]["name"] == "mcp-memory"
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert {t["name"] for t in server.response(2)["result"]["tools"]} >= TOOLS

        server.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "memory_search", "arguments": {"query": "pnpm"}}})
        result = server.response(3)["result"]
        assert result["isError"] is False
        assert result["structuredContent"]["results"][0]["citation"].startswith("MEMORY.md#L")

        # A failing call makes the SDK log to stderr: that log must not reach stdout.
        server.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                     "params": {"name": "no_such_tool", "arguments": {}}})
        assert server.response(4)["result"]["isError"] is True

        # Garbage: not JSON, JSON but not JSON-RPC, an unknown method. Answered with an error or ignored.
        server.send("this is not json {")
        server.send('{"hello": "world"}')
        server.send({"jsonrpc": "2.0", "id": 5, "method": "no/such/method"})
        assert server.response(5)["error"]["code"] == -32601

        server.send({"jsonrpc": "2.0", "id": 6, "method": "tools/list"})
        assert {t["name"] for t in server.response(6)["result"]["tools"]} >= TOOLS
    finally:
        rc = server.close()
    assert rc == 0, server.stderr  # stdin EOF is a clean shutdown

    time.sleep(0.2)  # let the reader threads drain
    assert server.lines, "no output on stdout"
    ids = []
    for raw in server.lines:
        assert raw.endswith(b"\n"), raw
        message = json.loads(raw)  # every stdout line is one JSON-RPC message, nothing else
        assert message.get("jsonrpc") == "2.0", raw
        assert ("result" in message or "error" in message) or "method" in message, raw
        if "error" in message:  # only for a garbage line or the unknown method
            assert set(message["error"]) >= {"code", "message"}, raw
            assert message.get("id") in (None, 5), raw
        ids.append(message.get("id"))
    assert [i for i in ids if i is not None] == [1, 2, 3, 4, 5, 6]
    assert b"no_such_tool" in server.stderr  # the SDK's log line went to stderr


# ----- Streamable HTTP and SSE ----------------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_http_roundtrip(http_server: ServerProcess, mode: str) -> None:
    async with Client(f"{http_server.base}/mcp", mode=mode) as client:
        assert client.protocol_version == EXPECTED_VERSION[mode]
        await roundtrip(client, prompt=False)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sse_roundtrip(sse_server: ServerProcess, mode: str) -> None:
    async with Client(sse_client(f"{sse_server.base}/sse"), mode=mode) as client:
        assert client.protocol_version == EXPECTED_VERSION[mode]
        await roundtrip(client, prompt=False)


@pytest.mark.anyio
async def test_http_50_concurrent_searches(http_server: ServerProcess) -> None:
    queries = ["pnpm", "zebracorn service", "PostgreSQL database", "yarn", "staging"]
    expected = {"pnpm": "MEMORY.md", "zebracorn service": "memory/2026-11-20.md",
                "PostgreSQL database": "memory/projects/database.md", "yarn": "MEMORY.md",
                "staging": "memory/2026-11-20.md"}
    results: dict[int, object] = {}
    async with Client(f"{http_server.base}/mcp") as client:

        async def one(i: int) -> None:
            results[i] = await client.call_tool("memory_search", {"query": queries[i % len(queries)]})

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(one, i)
    assert len(results) == 50
    for i, result in results.items():
        assert not result.is_error, (i, result.content)
        hits = result.structured_content["results"]
        assert hits and hits[0]["path"] == expected[queries[i % len(queries)]], (i, hits)


# ----- raw HTTP: bearer token, Host header ---------------------------------------------------------
INIT_BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "raw-http", "version": "0"}}})


def raw_post(port: int, path: str = "/mcp", headers: dict[str, str] | None = None,
             body: str = INIT_BODY) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        all_headers = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json",
                       "Content-Length": str(len(body.encode())),
                       "Accept": "application/json, text/event-stream", **(headers or {})}
        conn.putrequest("POST", path, skip_host=True, skip_accept_encoding=True)
        for key, value in all_headers.items():
            conn.putheader(key, value)
        conn.endheaders(body.encode())
        response = conn.getresponse()
        data = response.read()  # an initialize's SSE response stream ends after the result
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        conn.close()


def test_token_missing_or_wrong_is_401(token_server: ServerProcess) -> None:
    status, headers, _ = raw_post(token_server.port)
    assert status == 401
    assert headers.get("www-authenticate", "").lower().startswith("bearer")
    status, _, _ = raw_post(token_server.port, headers={"Authorization": "Bearer wrong"})
    assert status == 401
    status, _, _ = raw_post(token_server.port, headers={"Authorization": f"Bearer {TOKEN}x"})
    assert status == 401
    status, _, body = raw_post(token_server.port, headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200, body


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_token_right_bearer_works(token_server: ServerProcess, mode: str) -> None:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(f"{token_server.base}/mcp", http_client=http), mode=mode) as client,
    ):
        assert_pnpm_hit(await client.call_tool("memory_search", {"query": "pnpm"}))


@pytest.mark.anyio
async def test_sse_token_from_environment(tmp_path_factory: pytest.TempPathFactory) -> None:
    """MCP_MEMORY_TOKEN protects an SSE server too: both the event stream and the message endpoint."""
    with running_server(tmp_path_factory, "sse-token", "--transport", "sse", env={"MCP_MEMORY_TOKEN": TOKEN}) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/sse")
        response = conn.getresponse()
        assert response.status == 401
        conn.close()
        status, _, _ = raw_post(server.port, "/messages/?session_id=0123", headers={"Authorization": "Bearer wrong"})
        assert status == 401
        async with Client(sse_client(f"{server.base}/sse", headers={"Authorization": f"Bearer {TOKEN}"}),
                          mode="legacy") as client:
            assert_pnpm_hit(await client.call_tool("memory_search", {"query": "pnpm"}))


def test_forged_host_header_is_rejected(http_server: ServerProcess) -> None:
    status, _, body = raw_post(http_server.port, headers={"Host": "evil.example"})
    assert status == 421 or 400 <= status < 500, (status, body)
    status, _, body = raw_post(http_server.port, headers={"Host": f"evil.example:{http_server.port}"})
    assert 400 <= status < 500, (status, body)
    # The same request with the real Host (or localhost) is not rejected for Host reasons.
    for host in (f"127.0.0.1:{http_server.port}", f"localhost:{http_server.port}"):
        status, _, body = raw_post(http_server.port, headers={"Host": host})
        assert status == 200, (host, status, body)
        assert b'"protocolVersion":"2025-11-25"' in body


def test_forged_origin_header_is_rejected(http_server: ServerProcess) -> None:
    status, _, body = raw_post(http_server.port, headers={"Origin": "http://evil.example"})
    assert 400 <= status < 500, (status, body)


def test_non_loopback_host_without_token_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    port = free_port()
    result = subprocess.run(
        [sys.executable, "-m", "mcp_memory", "serve", "--workspace", str(ws), "--embedder", "none",
         "--transport", "http", "--host", "0.0.0.0", "--port", str(port)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30, env=server_env(), cwd=str(tmp_path),
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert "token" in result.stderr.lower()
    assert "Traceback" not in result.stderr
    assert not port_open(port)
