"""Private files (``privacy.private_paths``, MEMORY.md by default) never reach a shared client.

A shared client is a server started with ``--shared`` (every caller), or an HTTP caller whose
token was given with ``--shared-token``. It may search, store and capture, but nothing of a
private file comes back: not through search, get, recall, prompts, resources, nor as the
"near-duplicate" that store returns.
"""

from __future__ import annotations

import json

import httpx2
import pytest

from conftest import close_server, indexed_memory, write
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_memory.server import create_server
from mcp_memory.service import MemoryService
from test_transports import running_server

PRIVATE = "The user's therapist is Dr. Okafor; sessions on Wednesdays."
PUBLIC = "The team deploys the billing service on Wednesdays."
FULL, SHARED = "owner-token-1", "team-bot-token-2"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def shared_server(workspace, settings):
    write(workspace, "MEMORY.md", f"# Memory\n\n- {PRIVATE}\n")
    write(workspace, "memory/2026-11-20.md", f"# 2026-11-20\n\n- {PUBLIC}\n")
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    server = create_server(settings, service=service, shared=True)
    yield server
    close_server(server)


def _text(result) -> str:
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


@pytest.mark.anyio
async def test_a_shared_server_never_serves_private_files(shared_server):
    async with Client(shared_server) as client:
        outputs = [
            await client.call_tool("memory_search", {"query": "Wednesdays therapist Okafor", "max_results": 10}),
            await client.call_tool("memory_recall", {"prompt": "who is the user's therapist, Dr. Okafor?"}),
            await client.call_tool("memory_forget", {"query": "therapist Okafor"}),
            await client.get_prompt("recall", {"message": "when does the user see Dr. Okafor the therapist?"}),
            await client.read_resource("memory://files"),
            await client.read_resource("memory://recall/therapist%20Okafor"),
        ]
        get = await client.call_tool("memory_get", {"path": "MEMORY.md"})
        store = await client.call_tool("memory_store", {"text": PRIVATE, "evergreen": True})
        public = await client.call_tool("memory_search", {"query": "billing service deploys"})
        with pytest.raises(Exception):
            await client.read_resource("memory://files/MEMORY.md")
    for output in outputs:  # (the recall prompt echoes the question itself, so look for the memory's own words)
        assert "sessions on Wednesdays" not in _text(output) and "MEMORY.md" not in _text(output)
    assert get.is_error and "private" in get.content[0].text
    # The duplicate exists in MEMORY.md: the answer says so without quoting it.
    assert not store.structured_content["stored"] and "sessions on Wednesdays" not in store.structured_content["text"]
    assert public.structured_content["results"][0]["path"] == "memory/2026-11-20.md"


@pytest.mark.anyio
async def test_shared_token_over_http(tmp_path_factory):
    with running_server(tmp_path_factory, "privacy", "--transport", "http", "--token", FULL,
                        "--shared-token", SHARED) as server:
        ws = server.log.parent / "ws"
        # The module's workspace has a MEMORY.md about pnpm: that is the private file here.
        private_text = (ws / "MEMORY.md").read_text(encoding="utf-8")
        assert "pnpm" in private_text

        async def ask(token: str):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
                async with Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as client:
                    search = await client.call_tool("memory_search", {"query": "pnpm npm yarn"})
                    get = await client.call_tool("memory_get", {"path": "MEMORY.md"})
                    files = await client.read_resource("memory://files")
                    return search, get, files

        search, get, files = await ask(SHARED)
        assert "pnpm" not in _text(search) and get.is_error and "MEMORY.md" not in _text(files)
        search, get, files = await ask(FULL)
        assert "pnpm" in _text(search) and not get.is_error and "MEMORY.md" in _text(files)
