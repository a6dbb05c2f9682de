"""Memories of the files as they are now: which memory holds a line, and where an id is.

Search names each hit by the memory that holds its best line (``memory_ids.py``); a chunk may
begin or end inside a memory, so the memory is taken from the whole file whenever the file
still holds the line the index has. ``memory_get``, reward and penalize find an id here.
Each file's memories are kept until its size or modification time changes.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mcp_memory.core.hits import cite
from mcp_memory.core.memory_ids import MemoryUnit, memory_id, memory_spans
from mcp_memory.core.workspace import Workspace
from mcp_memory.errors import PathError

_MAX_CACHED_FILES = 4096


@dataclass(frozen=True)
class LocatedMemory:
    """One memory in a file: 1-based, inclusive line range and its text."""

    id: str
    path: str
    start_line: int
    end_line: int
    text: str

    @property
    def citation(self) -> str:
        return cite(self.path, self.start_line, self.end_line)


_NOT_READ = object()  # a memory whose id is not worked out yet


@dataclass(frozen=True)
class _FileMemories:
    """A file's lines and memory blocks. A block's id (a digest of its words) is worked out when
    first asked for: a hit needs the one memory at its line, not the other hundred of its file."""

    key: tuple[int, int, int, int] | None  # see _file_key
    abs_path: Path
    lines: list[str]
    spans: list[tuple[int, int]]  # memory-shaped blocks, 0-based first and last line
    at_line: list[int]  # for each 0-based line, the index of the block holding it, or -1
    ids: list[object]  # per block: its id, None (no letter or digit: not a memory) or _NOT_READ

    def id_of(self, block: int) -> str | None:
        found = self.ids[block]
        if found is _NOT_READ:
            start, end = self.spans[block]
            found = memory_id("\n".join(self.lines[start : end + 1]))
            self.ids[block] = found  # the same answer whichever thread writes it
        return found  # type: ignore[return-value]

    def unit(self, block: int) -> MemoryUnit | None:
        found = self.id_of(block)
        return MemoryUnit(*self.spans[block], found) if found else None

    def units(self, blocks: range | None = None) -> list[MemoryUnit]:
        return [u for b in (blocks if blocks is not None else range(len(self.spans))) if (u := self.unit(b))]


class MemoryLookup:
    def __init__(self, workspace: Workspace):
        self.workspace = workspace
        self._files: dict[str, _FileMemories] = {}
        self._lock = threading.Lock()

    def unit_at(self, path: str, line: int, expected: str | None = None) -> LocatedMemory | None:
        """The memory holding 1-based ``line`` of ``path`` (for a heading or blank line, the next
        one); None when the file cannot be read or, given ``expected``, no longer holds it there."""
        memories = self._memories(path)
        if memories is None or not 1 <= line <= len(memories.lines):
            return None
        if expected is not None and memories.lines[line - 1].rstrip("\r") != expected.rstrip("\r"):
            return None
        block = memories.at_line[line - 1]
        unit = memories.unit(block) if block >= 0 else None
        if unit is None:  # a heading, a blank line or a block of no words: the next memory, else the last
            blocks = range(len(memories.spans))
            unit = next((u for b in blocks if memories.spans[b][0] >= line - 1 and (u := memories.unit(b))), None) \
                or next((u for b in reversed(blocks) if (u := memories.unit(b))), None)
        return self._located(path, memories, unit) if unit is not None else None

    def units_between(self, path: str, first: int, last: int) -> list[LocatedMemory]:
        """The memories that lie within 1-based lines ``first``..``last`` of ``path``, in file order."""
        memories = self._memories(path)
        if memories is None:
            return []
        inside = [b for b, (start, end) in enumerate(memories.spans) if start + 1 >= first and end + 1 <= last]
        return [self._located(path, memories, u) for b in inside if (u := memories.unit(b))]

    def find(self, memory_id: str, paths: list[str]) -> list[LocatedMemory]:
        """Every place among ``paths`` where the memory ``memory_id`` is written."""
        found: list[LocatedMemory] = []
        for path in paths:
            memories = self._memories(path)
            if memories is None:
                continue
            found.extend(self._located(path, memories, u) for u in memories.units() if u.id == memory_id)
        return found

    def nearest(self, memory_id: str, path: str, line: int) -> LocatedMemory | None:
        """The place of ``memory_id`` in ``path`` whose first line is closest to 1-based ``line``
        (the first in the file of two as close): ``find``'s nearest, reading ids outwards from
        ``line`` so that a hit's own memory is found without digesting the rest of its file."""
        memories = self._memories(path)
        if memories is None:
            return None
        block = next((b for b in _outwards(memories.spans, line) if memories.id_of(b) == memory_id), None)
        unit = memories.unit(block) if block is not None else None
        return self._located(path, memories, unit) if unit is not None else None

    def find_many(self, memory_ids: set[str], paths: list[str]) -> dict[str, LocatedMemory]:
        """The first place among ``paths`` of each of ``memory_ids`` (one pass over the files)."""
        found: dict[str, LocatedMemory] = {}
        for path in paths:
            if len(found) == len(memory_ids):
                break
            memories = self._memories(path)
            if memories is None:
                continue
            for unit in memories.units():
                if unit.id in memory_ids and unit.id not in found:
                    found[unit.id] = self._located(path, memories, unit)
        return found

    def _located(self, path: str, memories: _FileMemories, unit: MemoryUnit) -> LocatedMemory:
        text = "\n".join(memories.lines[unit.start : unit.end + 1])
        return LocatedMemory(unit.id, path, unit.start + 1, unit.end + 1, text)

    def _memories(self, path: str) -> _FileMemories | None:
        with self._lock:
            cached = self._files.get(path)
        if cached is not None and _file_key(cached.abs_path) == cached.key:
            return cached
        # Resolved again on any change: a file that became a link or left the memory set is refused.
        try:
            file = self.workspace.resolve(path)
            key = _file_key(file.abs_path)
            text = self.workspace.read_memory(file)
        except (PathError, OSError, UnicodeDecodeError, ValueError):
            return None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        spans = memory_spans(lines)
        at_line = [-1] * len(lines)
        for index, (start, end) in enumerate(spans):
            for n in range(start, end + 1):
                at_line[n] = index
        memories = _FileMemories(key, file.abs_path, lines, spans, at_line, [_NOT_READ] * len(spans))
        with self._lock:
            if len(self._files) >= _MAX_CACHED_FILES:
                self._files.clear()
            self._files[path] = memories
        return memories


def _outwards(spans: list[tuple[int, int]], line: int) -> Iterator[int]:
    """The blocks of ``spans`` (in file order) by how far their first line is from 1-based ``line``,
    the earlier of two as far first: what sorting every block by that distance gives, without
    sorting (a search asks this for each of its hits, in files of hundreds of memories)."""
    def start(block: int) -> int:
        return spans[block][0] + 1

    after = bisect.bisect_left(spans, line, key=lambda span: span[0] + 1)
    before = after - 1
    while before >= 0 or after < len(spans):
        if after >= len(spans) or (before >= 0 and line - start(before) <= start(after) - line):
            yield before
            before -= 1
        else:
            yield after
            after += 1


def _file_key(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when a file is edited, replaced or swapped for a link (lstat: links not followed)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode
