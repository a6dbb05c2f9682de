"""Recall of a logged conversation shows the exchange, so the answer comes with the turn that matched.

A daily log that keeps a chat one turn per line: the prompt's words match the turn that raised
the subject ("I saw an art film today"), while the answer is in the turns after it ("What was it
about?" / "A taxi driver who ..."). With the real default embedder and over MCP, recall shows the
matched turn together with the question asked about it and its answer, cited as one range; a
list of fields that happens to look like "Label: text" stays one line per memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from mcp import Client

from conftest import close_server, recalled, write
from mcp_memory.config import Settings
from mcp_memory.core.exchanges import asks, exchange, speaker
from mcp_memory.memory import Memory
from mcp_memory.runtime.service import MemoryService
from mcp_memory.server import create_server

CHAT = "memory/2026-10-30.md"
CHAT_TEXT = """# 2026-10-30

- Emily: Today I went to the cinema with a friend and saw an art film called "Taxi Driver".
- Companion: Sounds like a good film. What was the film about?
- Emily: A young night-shift driver who slowly loses his grip on the city around him.
- Companion: That sounds worth watching. Do you play any instruments?
- Emily: I play the cello in a quartet on Thursdays.
- Companion: Lovely!
"""
CHAT_ZH = "memory/2026-10-31.md"
CHAT_ZH_TEXT = """# 2026-10-31

- 陈静：跟你说个开心的事，我上周末去救助站领养了一只橘猫！
- 王磊：哇，叫啥名字？
- 陈静：叫年糕，两岁了，特别能吃。
- 王磊：我最近在准备半程马拉松。
"""
HOSTS = "memory/hosts.md"
HOSTS_TEXT = """# Staging hosts

- Database: db-staging-4.internal, the replica of the orders cluster.
- Cache: redis-staging-2.internal, flushed every night at two.
- Queue: the staging queue is RabbitMQ on mq-staging-1.internal.
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def memory(settings: Settings) -> Memory:
    write(settings.workspace, CHAT, CHAT_TEXT)
    write(settings.workspace, CHAT_ZH, CHAT_ZH_TEXT)
    write(settings.workspace, HOSTS, HOSTS_TEXT)
    memory = Memory(settings)
    memory.sync()
    memory.backfill()
    yield memory
    memory.close()


@pytest.mark.anyio
async def test_recall_over_mcp_shows_the_answer_with_the_turn_that_matched(memory: Memory,
                                                                           settings: Settings) -> None:
    service = MemoryService(settings, start_delay=0, watch=False)
    server = create_server(settings, service)
    try:
        async with Client(server) as client:
            result = await client.call_tool("memory_recall",
                                            {"prompt": 'I told you about the film "Taxi Driver", do you remember?'})
            block = result.structured_content["context"]
    finally:
        close_server(service)
    shown = dict(recalled(block))
    assert f"{CHAT}#L3-L5" in shown, block
    assert "night-shift driver" in shown[f"{CHAT}#L3-L5"]  # the answer, two turns after the match
    assert "cello" not in block and "Lovely" not in block, block


def test_a_chinese_chat_shows_the_answer_to_the_question_asked_about_it(memory: Memory) -> None:
    block = memory.recall("陈静从救助站领养的那只猫叫什么名字？")
    shown = dict(recalled(block))
    assert f"{CHAT_ZH}#L3-L5" in shown, block
    assert "年糕" in shown[f"{CHAT_ZH}#L3-L5"]
    assert "半程马拉松" not in block, block


def test_a_list_of_fields_is_not_read_as_a_conversation(memory: Memory) -> None:
    block = memory.recall("Which host runs the staging cache?")
    shown = dict(recalled(block))
    assert f"{HOSTS}#L4-L4" in shown, block
    assert "db-staging-4" not in block and "mq-staging-1" not in block, block


@dataclass
class _Line:
    text: str


def _exchange(lines: list[str], index: int) -> list[int]:
    return list(exchange([_Line(t) for t in lines], index))


def test_the_exchange_of_a_turn() -> None:
    chat = ["- **Ann:** I moved last week.", "- **Bo:** Where to?", "- **Ann:** Lisbon, near the river.",
            "- **Bo:** Nice.", "- **Ann:** Did you get the tickets?", "- **Bo:** Yes, two for Friday.",
            "- **Bo:** And a parking spot."]
    assert _exchange(chat, 0) == [0, 1, 2]  # a statement, the question about it, the answer
    assert _exchange(chat, 2) == [2]  # the reply asks nothing: nothing to add
    assert _exchange(chat, 4) == [4, 5]  # a question and its answer
    assert _exchange(chat, 5) == [5]  # the same speaker goes on: no reply
    # Not a conversation: one speaker, labels that never recur, lines without labels.
    assert _exchange(["- Ann: where to?", "- Ann: Lisbon."], 0) == [0]
    assert _exchange(["- Host: where is it?", "- Port: 5432"], 0) == [0]
    assert _exchange(["- where to?", "- Lisbon.", "- where?", "- there"], 0) == [0]


def test_what_reads_as_a_turn() -> None:
    assert speaker("- Emily: hello") == "emily" and speaker("- **Caroline:** hi") == "caroline"
    assert speaker("- 助手：你好") == "助手" and speaker("Bob: plain line") == "bob"
    for line in ("- 10:30 standup", "- https://example.com: docs", "- [decision] Use: Postgres", "- a note",
                 "- Emily:"):
        assert speaker(line) is None, line
    assert asks("- Bo: Where to?") and asks("- 王磊：哇，叫啥名字？") and asks("- 甲：你去过吗")
    assert not asks("- Bo: Nice.")
