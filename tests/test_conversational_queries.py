"""Conversation-shaped queries: a client passes the conversation so far, the question last.

Driven through the real ``mcp.Client`` in memory (as ``test_search_modes.py``), on one short
memory per file with distractors on the topics the small talk is about. Every search mode must
rank the memory the latest turn asks about first, recall of the whole conversation must bring it,
and no query shape (1 character, 20,000 characters, a pasted transcript, mixed scripts) is an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import close_server, make_server, write
from mcp_memory.config import Settings
from mcp_memory.core.query_focus import FOCUS_CHARS, focus, is_long, turns
from mcp_memory.memory import Memory

PRECISE, DEEP = "precision_memory_search", "deep_memory_search"
DENTIST = "memory/people/dentist.md"
NOTES = {
    DENTIST: "- The user's dentist is Dr. Okafor at Riverside Dental; a cleaning every six months.\n",
    "memory/trips/lisbon.md": "- The trip to Lisbon in June: flights booked, the hotel is near the river in Lisbon.\n",
    "memory/trips/sintra.md": "- A day trip from Lisbon to Sintra by train, palace tickets bought online.\n",
    "memory/food/restaurants.md": "- Restaurants near the hotel in Lisbon: a fish restaurant and a bakery.\n",
    "memory/trips/flights.md": "- Flights for the June trip: the cheap flights leave early; hotel check-in at three.\n",
    "memory/people/sister.md": "- The user's sister Priya lives in Lisbon and works as a translator.\n",
    "memory/zh/passport.md": "- 用户的护照明年五月到期，打算年底前去换发。\n",
    "memory/zh/hotpot.md": "- 用户最喜欢的火锅店是小龙坎，每次必点毛肚。\n",
}
CONVERSATION = """user: We are planning the trip to Lisbon in June, the flights and the hotel are booked.
assistant: Lovely, Lisbon in June is warm. Do you want restaurants near the hotel for the trip?
user: Yes, restaurants near the hotel, and maybe a day trip to Sintra by train during the trip.
assistant: Sure, I can suggest restaurants, the Sintra day trip and the flights' timing.
user: Before I forget, one more thing: who is my dentist again?"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(workspace: Path, settings: Settings):
    for path, text in NOTES.items():
        write(workspace, path, text)
    srv, service = make_server(settings)
    yield srv
    close_server(service)


async def search(client: Client, tool: str, query: str) -> list[dict[str, Any]]:
    arguments = {"query": query, "top_k" if tool == PRECISE else "max_results": 5}
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content["results"]


def rank(hits: list[dict[str, Any]], path: str) -> int:
    return next((i for i, h in enumerate(hits) if h["path"] == path), len(hits) + 1)


# ----- the focus of a long query ---------------------------------------------------------------
def test_a_short_question_is_its_own_focus():
    for query in ("who is my dentist?", "x", "我的护照什么时候到期？", "Caroline: when did she go?"):
        assert not is_long(query) and focus(query) == query


def test_the_focus_is_the_latest_user_turn():
    assert is_long(CONVERSATION)
    assert focus(CONVERSATION) == "Before I forget, one more thing: who is my dentist again?"
    # The assistant's reply after it is not what the user asks.
    assert focus(CONVERSATION + "\nassistant: Let me look that up.").endswith("who is my dentist again?")
    # A short latest turn leans on the one before it.
    short = "A: I saw Maya yesterday.\nB: How is she doing at the new school in Porto?\nA: And her sister?"
    assert focus(short) == "How is she doing at the new school in Porto? And her sister?"
    zh = "用户：我们下个月去新加坡出差。\n助手：好的，需要准备签证吗？\n用户：我的护照是不是快过期了？什么时候到期？"
    assert focus(zh) == "我的护照是不是快过期了？什么时候到期？"
    assert [s for s, _ in turns(zh)] == ["用户", "助手", "用户"]


def test_the_focus_of_huge_input_is_bounded():
    for query in ("a" * 20_000, "word " * 4_000, "\n".join(f"user: line {i} of a pasted log" for i in range(2_000))):
        assert is_long(query)
        assert 0 < len(focus(query)) <= FOCUS_CHARS


# ----- through the MCP server --------------------------------------------------------------------
@pytest.mark.anyio
async def test_every_mode_finds_what_the_latest_turn_asks(server):
    """Fails before the fix: precise read the whole conversation and ranked the trip notes first,
    and so did the default search, which ranked the conversation as one text."""
    async with Client(server) as client:
        for tool in ("memory_search", PRECISE, DEEP):
            assert rank(await search(client, tool, CONVERSATION), DENTIST) == 0, tool


@pytest.mark.anyio
async def test_a_latest_turn_that_only_points_back_keeps_the_conversations_topic(server):
    """A last turn whose words the notes do not hold is not heard: the whole conversation ranks."""
    pointing_back = CONVERSATION.rsplit("\n", 1)[0] + "\nuser: Hmm, and what about that other thing I mentioned?"
    async with Client(server) as client:
        for tool in ("memory_search", PRECISE, DEEP):
            hits = await search(client, tool, pointing_back)
            assert hits and "Lisbon" in hits[0]["snippet"], (tool, hits[:1])
            assert rank(hits, DENTIST) > 0, tool


@pytest.mark.anyio
async def test_a_short_question_keeps_its_order(server):
    async with Client(server) as client:
        precise = await search(client, PRECISE, "who is my dentist")
        zh = await search(client, PRECISE, "护照什么时候到期")
    assert rank(precise, DENTIST) == 0 and rank(zh, "memory/zh/passport.md") == 0


@pytest.mark.anyio
async def test_bad_query_shapes_are_answered_in_every_mode(server):
    transcript = "\n".join(f"{'user' if i % 2 == 0 else 'assistant'}: turn {i}, about the Lisbon trip and hotels"
                           for i in range(600)) + "\nuser: one more thing before I go, who is my dentist again?"
    queries = {
        "one character": "d",
        "one CJK character": "护",
        "20,000 characters": ("dentist Lisbon hotel " * 1000)[:20_000],
        "20,000 characters without spaces": "x" * 20_000,
        "a pasted transcript": transcript,
        "mixed scripts": ("user: 我们去Lisbon的trip怎么样？\nassistant: très bien, Лиссабон 🌞\n"
                          "user: 我的passport什么时候到期？"),
    }
    async with Client(server) as client:
        for name, query in queries.items():
            for tool in ("memory_search", PRECISE, DEEP):
                result = await client.call_tool(tool, {"query": query})
                assert not result.is_error, (name, tool, result.content)
        # A pasted transcript ending with a question is read for the question.
        default = rank(await search(client, "memory_search", transcript), DENTIST)
        assert rank(await search(client, PRECISE, transcript), DENTIST) == 0 <= default
        assert rank(await search(client, PRECISE, queries["mixed scripts"]), "memory/zh/passport.md") == 0


def test_recall_of_a_whole_conversation_brings_what_its_latest_turn_asks(workspace: Path, settings: Settings):
    """A long prompt (a client that hands recall the conversation so far) is judged by the better of
    its whole and its focus: the dentist note shares no word with the trip talk, but all of the
    latest turn's. Fails before: the gate read only the whole conversation's words and vector."""
    for path, text in NOTES.items():
        write(workspace, path, text)
    with Memory(settings) as memory:
        memory.index()
        assert DENTIST in [h.path for h in memory.recall_hits(CONVERSATION)]
        # A short prompt is judged as before.
        assert [h.path for h in memory.recall_hits("who is my dentist again?")] == [DENTIST]
