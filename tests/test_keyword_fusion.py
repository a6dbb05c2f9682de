"""A note that holds the searched word is found, even when it is the weakest of the few that hold it.

Keyword scores are scaled to 0..1 before they are blended with the vectors'. Scaled between the
lowest and the highest candidate, the weakest keyword match scored exactly what a note without the
word scores, so a rare word held by three notes brought two: the third (a longer note, or one
whose word is said once among others) lost to unrelated notes that were a little closer by
vector. When the candidates are every note that matches, the rest of the memory scores nothing,
and the weakest match keeps its share. Driven through the MCP client, with the default embedder.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client

from conftest import close_server, make_server, write
from mcp_memory.config import load_settings
from mcp_memory.memory import Memory

# Unrelated daily notes, two bullets a day, in both languages, as a daily log holds them.
FILLERS = [
    "The hallway plant needs water every four days.", "用户的儿子转学到了实验中学。",
    "Greta brought a lemon tart to the potluck.", "官网用的字体是思源黑体。",
    "The attic window sticks in cold weather.", "老马负责招聘。",
    "Hugo is training for a half marathon.", "物业费每月 380 元。",
    "Read a long article about coral reefs on the train.", "备份服务器在北京机房还有一份副本。",
    "Ines collects vintage fountain pens.", "Leo 搬到成都了。",
    "The backup server is in Frankfurt.", "一月份燃气费交了 150 元。",
    "Weekly one-on-one with Grace is on Mondays.", "用户最喜欢的编辑器是 Sublime Text。",
    "The router is in the hallway closet.", "发票抬头写公司全称。",
    "The user's budget for the new laptop is 1,500 dollars.", "小王的生日是五月二号。",
]
# Each holds "release" once; the last says it among the most other words, so BM25 ranks it last.
MATCHES = {
    "2026-03-02": ("The release notes go in CHANGELOG.md.", "用户的耳机已经换成 AirPods Max 了。"),
    "2026-05-05": ("The release build now uses Node 22.", "后端服务现在部署在腾讯云上。"),
    "2026-11-10": ("Tomas owns the release process now, after the reorganisation of the platform group "
                   "and the move of the mobile team to the Lisbon office.", "小陈搬到深圳南山区了。"),
}


def _workspace(root: Path) -> None:
    for i in range(0, len(FILLERS), 2):
        day = f"2026-01-{i // 2 + 10:02d}"
        write(root, f"memory/{day}.md", f"# {day}\n\n- {FILLERS[i]}\n- {FILLERS[i + 1]}\n")
    for day, (text, other) in MATCHES.items():
        write(root, f"memory/{day}.md", f"# {day}\n\n- {text}\n- {other}\n")


def _indexed(settings) -> Memory:  # the configured default embedder, not a test double
    memory = Memory(settings)
    memory.index()
    return memory


async def _search(root: Path, query: str) -> list[dict]:
    server, service = make_server(load_settings(root, environ={}), _indexed)
    try:
        async with Client(server) as client:
            result = await client.call_tool("memory_search", {"query": query})
    finally:
        close_server(service)
    assert not result.is_error
    return result.structured_content["results"]


def test_every_note_holding_a_rare_word_is_found(tmp_path: Path) -> None:
    _workspace(tmp_path)
    hits = anyio.run(_search, tmp_path, "who is in charge of releases")
    found = {h["path"] for h in hits}
    assert {f"memory/{day}.md" for day in MATCHES} <= found, [h["snippet"][:60] for h in hits]
    # The notes that hold the word come before those that hold none of it.
    holding = [i for i, h in enumerate(hits) if "release" in h["snippet"]]
    assert holding == list(range(len(holding)))


def test_one_matching_note_is_still_first(tmp_path: Path) -> None:
    _workspace(tmp_path)
    hits = anyio.run(_search, tmp_path, "Tomas")
    assert hits[0]["path"] == "memory/2026-11-10.md"
