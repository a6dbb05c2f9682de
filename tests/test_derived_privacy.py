"""Records derived from memory carry the privacy of their sources.

An episode that cites or quotes a private file (MEMORY.md by default) is private itself: a
shared caller never reads it, finds it, lists it or learns it exists, through any reader
(MCP tools and resources, the dashboard), whether the owner's session was recorded by the
server or by a hook, whether the private source arrived in one record or a later merge, and
when a file becomes private only after episodes cited it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from starlette.testclient import TestClient

from conftest import close_server, indexed_memory, make_server, write
from mcp_memory.config import Settings
from mcp_memory.dashboard.app import dashboard_app
from mcp_memory.dashboard.auth import Tokens
from mcp_memory.experience.episodes import Episode, EpisodeError, MemoryRef
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server

DECISION = "The household moves its savings to the Zellwood credit union in March."
HEALTH = "The user's knee surgery is booked at the Fernhill clinic."
PUBLIC = "The team deploys the billing service on Wednesdays."
SHARED_TOKEN, FULL_TOKEN = "shared-token-0123456789abc", "full-token-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def seeded(workspace: Path) -> Path:
    write(workspace, "MEMORY.md", "# Memory\n\n- [preference] The user likes short answers.\n")
    write(workspace, "memory/2026-11-20.md", f"# 2026-11-20\n\n- {PUBLIC}\n")
    write(workspace, "memory/health/knee.md", f"# Knee\n\n- {HEALTH}\n")
    return workspace


def _episodes(workspace: Path) -> dict[str, str]:
    folder = workspace / "memory" / "episodes"
    return {p.relative_to(workspace).as_posix(): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.md"))}


def _dumped(result: Any) -> str:
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


async def _everything_a_shared_caller_reads(settings: Settings, paths: list[str]) -> str:
    """What a shared MCP caller gets from every reader that could show an episode."""
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    server = create_server(settings, service, shared=True)
    out: list[str] = []
    try:
        async with Client(server) as client:
            out.append(_dumped(await client.call_tool("memory_episodes", {})))
            out.append(_dumped(await client.call_tool("memory_episodes", {"query": "savings credit union"})))
            for query in ("savings credit union Zellwood", "knee surgery clinic", "episode decisions memory_store"):
                out.append(_dumped(await client.call_tool("memory_search", {"query": query, "max_results": 20})))
                out.append(_dumped(await client.call_tool("memory_recall", {"prompt": query})))
            for path in paths:
                got = await client.call_tool("memory_get", {"path": path})
                assert got.is_error and "is not a memory file shared with this client" in _dumped(got), got
            out.append(json.dumps([r.model_dump(mode="json") for r in (await client.list_resources()).resources]))
            out.append(_dumped(await client.call_tool("memory_status", {})))
    finally:
        close_server(service)
    return "\n".join(out)


def _dashboard_pages(settings: Settings, paths: list[str]) -> str:
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    app = dashboard_app(service, Tokens([FULL_TOKEN], [], [SHARED_TOKEN]))
    try:
        client = TestClient(app, base_url="http://127.0.0.1:8765")  # type: ignore[arg-type]
        client.headers["Authorization"] = f"Bearer {SHARED_TOKEN}"
        for path in paths:
            refused = client.get(f"/files/{path}")
            assert refused.status_code == 404 and "Zellwood" not in refused.text, refused.text
        pages = ["/", "/files", "/experience", "/timeline", "/recalls", "/search?q=household+savings+credit+union",
                 "/search?q=episode+memory_store+decisions"]
        return "\n".join(client.get(page).text for page in pages)
    finally:
        close_server(service)


@pytest.mark.anyio
async def test_an_owner_session_storing_a_private_decision_writes_a_private_episode(seeded: Path,
                                                                                    settings: Settings) -> None:
    server, service = make_server(settings)
    try:
        async with Client(server) as client:
            stored = await client.call_tool("memory_store", {"text": DECISION, "category": "decision",
                                                             "evergreen": True})
            assert stored.structured_content["path"] == "MEMORY.md", stored
            assert not (await client.call_tool("memory_search", {"query": "billing service"})).is_error
    finally:
        close_server(service)  # the server's record of the session is written as it stops
    episodes = _episodes(seeded)
    assert len(episodes) == 1, episodes
    (path, text), = episodes.items()
    assert path.startswith("memory/episodes/private/"), path
    assert "Zellwood" in text  # the owner keeps the whole record
    shared = await _everything_a_shared_caller_reads(settings, [path])
    assert not any(word in shared for word in ("Zellwood", "MEMORY.md#", "memory/episodes/private")), shared
    pages = _dashboard_pages(settings, [path])
    assert not any(word in pages for word in ("Zellwood", "MEMORY.md#", "episodes/private")), pages


@pytest.mark.anyio
async def test_an_owner_session_touching_only_shared_memory_stays_shared(seeded: Path, settings: Settings) -> None:
    server, service = make_server(settings)
    try:
        async with Client(server) as client:
            assert not (await client.call_tool("memory_store", {"text": "Releases are tagged from main",
                                                                "category": "decision"})).is_error
    finally:
        close_server(service)
    (path, _), = _episodes(seeded).items()
    assert not path.startswith("memory/episodes/private/"), path
    async with Client(create_server(settings, MemoryService(settings, memory_factory=indexed_memory, start_delay=0,
                                                            watch=False), shared=True)) as client:
        listed = (await client.call_tool("memory_episodes", {})).structured_content["episodes"]
        assert [e["path"] for e in listed] == [path]


def _record(start: dt.datetime, key: str, refs: list[str], decisions: list[str] = ()) -> Episode:
    episode = Episode.observed("server", "claude-code", start, session_key=key)
    episode.count_tool("server", "memory_search")
    for citation in refs:
        episode.add_recalled(MemoryRef(citation))
    for decision in decisions:
        episode.add_decision(decision)
    return episode


def test_a_merge_that_brings_a_private_source_moves_the_episode(seeded: Path, settings: Settings) -> None:
    memory = indexed_memory(settings)
    start = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
    first = memory.episodes.record(_record(start, "s1", ["memory/2026-11-20.md#L3-L3"]))
    assert first.path.startswith("memory/episodes/2026-11-20-")
    second = memory.episodes.record(_record(start + dt.timedelta(minutes=5), "s1", ["memory/health/knee.md#L3-L3"]))
    settings.privacy.private_paths = ["MEMORY.md", "memory/health/*"]
    # Judged by the settings of the process that writes: this one has memory/health/ shared still.
    assert second.path == first.path
    memory.close()

    owner = indexed_memory(settings)  # a process whose settings make memory/health/ private
    third = owner.episodes.record(_record(start + dt.timedelta(minutes=6), "s1", ["memory/2026-11-20.md#L3-L3"]))
    episodes = _episodes(seeded)
    assert list(episodes) == [third.path] and third.path.startswith("memory/episodes/private/"), episodes
    text = episodes[third.path]
    assert "memory/health/knee.md#L3-L3" in text and "memory/2026-11-20.md#L3-L3" in text
    assert "- memory_search: 3 (server 3)" in text  # nothing lost in the move
    hits = owner.search("episode memory_search claude-code", include_private=False, max_results=20)
    assert not any(h.path.startswith("memory/episodes/") for h in hits)
    owner.close()


@pytest.mark.anyio
async def test_making_a_file_private_later_hides_the_episodes_that_cited_it(seeded: Path, settings: Settings) -> None:
    memory = indexed_memory(settings)
    start = dt.datetime(2026, 11, 21, 9, 0, tzinfo=dt.UTC)
    cited = memory.episodes.record(_record(start, "s2", ["memory/health/knee.md#L3-L3"]))
    plain = memory.episodes.record(_record(start + dt.timedelta(hours=3), "s3", ["memory/2026-11-20.md#L3-L3"]))
    memory.close()
    assert not cited.path.startswith("memory/episodes/private/")

    settings.privacy.private_paths = ["MEMORY.md", "memory/health/"]
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    service.memory().sync()  # what a server does when it starts
    close_server(service)
    episodes = _episodes(seeded)
    assert plain.path in episodes and cited.path not in episodes
    moved = [p for p in episodes if p.startswith("memory/episodes/private/")]
    assert len(moved) == 1 and "memory/health/knee.md#L3-L3" in episodes[moved[0]]
    shared = await _everything_a_shared_caller_reads(settings, [cited.path, *moved])
    assert "memory/health" not in shared and "s2" not in shared.replace("s2026", "")


def test_a_decision_or_error_quoting_a_private_file_makes_the_episode_private(seeded: Path,
                                                                              settings: Settings) -> None:
    """No citation says where the text came from (a transcript's store call without a JSON result)."""
    write(seeded, "MEMORY.md", f"# Memory\n\n- [decision] {DECISION}\n- [preference] The user likes short answers.\n")
    memory = indexed_memory(settings)
    start = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
    quoted = memory.episodes.record(_record(start, "s4", [], decisions=[DECISION]))
    assert quoted.path.startswith("memory/episodes/private/"), quoted.path
    erred = _record(start + dt.timedelta(hours=2), "s5", [])
    erred.errors.append(EpisodeError("memory_forget", "no line reads: The user likes short answers."))
    assert memory.episodes.record(erred).path.startswith("memory/episodes/private/")
    unrelated = memory.episodes.record(_record(start + dt.timedelta(hours=4), "s6", [],
                                               decisions=["Invoices are sent by Stripe from now on"]))
    assert not unrelated.path.startswith("memory/episodes/private/")
    memory.close()


def test_private_record_folder_is_private_whatever_the_settings_say(settings: Settings) -> None:
    settings.privacy.private_paths = []
    memory = Memory(settings, embedder=None)
    assert memory.privacy.is_private("memory/episodes/private/2026-11-20-abc.md")
    assert memory.privacy.is_private("memory/Episodes/Private/x.md")
    assert not memory.privacy.is_private("memory/episodes/2026-11-20-abc.md")
    assert not memory.privacy.is_private("MEMORY.md")


OLD_DAY, NEW_DAY = "memory/2026-01-05.md", "memory/2026-03-01.md"


def test_a_shared_memory_is_never_marked_in_favour_of_a_private_one(settings: Settings) -> None:
    """A mark names its keeper in the marked file: a shared file never cites a private one."""
    write(settings.workspace, OLD_DAY, "# 2026-01-05\n\n- [preference] The user prefers npm for Node.js projects.\n"
                                       "- Deploys go through GitHub Actions to Fly.io.\n")
    write(settings.workspace, NEW_DAY, "# 2026-03-01\n\n- [preference] The user now prefers pnpm for Node.js projects."
                                       "\n- Deploys go through GitHub Actions to Fly.io.\n")
    settings.privacy.private_paths = ["MEMORY.md", NEW_DAY]
    with Memory(settings) as memory:
        report = memory.sleep.run()
    found = {(r.kind, r.item.citation, r.by.citation) for r in report.retired}
    # The private copy of a shared statement may go (its mark cites a shared file); nothing else.
    assert found == {("duplicate", f"{NEW_DAY}#L4", f"{OLD_DAY}#L4")}, found
    assert NEW_DAY not in (settings.workspace / OLD_DAY).read_text(encoding="utf-8")


@pytest.mark.anyio
async def test_an_owner_error_that_names_a_private_file_makes_the_episode_private(seeded: Path,
                                                                                 settings: Settings) -> None:
    # "from_line 99 is past the end of MEMORY.md (4 lines)": the error quotes no line, but it says
    # the file exists and how long it is; a record that names a private file carries its privacy.
    server, service = make_server(settings)
    try:
        async with Client(server) as client:
            assert (await client.call_tool("memory_get", {"path": "MEMORY.md", "from_line": 99})).is_error
            assert not (await client.call_tool("memory_search", {"query": "billing service",
                                                                 "path_prefix": "memory/2026-11-20"})).is_error
    finally:
        close_server(service)
    (path, text), = _episodes(seeded).items()
    assert path.startswith("memory/episodes/private/"), path
    assert "MEMORY.md" in text  # the owner keeps the whole record
    shared = await _everything_a_shared_caller_reads(settings, [path])
    assert not any(word in shared for word in ("past the end", "MEMORY.md (", "from_line 99")), shared


def test_an_episode_quoting_a_transcripts_error_or_fix_is_private(seeded: Path, settings: Settings) -> None:
    # Transcripts are their owner's alone: a tool's output or the assistant's explanation quoted from
    # one makes the episode private; tool counts and shared citations alone do not.
    from mcp_memory.experience.episodes import episode_from_records

    def records(session: str, error: bool) -> list[dict[str, Any]]:
        t = [dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC) + dt.timedelta(seconds=10 * i) for i in range(4)]
        stamp = [x.isoformat().replace("+00:00", "Z") for x in t]
        out: list[dict[str, Any]] = [
            {"type": "assistant", "sessionId": session, "timestamp": stamp[0],
             "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Bash",
                                                           "input": {"command": "cat report.txt"}}]}},
            {"type": "user", "sessionId": session, "timestamp": stamp[1],
             "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": error,
                                                      "content": "cat: /home/ana/health/fernhill-biopsy.txt: "
                                                                 "No such file or directory"}]}}]
        if error:
            out.append({"type": "assistant", "sessionId": session, "timestamp": stamp[2],
                        "message": {"role": "assistant", "content": [
                            {"type": "text", "text": "The problem was that the Fernhill biopsy file moved."}]}})
        return out

    memory = indexed_memory(settings)
    quoting = memory.episodes.record(episode_from_records(records("t1", True), "t1", "claude-code"))
    assert quoting.path.startswith("memory/episodes/private/"), quoting.path
    plain = memory.episodes.record(episode_from_records(records("t2", False), "t2", "claude-code"))
    assert not plain.path.startswith("memory/episodes/private/"), plain.path
    memory.close()
    for path, text in _episodes(seeded).items():
        if "fernhill" in text.lower():
            assert path.startswith("memory/episodes/private/"), (path, text)


@pytest.mark.anyio
async def test_chains_archived_from_a_private_experience_file_stay_private(workspace: Path) -> None:
    from mcp_memory.config import load_settings

    write(workspace, "memory/2026-11-01.md", f"# 2026-11-01\n\n- {PUBLIC}\n")
    (workspace / "mcp-memory.toml").write_text(
        '[privacy]\nprivate_paths = ["MEMORY.md", "memory/experience.md"]\n', encoding="utf-8")
    settings = load_settings(workspace, environ={})
    memory = indexed_memory(settings)
    memory.experience.add("The Fernhill clinic sent the biopsy result", "booked a follow-up with Dr. Okafor",
                          "appointment confirmed", "success", ["health"], include_private=True,
                          today=dt.date(2025, 1, 2))
    report = memory.sleep.run()
    assert report.chains_moved, "the stale chain was not archived"
    memory.close()
    archived = [p for p in workspace.rglob("*archive*.md") if "Fernhill" in p.read_text(encoding="utf-8")]
    assert [p.relative_to(workspace).as_posix() for p in archived] == ["memory/episodes/private/experience-archive.md"]
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    server = create_server(settings, service, shared=True)
    try:
        async with Client(server) as client:
            found = await client.call_tool("memory_search", {"query": "Fernhill clinic biopsy follow-up Okafor"})
            got = await client.call_tool("memory_get", {"path": "memory/episodes/private/experience-archive.md"})
            seen = _dumped(found) + _dumped(got)
    finally:
        close_server(service)
    assert "Fernhill" not in seen and "Okafor" not in seen, seen
