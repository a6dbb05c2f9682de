"""A question that names a day without a year ("on May 4th", "5月4号") is about that day's notes.

People ask their memory about the past as they speak: the month and the day, no year. Every
search mode reads such a day as the last one up to the day of the search and prefers its daily
file over the same words on another day. Through the MCP client, with the default embedder.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import anyio
import pytest
from mcp import Client

from conftest import close_server, make_server, write
from mcp_memory.config import load_settings
from mcp_memory.core.periods import Period, query_periods
from mcp_memory.memory import Memory


def _last(month: int, day: int, today: dt.date) -> dt.date:
    date = dt.date(today.year, month, day)
    return date if date <= today else dt.date(today.year - 1, month, day)


def _workspace(root: Path, named: dt.date) -> None:
    """A museum visit on the day a question names, and one ten days later told in the question's
    own words (which wins on words alone); and unrelated days."""
    other = named + dt.timedelta(days=10)
    write(root, f"memory/{named}.md", f"# {named}\n\n- Silk exhibition at the city museum with Ana.\n"
                                      "- 和 Ana 去市博物馆看了丝绸展。\n")
    write(root, f"memory/{other}.md", f"# {other}\n\n- I went to the museum and saw the clock exhibition.\n"
                                      "- 我去博物馆看了钟表展。\n")
    for shift, text in ((20, "The hallway plant needs water every four days."), (30, "老马负责招聘。")):
        day = named - dt.timedelta(days=shift)
        write(root, f"memory/{day}.md", f"# {day}\n\n- {text}\n")


def _indexed(settings) -> Memory:  # the configured default embedder
    memory = Memory(settings)
    memory.index()
    return memory


async def _first_paths(root: Path, query: str) -> dict[str, str]:
    server, service = make_server(load_settings(root, environ={}), _indexed)
    try:
        async with Client(server) as client:
            out = {}
            for tool in ("memory_search", "precision_memory_search", "deep_memory_search"):
                result = await client.call_tool(tool, {"query": query})
                assert not result.is_error, result
                out[tool] = result.structured_content["results"][0]["path"]
            return out
    finally:
        close_server(service)


@pytest.mark.parametrize("query", ["On May 4th I went to the museum, which exhibition did I see?",
                                   "what exhibition did I see at the museum on 4 May?",
                                   "我5月4号去博物馆看了什么展？"])
def test_every_mode_prefers_the_day_a_question_names_without_a_year(tmp_path: Path, query: str) -> None:
    named = _last(5, 4, dt.date.today())
    _workspace(tmp_path, named)
    firsts = anyio.run(_first_paths, tmp_path, query)
    assert set(firsts.values()) == {f"memory/{named}.md"}, firsts


@pytest.mark.parametrize(("text", "day"), [
    ("On May 4th, what did I share?", "2023-05-04"),
    ("what happened on the 30th of April", "2023-04-30"),
    ("在4月30号我为什么心情不好", "2023-04-30"),
    ("5月4日的天气怎么样", "2023-05-04"),
    ("on December 24th", "2022-12-24"),  # still to come this year: last year's
])
def test_a_day_without_a_year_is_the_last_one_up_to_today(text: str, day: str) -> None:
    date = dt.date.fromisoformat(day)
    assert query_periods(text, today=dt.date(2023, 5, 7)) == [Period(date, date)]
    assert query_periods(text) == []  # without the day of the search, no year to give it


@pytest.mark.parametrize("text", ["you may 4 times retry", "2023年5月4日的会议", "at 10:30 on May 4th, 2021"])
def test_a_day_with_a_year_or_no_day_at_all_is_read_as_before(text: str) -> None:
    assert query_periods(text, today=dt.date(2023, 5, 7)) == query_periods(text)


async def _recall(root: Path, prompt: str) -> str:
    server, service = make_server(load_settings(root, environ={}), _indexed)
    try:
        async with Client(server) as client:
            result = await client.call_tool("memory_recall", {"prompt": prompt})
            assert not result.is_error, result
            return result.structured_content["context"]
    finally:
        close_server(service)


@pytest.mark.parametrize("prompt", ["Remind me, which exhibition did I see at the museum on May 4th?",
                                    "5月4号我在博物馆看的是什么展来着？"])
def test_recall_counts_the_day_a_prompt_names_as_found_in_that_days_notes(tmp_path: Path, prompt: str) -> None:
    """The note of May 4th holds under half of the prompt's other words; its date is the rest."""
    named = _last(5, 4, dt.date.today())
    _workspace(tmp_path, named)
    block = anyio.run(_recall, tmp_path, prompt)
    assert f'source="memory/{named}.md#' in block, block
