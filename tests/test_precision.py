"""Precision search, deep search and narrowed citations, through the library (``Memory``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from mcp_memory.config import Settings
from mcp_memory.core.periods import Period, date_closeness, query_periods
from mcp_memory.errors import SearchError
from mcp_memory.memory import Memory
from tests.conftest import HashEmbedder, write


def _memory(settings: Settings) -> Memory:
    memory = Memory(settings, embedder=HashEmbedder())
    memory.index()
    return memory


@pytest.mark.parametrize(("text", "first", "last"), [
    ("what did we decide on 3 June 2023?", "2023-06-03", "2023-06-03"),
    ("the painting shown on October 13, 2023", "2023-10-13", "2023-10-13"),
    ("what broke in October 2023", "2023-10-01", "2023-10-31"),
    ("notes from 2024-02-29 please", "2024-02-29", "2024-02-29"),
    ("2023年6月3日的会议决定了什么", "2023-06-03", "2023-06-03"),
    ("2023年11月发生了什么", "2023-11-01", "2023-11-30"),
    ("how many trips in 2022?", "2022-01-01", "2022-12-31"),
    ("31 February 2023", "2023-02-01", "2023-02-28"),  # no such day: the month it names
])
def test_query_periods_read_days_months_and_years(text: str, first: str, last: str) -> None:
    assert query_periods(text) == [Period(dt.date.fromisoformat(first), dt.date.fromisoformat(last))]


@pytest.mark.parametrize("text", ["what happened in June?", "2023-13-01", "call 5551234"])
def test_query_periods_ignore_what_names_no_period(text: str) -> None:
    assert query_periods(text) == []


def test_date_closeness_is_one_inside_and_halves_outside() -> None:
    june = [Period(dt.date(2023, 6, 1), dt.date(2023, 6, 30))]
    assert date_closeness(june, dt.date(2023, 6, 15)) == 1.0
    assert date_closeness(june, dt.date(2023, 7, 14)) == pytest.approx(0.5)
    assert date_closeness(june, None) == 0.0
    assert date_closeness([], dt.date(2023, 6, 15)) == 0.0


def _long_daily_file(workspace: Path) -> None:
    lines = ["# Inventory log", ""]
    lines += [f"- Checked shelf {i} of the north warehouse: counts match the ledger." for i in range(1, 80)]
    lines[50] = "- Checked shelf 49 of the north warehouse: the zircon calipers are missing."
    write(workspace, "memory/2026-03-02.md", "\n".join(lines) + "\n")


def test_citations_narrow_to_the_matched_lines_in_every_mode(settings: Settings) -> None:
    _long_daily_file(settings.workspace)
    with _memory(settings) as memory:
        for hits in (memory.search("zircon calipers"), memory.precise_search("zircon calipers").hits,
                     memory.deep_search("zircon calipers").hits):
            top = hits[0]
            assert top.end_line - top.start_line + 1 <= settings.search.citation_lines
            assert top.start_line <= 51 <= top.end_line
            assert top.chunk_end_line - top.chunk_start_line > top.end_line - top.start_line
            assert top.chunk_start_line <= top.start_line and top.end_line <= top.chunk_end_line
            cited = memory.get(top.path, top.start_line, top.end_line - top.start_line + 1).text
            assert "zircon calipers" in cited
            assert top.snippet.strip("…") in cited
            assert top.citation == f"{top.path}#L{top.start_line}-L{top.end_line}"
            chunk = memory.get(top.path, top.chunk_start_line, top.chunk_end_line - top.chunk_start_line + 1)
            assert cited in chunk.text


def test_short_chunks_keep_their_whole_range(settings: Settings) -> None:
    write(settings.workspace, "memory/2026-03-03.md", "# Day\n\n- The build uses zig 0.13.\n- Tests run nightly.\n")
    with _memory(settings) as memory:
        hit = memory.search("zig build")[0]
    assert (hit.start_line, hit.end_line) == (hit.chunk_start_line, hit.chunk_end_line)


def test_precise_search_prefers_the_files_of_the_day_the_query_names(settings: Settings) -> None:
    for day in ("2026-03-02", "2026-03-05", "2026-03-09"):
        write(settings.workspace, f"memory/{day}.md", f"# {day}\n\n- Decided the release checklist for the app.\n")
    with _memory(settings) as memory:
        answer = memory.precise_search("what did we decide about the release checklist on 5 March 2026?")
    assert answer.reranker == "local" and answer.warnings == []
    assert answer.hits[0].path == "memory/2026-03-05.md"
    assert all(0.0 <= h.score <= 1.0 for h in answer.hits)


def test_precise_search_prefers_a_line_that_answers_over_scattered_words(settings: Settings) -> None:
    scattered = ["# Notes", ""] + [f"- Talked about the garden {i} and the weekend." for i in range(6)]
    scattered += ["- Somebody mentioned a heron once.", "- The pond needs cleaning.", "- Vacation plans pending."]
    write(settings.workspace, "memory/topics/garden.md", "\n".join(scattered) + "\n")
    write(settings.workspace, "memory/topics/birds.md",
          "# Birds\n\n- A grey heron visits the garden pond every weekend morning.\n- Feeders refilled.\n")
    with _memory(settings) as memory:
        answer = memory.precise_search("heron garden pond weekend")
    assert answer.hits[0].path == "memory/topics/birds.md"


def test_deep_search_follows_a_concept_of_the_first_hits(settings: Settings) -> None:
    ws = settings.workspace
    write(ws, "memory/people.md", "# People\n\n- Priya's closest friend is Thaddeus.\n")
    write(ws, "memory/thaddeus.md", "# Thaddeus\n\n- Thaddeus repairs violins in a workshop in Porto.\n")
    for i in range(8):
        write(ws, f"memory/misc-{i}.md", f"# Misc {i}\n\n- Priya talked about her closest colleagues at meeting {i}.\n")
    with _memory(settings) as memory:
        answer = memory.deep_search("Who is Priya's closest friend and what does that friend do?", max_results=8)
    assert answer.mode == "deep"
    assert "Thaddeus" in answer.concepts
    assert answer.hits[0].hop == 1
    found = {h.path: h for h in answer.hits}
    assert "memory/thaddeus.md" in found
    via = found["memory/thaddeus.md"]
    assert via.hop == 1 or "Thaddeus" in via.concepts
    assert all(h.hop in (1, 2) for h in answer.hits)
    assert all(h.concepts for h in answer.hits if h.hop == 2)


def test_deep_search_takes_names_not_capitalised_first_words_as_concepts(settings: Settings) -> None:
    ws = settings.workspace
    write(ws, "memory/party.md", "# Party\n\n- Wow, the tart was great. Marisol baked it, and Ottoline came.\n")
    for i in range(6):
        write(ws, f"memory/other-{i}.md", f"# Other {i}\n\n- The meeting {i} ran late again.\n")
    with _memory(settings) as memory:
        concepts = memory.deep_search("who baked the tart for the party?", max_results=5).concepts
    assert "Ottoline" in concepts
    assert concepts.index("Ottoline") < (concepts.index("Wow") if "Wow" in concepts else len(concepts))


@pytest.mark.parametrize("k", [0, -3, 10**9])
def test_bad_result_counts_are_clear_errors(settings: Settings, k: int) -> None:
    write(settings.workspace, "memory/2026-03-03.md", "- A note.\n")
    with _memory(settings) as memory:
        with pytest.raises(SearchError, match="between 1 and"):
            memory.precise_search("note", max_results=k)
        with pytest.raises(SearchError, match="between 1 and"):
            memory.deep_search("note", max_results=k)


def test_empty_and_huge_queries_answer_without_error(settings: Settings) -> None:
    write(settings.workspace, "memory/2026-03-03.md", "- The kettle descaling is due in April.\n")
    with _memory(settings) as memory:
        assert memory.precise_search("   ").hits == []
        assert memory.deep_search("").hits == []
        huge = "kettle descaling " + "x" * 100_000
        assert memory.precise_search(huge).hits[0].path == "memory/2026-03-03.md"
        assert memory.deep_search(huge).hits[0].path == "memory/2026-03-03.md"
