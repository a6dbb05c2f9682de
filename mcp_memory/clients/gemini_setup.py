"""Gemini CLI: the server and hooks in ``~/.gemini/settings.json`` (or a project's ``.gemini/settings.json``).

Gemini CLI's hooks take Claude Code's input and output (``session_id``, ``prompt``, ``cwd``,
``transcript_path`` in; ``hookSpecificOutput.additionalContext`` out), so the Claude Code hook
commands serve them: ``BeforeAgent`` recalls before each prompt (Gemini CLI escapes the block
and wraps it in ``<hook_context>``), ``SessionStart`` brings the pinned rules, ``AfterAgent``
captures from the session's recorded conversation. Timeouts are in milliseconds. ``trust``
lets the memory tools run without a confirmation, which a headless run (``-p``) cannot give.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_memory.clients.setup import Plan, SetupContext


def gemini_plan(ctx: SetupContext) -> Plan:
    from mcp_memory.clients.files import json_edit
    from mcp_memory.clients.setup import HookSpec, Plan, hooks_change, server_change, server_entry

    base = ctx.home if ctx.scope == "user" else ctx.project
    path = base / ".gemini" / "settings.json"
    hooks = [HookSpec("SessionStart", "session-start", 10_000), HookSpec("BeforeAgent", "prompt", 10_000),
             HookSpec("AfterAgent", "stop", 60_000)]
    names = ", ".join(spec.client_event for spec in hooks)
    edit = json_edit(path, f"MCP server 'memory' in mcpServers, hooks {names}",
                     server_change(path, "mcpServers", server_entry(ctx.launch, trust=True)),
                     hooks_change(path, ctx.launch, hooks))
    return Plan([edit],
                notes=["hooks: pinned rules at SessionStart, recall on BeforeAgent, capture on AfterAgent "
                       "(no compaction rescue or episodes: PreCompress and SessionEnd carry no transcript "
                       "they can read)",
                       "tools reach the model as mcp_memory_*; trust: true runs them without confirmation"])
