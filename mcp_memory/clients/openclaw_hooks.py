"""OpenClaw's plugin hooks: ``mcp-memory hook openclaw <event>``.

OpenClaw plugins register typed hooks in-process (``api.on("before_prompt_build", ...)``).
The plugin (``mcp_memory/clients/openclaw_plugin/``, package data that ``setup openclaw`` installs)
is plain JavaScript that hands each hook's event and context to this command as JSON on stdin::

    {"event": {...the hook's event...},
     "ctx": {"sessionKey", "sessionId", "agentId", "trigger", "workspaceDir", "sessionStartedAt"},
     "first": true}   # the first prompt the plugin sees of this session (or since a compaction)

and, for ``prompt``, returns what it prints (``{"prependContext": ...}``) as the hook's result.

==================  ====================  ===============================================
event               OpenClaw hook         what it does
==================  ====================  ===============================================
prompt              before_prompt_build   recall (and the pinned rules on a first prompt)
agent-end           agent_end             capture from the run's messages; the episode
before-compaction   before_compaction     rescue from the session's messages
before-reset        before_reset          capture, then the episode (``/new``, ``/reset``)
session-end         session_end           capture, then the episode
==================  ====================  ===============================================

What is read is what OpenClaw hands over. OpenClaw 2026.9 keeps sessions in SQLite: its
``sessionFile`` is then a marker (``sqlite:<agent>:<session id>:<store>``), not a file, and the
conversation comes as ``messages`` (the plugin passes ``agent_end``'s and ``before_reset``'s on,
bounded, and keeps a session's latest for ``before_compaction`` and ``session_end``, which carry
none). A ``sessionFile`` that is a JSONL file (older versions) is read as before.

The episode is kept up to date after every run (``agent_end``) and at the end: a Gateway that
stops abruptly loses nothing, and the records of the MCP server of the session (whose client,
``openclaw-bundle-mcp``, is OpenClaw) find the session's episode to merge into. Its key is the
session id and the time the session began (``sessionStartedAt``): OpenClaw keeps the session id
across a reset, and the conversation after a reset is another episode.

The scope (``core/scopes.py``) is chosen as for Claude Code, the working directory being the agent's
``workspaceDir``. Every path is the one the Claude Code hooks take: the warm process of the
workspace answers through the bridge, or the work runs here. Runs that memory itself started
(a session key holding ``:memory-capture:``, or ``trigger: "memory"``) are left alone, so capture
never recurses. Bad input raises ``ValueError``; ``run_hook`` logs it and exits 0.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any

from mcp_memory.clients.hooks import finish_session, hook_scope, recall_context, rescue_before_compaction
from mcp_memory.config import Settings
from mcp_memory.runtime.bridge import loggable

log = logging.getLogger(__name__)

CLIENT = "openclaw"
EVENTS = ("prompt", "agent-end", "before-compaction", "before-reset", "session-end")
SQLITE_MARKER = "sqlite:"  # OpenClaw 2026.9's sessionFile for a session kept in its database
MAX_RECORDS_BYTES = 700_000  # what travels to the warm process stays under its bridge's request limit
MAX_TEXT = 16_000  # characters of one text block kept (longer ones are cut)
_ROLES = ("user", "assistant", "toolResult")


def run_openclaw_hook(settings: Settings, event: str, payload: dict[str, Any]) -> str:
    """Run one OpenClaw hook; returns what to print (JSON for ``prompt``, else nothing)."""
    if event not in EVENTS:
        raise ValueError(f"unknown openclaw hook event {event!r} (one of {', '.join(EVENTS)})")
    hook_event, ctx = _object(payload, "event"), _object(payload, "ctx")
    session = _string(ctx, "sessionKey") or _string(ctx, "sessionId") or _string(hook_event, "sessionId")
    if _started_by_memory(hook_event, ctx, session):
        log.info("openclaw %s skipped: a run started by memory itself", event)
        return ""
    scope = hook_scope(settings, _string(ctx, "workspaceDir") or _string(hook_event, "workspaceDir"))
    if event == "prompt":
        return _prompt(settings, hook_event, session, payload.get("first") is True, scope)
    if event == "agent-end" and hook_event.get("success") is False:
        log.info("openclaw agent-end skipped: the run failed")
        return ""
    source = _conversation(hook_event, required=event == "agent-end")
    request: dict[str, Any] = {"session_key": session or "", "scope": scope, **source}
    if event == "before-compaction":
        if not source:
            raise ValueError("before_compaction gave no messages and no session file, and the plugin had seen "
                             "no run of the session: nothing to rescue")
        rescue_before_compaction(settings, {"op": "pre-compact", **request})
        return ""
    if not source:
        log.info("openclaw %s: no messages and no session file for session %s: nothing to record", event,
                 loggable(session or "?", 80))
        return ""
    finish_session(settings, {"op": "session-end", "client": CLIENT, "episode_key": _episode_key(ctx, session),
                              **request})
    return ""


def _prompt(settings: Settings, hook_event: dict[str, Any], session: str | None, first: bool,
            scope: str | None = None) -> str:
    prompt = _string(hook_event, "prompt") or ""
    parts = []
    if first:
        from mcp_memory.lifecycle.rules import session_start_context

        parts.append(session_start_context(settings))
    parts.append(recall_context(settings, prompt, session, scope))
    context = "\n\n".join(part for part in parts if part)
    log.info("openclaw prompt: %d characters of context", len(context))
    return json.dumps({"prependContext": context}, ensure_ascii=False) if context else ""


def _started_by_memory(hook_event: dict[str, Any], ctx: dict[str, Any], session: str | None) -> bool:
    triggers = {_string(hook_event, "trigger"), _string(ctx, "trigger")}
    return "memory" in triggers or ":memory-capture:" in (session or "")


def _conversation(hook_event: dict[str, Any], required: bool) -> dict[str, Any]:
    """The request fields naming the session's conversation: ``messages`` (records) when the event
    carries them, else ``transcript_path`` for a ``sessionFile`` that is a JSONL file; {} for neither."""
    messages = hook_event.get("messages")
    if messages is not None or required:
        if not isinstance(messages, list):
            raise ValueError("the hook event has no messages list")
        if messages:
            return {"messages": openclaw_records(messages)}
    named = _string(hook_event, "sessionFile")
    if not named:
        return {}
    if named.startswith(SQLITE_MARKER):
        log.info("sessionFile %s is in OpenClaw's session database: only the messages handed over are read",
                 loggable(named, 120))
        return {}
    path = Path(named).expanduser()
    if not path.is_file():
        log.warning("sessionFile %s is not a file (moved or deleted?): not read", loggable(named, 200))
        return {}
    return {"transcript_path": str(path)}


def _episode_key(ctx: dict[str, Any], session: str | None) -> str:
    """The session id (or key) and when the session began: one episode per conversation."""
    started = ctx.get("sessionStartedAt")
    base = _string(ctx, "sessionId") or session or ""
    if isinstance(started, (int, float)) and not isinstance(started, bool) and started > 0:
        return f"{base}:{int(started)}"
    return base


# ----- OpenClaw's messages as transcript records ---------------------------------------------------------
def openclaw_records(messages: list[Any]) -> list[dict[str, Any]]:
    """OpenClaw's session messages as the records of its older session JSONL, which the capture,
    episode and rescue readers take (``transcripts.claude_record``): the latest that fit
    ``MAX_RECORDS_BYTES``, each text cut at ``MAX_TEXT`` characters.

    A tool reached through OpenClaw's tool search (``tool_call`` with ``id: "memory__memory_search"``)
    is recorded as the MCP tool it called, and its result as the tool's structured content, so the
    episode names the tool and the memories it recalled. OpenClaw's own entries (compaction
    summaries, nested tool records) are left out.
    """
    records = [_record(message) for message in messages if isinstance(message, dict) and message.get("role") in _ROLES]
    kept: list[dict[str, Any]] = []
    size = 0
    for record in reversed(records):
        size += len(json.dumps(record, ensure_ascii=True, default=str))
        if size > MAX_RECORDS_BYTES:
            log.info("openclaw messages: the oldest %d of %d left out (too large)", len(records) - len(kept),
                     len(records))
            break
        kept.append(record)
    return kept[::-1]


def _record(message: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"role": message["role"], "content": _content(message)}
    for name in ("toolCallId", "toolName", "isError"):
        if name in message:
            body[name] = message[name]
    record: dict[str, Any] = {"type": "message", "message": body}
    when = _iso_time(message.get("timestamp"))
    if when:
        record["timestamp"] = when
    return record


def _content(message: dict[str, Any]) -> Any:
    content = message.get("content")
    structured = _structured_result(message)
    if structured is not None:
        return [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)[:MAX_TEXT]}]
    if isinstance(content, str):
        return content[:MAX_TEXT]
    if not isinstance(content, list):
        return []
    return [_block(block) for block in content if isinstance(block, dict)]


def _block(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "toolCall":
        return _tool_call(block)
    text = block.get("text")
    return {**block, "text": text[:MAX_TEXT]} if isinstance(text, str) else block


def _tool_call(block: dict[str, Any]) -> dict[str, Any]:
    """A ``tool_call`` through OpenClaw's tool search, as a call of the MCP tool it names."""
    arguments = block.get("arguments")
    if block.get("name") != "tool_call" or not isinstance(arguments, dict):
        return block
    target, inner = arguments.get("id"), arguments.get("args", arguments.get("arguments", {}))
    if not isinstance(target, str) or "__" not in target.strip("_"):
        return block
    return {**block, "name": f"mcp__{target}", "arguments": inner if isinstance(inner, dict) else {}}


def _structured_result(message: dict[str, Any]) -> Any:
    """An MCP tool result's structured content (what the server returned), when the message carries it."""
    details = message.get("details")
    if message.get("role") != "toolResult" or not isinstance(details, dict):
        return None
    result = details.get("result")
    inner = result.get("details") if isinstance(result, dict) else None
    for holder in (inner, details):
        if isinstance(holder, dict) and isinstance(holder.get("structuredContent"), dict):
            return holder["structuredContent"]
    return None


def _iso_time(value: Any) -> str | None:
    """OpenClaw's timestamps (milliseconds since the epoch, or ISO text) as ISO text."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e14:
        return dt.datetime.fromtimestamp(value / 1000, dt.UTC).isoformat().replace("+00:00", "Z")
    return None


def _object(payload: dict[str, Any], name: str) -> dict[str, Any]:
    value = payload.get(name, {})
    if not isinstance(value, dict):
        raise ValueError(f"the hook input's {name} is not an object")
    return value


def _string(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"the hook input's {name} is not a string: {loggable(value, 40)}")
    return value
