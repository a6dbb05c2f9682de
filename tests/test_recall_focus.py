"""Recall shows the memories that matched, as written, and none of the product's bookkeeping.

With the real default embedder: a prompt about one bullet of a chunk brings that bullet (cited
on its own line), not its neighbours; an episode's sections are not recalled for a prompt
about the work itself, only for one about past sessions; text reads as written (an apostrophe
is an apostrophe) while markup stays inert.
"""

from __future__ import annotations

import pytest
from mcp import Client

from conftest import close_server, recalled, write
from mcp_memory.config import Settings
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server

DAILY = "memory/2026-11-20.md"
NOTES = """# 2026-11-20

## 09:12 captured (session abc)

- [fact] The billing service runs on PostgreSQL 16 in the Frankfurt region.
- [preference] The user likes the team's weekly demo on Fridays.
- [fact] The office plants are watered by Marta on Mondays.
- [decision] Invoices are rendered with WeasyPrint, never wkhtmltopdf.

A paragraph about the release train: it leaves every second Tuesday,
and hotfixes board it at any stop.
"""
EPISODE = "memory/episodes/2026-11-20-abc.md"
EPISODE_TEXT = """# Episode 2026-11-20 09:00–09:40 UTC (claude-code)

- Start: 2026-11-20T09:00:00Z
- End: 2026-11-20T09:40:00Z
- Client: claude-code
- Session: abc
- Records: transcript:abc

## Tools used
- memory_search: 2 (transcript 2)

## Memories recalled
- memory/2026-11-20.md#L5-L5

## Memories stored
- none

## Decisions
- The staging database moves to the Frankfurt region next quarter

## Errors
- none
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def memory(settings: Settings) -> Memory:
    write(settings.workspace, DAILY, NOTES)
    write(settings.workspace, EPISODE, EPISODE_TEXT)
    memory = Memory(settings)
    memory.sync()
    memory.backfill()
    yield memory
    memory.close()


def test_a_prompt_about_one_bullet_recalls_that_bullet_alone(memory: Memory) -> None:
    block = memory.recall("Which database does the billing service use?")
    shown = recalled(block)
    assert shown, block
    source, text = shown[0]
    assert source == f"{DAILY}#L5-L5" and "PostgreSQL 16" in text
    for other in ("plants", "Marta", "WeasyPrint", "weekly demo", "captured (session"):
        assert other not in block, block


def test_text_reads_as_written_and_markup_stays_inert(memory: Memory, settings: Settings) -> None:
    block = memory.recall("when is the team's weekly demo?")
    assert "the team's weekly demo on Fridays" in block, block
    assert "&#x27;" not in block and "&#39;" not in block
    write(settings.workspace, "memory/2026-11-21.md",
          "# 2026-11-21\n\n- The zebracorn notes say </relevant-memories> and &lt;b&gt; R&D.\n")
    memory.sync()
    block = memory.recall("what do the zebracorn notes say?")
    assert block.count("</relevant-memories>") == 1 and block.endswith("</relevant-memories>")
    assert "&lt;/relevant-memories&gt;" in block and "&amp;lt;b&amp;gt;" in block and "R&D" in block


def test_a_paragraph_keeps_its_line_breaks(memory: Memory) -> None:
    block = memory.recall("how often does the release train leave, and can hotfixes board it?")
    shown = dict(recalled(block))
    assert shown.get(f"{DAILY}#L10-L11", "").split("\n") == [
        "A paragraph about the release train: it leaves every second Tuesday,",
        "and hotfixes board it at any stop."], block


def test_episodes_are_not_recalled_unless_the_prompt_asks_about_sessions(memory: Memory) -> None:
    prompt = "The staging database moves to the Frankfurt region next quarter, plan the migration"
    assert memory.search(prompt, max_results=5)[0].path in (EPISODE, DAILY)  # search still finds episodes
    block = memory.recall(prompt)
    assert EPISODE not in block and "Memories stored" not in block and "- none" not in block, block
    asked = memory.recall("What did we decide in the last session about the staging database?")
    assert EPISODE in asked, asked
    assert "- none" not in asked and "Records:" not in asked, asked


@pytest.mark.anyio
async def test_recall_over_mcp_shows_the_matched_bullet(memory: Memory, settings: Settings) -> None:
    service = MemoryService(settings, start_delay=0, watch=False)
    server = create_server(settings, service)
    try:
        async with Client(server) as client:
            result = await client.call_tool("memory_recall", {"prompt": "who waters the office plants?"})
            block = result.structured_content["context"]
    finally:
        close_server(service)
    assert [source for source, _ in recalled(block)][:1] == [f"{DAILY}#L7-L7"], block
    assert "PostgreSQL" not in block and "WeasyPrint" not in block


def test_a_second_answer_to_one_prompt_is_the_same_turn(memory: Memory, settings: Settings) -> None:
    """A hook that stopped waiting for the warm process recalls on its own: the warm process's late
    answer to the same prompt must not make the hook's answer think the memories were shown."""
    prompt = "Which database does the billing service use?"
    late = memory.recall(prompt, session_key="cold", prompt_id="p1")  # the warm process, too late
    assert "PostgreSQL 16" in late
    own = Memory(settings).recall(prompt, session_key="cold", keywords_only=True, prompt_id="p1")
    assert "PostgreSQL 16" in own, own
    assert Memory(settings).recall(prompt, session_key="cold", keywords_only=True, prompt_id="p2") == ""
