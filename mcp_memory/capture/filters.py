"""Which messages may become memories, and which facts may be written.

Auto-capture reads conversations that mix the user's statements with recalled memories,
assistant output, pasted code, logs and, sometimes, text written by an attacker. Before any
extractor sees a message it is cleaned (recalled ``<relevant-memories>`` blocks removed, so
recall never feeds capture) and checked; each refusal carries a reason the caller can show.
Facts coming back from an extractor (a model may echo anything) pass the same gates again.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from mcp_memory.capture.facts import CATEGORIES, Fact
from mcp_memory.core.transcripts import Message
from mcp_memory.safety import (
    clean_memory_text,
    find_secrets,
    looks_like_injection,
    redact_secrets,
)

MEMORY_RUN_MARKER = ":memory-capture:"  # session keys of capture's own runs hold this
# Text a hook put into the conversation, never the user's own words: a recall block, or anything
# Gemini CLI wrapped in <hook_context> (it records hook output there, escaped: recall, pinned rules).
_RECALL_BLOCK = re.compile(
    r"<relevant-memories\b[^>]*>.*?(?:</relevant-memories\s*>|\Z)|<hook_context>.*?(?:</hook_context>|\Z)",
    re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*(?:```|~~~)", re.MULTILINE)
_CODE_LINE = re.compile(
    r"^\s*(?:(?:def|class|import|from|function|const|let|var|return|public|private|fn|func|package|#include)\b"
    r"|[$>]\s+\S|.*[;{}]\s*$)"
)
_TAG = re.compile(
    r"</[A-Za-z][\w:-]*\s*>|<[A-Za-z][\w:-]*(?:\s+[\w:-]+\s*=\s*[\"'][^\"']*[\"'])+\s*/?>|<[A-Za-z][\w:-]*\s*/>"
    r"|<(?:html|body|head|div|span|p|br|hr|table|tr|td|ul|ol|li|img|script|style|iframe|svg|xml|\?xml)\b",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s", re.MULTILINE)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$", re.MULTILINE)
_ACK_WORDS = frozenset(
    "ok okay k kk cool great nice thanks thank thx ty you so much very perfect awesome amazing good "  # noqa: SIM905
    "sounds looks lgtm got it yes yeah yep yup no nope sure done fine alright right works worked that "
    "this lol haha hahaha wow please np cheers appreciated love it".split()
)
_ZH_ACK = re.compile(
    r"^(?:好的?|好吧|谢谢(?:你|啦|了)?|多谢|感谢|收到|行|可以|没问题|明白了?|了解|知道了|嗯+|哦+|哈+|太好了|辛苦了|太棒了|"
    r"棒|完美|不错|对的?|是的|牛|厉害|ok|OK|好嘞|搞定|完成)+[啊呀啦吧哦了嘛!!。.~～]*$"
)


@dataclass(frozen=True)
class Candidate:
    """A cleaned message that an extractor may read."""

    index: int  # position among the messages given
    role: str
    text: str


@dataclass(frozen=True)
class Skipped:
    """Something not captured, and why. ``text`` is a short preview with secrets redacted."""

    text: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"text": self.text, "reason": self.reason}


def is_memory_run(session_key: str | None) -> bool:
    """A run started by capture itself (its session keys carry ``:memory-capture:``)."""
    return bool(session_key) and MEMORY_RUN_MARKER in str(session_key)


def strip_recall_blocks(text: str) -> str:
    """``text`` without the ``<relevant-memories>`` blocks recall injected into it."""
    return _RECALL_BLOCK.sub(" ", text)


def select_candidates(
    messages: list[Message], max_messages: int, min_chars: int, max_chars: int
) -> tuple[list[Candidate], list[Skipped]]:
    """The last ``max_messages`` messages that may hold memories, and the rest with reasons."""
    candidates: list[Candidate] = []
    skipped: list[Skipped] = []
    first = max(0, len(messages) - max_messages)
    for index in range(first, len(messages)):
        message = messages[index]
        # Control characters never reach an extractor, and so never a file (safety/text.py).
        raw = clean_memory_text(message.content) if isinstance(message.content, str) else ""
        had_recall = bool(_RECALL_BLOCK.search(raw))
        text = strip_recall_blocks(raw).strip()
        if not text:
            if had_recall:
                skipped.append(Skipped("<relevant-memories>…", "recalled memories are never captured again"))
            continue
        reason = rejection_reason(text, message.role, min_chars, max_chars)
        if reason:
            skipped.append(Skipped(preview(text), reason))
        else:
            candidates.append(Candidate(index, message.role, text))
    return candidates, skipped


def rejection_reason(text: str, role: str, min_chars: int = 10, max_chars: int = 600) -> str | None:
    """Why this message must not be captured, or None when an extractor may read it."""
    secrets = find_secrets(text)
    if secrets:
        kinds = ", ".join(sorted({m.kind for m in secrets}))
        return f"contains a secret ({kinds}); secrets are never written to memory"
    if looks_like_injection(text):
        return "reads as instructions to a model (prompt injection), not as a fact"
    if role != "user":
        return "assistant message: only what the user says is captured"
    if _FENCE.search(text) or _mostly_code(text):
        return "code, not a statement"
    if _TAG.search(text) or _HEADING.search(text) or _TABLE_RULE.search(text):
        return "markup (HTML/XML, headings or tables), not a statement"
    if emoji_count(text) >= 3:
        return "emoji-heavy"
    length = weighted_length(text)
    if length < min_chars:
        return f"too short ({length} < {min_chars})"
    if len(text) > max_chars:
        return f"too long ({len(text)} > {max_chars} characters)"
    if is_chatter(text):
        return "chatter or acknowledgement"
    return None


def check_fact(fact: Fact, max_chars: int = 500) -> str | None:
    """Why an extracted fact must not be written, or None when it may."""
    text = fact.text
    if not text or len(text) < 4:
        return "empty fact"
    if len(text) > max_chars:
        return f"fact too long ({len(text)} > {max_chars} characters)"
    if find_secrets(text):
        return "contains a secret; secrets are never written to memory"
    if looks_like_injection(text) or _RECALL_BLOCK.search(text) or "relevant-memories" in text.lower():
        return "reads as instructions to a model (prompt injection), not as a fact"
    if fact.category not in CATEGORIES:
        return f"unknown category {fact.category!r}"
    return None


def preview(text: str, limit: int = 80) -> str:
    flat = " ".join(redact_secrets(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def weighted_length(text: str) -> int:
    """Visible characters, a CJK character counting two (it carries about a word)."""
    return sum(2 if _is_cjk(ch) else 1 for ch in text if not ch.isspace())


def emoji_count(text: str) -> int:
    return sum(1 for ch in text if unicodedata.category(ch) == "So" and ord(ch) >= 0x2190)


def is_chatter(text: str) -> bool:
    """Thanks, acknowledgements and laughter with nothing else in them."""
    squeezed = re.sub(r"[\s\W_]+", "", text, flags=re.UNICODE)
    if squeezed and _ZH_ACK.match(squeezed):
        return True
    words = re.findall(r"[a-z']+", text.lower())
    ascii_only = all(ord(ch) < 0x2190 or unicodedata.category(ch) == "So" for ch in text)
    return bool(words) and ascii_only and not re.search(r"\d", text) and all(w in _ACK_WORDS for w in words)


def _mostly_code(text: str) -> bool:
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 3:
        return False
    return sum(1 for line in lines if _CODE_LINE.match(line)) * 2 > len(lines)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return 0x3040 <= code <= 0x30FF or 0x3400 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF
