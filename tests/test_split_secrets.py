"""A secret stored in pieces: each piece passes alone, the one that completes it is refused.

Through the MCP client (``memory_store``) and the capture path: the first piece is written (it is
no secret), the piece that completes a credential with the memories just before it in the same
file is refused with a clear error, and the file never holds the whole. Ordinary notes with ids,
dates, versions and hashes, stored one after the other, are all written.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from mcp.client import Client

from conftest import HashEmbedder, close_server, make_server
from mcp_memory.config import Settings
from mcp_memory.core.transcripts import Message
from mcp_memory.memory import Memory

SPLITS = [
    ("AWS key, part 1: AKIAIOSF", "part 2: ODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("The OpenAI key begins sk-proj-4f9Qx7", "then LmN2pR8sT1vW3yZ5aB6cD9eF0gH2 to finish it",
     "sk-proj-4f9Qx7LmN2pR8sT1vW3yZ5aB6cD9eF0gH2"),
    ("stripe: sk_live_4eC3", "9HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("-----BEGIN OPENSSH PRIVATE", "KEY----- b3BlbnNzaC1rZXktdjEAAAAA", "b3BlbnNzaC1rZXktdjEAAAAA"),
    ("the staging db password is", "Tr0ub4dor&3xK9!mQ", "Tr0ub4dor&3xK9!mQ"),
]
ORDINARY = [
    "Release v2.3.1 shipped on 2026-03-04 at 14:30",
    "Build 4411 passed after the flaky test was fixed",
    "Ticket ABC-1234 was closed by Priya",
    "Commit 3f9a2b1 fixed the cache key",
    "The staging host is db-2.internal on port 5432",
    "Order 88af31d2 was refunded in March",
    "The AWS region for staging is eu-west-1",
    "GitHub Actions runs the nightly build at 02:00 UTC",
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _daily(workspace: Path) -> str:
    return "".join(path.read_text(encoding="utf-8") for path in (workspace / "memory").glob("*.md"))


@pytest.mark.anyio
@pytest.mark.parametrize(("first", "second", "whole"), SPLITS)
async def test_the_store_that_completes_a_secret_is_refused(settings: Settings, workspace: Path,
                                                            first: str, second: str, whole: str) -> None:
    server, service = make_server(settings)
    try:
        async with Client(server) as client:
            assert not (await client.call_tool("memory_store", {"text": first})).is_error
            refused = await client.call_tool("memory_store", {"text": second})
            assert refused.is_error
            assert "completes a secret" in refused.content[0].text  # type: ignore[union-attr]
            assert whole not in refused.content[0].text  # type: ignore[union-attr]
            # The server goes on serving, and an unrelated store right after is written.
            assert not (await client.call_tool("memory_store", {"text": "Lunch is at noon on Fridays"})).is_error
    finally:
        close_server(service)
    written = _daily(workspace)
    assert first in written and "Lunch is at noon" in written
    assert second not in written


@pytest.mark.anyio
async def test_ordinary_notes_stored_one_after_another_are_all_written(settings: Settings, workspace: Path) -> None:
    server, service = make_server(settings)
    try:
        async with Client(server) as client:
            for text in ORDINARY:
                result = await client.call_tool("memory_store", {"text": text})
                assert not result.is_error, (text, result.content)
    finally:
        close_server(service)
    written = _daily(workspace)
    assert all(text in written for text in ORDINARY)


def test_a_capture_skips_the_fact_that_completes_a_secret(settings: Settings, workspace: Path) -> None:
    now = dt.datetime(2026, 3, 14, 10, 0)
    with Memory(settings, embedder=HashEmbedder()) as memory:
        memory.store("AWS key, part 1: AKIAIOSF", today=now.date())
        result = memory.capture([Message("user", "Remember that part 2 of the key is ODNN7EXAMPLE."),
                                 Message("user", "We decided to use Go for the backend.")], now=now)
    assert any("completes a secret" in skipped.reason for skipped in result.skipped), result.skipped
    written = _daily(workspace)
    assert "ODNN7EXAMPLE" not in written
    assert "Go for the backend" in written
