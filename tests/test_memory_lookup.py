"""Which memory holds a line, and where an id is written, in files as they are now.

A search names each hit by the memory at its best line (``core/memory_lookup.py``), and reads a
memory's id only when asked for it. Whatever a file holds (bullets, paragraphs, headings, fences,
tables, lines of no words), the answers are those of reading every memory of the file with
``split_memories``, and an edit to the file is seen by the next question.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write
from mcp_memory.core.memory_ids import split_memories
from mcp_memory.core.memory_lookup import MemoryLookup
from mcp_memory.core.workspace import Workspace

LINES = st.sampled_from([
    "", "# Heading", "## 2026-03-01", "- The user prefers tea.", "- The user prefers tea.", "* [decision] Use uv.",
    "  continued on the next line", "A paragraph line about the garden.", "- ---", "- !!!", "```", "~~~",
    "| a | b |", "| --- | --- |", "- 用户喜欢喝茶。", "1. Numbered item", "<!-- a note -->", "  ",
])


def _reference(lines: list[str], line: int) -> tuple[int, int, str] | None:
    """The memory at 1-based ``line`` as the lookup promises it: the unit holding the line, else
    the next one, else the last one."""
    units = split_memories(lines)
    if not units:
        return None
    unit = next((u for u in units if u.start <= line - 1 <= u.end), None)
    unit = unit or next((u for u in units if u.start >= line - 1), units[-1])
    return unit.start + 1, unit.end + 1, unit.id


@settings(max_examples=60, deadline=None)
@given(body=st.lists(LINES, min_size=1, max_size=30))
def test_every_line_and_every_id_is_answered_as_a_full_reading_would(tmp_path_factory, body: list[str]) -> None:
    root: Path = tmp_path_factory.mktemp("ws")
    write(root, "memory/topic.md", "\n".join(body) + "\n")
    lookup = MemoryLookup(Workspace(root))
    units = split_memories(body)
    for line in range(1, len(body) + 1):
        found = lookup.unit_at("memory/topic.md", line)
        expected = _reference(body, line)
        assert (None if found is None else (found.start_line, found.end_line, found.id)) == expected, line
    for unit in units:
        places = lookup.find(unit.id, ["memory/topic.md"])
        assert [(p.start_line, p.end_line) for p in places] == [(u.start + 1, u.end + 1) for u in units
                                                                 if u.id == unit.id]
        for line in range(1, len(body) + 1):
            nearest = lookup.nearest(unit.id, "memory/topic.md", line)
            assert nearest is not None
            assert nearest == min(places, key=lambda p: abs(p.start_line - line))
        inside = lookup.units_between("memory/topic.md", unit.start + 1, unit.end + 1)
        assert [(m.start_line, m.id) for m in inside] == [(unit.start + 1, unit.id)]
    assert lookup.nearest("m-000000000000", "memory/topic.md", 1) is None


def test_an_edit_is_seen_by_the_next_question(tmp_path: Path) -> None:
    write(tmp_path, "memory/topic.md", "# Topic\n\n- The user prefers tea.\n- The user lives in Lyon.\n")
    lookup = MemoryLookup(Workspace(tmp_path))
    before = lookup.unit_at("memory/topic.md", 4)
    assert before is not None and before.text == "- The user lives in Lyon."
    write(tmp_path, "memory/topic.md", "# Topic\n\n- The user prefers coffee now.\n- The user moved to Nantes.\n")
    after = lookup.unit_at("memory/topic.md", 4)
    assert after is not None and after.text == "- The user moved to Nantes." and after.id != before.id
    assert lookup.find(before.id, ["memory/topic.md"]) == []
    assert lookup.unit_at("memory/missing.md", 1) is None
