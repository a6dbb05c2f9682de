"""A workspace folder removed while a server has it open stays removed.

The owner deleted it on purpose: the file watcher, the background embedding and any later write
must not make it again (``.mcp-memory/`` with its tables and locks); a write is refused with a
clear error, and the server keeps answering.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from mcp import Client

from conftest import close_server, indexed_memory, write
from mcp_memory.config import Settings
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.anyio
async def test_a_removed_workspace_is_not_made_again(workspace: Path, settings: Settings) -> None:
    write(workspace, "memory/2026-11-20.md", "# 2026-11-20\n\n- The team deploys on Wednesdays.\n")
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=True)
    server = create_server(settings, service)
    try:
        service.memory()
        time.sleep(1.5)  # the watcher is running
        shutil.rmtree(workspace)
        assert _wait_for(service.workspace_gone.is_set, 10), "the watcher did not notice"
        time.sleep(2.0)  # what a watcher or a background job would do next
        assert not workspace.exists()
        async with Client(server) as client:
            stored = await client.call_tool("memory_store", {"text": "The office moved to Porto."})
            assert stored.is_error and "removed" in stored.content[0].text, stored
            assert (await client.list_tools()).tools  # still serving
            again = await client.call_tool("memory_store", {"text": "The office moved to Lisbon."})
            assert again.is_error and "removed" in again.content[0].text, again
        assert not workspace.exists()
    finally:
        close_server(service)
    assert not workspace.exists()
