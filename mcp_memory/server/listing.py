"""The answers a client gets before its first call, recorded from the real server into ``listing.json``.

An MCP client opens with ``initialize`` (or ``server/discover``) and the lists of tools, prompts
and resources, and some build their first model request from them at once. The stdio front
(``runtime/front.py``) answers these itself, without the MCP SDK, from ``listing.json``: the exact
results this package's server gives, in every protocol version the SDK speaks, recorded here by
driving ``create_server`` over JSON-RPC lines the same way the warm process serves a front
(``stdio.serve_lines``).

The file holds one package version and one SDK version; the front uses it only when both match
what is installed. ``tests/test_front_cold.py`` records it again and fails when the shipped file
differs, and checks that no setting, ``--shared`` or default scope changes what it holds.

    python -m mcp_memory.server.listing      # rewrite mcp_memory/server/listing.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from mcp_memory import __version__
from mcp_memory.config import Settings, load_settings

LISTING_PATH = Path(__file__).with_name("listing.json")
SDK_DISTRIBUTION = "mcp"
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
HANDSHAKE_METHODS = ("initialize", "ping", *LISTS)
MODERN_METHODS = ("server/discover", *LISTS)


def build_listing(settings: Settings | None = None, *, shared: bool = False,
                  scope: str | None = None) -> dict[str, Any]:
    """The listing of the server built with these settings (a throwaway workspace's defaults when None)."""
    with tempfile.TemporaryDirectory(prefix="mcp-memory-listing-") as tmp:
        if settings is None:
            workspace = Path(tmp) / "workspace"
            workspace.mkdir()
            settings = load_settings(workspace, environ={}, overrides={"index_path": str(Path(tmp) / "index")})
        answers: list[Any] = []  # each distinct result once; versions name them by position
        versions: dict[str, dict[str, int]] = {}
        for protocol in (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS):
            results = anyio.run(_record, settings, shared, scope, protocol)
            versions[protocol] = {method: _index_of(answers, result) for method, result in results.items()}
    return {
        "package_version": __version__,
        "sdk_version": version(SDK_DISTRIBUTION),
        "handshake_versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "latest_handshake_version": LATEST_HANDSHAKE_VERSION,
        "modern_versions": list(MODERN_PROTOCOL_VERSIONS),
        "versions": versions,
        "answers": answers,
    }


def render(listing: dict[str, Any]) -> str:
    """The text of ``listing.json`` (stable, so the file changes only when an answer does)."""
    return json.dumps(listing, ensure_ascii=False, indent=1) + "\n"


def _index_of(answers: list[Any], result: Any) -> int:
    if result not in answers:
        answers.append(result)
    return answers.index(result)


def _requests(protocol: str) -> list[dict[str, Any]]:
    """What a client of ``protocol`` sends before its first call, one request per recorded method."""
    if protocol in MODERN_PROTOCOL_VERSIONS:
        meta = {PROTOCOL_VERSION_KEY: protocol, CLIENT_CAPABILITIES_KEY: {}}
        return [{"jsonrpc": "2.0", "id": n, "method": method, "params": {"_meta": meta}}
                for n, method in enumerate(MODERN_METHODS, 1)]
    opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": protocol, "capabilities": {},
                          "clientInfo": {"name": "mcp-memory-listing", "version": __version__}}}
    return [opening, {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *({"jsonrpc": "2.0", "id": n, "method": method} for n, method in enumerate(HANDSHAKE_METHODS[1:], 2))]


async def _record(settings: Settings, shared: bool, scope: str | None, protocol: str) -> dict[str, Any]:
    """Serve one connection of ``protocol`` and return each recorded method's result."""
    from mcp_memory.runtime.service import MemoryService
    from mcp_memory.runtime.stdio import serve_lines
    from mcp_memory.server import create_server

    server = create_server(settings, MemoryService(settings), shared=shared, scope=scope)
    requests = _requests(protocol)
    lines = _Exchange([json.dumps(r) + "\n" for r in requests],
                      sum(1 for r in requests if "id" in r))
    await serve_lines(server, lines, lines)
    replies = {reply.get("id"): reply for reply in lines.replies}
    results: dict[str, Any] = {}
    for request in requests:
        if "id" not in request:
            continue
        reply = replies.get(request["id"])
        if reply is None or "result" not in reply:
            raise RuntimeError(f"{request['method']} at {protocol} was not answered with a result: {reply}")
        results[request["method"]] = reply["result"]
    return results


class _Exchange:
    """Both ends of one connection: hands out the requests, then ends the input once every request
    is answered (a legacy server handles ``initialize`` before reading on; replies match by id)."""

    def __init__(self, lines: list[str], expected: int):
        self._lines = lines
        self._expected = expected
        self._answered = anyio.Event()
        self._buffer = ""
        self.replies: list[dict[str, Any]] = []

    def __aiter__(self) -> _Exchange:
        return self

    async def __anext__(self) -> str:
        if self._lines:
            return self._lines.pop(0)
        with anyio.fail_after(30):
            await self._answered.wait()
        raise StopAsyncIteration

    async def write(self, text: str) -> None:
        self._buffer += text
        *complete, self._buffer = self._buffer.split("\n")
        self.replies.extend(json.loads(line) for line in complete if line.strip())
        if len(self.replies) >= self._expected:
            self._answered.set()

    async def flush(self) -> None:
        return None


def main() -> int:
    LISTING_PATH.write_text(render(build_listing()), encoding="utf-8")
    print(f"wrote {LISTING_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
