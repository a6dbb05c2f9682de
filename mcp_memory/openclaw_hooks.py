"""OpenClaw's plugin hooks: ``mcp-memory hook openclaw <event>``.

OpenClaw plugins register typed hooks in-process (``api.on("before_prompt_build", ...)``).
The plugin in ``manifests/openclaw-plugin/`` is a few lines of JavaScript that hand each hook's
event and context to this command as JSON on stdin::

    {"event": {...the hook's event...}, "ctx": {"sessionKey", "sessionId", "agentId", "trigger", ...},
     "first": true}   # the first prompt the plugin sees of this session (or since a compaction)

and, for ``prompt``, return what it prints (``{"prependContext": ...}``) as the hook's result.

==================  ====================  ===============================================
event               OpenClaw hook         what it does
==================  ====================  ===============================================
prompt              before_prompt_build   recall (and the pinned rules on a first prompt)
agent-end           agent_end             capture from the run's messages
before-compaction   before_compaction     rescue from ``sessionFile`` (or the messages)
before-reset        before_reset          capture, then the episode (``/new``, ``/reset``)
session-end         session_end           capture, then the episode
==================  ====================  ===============================================

The scope (``scopes.py``) is chosen as for Claude Code, the working directory being the agent's
``workspaceDir``. Every path is the one the Claude Code hooks take: a running server of the workspace answers
through the bridge, or the work runs here. Runs that memory itself started (a session key
holding ``:memory-capture:``, or ``trigger: "memory"``) are left alone, so capture never
recurses. Bad input raises ``ValueError``; ``run_hook`` logs it and exits 0.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from mcp_memory.bridge import loggable
from mcp_memory.config import Settings
from mcp_memory.hooks import capture_turn, finish_session, hook_scope, recall_context, rescue_before_compaction

log = logging.getLogger(__name__)

CLIENT = "openclaw"
EVENTS = ("prompt", "agent-end", "before-compaction", "before-reset", "session-end")
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # an agent or session id used in a path


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
    if event == "agent-end":
        if hook_event.get("success") is False:
            log.info("openclaw agent-end skipped: the run failed")
            return ""
        capture_turn(settings, {"op": "capture", "messages": _messages(hook_event, required=True),
                                "session_key": session, "scope": scope})
        return ""
    transcript = _transcript_path(hook_event, ctx)
    if event == "before-compaction":
        if transcript is None:
            raise ValueError("before_compaction gave no sessionFile, and no transcript was found for the session")
        rescue_before_compaction(settings, {"op": "pre-compact", "transcript_path": str(transcript),
                                            "session_key": session or "", "scope": scope})
        return ""
    # before-reset and session-end: the conversation is over.
    if transcript is None:
        messages = _messages(hook_event, required=False)
        if messages:
            capture_turn(settings, {"op": "capture", "messages": messages, "session_key": session, "scope": scope})
        log.info("openclaw %s: no transcript found, so no episode", event)
        return ""
    finish_session(settings, {"op": "session-end", "transcript_path": str(transcript), "session_key": session,
                              "client": CLIENT, "scope": scope})
    return ""


def _prompt(settings: Settings, hook_event: dict[str, Any], session: str | None, first: bool,
            scope: str | None = None) -> str:
    prompt = _string(hook_event, "prompt") or ""
    parts = []
    if first:
        from mcp_memory.rules import session_start_context

        parts.append(session_start_context(settings))
    parts.append(recall_context(settings, prompt, session, scope))
    context = "\n\n".join(part for part in parts if part)
    log.info("openclaw prompt: %d characters of context", len(context))
    return json.dumps({"prependContext": context}, ensure_ascii=False) if context else ""


def _started_by_memory(hook_event: dict[str, Any], ctx: dict[str, Any], session: str | None) -> bool:
    triggers = {_string(hook_event, "trigger"), _string(ctx, "trigger")}
    return "memory" in triggers or ":memory-capture:" in (session or "")


def _transcript_path(hook_event: dict[str, Any], ctx: dict[str, Any]) -> Path | None:
    """The session's JSONL transcript: the event's ``sessionFile``, else OpenClaw's own layout.

    OpenClaw keeps ``<state dir>/agents/<agentId>/sessions/<sessionId>.jsonl``, the state dir
    being ``$OPENCLAW_STATE_DIR`` or ``~/.openclaw``. Ids that could climb out of that folder
    are not used.
    """
    named = _string(hook_event, "sessionFile")
    if named:
        return Path(named).expanduser()
    agent = _string(ctx, "agentId") or "main"
    session_id = _string(hook_event, "sessionId") or _string(ctx, "sessionId")
    if not session_id or not _SAFE_ID.match(agent) or not _SAFE_ID.match(session_id) or ".." in agent + session_id:
        return None
    state = Path(os.environ.get("OPENCLAW_STATE_DIR") or "~/.openclaw").expanduser()
    path = state / "agents" / agent / "sessions" / f"{session_id}.jsonl"
    return path if path.is_file() else None


def _messages(hook_event: dict[str, Any], required: bool) -> list[Any]:
    messages = hook_event.get("messages")
    if messages is None and not required:
        return []
    if not isinstance(messages, list):
        raise ValueError("the hook event has no messages list")
    return messages


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
