"""What status tells a shared caller does not depend on the private files.

A shared caller (an MCP client of a ``--shared`` server, a dashboard viewer with a shared token)
is shown the files it may read, the embedder, the share of *its* chunks embedded and the degraded
reasons in fixed words. Here the same shared daily file sits next to a MEMORY.md of 1 or 30
sections, whose chunks are embedded, waiting for a vector, or refused by the embedder with an
error that quotes their length: the shared caller's status must be the same in every case,
while the owner still sees the full figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from mcp import Client
from starlette.testclient import TestClient

from conftest import HashEmbedder, close_server, write
from mcp_memory.config import Settings, load_settings
from mcp_memory.dashboard.app import dashboard_app
from mcp_memory.dashboard.auth import Tokens
from mcp_memory.embedding.base import EmbeddingError
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server

FULL, SHARED = "owner-token-0123456789abcdef", "shared-token-0123456789abc"
PRIVATE_WORD = "Okafor"
DAILY = "memory/2026-11-01.md"

# embedded: every chunk has its vector; pending: the shared file's chunks have theirs, the private
# ones wait; nothing: no chunk has one yet; refused: the embedder refuses the private chunks.
State = Literal["embedded", "pending", "nothing", "refused"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class RefusesPrivateText(HashEmbedder):
    """An embedder whose endpoint refuses the private chunks, quoting their length in the error."""

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        refused = [text for text in texts if PRIVATE_WORD in text]
        if refused:
            raise EmbeddingError(f"input of {sum(map(len, refused))} characters is too long")
        return super().embed_documents(texts)


def _private_memory(sections: int) -> str:
    """A MEMORY.md of ``sections`` sections, each long enough to be a chunk of its own."""
    return "# Memory\n" + "".join(
        f"\n## Topic {i}\n\n" + "".join(f"- private note {i}.{j} about the {PRIVATE_WORD} matter, "
                                         + "word " * 40 + "\n" for j in range(6))
        for i in range(sections))


def _opener(sections: int, state: State) -> Callable[[Settings], Memory]:
    """A memory factory that leaves the workspace's chunks in ``state`` and embeds nothing after."""

    def open_memory(settings: Settings) -> Memory:
        root = settings.workspace
        memory = Memory(settings, embedder=RefusesPrivateText() if state == "refused" else HashEmbedder())
        write(root, DAILY, "# 2026-11-01\n\n- The team deploys on Wednesdays.\n")
        if state in ("embedded", "nothing"):
            write(root, "MEMORY.md", _private_memory(sections))
            memory.index() if state == "embedded" else memory.sync()
        else:
            memory.index()  # the shared file, embedded
            write(root, "MEMORY.md", _private_memory(sections))
            memory.sync()
            if state == "refused":
                memory.backfill()
        memory.backfill = lambda *args, **kwargs: 0  # type: ignore[method-assign]  # nothing more embedded
        return memory

    return open_memory


@contextmanager
def _service(tmp_path: Path, sections: int, state: State) -> Iterator[tuple[MemoryService, Settings]]:
    root = tmp_path / f"ws-{sections}-{state}"
    (root / "memory").mkdir(parents=True)
    settings = load_settings(root, environ={})
    service = MemoryService(settings, memory_factory=_opener(sections, state), start_delay=0, watch=False)
    try:
        yield service, settings
    finally:
        close_server(service)


async def _mcp_status(service: MemoryService, settings: Settings, shared: bool) -> dict[str, Any]:
    """The status tool's structured result and the ``memory://status`` resource, for one kind of client."""
    async with Client(create_server(settings, service, shared=shared)) as client:
        tool = await client.call_tool("memory_status", {})
        resource = await client.read_resource("memory://status")
    assert not tool.is_error
    return {"tool": tool.structured_content, "resource": json.loads(resource.contents[0].text)}


@pytest.mark.anyio
async def test_mcp_status_of_a_shared_client_does_not_move_with_the_private_file(tmp_path: Path) -> None:
    shared: dict[tuple[int, State], dict[str, Any]] = {}
    owner: dict[tuple[int, State], dict[str, Any]] = {}
    for case in [(1, "embedded"), (30, "embedded"), (1, "pending"), (30, "pending"), (1, "refused"), (30, "refused")]:
        sections, state = case
        with _service(tmp_path, sections, state) as (service, settings):
            shared[case] = await _mcp_status(service, settings, shared=True)
            owner[case] = await _mcp_status(service, settings, shared=False)

    first = shared[(1, "embedded")]
    for case, seen in shared.items():
        assert seen == first, case
    assert first["tool"] == {"files": 1, "embedder": {"provider": "test-hash", "model": "bag-of-words",
                                                      "dimensions": 64},
                             "embedded_share": 1.0, "degraded": [], "processes": []}
    assert first["resource"] == {key: value for key, value in first["tool"].items() if key != "processes"}

    # The owner sees the private chunks, how many wait for a vector, and why.
    assert owner[(30, "embedded")]["tool"]["chunks"] > owner[(1, "embedded")]["tool"]["chunks"] + 20
    assert owner[(30, "pending")]["tool"]["embedded_share"] < owner[(1, "pending")]["tool"]["embedded_share"] < 1
    assert any("chunks not embedded yet" in reason for reason in owner[(30, "pending")]["tool"]["degraded"])
    assert any("characters is too long" in reason for reason in owner[(30, "refused")]["resource"]["degraded"])
    assert owner[(1, "embedded")]["tool"]["last_sync"]


def _pages(app: Any, token: str) -> dict[str, str]:
    """The overview and status pages as the holder of ``token`` sees them (CSRF tokens left out)."""
    client = TestClient(app, base_url="http://127.0.0.1:8765")
    client.headers["Authorization"] = f"Bearer {token}"
    pages = {}
    for page in ("/", "/status"):
        response = client.get(page)
        assert response.status_code == 200, response.text
        pages[page] = re.sub(r'name="csrf" value="[^"]*"', 'name="csrf"', response.text)
    return pages


def test_dashboard_of_a_shared_viewer_does_not_move_with_the_private_file(tmp_path: Path) -> None:
    shared: dict[tuple[int, State], dict[str, str]] = {}
    owner: dict[tuple[int, State], dict[str, str]] = {}
    for case in [(1, "nothing"), (30, "nothing"), (1, "embedded"), (30, "embedded"), (30, "pending"),
                 (30, "refused")]:
        sections, state = case
        with _service(tmp_path, sections, state) as (service, _):
            app = dashboard_app(service, Tokens([FULL], [], [SHARED]))
            shared[case] = _pages(app, SHARED)
            owner[case] = _pages(app, FULL)

    # Before any vector: the shared viewer's own chunks are not embedded, and that is all it is told.
    assert shared[(1, "nothing")] == shared[(30, "nothing")]
    assert ">0%<" in shared[(1, "nothing")]["/"] and "chunks not embedded" not in shared[(1, "nothing")]["/"]
    # Its own chunks embedded: the same pages whatever MEMORY.md holds and however far its vectors are.
    for case in [(30, "embedded"), (30, "pending"), (30, "refused")]:
        assert shared[case] == shared[(1, "embedded")], case
    assert ">100%<" in shared[(1, "embedded")]["/"] and "Needs attention" not in shared[(1, "embedded")]["/"]
    for pages in shared.values():
        assert PRIVATE_WORD not in str(pages) and "too long" not in str(pages) and "last sync" not in str(pages)

    # The owner sees the private chunks counted and what waits for a vector.
    assert "31 of 31 chunks not embedded yet" in owner[(30, "nothing")]["/"]
    assert "chunks not embedded yet" in owner[(30, "pending")]["/"]
    assert owner[(30, "embedded")]["/status"] != owner[(1, "embedded")]["/status"]
    assert "characters is too long" in owner[(30, "refused")]["/status"]
    assert "last sync" in owner[(1, "embedded")]["/status"]
