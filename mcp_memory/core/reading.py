"""Reading memory files as a caller may see them: lines of one file, the list of files.

Every read of a path a caller typed goes through ``Reader.resolve_visible``: the path is
resolved by the workspace first, and only then is its privacy decided (``privacy.py``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from mcp_memory.core.privacy import PrivacyRules, not_shared
from mcp_memory.core.workspace import MemoryFile, Workspace
from mcp_memory.errors import PathError


@dataclass(frozen=True)
class FileLines:
    path: str
    from_line: int
    to_line: int
    total_lines: int
    text: str


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    date: dt.date | None
    evergreen: bool


class Reader:
    """Reads memory files for a caller, private ones only for callers that may see them."""

    def __init__(self, workspace: Workspace, privacy: PrivacyRules):
        self.workspace = workspace
        self.privacy = privacy

    def resolve_visible(self, path: str, include_private: bool = True) -> MemoryFile:
        """The memory file ``path`` names, if this caller may read it; else PathError.

        A caller that may not see private files gets the same error for a private file, a
        missing one and a refused path, so errors reveal nothing about what exists.
        """
        if include_private:
            return self.workspace.resolve(path)
        try:
            memory_file = self.workspace.resolve(path)
        except PathError:
            raise PathError(not_shared(path)) from None
        if self.privacy.is_private(memory_file.rel_path):
            raise PathError(not_shared(path))
        return memory_file

    def get(self, path: str, from_line: int | None = None, lines: int | None = None,
            include_private: bool = True) -> FileLines:
        """Lines of one memory file (1-based ``from_line``; all lines when ``lines`` is None)."""
        memory_file = self.resolve_visible(path, include_private)
        try:
            text = self.workspace.read_memory(memory_file)
        except UnicodeDecodeError:
            raise PathError(f"{memory_file.rel_path!r} is a binary file, not text") from None
        all_lines = text.split("\n")
        if all_lines and all_lines[-1] == "":
            all_lines.pop()
        total = len(all_lines)
        start = 1 if from_line is None else int(from_line)
        if start < 1:
            raise PathError("from_line must be 1 or more")
        if lines is not None and int(lines) < 1:
            raise PathError("lines must be 1 or more")
        if start > max(total, 1):
            raise PathError(f"from_line {start} is past the end of {memory_file.rel_path} ({total} lines)")
        end = total if lines is None else min(total, start + int(lines) - 1)
        return FileLines(memory_file.rel_path, start, end, total, "\n".join(all_lines[start - 1 : end]))

    def file_lines(self, rel_path: str) -> list[str]:
        """Every line of a memory file (a hit's file); [] when it cannot be read any more."""
        try:
            return self.get(rel_path).text.split("\n")
        except PathError:
            return []

    def list_files(self, include_private: bool = True) -> list[FileInfo]:
        """Every memory file with its size and date."""
        out = []
        for f in self.workspace.list_files():
            if not include_private and self.privacy.is_private(f.rel_path):
                continue
            try:
                size = f.abs_path.stat().st_size
            except OSError:
                continue
            out.append(FileInfo(f.rel_path, size, f.date, f.evergreen))
        return out
