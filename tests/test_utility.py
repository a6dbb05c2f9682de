"""Memory ids and learned utility, as a client sees them.

Ids: what a memory is, that its id survives re-indexing, a deleted index folder, another
chunking and a move, and changes with its words. Utility: the reward and penalize tools through
the real MCP client, what they do to every search mode and to recall, refusals, many processes
rewarding one memory at once, the file surviving ``rm -rf .mcp-memory``, and decay.
"""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import HashEmbedder, close_server, indexed_memory, make_server, write
from mcp_memory.config import Settings
from mcp_memory.core.memory_ids import memory_id, split_memories
from mcp_memory.core.utility import UTILITY_FILE
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server

DAY = "memory/2026-03-02.md"
NOTES = [
    "- The staging deploy uses the blue cluster in Frankfurt for the billing service.",
    "- The staging deploy uses the green cluster in Dublin for the billing service.",
    "- The staging deploy uses the red cluster in Madrid for the billing service.",
]
QUERY = "staging deploy cluster billing service"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


FILLER = ["The billing service sends invoices on the first of each month.", "Staging was rebuilt after the outage.",
          "The deploy checklist lives in the wiki.", "A cluster of bugs was fixed in the billing UI.",
          "The service mesh was upgraded in staging.", "Frankfurt is the main region for customer data.",
          "Dublin hosts the support team.", "Madrid hosts the data science team."]


def _notes(workspace: Path) -> None:
    # One file per note: each is its own chunk, so ranking is about whole memories. The three
    # deploy notes are comparable matches; the fillers are weaker ones, as in any real memory.
    for i, note in enumerate(NOTES):
        write(workspace, f"memory/topics/deploy-{i}.md", f"# Deploy {i}\n\n{note}\n")
    for i, note in enumerate(FILLER):
        write(workspace, f"memory/topics/other-{i}.md", f"# Other {i}\n\n- {note}\n")


def _order(hits: list[Any]) -> list[str]:
    return [h["path"] if isinstance(h, dict) else h.path for h in hits]


# ----- ids -----------------------------------------------------------------------------------
def test_a_memory_is_a_bullet_with_its_continuation_a_paragraph_a_row_or_a_fence() -> None:
    lines = ["# Title", "", "- first bullet", "  continues here", "- second", "", "A paragraph", "on two lines.",
             "", "| a | b |", "| --- | --- |", "| 1 | 2 |", "", "```", "code", "```", "## Sub"]
    spans = [(u.start, u.end) for u in split_memories(lines)]
    assert spans == [(2, 3), (4, 4), (6, 7), (9, 9), (11, 11), (13, 15)]


def test_an_id_ignores_markers_case_spacing_punctuation_and_tags_but_not_words() -> None:
    base = memory_id("- The user prefers pnpm over npm.")
    assert base is not None and base.startswith("m-")
    for same in ["* the user  prefers PNPM over npm", "1. The user prefers pnpm over npm!",
                 "- [preference] The user prefers pnpm over npm. (2026-01-02)", "The user prefers pnpm, over npm"]:
        assert memory_id(same) == base, same
    assert memory_id("- The user prefers yarn over npm.") != base
    assert memory_id("- ---") is None


def test_an_id_survives_reindexing_a_deleted_index_another_chunking_and_a_move(settings: Settings) -> None:
    workspace = settings.workspace
    filler = "\n".join(f"- Unrelated note number {i} about gardening and tomatoes." for i in range(60))
    write(workspace, DAY, f"# 2026-03-02\n\n{filler}\n- The invoice service runs on Postgres 16.\n{filler}\n")
    query = "invoice service Postgres"

    def hit_id(s: Settings) -> str:
        with Memory(s, embedder=HashEmbedder()) as memory:
            memory.index()
            hit = memory.search(query)[0]
            assert "invoice service" in memory.get(hit.id).text
            return hit.id

    first = hit_id(settings)
    assert first == hit_id(settings)  # re-indexed
    shutil.rmtree(settings.index_dir)
    assert first == hit_id(settings)  # index folder deleted
    settings.chunking.tokens, settings.chunking.overlap = 120, 20
    assert first == hit_id(settings)  # another chunking
    (workspace / DAY).unlink()
    write(workspace, "memory/projects/billing.md", "# Billing\n\nSome intro.\n\n- The invoice service runs on "
                                                   "postgres 16\n")
    assert first == hit_id(settings)  # moved to another file, case and punctuation changed
    write(workspace, "memory/projects/billing.md", "# Billing\n\n- The invoice service runs on Postgres 17.\n")
    assert first != hit_id(settings)  # the words changed


# ----- through the MCP client -----------------------------------------------------------------
@pytest.fixture
def server(settings: Settings):
    _notes(settings.workspace)
    srv, service = make_server(settings)
    yield srv
    close_server(service)


async def _search(client: Client, tool: str = "memory_search", **args: Any) -> list[dict[str, Any]]:
    result = await client.call_tool(tool, {"query": QUERY, **args})
    assert not result.is_error, result.content
    return result.structured_content["results"]


@pytest.mark.anyio
async def test_reward_lifts_a_memory_in_every_mode_and_penalize_sinks_it(server, settings: Settings) -> None:
    async with Client(server) as client:
        before = await _search(client)
        assert all(h["id"].startswith("m-") for h in before)
        assert {h["path"] for h in before[:3]} == {f"memory/topics/deploy-{i}.md" for i in range(3)}
        last = before[2]
        got = await client.call_tool("memory_get", {"path": last["id"]})
        assert not got.is_error and got.structured_content["text"] in NOTES

        result = await client.call_tool("reward_memory_utility", {"memory_id": last["id"], "reward": 1.0})
        assert not result.is_error, result.content
        assert result.structured_content["utility"] == 1.0 and result.structured_content["citation"].startswith(
            last["path"])
        for tool in ("memory_search", "precision_memory_search", "deep_memory_search"):
            assert (await _search(client, tool))[0]["id"] == last["id"], tool

        top = before[0]
        await client.call_tool("reward_memory_utility", {"memory_id": last["id"], "reward": 0.01})
        penalized = await client.call_tool("penalize_memory_utility", {"memory_id": top["id"], "penalty": 1.0})
        assert penalized.structured_content["utility"] == -1.0
        for tool in ("memory_search", "precision_memory_search"):
            ids = [h["id"] for h in await _search(client, tool)]
            assert top["id"] not in ids[:2], tool  # it sank below the other deploy notes, or out of the list

        recall = await client.call_tool("memory_recall", {"prompt": "Which cluster does the staging deploy of the "
                                                                    "billing service use?"})
        assert f'id="{last["id"]}"' in recall.structured_content["context"]
    lines = (settings.workspace / UTILITY_FILE).read_text().splitlines()
    assert [json.loads(line)["op"] for line in lines] == ["reward", "reward", "penalize"]


@pytest.mark.anyio
async def test_a_rewarded_memory_never_buries_a_clearly_better_match(settings: Settings) -> None:
    write(settings.workspace, "memory/a.md", "# A\n\n- Kestrel is the codename of the payments rewrite in Rust.\n")
    write(settings.workspace, "memory/b.md", "# B\n\n- Payments were discussed at length last week.\n")
    srv, service = make_server(settings)
    try:
        async with Client(srv) as client:
            query = {"query": "Kestrel codename payments rewrite Rust"}
            hits = (await client.call_tool("memory_search", query)).structured_content["results"]
            assert hits[0]["path"] == "memory/a.md" and hits[1]["path"] == "memory/b.md"
            await client.call_tool("reward_memory_utility", {"memory_id": hits[1]["id"], "reward": 1.0})
            again = (await client.call_tool("memory_search", query)).structured_content["results"]
            assert _order(again)[:2] == ["memory/a.md", "memory/b.md"]
            assert again[0]["score"] <= 1.0
    finally:
        close_server(service)


@pytest.mark.anyio
@pytest.mark.parametrize(("args", "message"), [
    ({"memory_id": "m-000000000000"}, "no memory has the id"),
    ({"memory_id": "hello"}, "is not a memory id"),
    ({"memory_id": "memory/2026-03-02.md#L3"}, "is not a memory id"),
])
async def test_bad_ids_get_clear_errors_and_nothing_is_written(server, settings: Settings, args: dict[str, Any],
                                                               message: str) -> None:
    async with Client(server) as client:
        for tool in ("reward_memory_utility", "penalize_memory_utility", "memory_get"):
            call = {"path": args["memory_id"]} if tool == "memory_get" else args
            result = await client.call_tool(tool, call)
            if tool == "memory_get" and message == "is not a memory id":
                continue  # not an id: read as a path, which fails for its own reason
            assert result.is_error and message in result.content[0].text, (tool, result.content)
        for amount in (0, 1.5, -0.2):
            result = await client.call_tool("reward_memory_utility", {"memory_id": "m-000000000000",
                                                                      "reward": amount})
            assert result.is_error
        assert (await _search(client))  # still serving
    assert not (settings.workspace / UTILITY_FILE).exists()


@pytest.mark.anyio
async def test_a_shared_caller_cannot_change_utility_or_read_a_private_memory_by_id(settings: Settings) -> None:
    _notes(settings.workspace)
    write(settings.workspace, "MEMORY.md", "# Memory\n\n- The staging deploy password hint is the Zorblax cat.\n")
    with Memory(settings, embedder=HashEmbedder()) as memory:
        memory.index()
        private_id = memory.search("Zorblax password hint")[0].id
    service = MemoryService(settings, memory_factory=indexed_memory, start_delay=0, watch=False)
    try:
        async with Client(create_server(settings, service, shared=True)) as client:
            hit = (await _search(client))[0]
            for tool, args in [("reward_memory_utility", {"memory_id": hit["id"]}),
                               ("penalize_memory_utility", {"memory_id": hit["id"]})]:
                result = await client.call_tool(tool, args)
                assert result.is_error and "shared" in result.content[0].text
            got = await client.call_tool("memory_get", {"path": private_id})
            assert got.is_error and "Zorblax" not in got.content[0].text
    finally:
        close_server(service)
    assert not (settings.workspace / UTILITY_FILE).exists()


# ----- the utility file ------------------------------------------------------------------------
def _reward_many(workspace: str, memory_id: str, times: int) -> None:
    from mcp_memory.config import load_settings

    settings = load_settings(Path(workspace), environ={})
    memory = Memory(settings, embedder=None)
    for _ in range(times):
        memory.feedback.reward(memory_id, 0.05)


def test_many_processes_rewarding_one_memory_all_land(settings: Settings) -> None:
    _notes(settings.workspace)
    target = memory_id(NOTES[0])
    assert target is not None
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_reward_many, args=(str(settings.workspace), target, 10)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    memory = Memory(settings, embedder=None)
    assert memory.utility.get(target) == pytest.approx(1 - 0.95 ** 40)
    assert len((settings.workspace / UTILITY_FILE).read_text().splitlines()) == 40


def test_utility_survives_a_deleted_index_and_decays_toward_neutral(settings: Settings) -> None:
    _notes(settings.workspace)
    with Memory(settings, embedder=HashEmbedder()) as memory:
        memory.index()
        hit = memory.search(QUERY)[2]
        then = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        memory.utility.reward(hit.id, 0.8, now=then)
    shutil.rmtree(settings.index_dir)
    with Memory(settings, embedder=HashEmbedder()) as memory:
        memory.index()
        assert memory.search(QUERY)[0].id == hit.id
        report = memory.utility.decay(now=then + dt.timedelta(days=30))
        assert report.changed == 1 and memory.utility.get(hit.id) == pytest.approx(0.4, abs=1e-4)
        memory.utility.decay(now=then + dt.timedelta(days=400))
        assert memory.utility.get(hit.id) == 0.0 and memory.utility.values() == {}


def test_damaged_utility_lines_are_skipped_and_a_half_written_line_waits(settings: Settings) -> None:
    _notes(settings.workspace)
    target = memory_id(NOTES[1])
    path = settings.workspace / UTILITY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    good = json.dumps({"id": target, "op": "reward", "amount": 0.5, "at": "2026-01-01T00:00:00+00:00"})
    path.write_text("not json\n" + json.dumps({"id": target, "op": "reward", "amount": 7}) + "\n" + good + "\n"
                    + good[:20])
    memory = Memory(settings, embedder=None)
    assert memory.utility.get(target) == 0.5
    memory.feedback.reward(target, 0.5)  # appended after a newline, so the partial line stays one bad line
    assert memory.utility.get(target) == 0.75


def test_the_command_line_rewards_lists_reads_by_id_and_refuses_unknown_ids(settings: Settings,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_memory.cli import main

    _notes(settings.workspace)
    target = memory_id(NOTES[0])
    ws = ["-w", str(settings.workspace), "--embedder", "none"]
    assert main(["utility", "reward", str(target), "--amount", "0.5", *ws]) == 0
    assert f"{target}: utility +0.000 -> +0.500" in capsys.readouterr().out
    assert main(["utility", "list", "--json", *ws]) == 0
    assert json.loads(capsys.readouterr().out) == {target: 0.5}
    assert main(["get", str(target), *ws]) == 0
    assert capsys.readouterr().out == NOTES[0] + "\n"
    assert main(["utility", "penalize", "m-000000000000", *ws]) == 2
    assert "no memory has the id" in capsys.readouterr().err
    assert main(["search", "staging deploy Frankfurt blue", *ws]) == 0
    assert f"id {target}" in capsys.readouterr().out
