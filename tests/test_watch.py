"""While serving, hand edits reach the index, and listening clients hear about changes."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from conftest import HashEmbedder, write
from mcp_memory.config import Settings
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _serve(settings: Settings, watch: bool):
    def factory(s: Settings) -> Memory:
        memory = Memory(s, embedder=HashEmbedder())
        memory.index()
        return memory

    service = MemoryService(settings, memory_factory=factory, start_delay=0, watch=watch)
    return create_server(settings, service=service), service


def _stop(service: MemoryService) -> None:
    service.stop()
    thread = getattr(service, "_thread", None)
    if thread is not None:
        thread.join(timeout=30)


async def _search_paths(client: Client, query: str) -> list[str]:
    result = await client.call_tool("memory_search", {"query": query})
    assert not result.is_error
    return [hit["path"] for hit in result.structured_content["results"]]


@pytest.mark.anyio
async def test_hand_edits_while_serving_reach_search(workspace: Path, settings: Settings):
    write(workspace, "MEMORY.md", "# Memory\n\n- The user prefers tea.\n")
    server, service = _serve(settings, watch=True)
    try:
        async with Client(server) as client:
            assert await _search_paths(client, "tea") == ["MEMORY.md"]
            # A file created by an editor, then one rewritten, then one deleted.
            write(workspace, "memory/projects/zephyr.md", "# Zephyr\n\n- Zephyr ships on Thursdays.\n")
            deadline = time.monotonic() + 15
            while "memory/projects/zephyr.md" not in await _search_paths(client, "zephyr thursdays"):
                assert time.monotonic() < deadline, "a new file was not indexed while serving"
                await anyio.sleep(0.2)
            write(workspace, "memory/projects/zephyr.md", "# Zephyr\n\n- Zephyr ships on Mondays now.\n")
            deadline = time.monotonic() + 15
            while True:
                result = await client.call_tool("memory_search", {"query": "zephyr"})
                snippets = [h["snippet"] for h in result.structured_content["results"]]
                if any("Mondays" in s for s in snippets) and not any("Thursdays" in s for s in snippets):
                    break
                assert time.monotonic() < deadline, "a rewritten file still shows its old text"
                await anyio.sleep(0.2)
            (workspace / "memory/projects/zephyr.md").unlink()
            deadline = time.monotonic() + 15
            while "memory/projects/zephyr.md" in await _search_paths(client, "zephyr"):
                assert time.monotonic() < deadline, "a deleted file is still found"
                await anyio.sleep(0.2)
    finally:
        _stop(service)


@pytest.mark.anyio
async def test_listening_client_hears_of_stored_memories(workspace: Path, settings: Settings):
    write(workspace, "MEMORY.md", "# Memory\n\n- The user prefers tea.\n")
    server, service = _serve(settings, watch=False)
    events: list[object] = []
    try:
        async with Client(server) as client:
            await client.call_tool("memory_status", {})
            async with client.listen(resources_list_changed=True) as stream:

                async def collect() -> None:
                    async for event in stream:
                        events.append(event)

                async with anyio.create_task_group() as group:
                    group.start_soon(collect)
                    await anyio.sleep(0.1)
                    stored = await client.call_tool("memory_store", {"text": "The user's dog is called Pixel"})
                    assert stored.structured_content["stored"] is True
                    with anyio.move_on_after(5):
                        while not events:
                            await anyio.sleep(0.05)
                    group.cancel_scope.cancel()
    finally:
        _stop(service)
    assert any(type(e).__name__ == "ResourcesListChanged" for e in events)
