"""Editing one line of a memory file in place: the dashboard's "edit" action.

The line is replaced only if it still holds the text the person saw, under the edit lock and
the cross-process files lock, by an atomic rewrite that keeps every other byte; the file is
then synced and its new rows embedded before this returns, so a search right after finds
the new text. The new text passes the same checks as a stored memory (no secrets, nothing
that reads as instructions, no control characters).
"""

from __future__ import annotations

from mcp_memory.core.hits import MemoryLine
from mcp_memory.core.reading import Reader
from mcp_memory.core.workspace import decode_memory_bytes
from mcp_memory.errors import MemoryInputError, PathError
from mcp_memory.safety.lines import checked_line
from mcp_memory.writes.edits import MAX_MEMORY_CHARS, Editor

MAX_INDENT = 16  # leading spaces kept from the edited text (a nested bullet stays nested)


class LineEditor:
    def __init__(self, editor: Editor, reader: Reader):
        self.editor = editor
        self.reader = reader

    def replace(self, path: str, line: int, expected: str, text: str, include_private: bool = True) -> MemoryLine:
        """Replace line ``line`` of ``path`` (1-based) with ``text`` if it still reads ``expected``."""
        new_text = _checked(text)
        memory_file = self.reader.resolve_visible(path, include_private)
        rel = memory_file.rel_path
        workspace = self.editor.engine.workspace
        self.editor.engine.open()
        with self.editor.lock:
            with workspace.locked():
                try:
                    data = memory_file.abs_path.read_bytes()
                except OSError as exc:
                    raise MemoryInputError(f"{rel} cannot be read: {exc.strerror or exc}") from None
                texts = decode_memory_bytes(data).split("\n")
                raw = data.split(b"\n")
                count = len(texts) - 1 if texts[-1] == "" else len(texts)
                if not 1 <= int(line) <= count or texts[int(line) - 1].rstrip("\r") != expected:
                    raise MemoryInputError(f"{rel} line {line} changed since it was read; nothing was edited")
                if new_text == expected:
                    return MemoryLine(rel, int(line), new_text)
                ending = b"\r" if raw[int(line) - 1].endswith(b"\r") else b""
                raw[int(line) - 1] = new_text.encode("utf-8") + ending
                try:
                    workspace.replace_bytes(rel, data, b"\n".join(raw))
                except PathError as exc:
                    raise MemoryInputError(str(exc)) from None
                self.editor.embed_ahead([rel])
                self.editor.sync_edited(rel)
                self.editor.check_indexed(rel)
            self.editor.embed_edited(rel)
        return MemoryLine(rel, int(line), new_text)


def _checked(text: object) -> str:
    """The new line: its leading indentation kept (bounded), the rest checked as a stored memory is."""
    if not isinstance(text, str):
        raise MemoryInputError("text must be a string")
    text = text.replace("\r", "").replace("\n", " ")
    body = text.lstrip(" \t")
    indent = text[: len(text) - len(body)].replace("\t", "    ")[:MAX_INDENT]
    return indent + checked_line(body, "text", MAX_MEMORY_CHARS)
