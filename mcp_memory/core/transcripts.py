"""Conversations as plain ``Message`` lists, from whatever a client hands over.

Capture reads the latest messages of a conversation. They arrive as a JSON list of
``{role, content}`` (the ``memory_capture`` tool), or as a client's transcript file:

* Claude Code JSONL: one record per line, ``{"type": "user"|"assistant", "message": {"role",
  "content"}, "isSidechain", "isMeta", ...}``, content a string or a list of blocks;
* OpenClaw session JSONL: ``{"type": "message", "message": {"role", "content": [blocks]}}``
  after a ``{"type": "session"}`` header;
* a plain JSON list (or ``{"messages": [...]}``), or JSONL of ``{role, content}``.

Only what people and models said is kept: text blocks of user and assistant messages. Tool
calls, tool results, thinking, images, sub-agent (sidechain) and meta records are dropped.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_TRANSCRIPT_LINE = 4 * 1024 * 1024  # longer JSONL lines (pasted files, images) are skipped
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "model": "assistant"}
_TEXT_BLOCKS = {"text", "input_text", "output_text"}


class TranscriptError(ValueError):
    """A transcript or message list that cannot be read as a conversation."""


@dataclass(frozen=True)
class Message:
    role: str  # "user" or "assistant"
    content: str


def messages_from_json(data: Any) -> list[Message]:
    """Messages from decoded JSON: a list of records, or an object holding ``messages``."""
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if not isinstance(data, list):
        raise TranscriptError("messages must be a list of {role, content} objects")
    return [m for m in (message_from_record(r) for r in data) if m is not None]


def message_from_record(record: Any) -> Message | None:
    """One message from one record of any supported shape; None for everything else."""
    if not isinstance(record, dict):
        return None
    if record.get("isSidechain") or record.get("isMeta") or record.get("isCompactSummary"):
        return None  # a sub-agent's conversation, or text the client wrote itself
    inner = record.get("message")
    body = inner if isinstance(inner, dict) else record
    role = _ROLES.get(str(body.get("role") or record.get("type") or "").lower())
    if role is None:
        return None
    text = content_text(body.get("content"))
    if not text.strip():
        return None
    return Message(role, text)


def read_transcript(path: str | Path, last: int | None = None) -> list[Message]:
    """The messages of a transcript file (JSONL or JSON), keeping only the ``last`` ones."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            first = handle.read(1)
            while first and first.isspace():
                first = handle.read(1)
            handle.seek(0)
            if first == b"[":
                messages = messages_from_json(json.loads(handle.read().decode("utf-8", "replace")))
                return messages[-last:] if last else messages
            messages = list(_tail(_jsonl_messages(handle), last))
            if not messages and first == b"{":
                # Not JSONL after all: one JSON object, e.g. {"messages": [...]} over many lines.
                handle.seek(0)
                try:
                    messages = messages_from_json(json.loads(handle.read().decode("utf-8", "replace")))
                except (json.JSONDecodeError, TranscriptError):
                    return []
                return messages[-last:] if last else messages
            return messages
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"transcript {path} is not valid JSON: {exc}") from None


def jsonl_records(lines: Iterable[bytes]) -> Iterator[Any]:
    """The decoded records of JSONL lines; blank, oversized and unreadable lines are skipped (a line
    being written right now, or garbage: the rest still counts)."""
    for raw in lines:
        if len(raw) > MAX_TRANSCRIPT_LINE or not raw.strip():
            continue
        try:
            yield json.loads(raw.decode("utf-8", "replace"))
        except json.JSONDecodeError:
            continue


def _jsonl_messages(handle: Any) -> Iterator[Message]:
    previous: Message | None = None
    for record in jsonl_records(handle):
        message = message_from_record(record)
        # Claude Code writes one streamed reply as several lines; a repeated block is one message.
        if message is not None and message != previous:
            yield message
            previous = message


def _tail(messages: Iterable[Message], last: int | None) -> Iterable[Message]:
    return deque(messages, maxlen=last) if last else list(messages)


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text blocks of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type", "text") in _TEXT_BLOCKS:
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts)


def claude_record(record: Any) -> Any:
    """An OpenClaw session record in the Claude Code shape the episode and rescue readers walk.

    OpenClaw writes tool calls as ``toolCall`` blocks (``id``, ``name``, ``arguments``) in an
    assistant message, their results as messages of role ``toolResult`` (``toolCallId``,
    ``isError``), and a compaction as a ``{"type": "compaction"}`` record. Claude Code writes
    ``tool_use`` blocks (``input``), ``tool_result`` blocks (``tool_use_id``, ``is_error``) in a
    user message, and a ``compact_boundary`` system record. Anything else comes back unchanged.
    """
    if not isinstance(record, dict):
        return record
    if record.get("type") == "compaction":
        return {"type": "system", "subtype": "compact_boundary", "timestamp": record.get("timestamp")}
    message = record.get("message")
    if record.get("type") != "message" or not isinstance(message, dict):
        return record
    role = message.get("role")
    if role == "toolResult":
        block = {"type": "tool_result", "tool_use_id": message.get("toolCallId"),
                 "is_error": bool(message.get("isError")), "content": message.get("content")}
        return {**record, "type": "user", "message": {"role": "user", "content": [block]}}
    content = message.get("content")
    if isinstance(content, list):
        content = [_claude_block(block) for block in content]
    return {**record, "type": role if isinstance(role, str) else "message",
            "message": {**message, "content": content}}


def _claude_block(block: Any) -> Any:
    if isinstance(block, dict) and block.get("type") == "toolCall":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"),
                "input": block.get("arguments")}
    return block
