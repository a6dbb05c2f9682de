"""Markdown -> chunks that keep their exact line ranges, heading path and file date.

Chunks are about ``tokens`` long (estimated, see ``estimate_tokens``) with ``overlap`` tokens
of whole lines repeated from the previous chunk. A heading starts a new chunk (no overlap
across sections), and a fenced code block is never split unless it alone exceeds the budget.
A single line longer than the budget is cut into pieces that all cite that line.

Every non-blank line of the input lies inside at least one chunk's range.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass

from mcp_memory.core.hits import cite

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(\S.*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def estimate_tokens(text: str) -> int:
    """Rough model-token count: one per CJK character, one per four other characters."""
    cjk = len(_CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


@dataclass(frozen=True)
class Chunk:
    """A piece of one memory file, citable as ``path#Lstart-Lend``."""

    path: str
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str  # the file's own lines (or a piece of one long line)
    heading_path: tuple[str, ...] = ()
    date: dt.date | None = None
    ordinal: int = 0  # position in the file's chunk list: pieces of one long line share a range

    @property
    def citation(self) -> str:
        return cite(self.path, self.start_line, self.end_line)

    @property
    def index_text(self) -> str:
        """What is embedded and keyword-indexed: context first, so a chunk reads alone."""
        context = [self.path]
        if self.heading_path:
            context.append(" > ".join(self.heading_path))
        if self.date:
            context.append(self.date.isoformat())
        return " | ".join(context) + "\n" + self.text

    @property
    def id(self) -> str:
        key = f"{self.path}\x00{self.ordinal}\x00{self.start_line}\x00{self.end_line}\x00{self.index_text}"
        return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass
class _Block:
    """Lines that stay together: one line, a heading, or a whole fenced code block."""

    start: int  # 0-based index of the first line
    lines: list[str]
    tokens: int
    heading: bool
    headings: tuple[str, ...]  # heading path in effect for this block

    @property
    def content(self) -> bool:
        """A block that is neither a heading nor blank."""
        return not self.heading and any(line.strip() for line in self.lines)


def chunk_markdown(
    text: str,
    path: str = "",
    date: dt.date | None = None,
    tokens: int = 400,
    overlap: int = 80,
) -> list[Chunk]:
    """Split one markdown file into chunks; see the module docstring for the rules."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline does not start another line
    lines = [line.rstrip("\r") for line in lines]
    out: list[Chunk] = []
    current: list[_Block] = []
    current_tokens = 0
    has_content = False  # a non-blank, non-heading line is in ``current``

    def flush(keep_overlap: bool) -> None:
        nonlocal current, current_tokens, has_content
        if current:
            _emit(current, path, date, out)
        tail: list[_Block] = []
        budget = 0
        if keep_overlap and overlap > 0:
            for block in reversed(current):
                if block.heading or budget + block.tokens > overlap:
                    break
                tail.insert(0, block)
                budget += block.tokens
        current, current_tokens = tail, budget
        has_content = any(b.content for b in tail)

    for block in _blocks(lines):
        if block.heading and has_content:
            flush(keep_overlap=False)
        elif current_tokens + block.tokens > tokens and current:
            flush(keep_overlap=has_content)
            # The overlap plus this block may still not fit: then drop the overlap.
            if current_tokens + block.tokens > tokens:
                current, current_tokens, has_content = [], 0, False
        if block.tokens > tokens:
            # Too big to keep whole (a huge code block or a very long line): emit it in pieces.
            flush(keep_overlap=False)
            for piece in _split_block(block, tokens):
                _emit([piece], path, date, out)
            continue
        current.append(block)
        current_tokens += block.tokens
        has_content = has_content or block.content
    flush(keep_overlap=False)
    return out


def _blocks(lines: list[str]) -> list[_Block]:
    blocks: list[_Block] = []
    stack: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group(1)
            j = i + 1
            while j < len(lines):
                closing = _FENCE.match(lines[j])
                if closing and closing.group(1)[0] == marker[0] and len(closing.group(1)) >= len(marker):
                    break
                j += 1
            end = min(j, len(lines) - 1)  # an unclosed fence runs to the end of the file
            body = lines[i : end + 1]
            blocks.append(_Block(i, body, _line_tokens(body), False, _path(stack)))
            i = end + 1
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading.group(2).rstrip(" \t#") or heading.group(2).strip()))
            blocks.append(_Block(i, [line], _line_tokens([line]), True, _path(stack)))
        else:
            blocks.append(_Block(i, [line], _line_tokens([line]), False, _path(stack)))
        i += 1
    return blocks


def _path(stack: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(title for _, title in stack)


def _line_tokens(lines: list[str]) -> int:
    return sum(estimate_tokens(line) + 1 for line in lines)


def _split_block(block: _Block, tokens: int) -> list[_Block]:
    """Cut an oversized block into line groups; cut a single oversized line into pieces."""
    pieces: list[_Block] = []
    group: list[str] = []
    group_start = block.start
    group_tokens = 0
    for offset, line in enumerate(block.lines):
        line_tokens = estimate_tokens(line) + 1
        if group and group_tokens + line_tokens > tokens:
            pieces.append(_Block(group_start, group, group_tokens, False, block.headings))
            group, group_tokens = [], 0
        if line_tokens > tokens:
            for part in _split_line(line, tokens):
                pieces.append(_Block(block.start + offset, [part], estimate_tokens(part), False, block.headings))
            group_start = block.start + offset + 1
            continue
        if not group:
            group_start = block.start + offset
        group.append(line)
        group_tokens += line_tokens
    if group:
        pieces.append(_Block(group_start, group, group_tokens, False, block.headings))
    return pieces


def _split_line(line: str, tokens: int) -> list[str]:
    parts: list[str] = []
    start = 0
    while start < len(line):
        # Grow the piece until it reaches the budget; CJK-dense text needs fewer characters.
        end = min(len(line), start + tokens * 4)
        while end > start + 1 and estimate_tokens(line[start:end]) > tokens:
            end = start + max(1, (end - start) * 3 // 4)
        if end < len(line):
            space = line.rfind(" ", start + (end - start) // 2, end)
            if space > start:
                end = space + 1
        parts.append(line[start:end])
        start = end
    return parts


def _emit(blocks: list[_Block], path: str, date: dt.date | None, out: list[Chunk]) -> None:
    # Blank lines at either end would only widen the citation.
    while blocks and not any(line.strip() for line in blocks[0].lines):
        blocks = blocks[1:]
    while blocks and not any(line.strip() for line in blocks[-1].lines):
        blocks = blocks[:-1]
    if not blocks:
        return
    body = "\n".join(line for block in blocks for line in block.lines)
    content = [b for b in blocks if b.content] or blocks
    first = blocks[0].start
    last = blocks[-1].start + len(blocks[-1].lines) - 1
    out.append(Chunk(path, first + 1, last + 1, body, content[0].headings, date, ordinal=len(out)))
