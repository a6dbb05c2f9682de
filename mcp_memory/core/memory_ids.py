"""Stable memory ids: one name per memory (a bullet or a paragraph) that outlives the index.

An id is a digest of the memory's text alone, so it is the same after re-indexing, after the
index folder is deleted, under another chunking, and when the memory moves within its file or
to another file. It changes only when the words change: case, spacing, punctuation, the
bullet marker, a ``[category]`` tag, a trailing learned date or an HTML comment (such as the
mark the sleep cycle leaves on a superseded memory) are not part of it.

A memory is one of:

* a list item (``-``, ``*``, ``+``, ``1.``, ``1)``), with the lines that continue it;
* a paragraph: consecutive non-blank lines that are not list items, headings or table rows;
* one table row (not the header rule);
* a fenced code block, whole.

Headings name sections and are not memories; a search hit on a heading names the memory below it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

ID_PREFIX = "m-"
ID_PATTERN = re.compile(r"m-[0-9a-f]{12}")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
# A list item's marker (with its task box); with HTML comments, not part of a memory's words.
LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_CATEGORY = re.compile(r"^\[[A-Za-z][\w-]{0,30}\]\s+")
# "(2026-11-26)" closing a memory: the day it was learned, or stated (group 1)
LEARNED_DATE = re.compile(r"\s*\((\d{4}-\d{2}-\d{2})\)\s*$")
_NOT_WORD = re.compile(r"[\W_]+")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)  # the sleep cycle's marks, and any other
RETIRED_MARK = "<!-- "  # every retirement mark starts so (a cheap first check before the pattern)
# What the sleep cycle appends to a memory it retires; the memory stays on disk, and its id with it.
_RETIRED = re.compile(r"<!--\s*(?:superseded by|duplicate of)\s+(m-[0-9a-f]{12})\b.*?-->", re.DOTALL)


@dataclass(frozen=True)
class MemoryUnit:
    """One memory among some lines: its 0-based first and last line there, and its id."""

    start: int
    end: int
    id: str


def memory_id(text: str) -> str | None:
    """The id of a memory's text, or None when it holds no letter or digit."""
    key = memory_key(text)
    if not key:
        return None
    return ID_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def memory_key(text: str) -> str:
    """The words of a memory, folded: what its id is a digest of."""
    words = []
    for raw in HTML_COMMENT.sub(" ", text).split("\n"):
        line = LIST_MARKER.sub("", raw).strip()
        line = LEARNED_DATE.sub("", _CATEGORY.sub("", line))
        words.append(line)
    folded = unicodedata.normalize("NFKC", " ".join(words)).casefold()
    return " ".join(_NOT_WORD.sub(" ", folded).split())


def memory_body(line: str) -> str:
    """A bullet's text without the bullet and category markers or the learned date."""
    body = line.strip().removeprefix("- ").removeprefix("* ")
    if body.startswith("[") and "] " in body:
        body = body.split("] ", 1)[1]
    return LEARNED_DATE.sub("", body)


def statement_body(text: str) -> str:
    """A memory of one or more lines as ``memory_body`` reads each: what embedders compare."""
    return " ".join(memory_body(line) for line in text.split("\n"))


def retired_by(text: str) -> str | None:
    """The id of the memory that superseded or duplicates this one (its sleep-cycle mark), or None."""
    found = _RETIRED.search(text)
    return found.group(1) if found else None


def without_marks(text: str) -> str:
    """``text`` without the sleep cycle's retirement marks (for showing a memory)."""
    return _RETIRED.sub("", text)


def is_memory_id(value: str) -> bool:
    """Whether ``value`` is exactly an id's spelling (``m-`` and 12 hex digits)."""
    return bool(ID_PATTERN.fullmatch(value))


def split_memories(lines: list[str]) -> list[MemoryUnit]:
    """The memories among ``lines`` (a file's, or a chunk's), in order."""
    units: list[MemoryUnit] = []
    for start, end in memory_spans(lines):
        found = memory_id("\n".join(lines[start : end + 1]))
        if found:
            units.append(MemoryUnit(start, end, found))
    return units


def unit_at(lines: list[str], index: int) -> MemoryUnit | None:
    """The memory holding line ``index`` of ``lines``; for a heading or a blank line, the next
    memory (else the one before); None when ``lines`` hold no memory."""
    units = split_memories(lines)
    if not units:
        return None
    for unit in units:
        if unit.start <= index <= unit.end:
            return unit
    after = [u for u in units if u.start > index]
    return after[0] if after else units[-1]


def memory_spans(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of each memory-shaped block of ``lines``, 0-based and inclusive: the
    memories of ``split_memories`` before their ids (a block with no letter or digit has none)."""
    spans: list[tuple[int, int]] = []
    current: list[int] | None = None  # [start, end] of the open item or paragraph
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            current = None
            end = _fence_end(lines, i, fence.group(1))
            spans.append((i, end))
            i = end + 1
            continue
        if not line.strip() or _HEADING.match(line):
            current = None
        elif _TABLE_ROW.match(line):
            current = None
            if not _TABLE_RULE.match(line):
                spans.append((i, i))
        elif _ITEM.match(line) or current is None:
            current = [i, i]
            spans.append((i, i))
        else:  # a line continuing the open item or paragraph
            current[1] = i
            spans[-1] = (current[0], i)
        i += 1
    return spans


def _fence_end(lines: list[str], start: int, marker: str) -> int:
    for j in range(start + 1, len(lines)):
        closing = _FENCE.match(lines[j])
        if closing and closing.group(1)[0] == marker[0] and len(closing.group(1)) >= len(marker):
            return j
    return len(lines) - 1  # an unclosed fence runs to the end
