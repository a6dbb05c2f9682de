"""Conversation transcripts as a source of their own (``[sessions] paths``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import HashEmbedder, close_server, write
from mcp_memory.config import Settings
from mcp_memory.core.session_source import render_transcript
from mcp_memory.memory import Memory, MemoryInputError
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server

SECRET = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ"


def _records() -> list[dict[str, Any]]:
    return [
        {"type": "user", "message": {"role": "user", "content": "Deploy the billing service to the box kestrel-7."}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": "ssh kestrel-7"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "content": "zanzibar tool output nobody should index", "is_error": False}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": f"Deployed to kestrel-7. Your key {SECRET} works."}]}},
    ]


def _write_transcript(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def with_sessions(settings: Settings, tmp_path: Path) -> tuple[Settings, Path]:
    transcript = tmp_path / "claude" / "projects" / "demo" / "session-1.jsonl"
    _write_transcript(transcript, _records())
    settings.sessions.paths = [str(tmp_path / "claude")]
    write(settings.workspace, "memory/notes.md", "# Notes\n\n- The user drinks oolong tea.\n")
    return settings, transcript


def test_rendering_keeps_line_numbers_drops_tool_output_and_redacts_secrets() -> None:
    data = "\n".join(json.dumps(r) for r in _records()).encode() + b"\nnot json\n"
    lines = render_transcript(data).split("\n")
    assert lines[0] == "- **user:** Deploy the billing service to the box kestrel-7."
    assert lines[1] == lines[2] == lines[4] == ""
    assert lines[3].startswith("- **assistant:** Deployed to kestrel-7.") and SECRET not in lines[3]
    assert "[redacted" in lines[3]


def test_hits_cite_the_transcript_lines_and_the_source_filters(with_sessions: tuple[Settings, Path]) -> None:
    settings, transcript = with_sessions
    with Memory(settings, embedder=HashEmbedder()) as memory:
        memory.index()
        hits = memory.search("billing service kestrel-7 box")
        top = hits[0]
        assert top.source == "sessions" and top.path == transcript.as_posix() and top.start_line == 1
        assert all("zanzibar" not in h.snippet for h in memory.search("zanzibar tool output"))
        assert all(h.source == "memory" for h in memory.search("billing kestrel", source="memory"))
        assert all(h.source == "sessions" for h in memory.search("tea", source="sessions"))
        assert SECRET not in memory.get(top.path).text
        with pytest.raises(MemoryInputError, match="can be written"):
            memory.editor.forget(path=top.path, line=1, confirm=True)
    assert json.loads(transcript.read_text().split("\n")[0])["message"]["content"].startswith("Deploy")


def test_a_live_transcript_is_indexed_again_only_once_it_grew_enough(with_sessions: tuple[Settings, Path]) -> None:
    settings, transcript = with_sessions
    settings.sessions.delta_messages, settings.sessions.delta_bytes = 5, 1_000_000
    note = {"type": "user", "message": {"role": "user", "content": "Remember the quokka named Pemberton."}}
    with Memory(settings, embedder=HashEmbedder()) as memory:
        memory.index()
        _write_transcript(transcript, [note])
        memory.sync()
        assert all("Pemberton" not in h.snippet for h in memory.search("quokka Pemberton", source="sessions"))
        _write_transcript(transcript, [{**note, "message": {"role": "user", "content": f"Message {i}."}}
                                       for i in range(5)])
        memory.sync()
        assert any("Pemberton" in h.snippet for h in memory.search("quokka Pemberton", source="sessions"))


@pytest.mark.anyio
async def test_shared_callers_never_see_transcripts(with_sessions: tuple[Settings, Path]) -> None:
    settings, transcript = with_sessions

    def factory(s: Settings) -> Memory:
        memory = Memory(s, embedder=HashEmbedder())
        memory.index()
        return memory

    service = MemoryService(settings, memory_factory=factory, start_delay=0, watch=False)
    try:
        async with Client(create_server(settings, service, shared=True)) as client:
            result = await client.call_tool("memory_search", {"query": "billing service kestrel-7"})
            assert all(h["source"] != "sessions" for h in result.structured_content["results"])
            got = await client.call_tool("memory_get", {"path": transcript.as_posix()})
            assert got.is_error and "kestrel" not in got.content[0].text
            sessions_only = await client.call_tool("memory_search", {"query": "kestrel", "source": "sessions"})
            assert sessions_only.structured_content["results"] == []
        async with Client(create_server(settings, service)) as owner:
            mine = await owner.call_tool("memory_search", {"query": "billing service kestrel-7", "source": "sessions"})
            assert mine.structured_content["results"][0]["source"] == "sessions"
            bad = await owner.call_tool("memory_search", {"query": "x", "source": "everything"})
            assert bad.is_error
    finally:
        close_server(service)
