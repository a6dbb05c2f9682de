"""Conversation transcripts as a source of memory (opt-in: ``[sessions] paths``).

Claude Code and OpenClaw write each session as JSONL: one record per line, most of them tool
calls, tool output and bookkeeping. A transcript is indexed as the text of its user and
assistant messages only, one rendered line per JSONL line, so a hit's ``#Lstart-Lend`` is the
transcript's own line numbers:

* a message line becomes ``- **user:** text`` (its text flattened to one line, at most
  ``MAX_MESSAGE_CHARS``, secrets redacted);
* every other line (tool calls and results, summaries, a repeat of a streamed reply, a line
  that is not JSON) becomes an empty line.

Transcripts are private: shared callers never see them (``privacy.py``), and nothing writes to them.
"""

from __future__ import annotations

import json

from mcp_memory.core.transcripts import Message, message_from_record
from mcp_memory.safety import clean_memory_text, redact_secrets

TRANSCRIPT_SUFFIX = ".jsonl"
MAX_MESSAGE_CHARS = 2000
_MAX_LINE_BYTES = 1_000_000


def is_transcript(rel_path: str) -> bool:
    return rel_path.lower().endswith(TRANSCRIPT_SUFFIX)


def render_transcript(data: bytes) -> str:
    """The searchable text of a JSONL transcript: one line per JSONL line (see the module doc)."""
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    out: list[str] = []
    previous: Message | None = None
    for raw in raw_lines:
        message = _message(raw)
        if message is None or message == previous:
            out.append("")
            continue
        previous = message
        text = " ".join(clean_memory_text(message.content).split())
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[: MAX_MESSAGE_CHARS - 1] + "…"
        out.append(f"- **{message.role}:** {redact_secrets(text)}" if text else "")
    return "\n".join(out) + ("\n" if out else "")


def count_messages(data: bytes) -> int:
    """How many lines of ``data`` (a piece of a transcript) are messages."""
    return sum(1 for raw in data.split(b"\n") if _message(raw) is not None)


def _message(raw: bytes) -> Message | None:
    if not raw.strip() or len(raw) > _MAX_LINE_BYTES:
        return None
    try:
        record = json.loads(raw.decode("utf-8", "replace"))
    except json.JSONDecodeError:
        return None
    return message_from_record(record)
